"""Writers never destroy: every file the toolkit writes goes through :func:`write_text`.

* The output is refused when it is one of the inputs (same device and inode, through symlinks
  and hard links: ``twofour audit m.safetensors --json m.safetensors`` cannot destroy the checkpoint).
* It is refused when it exists and is not a regular file (a FIFO would block forever, a device
  or socket would have effects), checked before anything is opened.
* The text goes to a temporary file in the same directory, renamed into place only when
  complete, so a failed write leaves the previous file as it was. A symlinked output is written
  through: its target is replaced, the link stays.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> src = d / "model.bin"; _ = src.write_bytes(b"weights")
    >>> write_text(d / "report.json", "{}", inputs=[src]).name
    'report.json'
    >>> write_text(src, "{}", inputs=[src])
    Traceback (most recent call last):
    ...
    twofour._common.atomic.OutputError: ...model.bin is an input of this command (the same file); writing the output there would destroy it: give another path
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .text import show_path as _show

__all__ = ["OutputError", "check_output", "names_folder", "write_text", "write_with"]

_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "is a FIFO (named pipe); writing it would wait for a reader"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)


class OutputError(ValueError):
    """An output path that must not be written (an input, not a regular file); one sentence."""


def names_folder(path) -> bool:
    """A path written with a trailing separator (``newdir/``) names a folder; ``Path`` would drop the slash."""
    text = os.fspath(path)
    return isinstance(text, str) and text.endswith((os.sep, "/")) and not os.path.isdir(text)


def folder_message(path, example: str = "out") -> str:
    return (f"{_show(path)} ends in '/', so it names a folder, not a file; give a file name such as "
            f"{_show(os.path.join(os.fspath(path), example))}")


def check_output(path, inputs=(), *, follow_symlinks: bool = True) -> Path:
    """``path`` (symlinks resolved) if a file may be written there, else :class:`OutputError`: refused as the
    module doc says, and when its folder is not a folder or it ends in ``/`` (a missing folder is left to
    the writer). With ``follow_symlinks=False`` (files inside an output folder) a symlink at ``path`` is not
    followed: the writer replaces the link itself with a regular file.
    """
    if names_folder(path):
        raise OutputError(folder_message(path))
    path = Path(path)
    if not follow_symlinks and os.path.islink(path):
        real = Path(os.path.realpath(path.parent)) / path.name
        if not real.parent.is_dir():
            raise OutputError(f"{_show(path)}: {_show(real.parent)} is not a directory")
        return real
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{_show(path)} cannot be inspected ({exc.strerror or exc})") from None
    if st is not None:
        for test, why in _KINDS:
            if test(st.st_mode):
                raise OutputError(f"{_show(path)} {why}; give the path of a regular file")
        for src in inputs:
            try:
                same = src is not None and os.path.samestat(os.stat(src), st)
            except (OSError, ValueError):
                same = False
            if same:
                raise OutputError(f"{_show(path)} is an input of this command (the same file); writing the output "
                                  "there would destroy it: give another path")
    real = Path(os.path.realpath(path))
    if real.parent.exists() and not real.parent.is_dir():
        raise OutputError(f"{_show(path)}: {_show(real.parent)} is not a directory")
    return real


def write_with(path, fill, inputs=(), *, follow_symlinks: bool = True) -> Path:
    """Write ``path`` atomically after :func:`check_output`: ``fill(f)`` writes the content to the open binary
    file ``f`` (streamed: a large output never has to be in memory at once); returns ``path`` as given.

    The temporary file is beside the target (the rename cannot cross file systems) and flushed to
    disk before it replaces it. A new file gets 0666 less the umask; a replaced one keeps its mode.
    """
    real = check_output(path, inputs, follow_symlinks=follow_symlinks)
    try:
        st = os.lstat(real)
        mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    except FileNotFoundError:
        mode = None
    tmp = real.parent / f".{real.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        check_output(path, inputs, follow_symlinks=follow_symlinks)  # again: the target may have changed during a long run
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return Path(path)


def write_text(path, text: str, inputs=(), encoding: str = "utf-8", *, follow_symlinks: bool = True) -> Path:
    """:func:`write_with` of ``text`` encoded (UTF-8 by default)."""
    data = text.encode(encoding)
    return write_with(path, lambda f: f.write(data), inputs, follow_symlinks=follow_symlinks)
