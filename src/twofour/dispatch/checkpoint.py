"""Read a checkpoint's weights one tensor at a time, safely.

Two formats are accepted, recognised by their first bytes rather than their file names:

* **safetensors**: opened with ``safetensors.safe_open`` (memory-mapped); shapes and dtypes
  come from the header, and each tensor is read only when asked for, so a checkpoint larger
  than RAM can be audited layer by layer.
* **PyTorch checkpoints** (``torch.save`` zip files, or the older raw-pickle format): loaded
  with ``torch.load(weights_only=True)``, memory-mapped when the file is a zip. The
  restricted unpickler refuses anything that is not plain tensors and containers, so a
  malicious pickle is rejected, never executed.

Every failure (missing file, unknown format, corrupt file, refused pickle) is a
:class:`CheckpointError` with one line that says what is wrong and what would work.

>>> import os, tempfile, torch
>>> from safetensors.torch import save_file
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.safetensors")
>>> save_file({"fc.weight": torch.zeros(4, 8)}, path)
>>> ckpt = open_checkpoint(path)
>>> ckpt.format, ckpt.names(), ckpt.shape("fc.weight")
('safetensors', ['fc.weight'], (4, 8))
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Iterator, Mapping

import torch

__all__ = ["CheckpointError", "Checkpoint", "open_checkpoint", "detect_format", "flatten_state_dict"]

_SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
for _code, _attr in (("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2")):
    if hasattr(torch, _attr):
        _SAFETENSORS_DTYPES[_code] = getattr(torch, _attr)

# A safetensors header is JSON; its length is the first 8 bytes (little endian). Anything
# claiming more than this is not a real header.
_MAX_HEADER = 100 * 1024 * 1024
_FORMATS_HELP = "expected a .safetensors file or a PyTorch checkpoint saved with torch.save (.pt/.pth/.bin)"


class CheckpointError(Exception):
    """A checkpoint could not be read; the message is one line meant for the user."""


def detect_format(path: str | os.PathLike) -> str:
    """``"safetensors"``, ``"torch-zip"`` or ``"torch-pickle"`` from the file's first bytes.

    Raises :class:`CheckpointError` for a missing, unreadable, empty or unknown file.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CheckpointError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CheckpointError(f"{path}: is a directory; pass one checkpoint file ({_FORMATS_HELP})")
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not head:
        raise CheckpointError(f"{path}: the file is empty; {_FORMATS_HELP}")
    if head[:4] == b"PK\x03\x04":
        return "torch-zip"
    if len(head) >= 9:
        header_len = int.from_bytes(head[:8], "little")
        if 0 < header_len <= _MAX_HEADER and head[8:9] == b"{":
            return "safetensors"
    if head[:1] == b"\x80":  # pickle protocol 2+ opcode: torch.save's legacy (non-zip) format
        return "torch-pickle"
    raise CheckpointError(f"{path}: unknown format (first bytes {head[:8]!r}); {_FORMATS_HELP}")


def flatten_state_dict(obj, prefix: str = "") -> tuple[dict, list[tuple[str, str]]]:
    """Tensors of a (possibly nested) checkpoint dict as ``{"a.b.weight": tensor}``.

    Also returns ``(name, why)`` for every entry that is not a tensor (step counters, config
    strings...), so nothing is dropped silently.

    >>> t, skipped = flatten_state_dict({"model": {"fc.weight": torch.zeros(2, 4)}, "epoch": 3})
    >>> list(t), skipped
    (['model.fc.weight'], [('epoch', 'not a tensor (int)')])
    """
    tensors: dict = {}
    skipped: list[tuple[str, str]] = []

    def walk(value, name: str) -> None:
        if isinstance(value, torch.Tensor):
            tensors[name] = value
        elif isinstance(value, Mapping):
            for key, sub in value.items():
                walk(sub, f"{name}.{key}" if name else str(key))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, (torch.Tensor, Mapping)) for v in value):
            for i, sub in enumerate(value):
                walk(sub, f"{name}.{i}" if name else str(i))
        else:
            skipped.append((name or "<top level>", f"not a tensor ({type(value).__name__})"))

    walk(obj, prefix)
    return tensors, skipped


class Checkpoint:
    """An opened checkpoint: names, shapes and dtypes up front, tensors one at a time.

    Use :func:`open_checkpoint`; close it (or use ``with``) to release the memory map.
    """

    def __init__(self, path: str, fmt: str):
        self.path = path
        self.format = fmt
        self.skipped: list[tuple[str, str]] = []
        self._handle = None
        self._tensors: dict = {}
        if fmt == "safetensors":
            self._open_safetensors()
        else:
            self._open_torch()

    # -- opening ---------------------------------------------------------------------------------
    def _open_safetensors(self) -> None:
        from safetensors import safe_open

        try:
            self._handle = safe_open(self.path, framework="pt", device="cpu")
            self._names = list(self._handle.keys())
            self._meta = {}
            for name in self._names:
                sl = self._handle.get_slice(name)
                code = sl.get_dtype()
                self._meta[name] = (tuple(int(d) for d in sl.get_shape()), _SAFETENSORS_DTYPES.get(code, code))
        except Exception as exc:  # safetensors raises its own error type for every kind of damage
            raise CheckpointError(f"{self.path}: corrupt or unreadable safetensors file ({_one_line(exc)})") from None
        self._ranges = _safetensors_ranges(self.path)

    def _open_torch(self) -> None:
        mmap = self.format == "torch-zip"
        if mmap and not zipfile.is_zipfile(self.path):
            raise CheckpointError(f"{self.path}: corrupt PyTorch checkpoint (the zip archive is damaged or truncated)")
        try:
            obj = torch.load(self.path, map_location="cpu", weights_only=True, mmap=mmap)
        except pickle.UnpicklingError as exc:
            raise CheckpointError(
                f"{self.path}: refused: the file contains Python objects that are not plain tensors "
                f"({_refusal(exc)}); twofour loads PyTorch checkpoints with weights_only=True and never runs "
                "code from a file. Re-save the weights as safetensors from a trusted environment"
            ) from None
        except Exception as exc:
            raise CheckpointError(f"{self.path}: corrupt or unreadable PyTorch checkpoint ({_one_line(exc)})") from None
        if isinstance(obj, torch.nn.Module):  # cannot happen with weights_only, kept for clarity
            obj = obj.state_dict()
        self._tensors, self.skipped = flatten_state_dict(obj)
        self._names = list(self._tensors)
        self._meta = {n: (tuple(t.shape), t.dtype) for n, t in self._tensors.items()}

    # -- access ----------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Tensor names, in file order."""
        return list(self._names)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._meta[name][0]

    def dtype(self, name: str):
        """A torch.dtype, or the file's dtype code (str) when torch has no equivalent."""
        return self._meta[name][1]

    def tensor(self, name: str) -> torch.Tensor:
        """Read one tensor (memory-mapped where the format allows)."""
        if name not in self._meta:
            raise KeyError(f"{name!r} is not in {self.path}")
        if self.format == "safetensors":
            try:
                return self._handle.get_tensor(name)
            except Exception as exc:
                raise CheckpointError(f"{self.path}: cannot read tensor {name!r} ({_one_line(exc)})") from None
        return self._tensors[name]

    def prefetch(self, name: str) -> None:
        """Ask the OS to start reading ``name``'s bytes now (safetensors only; a no-op otherwise).

        Auditing one tensor while the disk reads the next overlaps I/O with computation.
        """
        span = getattr(self, "_ranges", {}).get(name)
        if span is None or not hasattr(os, "posix_fadvise"):
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, span[0], span[1], os.POSIX_FADV_WILLNEED)
            finally:
                os.close(fd)
        except OSError:
            pass  # only a hint; reading works without it

    def items(self) -> Iterator[tuple[str, torch.Tensor]]:
        for name in self._names:
            yield name, self.tensor(name)

    def close(self) -> None:
        self._handle = None
        self._tensors = {}

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Open a safetensors file or a PyTorch checkpoint for reading; see the module docstring."""
    path = os.fspath(path)
    return Checkpoint(path, detect_format(path))


def _safetensors_ranges(path: str) -> dict:
    """``{name: (file offset, length)}`` from a safetensors header (already validated by safe_open)."""
    import json

    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
    except (OSError, ValueError):
        return {}
    base = 8 + n
    return {
        name: (base + int(meta["data_offsets"][0]), int(meta["data_offsets"][1]) - int(meta["data_offsets"][0]))
        for name, meta in header.items()
        if name != "__metadata__" and isinstance(meta, dict) and "data_offsets" in meta
    }


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:200] + "...") if len(text) > 200 else (text or type(exc).__name__)


def _refusal(exc: BaseException) -> str:
    """The unpickler's own reason ("unsupported GLOBAL posix.system"), without its advice to disable the check."""
    for line in str(exc).splitlines():
        line = line.strip()
        if "GLOBAL" in line or "Unsupported" in line or "unsupported" in line:
            return line.rstrip(".")
    return "rejected by the weights-only unpickler"
