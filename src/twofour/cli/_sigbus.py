"""A checkpoint that changes while it is read ends with one line, not a silent death by SIGBUS.

Checkpoints are memory-mapped; when another process truncates the file under the map, the
next read of a page past the new end raises SIGBUS, which no Python handler can catch (the
faulting instruction would run again). So ``twofour audit`` run as a program does its work in a
forked child and the parent only waits: a child killed by SIGBUS becomes the line below and
exit code 2; any other end is passed on as it was. Between tensors the reader also notices a
file whose size or time changed (:meth:`twofour.dispatch.checkpoint.Checkpoint.tensor`).

The reader itself does not touch mapped pages: it copies each tensor's bytes with ``pread``
(:mod:`twofour.dispatch._mapped`), so a library call (``twofour.cli.main([...])``, which runs in
the caller's process, unguarded) gets the same one line as a ``CheckpointError``. The guard is
for what is read through a map: sparse and quantized tensors, and torch zips on systems without
``/proc/self/maps``.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback


def changed_message(command: str) -> str:
    return (f"twofour {command}: error: the input file changed while it was read (it shrank under its memory map: "
            "SIGBUS); no report: run it on a copy that nothing is writing to")


def run_guarded(fn, command: str) -> int:
    """``fn()`` (returning an exit code) in a forked child; the child's SIGBUS becomes one line and exit code 2."""
    if not (hasattr(os, "fork") and hasattr(signal, "SIGBUS")):
        return fn()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    pid = os.fork()
    if pid == 0:  # the child: the whole command, then out without the parent's atexit handlers
        code = 1
        try:
            code = fn()
        except SystemExit as exc:  # as the interpreter ends it: None is success, a message is printed
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(code & 0xFF if isinstance(code, int) else 1)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the child, which says so
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGBUS:
            try:
                print(changed_message(command), file=sys.stderr)
            except OSError:
                pass
            return 2
        return 128 + sig
    return os.WEXITSTATUS(status)
