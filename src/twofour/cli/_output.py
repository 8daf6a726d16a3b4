"""Where the commands write: output paths checked before any work, write errors as one line.

An ``--out`` that is a directory, a FIFO or a device is refused before a sweep starts (writing
a FIFO would wait for a reader; a directory fails only at the end, after minutes of work), and
a full disk or a vanished folder while writing becomes one line naming the option.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> check_output_file(folder, "--out")
Traceback (most recent call last):
...
twofour.cli.main.UserError: --out ... is a directory; give a file name such as .../results.json
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .._common.text import printable
from .main import UserError

__all__ = ["check_output_file", "check_output_dir", "write_error", "show"]

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (named pipe); writing it would wait for a reader"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)


def show(path) -> str:
    """A path as it is safe to print (escaped, at most 200 characters)."""
    return printable(os.fspath(path), 200)


def _kind(path: Path) -> str | None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror or exc})"
    for test, why in _KINDS:
        if test(mode):
            return why
    return None


def check_output_file(path, option: str, example: str = "results.json") -> Path:
    """``path`` as a Path if a file can be written there, else a :class:`UserError` naming ``option``."""
    path = Path(path)
    why = _kind(path)
    if why == "is a directory":
        raise UserError(f"{option} {show(path)} is a directory; give a file name such as {show(path / example)}")
    if why:
        raise UserError(f"{option} {show(path)} {why}; give the path of a regular file")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise UserError(f"{option} {show(path)}: {show(parent)} is not a directory")
    return path


def check_output_dir(path, option: str) -> Path:
    """``path`` as a Path if it is a directory or can be made one, else a :class:`UserError`."""
    path = Path(path)
    why = _kind(path)
    if why and why != "is a directory":
        raise UserError(f"{option} must be a directory, but {show(path)} {why}")
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} must be a directory, but {show(path)} is a file")
    return path


def write_error(option: str, path, exc: OSError) -> UserError:
    """The one-line error for a failed write (full disk, permission, vanished folder)."""
    return UserError(f"{option} {show(path)}: cannot write ({exc.strerror or exc})")
