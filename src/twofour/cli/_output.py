"""Where the commands write: outputs checked before any work, written atomically, errors as one line.

An output that is one of the inputs, a directory, a FIFO or a device is refused before the work
starts; the file is written to a temporary file renamed into place (:mod:`twofour._common.atomic`).

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> check_output_file(folder, "--out")
Traceback (most recent call last):
...
twofour.cli.main.UserError: --out ... is a directory; give a file name such as .../results.json
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from .._common.atomic import OutputError, check_output, folder_message, names_folder, write_text
from .._common.text import show_path as show  # a path as it is safe to print in a message
from .main import UserError

__all__ = ["check_output_file", "check_output_dir", "write_output", "saving", "write_error", "show"]


def check_output_file(path, option: str, example: str = "results.json", inputs=(), *,
                      make_folder: bool = False, replace: bool = True) -> Path:
    """``path`` as a Path if a file can be written there, else a :class:`UserError` naming ``option``.

    Refused: one of ``inputs``, an empty path, a missing folder (unless ``make_folder``), an
    existing file with ``replace=False``.
    """
    if os.fspath(path) == "":
        raise UserError(f"{option} is empty; give a file name such as {example}")
    if names_folder(path):  # before Path() drops the slash: `newdir/` names a folder, not a file
        raise UserError(f"{option} {folder_message(path, example)}")
    path = Path(path)
    parent = path.parent
    if not make_folder and not parent.is_dir():
        why = "does not exist" if not os.path.lexists(parent) else "is not a directory"
        raise UserError(f"{option} {show(path)}: the folder {show(parent)} {why}; create it first or give another path")
    try:
        if stat.S_ISDIR(os.stat(path).st_mode):
            raise UserError(f"{option} {show(path)} is a directory; give a file name such as {show(path / example)}")
    except OSError:
        pass
    try:
        check_output(path, inputs)
    except OutputError as exc:
        raise UserError(f"{option} {exc}") from None
    if not replace and os.path.lexists(path):
        raise UserError(f"{option} {show(path)} exists; this command never replaces a file: give a new name "
                        "or remove it first")
    return path


def check_output_dir(path, option: str) -> Path:
    """``path`` as a Path if it is a directory or can be made one, else a :class:`UserError`."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise UserError(f"{option} {show(path)} cannot be inspected ({exc.strerror or exc})") from None
    if not stat.S_ISDIR(mode):
        what = "is a file" if stat.S_ISREG(mode) else "is not a directory (a FIFO, device or socket)"
        raise UserError(f"{option} must be a directory, but {show(path)} {what}")
    return path


def write_output(path, text: str, option: str, inputs=()) -> Path:
    """Write ``text`` to ``path`` atomically (:func:`twofour._common.atomic.write_text`); errors name ``option``."""
    with saving(option, path):
        return write_text(path, text, inputs)


@contextlib.contextmanager
def saving(option: str, path):
    """A refused output (:class:`OutputError`) or a failed write inside it: one UserError naming ``option``."""
    try:
        yield
    except OutputError as exc:
        raise UserError(f"{option} {exc}") from None
    except OSError as exc:
        raise write_error(option, path, exc) from None


def write_error(option: str, path, exc: OSError) -> UserError:
    """The one-line error for a failed write (full disk, permission, vanished folder)."""
    return UserError(f"{option} {show(path)}: cannot write ({exc.strerror or exc}); the previous file, if any, is unchanged")
