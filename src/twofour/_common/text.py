"""Strings that came from a file, made safe to print on a terminal.

A checkpoint's tensor names, dtype codes and error texts are chosen by whoever wrote the
file. Printed raw, an ESC sequence clears the screen or retitles the window, a carriage
return or newline forges a table row, a right-to-left override reverses what follows, and a
megabyte-long name floods the terminal. :func:`printable` escapes every character that is not
printable (Python's ``str.isprintable``: control characters, format characters such as the
bidi overrides, line and paragraph separators, unassigned code points) and a backslash, so
the escaped text is unambiguous, and shortens it in the middle, where names differ least.

>>> printable("model\\x1b[2J.weight")
'model\\\\x1b[2J.weight'
>>> printable("a\\nb\\rc\\x00d\\u202ee")
'a\\\\nb\\\\rc\\\\x00d\\\\u202ee'
>>> printable("layers." + "x" * 100 + ".weight", limit=30)
'layers.xxxxxxx...xxxxxx.weight'
"""

from __future__ import annotations

import os

__all__ = ["printable", "show_path"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    if ch.isprintable():
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text, limit: int | None = None) -> str:
    """``text`` (any object: ``str()`` of it) with unprintable characters escaped, at most ``limit`` characters.

    A shortened result keeps the start and the end and puts ``...`` in the middle.
    """
    if not isinstance(text, str):
        text = str(text)
    if limit is not None and len(text) > 4 * limit:  # never escape a megabyte to print 60 characters
        text = text[: 2 * limit] + text[-2 * limit :]
    out = "".join(_escape(ch) for ch in text) if not (text.isprintable() and "\\" not in text) else text
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
