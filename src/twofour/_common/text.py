"""Strings that came from a file, made safe to print on a terminal.

A checkpoint's tensor names, dtype codes and error texts are chosen by whoever wrote the
file. Printed raw, an ESC sequence clears the screen, a newline forges a table row, a
right-to-left override reverses what follows, and a megabyte-long name floods the terminal.
:func:`printable` escapes every character that is not printable (``str.isprintable``) and a
backslash, so the escaped text is unambiguous, and shortens it in the middle, where names
differ least.

>>> printable("a\\nb\\rc\\x00d\\u202ee")
'a\\\\nb\\\\rc\\\\x00d\\\\u202ee'
>>> printable("layers." + "x" * 100 + ".weight", limit=30)
'layers.xxxxxxx...xxxxxx.weight'
"""

from __future__ import annotations

import os

__all__ = ["one_line", "printable", "show_path"]


def printable(text, limit: int | None = None) -> str:
    """``text`` (any object: ``str()`` of it) with unprintable characters escaped, at most ``limit``
    characters (a shortened result keeps the start and the end, with ``...`` in the middle)."""
    text = text if isinstance(text, str) else str(text)
    if limit is not None and len(text) > 4 * limit:  # never escape a megabyte to print 60 characters
        text = text[: 2 * limit] + text[-2 * limit :]
    out = text if text.isprintable() and "\\" not in text else "".join(
        ch if ch.isprintable() and ch != "\\" else ch.encode("unicode_escape").decode("ascii") for ch in text)
    if limit is not None and len(out) > limit:
        keep = max(limit - 3, 2)
        head = (keep + 1) // 2
        out = out[:head] + "..." + out[len(out) - (keep - head) :]
    return out


def show_path(path) -> str:
    r"""A path for a one-line message: :func:`printable`, at most 200 characters (a file name can hold
    escape sequences).

    >>> print(show_path("run\x1b[2J.json"))
    run\x1b[2J.json
    """
    return printable(os.fspath(path), 200)


def one_line(exc: BaseException, limit: int | None = 500) -> str:
    """``"Type: first line of the message"``, at most ``limit`` characters, for a record or a log line.

    >>> one_line(ValueError("bad shape\\nTraceback ..."))
    'ValueError: bad shape'
    """
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:limit]
