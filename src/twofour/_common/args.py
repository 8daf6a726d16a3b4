"""Argument checks that many modules share, so every message reads the same.

A count, a size or a shape dimension must be a positive ``int``: ``True`` is refused (never what
the caller meant), and so are floats such as ``4.0`` (a silently truncated ``4.7`` is a quiet loss).

Example:
    >>> require_positive_int("M", 16)
    16
    >>> require_positive_int("M", True)
    Traceback (most recent call last):
    ...
    ValueError: M must be a positive int, got True
"""

from __future__ import annotations


def require_positive_int(name: str, value) -> int:
    """``value`` if it is an int >= 1, else ``ValueError('<name> must be a positive int, got <value>')``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value
