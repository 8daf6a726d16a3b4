"""The busy condition of the benchmarks: one process spinning on a core, started and stopped here.

Both benchmarks measure every ratio twice, on the machine as it is and with this process
keeping one core busy (a test, a notebook, another user: what a shared machine looks like).
The process is bounded twice: it exits by itself after ``seconds``, and it is terminated when
the ``with`` block ends, on errors too.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time


@contextlib.contextmanager
def busy_core(seconds: float):
    """One process spinning on a CPU for at most ``seconds``; stopped when the block ends."""
    code = f"import time\nend = time.monotonic() + {float(seconds)}\nwhile time.monotonic() < end:\n    pass\n"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)  # let it start spinning
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
