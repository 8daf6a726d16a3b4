"""Check a ``torch.save`` zip's storages against its entries before anything is memory-mapped.

``torch.load(mmap=True)`` maps each storage with the length the pickle claims, without
comparing it to the entry: a longer storage reads the bytes that follow (the next entry, the
zip directory) as weights, and one past the end of the file dies of SIGBUS. Here the pickle is
scanned by an unpickler that builds nothing (every class is a stub), and each storage's byte
size must equal the size of its ``data/<key>`` entry, which must lie inside the file.

>>> import io, torch, zipfile
>>> buf = io.BytesIO(); torch.save({"w": torch.zeros(2, 4)}, buf)
>>> storage_sizes(zipfile.ZipFile(buf))
{'0': 32}
"""

from __future__ import annotations

import io
import pickle
import warnings
import zipfile

__all__ = ["StorageMismatch", "storage_sizes", "check_storages"]


class StorageMismatch(ValueError):
    """A storage the pickle declares does not match the zip entry that should hold it (one sentence)."""


class _Stub:
    """Stands for every class and function the pickle names: accepts anything, does nothing."""

    _qualname = ""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Stub()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


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
    import torch

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
    """``{storage key: byte size}`` the archive's pickle declares."""
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


def check_storages(archive: zipfile.ZipFile, file_size: int, read_header) -> None:
    """Raise :class:`StorageMismatch` unless every declared storage has an entry of exactly its size, inside
    the file; ``read_header(offset)`` returns the 30-byte local header of the entry at ``offset``."""
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
        head = read_header(info.header_offset)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise StorageMismatch(f"entry {entry[:80]!r} has no local header where the zip directory says")
        start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        if start + nbytes > file_size:
            raise StorageMismatch(f"entry {entry[:80]!r} ends {start + nbytes - file_size:,} bytes past the end of the file")
