"""Tabular results that read: an HTML table in Jupyter, Colab and on the site; aligned text elsewhere.

:func:`table` keeps the rows as data, as an f-string table is wider than a phone.

Example:
    >>> from twofour.course.tables import table
    >>> t = table(
    ...     [{"gpu": "A100", "tflops": 312.0, "ratio": 0.5625}, {"gpu": "H100 SXM", "tflops": 989.4, "ratio": 0.5625}],
    ...     formats={"tflops": "{:,.0f}", "ratio": "{:.2%}"},
    ...     caption="fp16 dense peak and packed bytes",
    ... )
    >>> print(t)
    fp16 dense peak and packed bytes
    gpu       tflops   ratio
    --------  ------  ------
    A100         312  56.25%
    H100 SXM     989  56.25%
    >>> "<th" in t._repr_html_() and 'class="num"' in t._repr_html_()
    True
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Table", "table"]

Format = str | Callable[[Any], str]


def _format(value: Any, fmt: Format | None) -> str:
    if value is None:
        return ""
    if fmt is not None:
        return fmt(value) if callable(fmt) else fmt.format(value)
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"
    return str(value)


# A word longer than this (a kernel name, a module path) may break after each "_", "." and "/", to fit.
_LONG_WORD = 20
_BREAK_AFTER = re.compile(r"(?<=[_./])")


def _cell_html(text: str) -> str:
    """``text`` escaped for HTML, with ``<wbr>`` after each ``_``, ``.``, ``/`` of a long word.

    >>> _cell_html("sm90_xmma_sparse_gemm_bf16_tilesize128 <fast>")
    'sm90_<wbr>xmma_<wbr>sparse_<wbr>gemm_<wbr>bf16_<wbr>tilesize128 &lt;fast&gt;'
    """
    return "".join(
        "<wbr>".join(html.escape(part) for part in _BREAK_AFTER.split(word) if part)
        if len(word) > _LONG_WORD else html.escape(word)
        for word in re.split(r"(\s+)", text)
    )


class Table:
    """Rows of formatted cells under a header (:func:`table`); ``numeric``: the right-aligned columns."""

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool],
                 caption: str | None = None):
        self.columns = [str(c) for c in columns]
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.numeric = list(numeric)
        self.caption = caption

    def __len__(self) -> int:
        return len(self.rows)

    def to_text(self) -> str:
        """Aligned plain text: caption line, header, a rule, one line per row."""
        widths = [max(map(len, column)) for column in zip(self.columns, *self.rows)]

        def line(cells: Sequence[str]) -> str:
            out = [cell.rjust(w) if num else cell.ljust(w) for cell, w, num in zip(cells, widths, self.numeric)]
            return "  ".join(out).rstrip()

        lines = [self.caption] if self.caption else []
        lines += [line(self.columns), "  ".join("-" * w for w in widths)]
        lines += [line(row) for row in self.rows]
        return "\n".join(lines)

    __repr__ = to_text  # also what str(), print() and IPython's text/plain show

    def to_markdown(self) -> str:
        """A Markdown (pipe) table; numeric columns right-aligned."""
        def line(cells: Sequence[str]) -> str:
            return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

        rule = "|" + "|".join("---:" if num else ":---" for num in self.numeric) + "|"
        return "\n".join([line(self.columns), rule, *map(line, self.rows)])

    def _repr_html_(self) -> str:
        def cell(tag: str, text: str, num: bool) -> str:
            cls = ' class="num"' if num else ""
            return f"<{tag}{cls}>{_cell_html(text)}</{tag}>"

        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        head = "".join(cell("th", c, n).replace("<th", '<th scope="col"', 1)
                       for c, n in zip(self.columns, self.numeric))
        body = "".join("<tr>" + "".join(cell("td", c, n) for c, n in zip(row, self.numeric)) + "</tr>"
                       for row in self.rows)
        return (f'<table class="twofour-table">{caption}<thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")


def table(rows: Iterable[Mapping[str, Any] | Sequence[Any]], columns: Sequence[str] | None = None, *,
          formats: Mapping[str, Format] | None = None, headers: Mapping[str, str] | None = None,
          caption: str | None = None) -> Table:
    """Make a :class:`Table` from rows of dicts (or of sequences, with ``columns``).
    ``columns``: which, in which order (default: the first dict's keys); ``formats``: per column, a
    format string (``"{:.2f}"``) or a function (else floats get 4 significant digits; None shows
    empty); ``headers``: per column, the header to show instead of its name; ``caption``: a line above.

    Example:
        >>> print(table([(1, 0.5), (4096, 1.62)], columns=["M", "speedup"], formats={"speedup": "{:.2f}x"}))
           M  speedup
        ----  -------
           1    0.50x
        4096    1.62x
    """
    rows = list(rows)
    formats = dict(formats or {})
    headers = dict(headers or {})
    if columns is None:
        if not rows:
            raise ValueError("columns is required for an empty table (no row to take the column names from)")
        if not isinstance(rows[0], Mapping):
            raise ValueError("rows are sequences, so pass columns=[...] with one name per position")
        columns = list(rows[0].keys())
    columns = [str(c) for c in columns]
    for name in list(formats) + list(headers):
        if name not in columns:
            raise ValueError(f"formats/headers name column {name!r}, which is not one of {columns}")
    values: list[list[Any]] = []
    for i, row in enumerate(rows):
        if isinstance(row, Mapping):
            values.append([row.get(c) for c in columns])
        else:
            row = list(row)
            if len(row) != len(columns):
                raise ValueError(f"row {i} has {len(row)} cells, expected {len(columns)} (one per column {columns})")
            values.append(row)
    numeric = [
        any(v is not None for v in col)
        and all(v is None or (isinstance(v, numbers.Number) and not isinstance(v, bool)) for v in col)
        for col in zip(*values)
    ] if values else [False] * len(columns)
    cells = [[_format(v, formats.get(c)) for v, c in zip(row, columns)] for row in values]
    return Table([headers.get(c, c) for c in columns], cells, numeric, caption=caption)
