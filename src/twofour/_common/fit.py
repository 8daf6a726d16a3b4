"""Printed reports that fit the width they are printed to.

The reports are read in terminals and, on the site, in an output column 71 characters wide
at 1280 px, where a longer line scrolls sideways and the end of a verdict is cut off.
:func:`report_width` says what width to fit: ``COLUMNS`` when set (the site's notebooks run
with ``COLUMNS=70``), else the terminal's width, else none (a pipe or a file keeps whole lines).
:func:`fit` wraps the lines that are too long; :func:`fit_table` prints a table wider than the
width as two tables that share its first column (as pandas does), or one short block per row.

>>> fit(["  - the 2:4 kernel loses at this size: padding of a few tokens, per-call set-up"], 40)
['  - the 2:4 kernel loses at this size:', '    padding of a few tokens, per-call', '    set-up']
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

__all__ = ["SITE_WIDTH", "fit", "fit_table", "fold_columns", "report_width"]

# The characters of an output line that fit the site's column at 1280 px (671 px, less its padding, in
# 9.03 px characters: tests/site/test_what_a_reader_sees.py measures it); the notebooks run with this COLUMNS.
SITE_WIDTH = 70
_MIN_WIDTH = 40  # narrower than this, a report is not worth folding: lines are kept whole
_COLUMN_GAP = re.compile(r"\S( {2,})(?=\S)")
_BULLET = re.compile(r"^(\s*)(- |\* |\d+\. )?")


def report_width(stream=None) -> int | None:
    """The width a report printed to ``stream`` (default: stdout) should fit, or None for no limit.

    >>> import io, os
    >>> old = os.environ.pop("COLUMNS", None)
    >>> report_width(io.StringIO()) is None  # not a terminal, no COLUMNS: whole lines
    True
    >>> os.environ["COLUMNS"] = "100"; report_width(io.StringIO())
    100
    >>> _ = os.environ.pop("COLUMNS") if old is None else os.environ.update(COLUMNS=old)
    """
    columns = os.environ.get("COLUMNS", "").strip()
    width = int(columns) if columns.isdigit() else None
    stream = sys.stdout if stream is None else stream
    try:
        if width is None and stream.isatty():
            width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # a stream without a terminal behind it
        pass
    return width if width is not None and width >= _MIN_WIDTH else None


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False, break_long_words=False) or [first.rstrip()]


def fit(lines: list[str], width: int | None) -> list[str]:
    """``lines`` with each line longer than ``width`` wrapped (None: unchanged).

    A sentence (no run of two spaces) wraps with a hanging indent past any ``- `` bullet; a row of
    columns wraps its last column under itself, or, without room for that, breaks at the rightmost
    gap between columns that fits; a row whose first column alone is too wide is kept whole.

    >>> fit(["    data sheet   2.00x  peak 2:4 over peak dense tensor-core FLOP/s"], 55)
    ['    data sheet   2.00x  peak 2:4 over peak dense', '                        tensor-core FLOP/s']
    >>> fit(["  GEMM time   dense 0.269 ms   2:4 0.509 ms   GEMM speedup 0.53x"], 48)
    ['  GEMM time   dense 0.269 ms   2:4 0.509 ms', '    GEMM speedup 0.53x']
    >>> fit(["short"], 10), fit(["a b c d e f g h"], None)
    (['short'], ['a b c d e f g h'])
    """
    if width is None:
        return list(lines)
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        gaps = list(_COLUMN_GAP.finditer(line))
        if gaps:  # a row: wrap its last column under itself, or break it between two columns
            at = gaps[-1].end(1)
            if width - at >= 30 and " " in line[at:]:  # room for a readable column
                out += _wrap(line[at:], width, line[:at], " " * at)
                continue
            cut = next((g for g in reversed(gaps) if g.start(1) <= width), None)
            if cut is None:  # even its first column is wider: nothing to break it at
                out.append(line)
                continue
            indent = " " * (len(line) - len(line.lstrip()) + 2)
            out.append(line[:cut.start(1)])
            out += fit([indent + line[cut.end(1):]], width)
            continue
        lead = _BULLET.match(line)
        indent, bullet = lead.group(1), lead.group(2) or ""
        out += _wrap(line[len(indent) + len(bullet):], width, indent + bullet,
                     indent + (" " * len(bullet) if bullet else "  "))
    return out


def fold_columns(header: tuple[str, ...], rows: list[tuple[str, ...]], width: int | None,
                 gap: int = 2) -> list[list[str]]:
    """A table as lines (header, a rule, rows), or as several such tables when it is wider than ``width``.

    Each table repeats the first column (the row's name) and takes as many of the next columns
    as fit; a column that does not fit even alone with the name gets a table of its own.

    >>> for t in fold_columns(("name", "a", "b"), [("x", "1111", "2222")], 12): print(t)
    ['name  a', '----  ----', 'x     1111']
    ['name  b', '----  ----', 'x     2222']
    """
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]

    def table(cols: list[int]) -> list[str]:
        def fmt(cells):
            return (" " * gap).join(cells[i].ljust(widths[i]) for i in cols).rstrip()

        return [fmt(header), fmt(tuple("-" * w for w in widths)), *(fmt(r) for r in rows)]

    every = list(range(len(header)))
    total = sum(widths) + gap * (len(widths) - 1)
    if width is None or total <= width or len(header) < 3:
        return [table(every)]
    groups, current = [], [0]
    for i in every[1:]:
        if len(current) > 1 and sum(widths[c] for c in current) + widths[i] + gap * len(current) > width:
            groups.append(current)
            current = [0]
        current.append(i)
    groups.append(current)
    return [table(g) for g in groups]


def fit_table(header: tuple[str, ...], rows: list[tuple[str, ...]], width: int | None) -> list[list[str]]:
    """A table as blocks of lines that fit ``width``: the table itself; two tables sharing its first
    column (:func:`fold_columns`); or, when two are not enough, one block per row: its first cell on
    a line, then its other cells as "header: value" pairs, as many to a line as fit, none split.

    >>> for block in fit_table(("name", "a", "b", "c"), [("layer", "1" * 9, "2" * 9, "3" * 9)], 20): print(block)
    ['layer', '  a: 111111111;', '  b: 222222222;', '  c: 333333333']
    """
    tables = fold_columns(header, rows, width)
    if len(tables) <= 2:
        return tables
    lines = []
    for row in rows:
        lines.append(row[0])
        current = ""
        for h, cell in zip(header[1:], row[1:]):
            pair = f"{h}: {cell}"
            if current and len(f"  {current}; {pair};") > width:
                lines.append(f"  {current};")
                current = pair
            else:
                current = f"{current}; {pair}" if current else pair
        lines += fit([f"  {current}"], width)
    return [lines]
