"""Standard error without the profiler's chatter.

Some builds of PyTorch's profiler library print a "USDT: ... profiler_start/stop" line to file
descriptor 2 on every run, cluttering every notebook output and report.
:func:`without_profiler_chatter` captures fd 2 while it runs and passes every other line on.

>>> with without_profiler_chatter():
...     pass
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

__all__ = ["CHATTER", "without_profiler_chatter"]

CHATTER = ("USDT:",)


@contextlib.contextmanager
def without_profiler_chatter():
    """Capture file descriptor 2 while profiling; pass on every line except the start/stop chatter."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (some embedded interpreters): nothing to filter
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            for line in capture.read().decode(errors="replace").splitlines(keepends=True):
                if not line.startswith(CHATTER):
                    sys.stderr.write(line)
