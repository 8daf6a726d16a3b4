"""The training text: source files of Python's standard library, read from the running interpreter.

Every CPython ships these pure-Python modules as source, so the corpus needs no download. A
patch version can still change a docstring, so :class:`Corpus` carries a SHA-256 of the bytes
used. The model is byte-level: nothing to tokenise. The last ``val_fraction`` of *each* file is
validation, so both sides are drawn from the same mix of modules.

>>> corpus = load_corpus()
>>> corpus.files[0], len(corpus.files)
('abc.py', 18)
>>> corpus.train.dtype, bool(corpus.val.numel() > 0)
(torch.uint8, True)
"""

from __future__ import annotations

import hashlib
import platform
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import torch

__all__ = ["STDLIB_FILES", "Corpus", "load_corpus"]

# Pure-Python modules present in every CPython 3.x build, heavy on docstrings and prose.
# Kept sorted; changing this list changes every result, so the results files record the hash.
STDLIB_FILES: tuple[str, ...] = (
    "abc.py",
    "bisect.py",
    "calendar.py",
    "contextlib.py",
    "copy.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "fractions.py",
    "functools.py",
    "heapq.py",
    "pprint.py",
    "queue.py",
    "random.py",
    "shlex.py",
    "statistics.py",
    "string.py",
    "textwrap.py",
)


@dataclass(frozen=True)
class Corpus:
    """Byte-level training and validation text (uint8 tensors) with what is needed to reproduce it."""

    train: torch.Tensor = field(repr=False)
    val: torch.Tensor = field(repr=False)
    files: tuple[str, ...]
    python_version: str
    sha256: str
    val_fraction: float

    def describe(self) -> str:
        """One line for a notebook or a log: what was read, how much, and its hash."""
        return (
            f"{len(self.files)} stdlib files of Python {self.python_version}: "
            f"{self.train.numel():,} training bytes, {self.val.numel():,} validation bytes, "
            f"sha256 {self.sha256[:12]}"
        )


def stdlib_dir() -> Path:
    """Directory of the running interpreter's standard library (where ``abc.py`` lives)."""
    return Path(sysconfig.get_paths()["stdlib"])


def load_corpus(val_fraction: float = 0.1, files: tuple[str, ...] = STDLIB_FILES) -> Corpus:
    """Read the stdlib files and split each: its last ``val_fraction`` (in ``(0, 0.5]``) is validation.

    Raises ``FileNotFoundError`` naming a missing file (some distributions strip the sources).

    >>> c = load_corpus(val_fraction=0.2, files=("bisect.py",))
    >>> abs(c.val.numel() / (c.train.numel() + c.val.numel()) - 0.2) < 0.01
    True
    """
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) or not 0 < val_fraction <= 0.5:
        raise ValueError(f"val_fraction must be a number in (0, 0.5], got {val_fraction!r}")
    if isinstance(files, str) or not files or not all(isinstance(f, str) and f for f in files):
        raise ValueError(f"files must be a non-empty tuple of stdlib file names like 'abc.py', got {files!r}")
    root = stdlib_dir()
    digest = hashlib.sha256()
    train_parts: list[bytes] = []
    val_parts: list[bytes] = []
    for name in files:
        path = root / name
        if not path.is_file():
            raise FileNotFoundError(
                f"stdlib file {name!r} not found in {root}: this Python installation does not ship "
                "the standard library as source, which the quality corpus is built from"
            )
        data = path.read_bytes()
        digest.update(name.encode() + b"\0" + data + b"\0")
        cut = len(data) - max(1, int(len(data) * val_fraction))
        train_parts.append(data[:cut])
        val_parts.append(data[cut:])
    return Corpus(
        # bytearray: a writable buffer, so torch does not warn about read-only memory
        train=torch.frombuffer(bytearray(b"".join(train_parts)), dtype=torch.uint8).clone(),
        val=torch.frombuffer(bytearray(b"".join(val_parts)), dtype=torch.uint8).clone(),
        files=tuple(files),
        python_version=platform.python_version(),
        sha256=digest.hexdigest(),
        val_fraction=float(val_fraction),
    )
