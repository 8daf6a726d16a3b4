"""A progress line on stderr, on a terminal once the work has taken ``after`` seconds; cleared at the end.

>>> import io
>>> p = Progress("converting", stream=io.StringIO())
>>> p(1, 2, "fc.weight"); p.close()  # not a terminal: prints nothing
"""

from __future__ import annotations

import sys
import time

from .._common.text import printable

__all__ = ["Progress"]


class Progress:
    """``progress(done, total, name)`` after each weight; :meth:`close` clears the line."""

    def __init__(self, label: str, stream=None, after: float = 2.0):
        self.label, self.stream, self.after = label, stream or sys.stderr, after
        self.start = time.monotonic()
        self.shown = 0
        try:
            self.tty = self.stream.isatty()
        except (AttributeError, ValueError):
            self.tty = False

    def __call__(self, done: int, total: int, name: str) -> None:
        if not self.tty or time.monotonic() - self.start < self.after:
            return
        bar = "#" * (20 * done // max(total, 1))
        line = f"\r{self.label} [{bar:<20}] {done} of {total} weights: {printable(name, 50)}"
        self._write(line.ljust(self.shown))
        self.shown = len(line)

    def close(self) -> None:
        if self.shown:
            self._write("\r" + " " * self.shown + "\r")
            self.shown = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.tty = False
