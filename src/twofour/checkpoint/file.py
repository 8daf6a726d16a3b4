"""Read a checkpoint's weights one tensor at a time, safely.

Two formats are accepted, recognised by their first bytes rather than their file names:

* **safetensors**: shapes and dtypes come from the header, and each tensor is read only when
  asked for, so a checkpoint larger than RAM can be audited layer by layer.
* **PyTorch checkpoints** (``torch.save`` zip files, or the older raw-pickle format): loaded
  with ``torch.load(weights_only=True)``, so a malicious pickle is rejected, never executed.

A tensor's bytes are read with ``pread``, never through a memory map: a mapped file that another
process truncates kills the reader with SIGBUS (no Python handler can catch it), while a short
``pread`` becomes one error line. A zip is mapped only to learn where its storages lie
(:func:`file_offsets`; ``torch.load(mmap=True)`` touches no page).

Only a regular file is opened (a FIFO would wait forever for a writer), once: every later read
goes through that open file, so it cannot be swapped between the check and the read. A zip with
compressed entries is refused (it can unpack to far more than the file), and the loaded
containers are walked with bounds (:mod:`._flatten`).

Every failure is a :class:`CheckpointError`: one line, what is wrong and what would work.

>>> import os, tempfile, torch
>>> from safetensors.torch import save_file
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.safetensors")
>>> save_file({"fc.weight": torch.zeros(4, 8)}, path)
>>> ckpt = open_checkpoint(path)
>>> ckpt.format, ckpt.names(), ckpt.shape("fc.weight")
('safetensors', ['fc.weight'], (4, 8))
"""

from __future__ import annotations

import bisect
import io
import json
import math
import os
import pickle
import stat
import sys
import warnings
import weakref
import zipfile

import torch

from .._common.text import printable, show_path as _show
from ._flatten import FlattenError, flatten_state_dict

__all__ = ["CheckpointError", "Checkpoint", "open_checkpoint", "detect_format", "flatten_state_dict"]

# safetensors' dtype codes that torch has (an older torch lacks float8 and the wide unsigned ints).
SAFETENSORS_DTYPES = {code: getattr(torch, name) for code, name in (
    ("F64", "float64"), ("F32", "float32"), ("F16", "float16"), ("BF16", "bfloat16"), ("I64", "int64"),
    ("I32", "int32"), ("I16", "int16"), ("I8", "int8"), ("U8", "uint8"), ("BOOL", "bool"),
    ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"), ("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
) if hasattr(torch, name)}

# A safetensors header is JSON; its length is the first 8 bytes (little endian). Anything
# claiming more than this is not a real header.
_MAX_HEADER = 100 * 1024 * 1024
_FORMATS_HELP = "expected a .safetensors file or a PyTorch checkpoint saved with torch.save (.pt/.pth/.bin)"


class CheckpointError(Exception):
    """A checkpoint could not be read; the message is one line meant for the user."""


_CHUNK = 1 << 30  # one pread reads at most this much (Linux caps a read near 2 GiB)


class ShortRead(OSError):
    """The file held fewer bytes than asked for: it shrank (or was replaced) since it was opened."""


def read_exact(fd: int, offset: int, nbytes: int) -> torch.Tensor:
    """``nbytes`` bytes of the open file ``fd`` from ``offset``, as a new uint8 tensor; :class:`ShortRead` when fewer.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "bytes.bin")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(bytes(range(16)))
    >>> fd = os.open(path, os.O_RDONLY)
    >>> read_exact(fd, 4, 4).tolist()
    [4, 5, 6, 7]
    >>> read_exact(fd, 12, 8)
    Traceback (most recent call last):
        ...
    twofour.checkpoint.file.ShortRead: 4 of 8 bytes at offset 12: the file ends there
    >>> os.close(fd)
    """
    out = torch.empty(nbytes, dtype=torch.uint8)
    view = memoryview(out.numpy()).cast("B") if nbytes else memoryview(b"")
    done = 0
    while done < nbytes:
        n = os.preadv(fd, [view[done:done + _CHUNK]], offset + done)
        if n <= 0:
            raise ShortRead(f"{done:,} of {nbytes:,} bytes at offset {offset:,}: the file ends there")
        done += n
    return out


def view_span(t: torch.Tensor) -> tuple[int, int]:
    """(first storage element, how many elements) a strided view reads: its extent in its storage.

    >>> base = torch.zeros(10, 8)
    >>> view_span(base[2:4, 1:3]), view_span(torch.ones(4).expand(10**8, 4)), view_span(base[:0])
    ((17, 10), (0, 4), (0, 0))
    """
    if t.numel() == 0:
        return 0, 0
    return t.storage_offset(), 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def file_offsets(fd: int, addresses) -> dict:
    """``{address: offset in the file}`` for each address in this process's memory map of ``fd``'s file,
    from ``/proc/self/maps`` (Linux; elsewhere empty), which names files by device and inode (or path)."""
    st = os.fstat(fd)
    ident = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        own_path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        own_path = None
    spans = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) < 5 or ":" not in parts[3]:
                    continue
                major, minor = (int(x, 16) for x in parts[3].split(":", 1))
                inode = int(parts[4])
                path = parts[5].rstrip("\n") if len(parts) > 5 else ""
                if (major, minor, inode) != ident and not (inode == st.st_ino and own_path and path == own_path):
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-", 1))
                spans.append((lo, hi, int(parts[2], 16)))
    except (OSError, ValueError):
        return {}
    spans.sort()
    starts = [s[0] for s in spans]
    out = {}
    for address in addresses:
        k = bisect.bisect_right(starts, address) - 1
        if k >= 0 and address < spans[k][1]:
            out[address] = address - spans[k][0] + spans[k][2]
    return out


# The pickle inside a torch zip names tensors and their storages; real ones are kilobytes to a
# few megabytes. A larger one is not a checkpoint torch wrote.
_MAX_PICKLE = 256 * 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "is a directory; pass one checkpoint file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a file; reading it would wait for a writer"),
    (stat.S_ISCHR, "is a character device, not a file"),
    (stat.S_ISBLK, "is a block device, not a file"),
    (stat.S_ISSOCK, "is a socket, not a file"),
)


def _not_regular(mode: int) -> str | None:
    default = None if stat.S_ISREG(mode) else "is not a regular file"
    return next((why for test, why in _KINDS if test(mode)), default)


def stat_or_error(path: str, missing: str = "no such file", error: type[CheckpointError] = CheckpointError):
    """``os.stat(path)``; ``error`` with one line when it fails (``missing`` when nothing is at ``path``)."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise error(f"{_show(path)}: {missing}") from None
    except OSError as exc:
        raise error(f"{_show(path)}: cannot be read ({exc.strerror or exc})") from None


def open_regular(path: str) -> int:
    """An fd open for reading on the regular file ``path``, checked before opening (opening some devices
    has effects) and again after; :class:`CheckpointError` otherwise."""
    why = _not_regular(stat_or_error(path).st_mode)
    if why:
        raise CheckpointError(f"{_show(path)}: {why} ({_FORMATS_HELP})")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CheckpointError(f"{_show(path)}: cannot be read ({exc.strerror or exc})") from None
    why = _not_regular(os.fstat(fd).st_mode)
    if why:
        os.close(fd)
        raise CheckpointError(f"{_show(path)}: {why} ({_FORMATS_HELP})")
    return fd


def _format_of(fd: int, path: str) -> str:
    """The format the open file's first bytes name; :class:`CheckpointError` when they name none."""
    try:
        head = os.pread(fd, 16, 0)
    except OSError as exc:
        raise CheckpointError(f"{_show(path)}: cannot be read ({exc.strerror or exc})") from None
    if not head:
        raise CheckpointError(f"{_show(path)}: the file is empty; {_FORMATS_HELP}")
    if head[:4] == b"PK\x03\x04":
        return "torch-zip"
    if len(head) >= 9 and 0 < int.from_bytes(head[:8], "little") <= _MAX_HEADER:
        if head[8:9] == b"{":
            return "safetensors"
        if head[8:12] == b"\xef\xbb\xbf{":
            raise CheckpointError(
                f"{_show(path)}: corrupt safetensors file: its JSON header starts with a UTF-8 byte-order mark, which "
                "safetensors does not allow; re-save it with safetensors"
            )
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode: torch.save's legacy (non-zip) format
        return "torch-pickle"
    raise CheckpointError(f"{_show(path)}: unknown format (first bytes {head[:8]!r}); {_FORMATS_HELP}")


def detect_format(path: str | os.PathLike) -> str:
    """``"safetensors"``, ``"torch-zip"`` or ``"torch-pickle"`` from the file's first bytes;
    :class:`CheckpointError` for a missing, unreadable, empty, unknown or non-regular file."""
    path = os.fspath(path)
    fd = open_regular(path)
    try:
        return _format_of(fd, path)
    finally:
        os.close(fd)


class StorageMismatch(ValueError):
    """A storage the pickle declares does not match the zip entry that should hold it (one sentence)."""


class _Stub:
    """Stands for every class and function the pickle names: accepts anything, does nothing."""

    _qualname = ""

    def _ignore(self, *args, **kwargs) -> None:
        pass

    # Building an object (REDUCE, BUILD, SETITEMS, APPENDS) calls these: each one does nothing.
    __init__ = __setstate__ = __setitem__ = append = extend = _ignore

    def __call__(self, *args, **kwargs):
        return _Stub()


class _Scanner(pickle.Unpickler):
    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data))
        self.storages: list[tuple] = []
        self._classes: dict = {}

    def find_class(self, module, name):
        key = f"{module}.{name}"
        cls = self._classes.get(key)
        if cls is None:
            cls = self._classes[key] = type("Stub", (_Stub,), {"_qualname": key})
        return cls

    def persistent_load(self, pid):
        self.storages.append(pid)
        return _Stub()


def _element_size(storage_type) -> int:
    """Bytes per element of a storage class named in the pickle (``torch.HalfStorage`` ...)."""
    name = getattr(storage_type, "_qualname", "")
    module, _, cls = name.rpartition(".")
    if name in ("torch.storage.UntypedStorage", "torch.UntypedStorage"):
        return 1
    typed = getattr(torch, cls, None) if module == "torch" and cls.endswith("Storage") else None
    with warnings.catch_warnings():  # "TypedStorage is deprecated": reading its dtype is all we do
        warnings.simplefilter("ignore")
        dtype = getattr(typed, "dtype", None)
    if not isinstance(dtype, torch.dtype):
        raise StorageMismatch(f"the pickle names the storage type {name[:80]!r}, which is not one torch.save writes")
    return dtype.itemsize


def _pickle_name(archive: zipfile.ZipFile) -> str:
    name = next((n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"), None)
    if name is None:
        raise StorageMismatch("no data.pkl in the zip: not a torch.save checkpoint")
    return name


def storage_sizes(archive: zipfile.ZipFile) -> dict:
    """``{storage key: byte size}`` the archive's pickle declares, read by an unpickler that builds nothing
    (every class it names is a stub).

    >>> buf = io.BytesIO(); torch.save({"w": torch.zeros(2, 4)}, buf)
    >>> storage_sizes(zipfile.ZipFile(buf))
    {'0': 32}
    """
    scanner = _Scanner(archive.read(_pickle_name(archive)))
    try:
        scanner.load()
    except Exception as exc:  # a damaged pickle: torch.load would fail on it too, with its own words
        raise StorageMismatch(f"its pickle cannot be read ({type(exc).__name__}: {str(exc)[:80]})") from None
    sizes: dict = {}
    for pid in scanner.storages:
        if not (type(pid) is tuple and len(pid) == 5 and pid[0] == "storage"):
            raise StorageMismatch(f"its pickle refers to a persistent object {str(pid)[:60]!r} that is not a storage")
        _, storage_type, key, _, numel = pid
        if type(key) is not str or type(numel) is not int or numel < 0:
            raise StorageMismatch(f"storage {str(key)[:40]!r} declares {str(numel)[:40]} elements")
        nbytes = numel * _element_size(storage_type)
        if sizes.setdefault(key, nbytes) != nbytes:
            raise StorageMismatch(f"storage {key[:40]!r} is declared twice with different sizes")
    return sizes


def check_storages(archive: zipfile.ZipFile, fd: int) -> None:
    """Raise :class:`StorageMismatch` unless every declared storage has an entry of exactly its size inside
    the open file ``fd``: ``torch.load(mmap=True)`` maps each storage with the length the pickle claims, so
    a longer one would read the next entry or the zip directory as weights, or die of SIGBUS past the end."""
    file_size = os.fstat(fd).st_size
    prefix = _pickle_name(archive)[: -len("data.pkl")]
    for key, nbytes in storage_sizes(archive).items():
        entry = f"{prefix}data/{key}"
        try:
            info = archive.getinfo(entry)
        except KeyError:
            raise StorageMismatch(f"storage {key[:40]!r} has no entry {entry[:80]!r}") from None
        if info.file_size != nbytes:
            raise StorageMismatch(
                f"storage {key[:40]!r} declares {nbytes:,} bytes but its entry {entry[:80]!r} holds {info.file_size:,}: "
                "mapping it would read bytes that are not the tensor's")
        head = os.pread(fd, 30, info.header_offset)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise StorageMismatch(f"entry {entry[:80]!r} has no local header where the zip directory says")
        start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        if start + nbytes > file_size:
            raise StorageMismatch(f"entry {entry[:80]!r} ends {start + nbytes - file_size:,} bytes past the end of the file")


def _check_zip(read_path: str, fd: int, path: str) -> str:
    """The byte order of a torch zip's storages (``"little"`` when it does not say); refused when damaged,
    compressed, its pickle implausibly large, or its storages do not match their entries."""
    try:
        with zipfile.ZipFile(read_path) as archive:
            for info in archive.infolist():
                if info.compress_type != zipfile.ZIP_STORED:
                    raise CheckpointError(
                        f"{_show(path)}: refused: entry {printable(info.filename, 80)!r} is compressed; torch.save "
                        "stores entries uncompressed, and a compressed entry can unpack to far more than the file. "
                        "Re-save it with torch.save or as safetensors"
                    )
                if info.filename.endswith(".pkl") and info.file_size > _MAX_PICKLE:
                    raise CheckpointError(
                        f"{_show(path)}: refused: its pickle {printable(info.filename, 80)!r} is {info.file_size:,} "
                        f"bytes (more than {_MAX_PICKLE:,}); a checkpoint's pickle only names its tensors"
                    )
            check_storages(archive, fd)
            marks = [n for n in archive.namelist() if n == "byteorder" or n.endswith("/byteorder")]
            order = archive.read(marks[0]).decode("ascii", "replace") if marks else "little"
    except StorageMismatch as exc:
        raise CheckpointError(f"{_show(path)}: corrupt PyTorch checkpoint ({printable(str(exc), 240)}); not read") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise CheckpointError(f"{_show(path)}: corrupt PyTorch checkpoint (the zip archive is damaged or truncated)") from None
    return order


class Closing:
    """``with`` support for the checkpoint readers: ``__exit__`` calls the subclass's ``close``."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Checkpoint(Closing):
    """An opened checkpoint (:func:`open_checkpoint`): names, shapes, dtypes up front, tensors one at a time;
    ``skipped`` lists ``(name, why)`` of entries that are not tensors, ``notes`` the names that collided."""

    config = None  # a lone file has no config.json

    def __init__(self, path: str, fmt: str, fd: int | None = None):
        self.path = path
        self.format = fmt
        self.skipped: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self._handle = None
        self._tensors: dict = {}
        self._offsets: dict = {}  # name -> file offset of its storage (mapped tensors, read with pread)
        self._ranges: dict = {}  # name -> (file offset, length) of its data (safetensors)
        self._swap = False  # storages stored in the other byte order (torch.load swapped the mapped copy)
        self._fd = open_regular(path) if fd is None else fd
        self._closer = weakref.finalize(self, os.close, self._fd)
        self._stamp = _stamp(self._fd)
        # Every read goes through the file opened (and checked) above, never the path again.
        proc = f"/proc/self/fd/{self._fd}"
        self._read_path = proc if os.path.exists(proc) else path
        try:
            if fmt == "safetensors":
                self._open_safetensors()
            else:
                self._open_torch()
        except BaseException:
            self.close()
            raise

    def _open_safetensors(self) -> None:
        from safetensors import safe_open

        try:
            self._handle = safe_open(self._read_path, framework="pt", device="cpu")
            self._meta = {}
            for name in self._handle.keys():
                sl = self._handle.get_slice(name)
                code = sl.get_dtype()
                self._meta[name] = (tuple(int(d) for d in sl.get_shape()), SAFETENSORS_DTYPES.get(code, code))
        except Exception as exc:  # safetensors raises its own error type for every kind of damage
            raise CheckpointError(f"{_show(self.path)}: corrupt or unreadable safetensors file ({_one_line(exc)})") from None
        self._ranges = _safetensors_ranges(self._fd)
        # safe_open lists names sorted; file order is the order of the tensors' data in the file.
        # (The safetensors writer itself sorts by dtype alignment, then name: l0, l1, l10, l2 ...)
        end = len(self._meta)
        self._meta = dict(sorted(self._meta.items(), key=lambda item: self._ranges.get(item[0], (end,))[0]))

    def _open_torch(self) -> None:
        mmap = self.format == "torch-zip"
        if mmap:
            self._swap = _check_zip(self._read_path, self._fd, self.path) != sys.byteorder
        try:
            with warnings.catch_warnings():  # e.g. "sparse CSR support is in beta": the audit says what it skips
                warnings.simplefilter("ignore")
                obj = torch.load(self._read_path, map_location="cpu", weights_only=True, mmap=mmap)
        except pickle.UnpicklingError as exc:
            raise CheckpointError(
                f"{_show(self.path)}: refused: the file contains Python objects that are not plain tensors "
                f"({_refusal(exc)}); twofour loads PyTorch checkpoints with weights_only=True and never runs "
                "code from a file. Re-save the weights as safetensors from a trusted environment"
            ) from None
        except Exception as exc:  # RecursionError and MemoryError included: one line, never a traceback
            raise CheckpointError(f"{_show(self.path)}: corrupt or unreadable PyTorch checkpoint ({_one_line(exc)})") from None
        try:
            self._tensors, self.skipped, self.notes = flatten_state_dict(obj)
        except FlattenError as exc:
            raise CheckpointError(f"{_show(self.path)}: refused: {exc}") from None
        for name in [n for n, t in self._tensors.items() if getattr(t, "is_nested", False)]:
            # a nested (jagged) tensor has no single shape (asking for one raises inside torch)
            del self._tensors[name]
            self.skipped.append((name, "a nested (jagged) tensor, not a weight matrix"))
        self._meta = {n: (tuple(t.shape), t.dtype) for n, t in self._tensors.items()}
        if mmap:
            self._offsets = self._storage_offsets()

    def _storage_offsets(self) -> dict:
        """``{name: file offset of its storage}`` for the plain tensors mapped from the file (asking for a
        storage's address touches none of its pages); one left out is handed out as loaded."""
        addresses = {name: t.untyped_storage().data_ptr() for name, t in self._tensors.items()
                     if t.layout == torch.strided and not t.is_quantized and t.device.type == "cpu"
                     and t.untyped_storage().nbytes()}
        where = file_offsets(self._fd, set(addresses.values()))
        return {name: where[a] for name, a in addresses.items() if a in where}

    def names(self) -> list[str]:
        """Tensor names in file order (for safetensors the order of their data: ``l10`` before ``l2``)."""
        return list(self._meta)

    def __contains__(self, name: str) -> bool:
        return name in self._meta

    def shape(self, name: str) -> tuple[int, ...]:
        return self._meta[name][0]

    def dtype(self, name: str):
        """A torch.dtype, or the file's dtype code (str) when torch has no equivalent."""
        return self._meta[name][1]

    def tensor(self, name: str) -> torch.Tensor:
        """Read one tensor: its bytes copied from the file with ``pread`` (see the module doc), never mapped."""
        if name not in self._meta:
            raise KeyError(f"{printable(name, 200)!r} is not in {_show(self.path)}")
        if _stamp(self._fd) != self._stamp:
            raise CheckpointError(f"{_show(self.path)}: the file changed while it was read (its size or time is not what "
                                  "it was when opened); no report: read a copy that nothing is writing to")
        if self.format == "safetensors":
            return self._safetensors_tensor(name)
        t = self._tensors[name]
        where = self._offsets.get(name)
        if where is None:  # in memory already (the raw-pickle format), empty, or not a plain tensor
            return t
        first, count = view_span(t)
        size = t.element_size()
        out = torch.empty(0, dtype=t.dtype)
        out.set_(self._read(where + first * size, count * size, name).untyped_storage(), 0, t.shape, t.stride())
        if self._swap:
            out.untyped_storage().byteswap(t.dtype)
        return out

    def _safetensors_tensor(self, name: str) -> torch.Tensor:
        shape, dtype = self._meta[name]
        span = self._ranges.get(name)
        if span is None or not isinstance(dtype, torch.dtype) or sys.byteorder != "little":
            try:  # a dtype torch lacks (safetensors names the error), or a big-endian host: the library's own read
                return self._handle.get_tensor(name)
            except Exception as exc:
                raise CheckpointError(
                    f"{_show(self.path)}: cannot read tensor {printable(name, 200)!r} ({_one_line(exc)})"
                ) from None
        if math.prod(shape) * dtype.itemsize != span[1]:  # safe_open checks this; a second look costs nothing
            raise CheckpointError(f"{_show(self.path)}: corrupt safetensors file: tensor {printable(name, 200)!r} has "
                                  f"{span[1]:,} bytes for shape {list(shape)} of {dtype}")
        return self._read(span[0], span[1], name).view(dtype).reshape(shape)

    def _read(self, offset: int, nbytes: int, name: str) -> torch.Tensor:
        try:
            return read_exact(self._fd, offset, nbytes)
        except OSError as exc:  # ShortRead included: the file shrank after the check above
            raise CheckpointError(
                f"{_show(self.path)}: the file changed while it was read (tensor {printable(name, 200)!r}: "
                f"{_one_line(exc)}); no report: read a copy that nothing is writing to") from None

    def nbytes(self, name: str) -> int:
        """Bytes of ``name``'s data in the file (0 when the format does not say)."""
        return self._ranges.get(name, (0, 0))[1]

    def prefetch(self, name: str) -> None:
        """Ask the OS to start reading ``name``'s bytes now (safetensors only), to overlap I/O with the audit."""
        span = self._ranges.get(name)
        if span is None or not hasattr(os, "posix_fadvise") or not self._closer.alive:
            return
        try:
            os.posix_fadvise(self._fd, span[0], span[1], os.POSIX_FADV_WILLNEED)
        except OSError:
            pass  # only a hint; reading works without it

    def close(self) -> None:
        self._handle = None
        self._tensors = {}
        self._closer()  # closes the file once, whoever calls first


def _stamp(fd: int) -> tuple[int, int]:
    """(size, modification time in ns) of the open file: what changes when it is rewritten or truncated."""
    st = os.fstat(fd)
    return st.st_size, st.st_mtime_ns


def open_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Open a safetensors file or a PyTorch checkpoint for reading; see the module docstring."""
    path = os.fspath(path)
    fd = open_regular(path)
    try:
        fmt = _format_of(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return Checkpoint(path, fmt, fd=fd)


def _safetensors_ranges(fd: int) -> dict:
    """``{name: (file offset, length)}`` from the open file's safetensors header (validated by safe_open)."""
    try:
        n = int.from_bytes(os.pread(fd, 8, 0), "little")
        header = json.loads(os.pread(fd, n, 8))
    except (OSError, ValueError):
        return {}
    base = 8 + n
    return {
        name: (base + int(meta["data_offsets"][0]), int(meta["data_offsets"][1]) - int(meta["data_offsets"][0]))
        for name, meta in header.items()
        if name != "__metadata__" and isinstance(meta, dict) and "data_offsets" in meta
    }


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line, escaped and at most 200 characters (it may quote the file)."""
    text = " ".join(str(exc).split())
    return printable(text, 200) if text else type(exc).__name__


def _refusal(exc: BaseException) -> str:
    """The unpickler's own reason ("unsupported GLOBAL posix.system"), without its advice to disable the check."""
    lines = (line.strip() for line in str(exc).splitlines())
    return next((printable(line.rstrip("."), 200) for line in lines
                 if "GLOBAL" in line or "Unsupported" in line or "unsupported" in line),
                "rejected by the weights-only unpickler")
