"""The entry point of the ``twofour`` command line: the subcommands wired together, and how it ends.

One module per subcommand in this package, each with ``add_arguments(parser)`` and
``run(args) -> int``: a new subcommand is one module and one line in ``_SUBCOMMANDS``.

Errors a user can cause end as one line on stderr and a non-zero exit code, never a traceback;
a closed pipe (``| head``) ends quietly with 141, a full disk under stdout with one line and 1.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading

# name -> (module path, one-line help)
_SUBCOMMANDS = {
    "audit": ("twofour.cli.audit", "check every linear weight of a checkpoint: 2:4 valid? packed? which kernel?"),
    "convert": ("twofour.cli.convert", "turn a compressed-tensors 2:4 checkpoint into plain safetensors (dense 2:4 or packed)"),
    "bench": ("twofour.cli.bench", "time dense vs 2:4 matmuls (GPU) or the CPU dense roofline, with provenance"),
    "quality": ("twofour.cli.quality", "train, prune and recover a small language model; write a results file"),
    "calibrate": ("twofour.cli.calibrate", "fit the kernel model to published and measured GEMM timings; report its error"),
    "trace": ("twofour.cli.trace", "read a profiler trace: which kernels ran, GPU idle gaps, eligible share p, the measured funnel"),
}


class UserError(Exception):
    """An error caused by the user's input: printed as one line, exit code 2."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``twofour`` console script; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="twofour",
        description="Tools for NVIDIA 2:4 structured sparsity: half the weights are zero; why did serving not get faster?",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"twofour {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_path, help_text) in _SUBCOMMANDS.items():
        module = importlib.import_module(module_path)
        p = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    # One process: checkpoints are read with pread copies (twofour.checkpoint.file), so a file
    # truncated under the reader is one error line, with no forked worker to outlive a `kill`.
    with _terminated_as_interrupt():
        return _run(args)


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``args[0]``: its number), raised where the command is: every ``finally`` runs."""


@contextlib.contextmanager
def _terminated_as_interrupt():
    """While a command runs, SIGTERM and SIGHUP unwind it like Ctrl-C (temporary outputs removed) and end it
    with 128 + the signal's number (143, 129); a signal already ignored (``nohup``) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Terminated(signum)

    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _run(args) -> int:
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, not at interpreter exit
        return code
    except UserError as exc:
        _say(f"twofour {args.command}: error: {exc}")
        return 2
    except _Terminated as exc:
        name = signal.Signals(exc.args[0]).name
        _say(f"twofour {args.command}: terminated ({name}); nothing half-written was left behind")
        return 128 + exc.args[0]
    except KeyboardInterrupt:
        _say(f"twofour {args.command}: interrupted")
        return 130
    except BrokenPipeError:
        _silence_stdout()  # the reader has gone: nothing to say, and nobody to say it to
        return 141
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        _silence_stdout()
        _say(f"twofour {args.command}: error: cannot write output ({exc.strerror})")
        return 1


def _say(line: str) -> None:
    """One line on stderr, if stderr is still there."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass

