"""Printed reports that fit the width they are printed to.

The audit, trace and environment reports are read in terminals and, on the site, in an output
column about 100 characters wide at 1280 px; a longer line there scrolls sideways, and the end of
a verdict ("... the rest is host time") is the part cut off. :func:`report_width` says what
width to fit: ``COLUMNS`` when it is set (the variable shells and Python's own argparse use; the
site's notebooks run with ``COLUMNS=100``, site_hooks/nb_execute.py), else the terminal's width
when printing to one, else none: a pipe, a file or a test keeps whole lines, as before.

:func:`fit` wraps the lines that are too long: a sentence (no run of two spaces) wraps under
itself, indented past its own indentation and any ``- `` bullet; a row whose last column is a
sentence wraps that column under itself. :func:`fold_columns` prints a table wider than the width
as several tables that share its first column, as pandas prints a wide frame.

>>> fit(["  - the 2:4 kernel loses at this size: padding of a few tokens, per-call set-up"], 40)
['  - the 2:4 kernel loses at this size:', '    padding of a few tokens, per-call', '    set-up']
"""

from __future__ import annotations

import os
import re
import sys
import textwrap

__all__ = ["SITE_WIDTH", "fit", "fold_columns", "report_width"]

# The characters of an output line that fit the site's column at 1280 px (tests/site/test_reading.py
# measures it on the built pages); notebooks run with COLUMNS set to it.
SITE_WIDTH = 100
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
    if columns.isdigit():
        return int(columns) if int(columns) >= _MIN_WIDTH else None
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            width = os.get_terminal_size(stream.fileno()).columns
            return width if width >= _MIN_WIDTH else None
    except (AttributeError, OSError, ValueError):  # a stream without a terminal behind it
        pass
    return None


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False, break_long_words=False) or [first.rstrip()]


def fit(lines: list[str], width: int | None) -> list[str]:
    """``lines`` with each line longer than ``width`` wrapped (None: unchanged).

    A line that is a sentence wraps with a hanging indent; a row of columns whose last column is
    a sentence wraps that column under itself; a row that cannot be wrapped so (its columns
    before the last are wider than the width) is kept whole.

    >>> fit(["    data sheet   2.00x  peak 2:4 over peak dense tensor-core FLOP/s"], 50)
    ['    data sheet   2.00x  peak 2:4 over peak dense', '                        tensor-core FLOP/s']
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
        if gaps:  # a row: wrap its last column under itself
            at = gaps[-1].end(1)
            if width - at >= 20 and " " in line[at:]:
                out += _wrap(line[at:], width, line[:at], " " * at)
            else:
                out.append(line)
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
