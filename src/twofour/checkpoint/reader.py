"""One way in: :func:`open` any checkpoint, get a :class:`Reader`.

A Hugging Face model folder (compressed-tensors included), a ``model.safetensors.index.json``,
one ``.safetensors`` file or a ``torch.save`` file (recognised by its first bytes): :func:`open`
returns a :class:`Reader` of each: one logical ``<layer>.weight`` per stored weight (a bitmask's
three parts are one weight), its dense shape and dtype, and the weight read only when asked
for. The audit, ``convert``, ``bench --checkpoint`` and the site read checkpoints only so.

>>> import os, tempfile, torch
>>> from safetensors.torch import save_file
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.safetensors")
>>> save_file({"fc.weight": torch.zeros(4, 8)}, path)
>>> with open(path) as r:
...     r.names(), r.shape("fc.weight"), r.stored("fc.weight").form, isinstance(r, Reader)
(['fc.weight'], (4, 8), 'dense', True)
"""

from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

import torch

from .compressed import CompressionConfig, Stored, StoredView, parse_config
from .file import Checkpoint, detect_format, open_checkpoint
from .folder import ModelFiles, open_model

__all__ = ["Reader", "open", "as_reader"]

@runtime_checkable
class Reader(Protocol):
    """What every opened checkpoint offers (implemented by :class:`~twofour.checkpoint.compressed.StoredView`).

    ``format`` is ``"safetensors"``, ``"torch-zip"`` or ``"torch-pickle"``; ``config`` the parsed
    ``config.json`` (or None) and ``ct`` its compressed-tensors part (or None); ``notes`` what a
    report's reader should know, ``skipped`` the ``(name, why)`` of tensors that are not weights.
    """

    path: str
    format: str
    config: dict | None
    ct: CompressionConfig | None
    notes: list[str]
    skipped: list[tuple[str, str]]

    def names(self) -> list[str]:
        """Logical tensor names, in file order."""

    def shape(self, name: str) -> tuple[int, ...]:
        """The dense shape."""

    def dtype(self, name: str):
        """A ``torch.dtype``, or a string when torch has none (``"int4 (marlin-24)"``, a file's dtype code)."""

    def stored(self, name: str) -> Stored:
        """How ``name`` is stored: its form, the tensors holding it, their bytes on disk, its scales."""

    def nbytes(self, name: str) -> int:
        """Bytes of ``name`` on disk (0 when the format does not say)."""

    def prefetch(self, name: str) -> None:
        """Ask the OS to start reading ``name`` now (a hint)."""

    def tensor(self, name: str) -> torch.Tensor:
        """The dense weight (rebuilt and checked when stored compressed)."""

    def structure(self, name: str):
        """``(groups of four along K, groups breaking 2:4)`` when the stored form alone decides it
        (a bitmask: no values read), else None (read :meth:`tensor` and check it)."""

    def transposed(self, name: str) -> bool:
        """True for a weight stored [in_features, out_features] (Hugging Face ``Conv1D``)."""

    def raw(self, name: str) -> torch.Tensor:
        """A tensor of the files as stored (a scale, one part of a compressed weight)."""

    def has_raw(self, name: str) -> bool:
        """Whether the files hold a tensor named ``name`` as stored."""

    def close(self) -> None:
        """Release the files."""


def as_reader(files: Checkpoint | ModelFiles) -> StoredView:
    """A :class:`Reader` over files already opened with ``open_checkpoint`` or ``open_model``."""
    return StoredView(files, parse_config(files.config))


def open(path: str | os.PathLike) -> StoredView:  # noqa: A001 - the room's one way in
    """Open a model folder, a shard index, a safetensors file or a ``torch.save`` file as a :class:`Reader`;
    :class:`~twofour.checkpoint.file.CheckpointError` with one line for anything it cannot read."""
    path = os.fspath(path)
    if os.path.isdir(path) or path.endswith(".json") or detect_format(path) == "safetensors":
        files = open_model(path)
    else:
        files = open_checkpoint(path)
    try:
        return as_reader(files)
    except BaseException:
        files.close()
        raise
