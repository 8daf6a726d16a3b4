"""One group of a 2:4 weight taken apart, for teaching: values, kept positions, indices and metadata bits."""

from __future__ import annotations

import html
from dataclasses import dataclass

import torch

from .nbytes import index_bits
from .packed import unpack_codes, pack


@dataclass(frozen=True)
class GroupExplanation:
    """One group of a 2:4 weight taken apart: values, kept positions, indices and metadata bits."""

    values: tuple
    kept: tuple[int, ...]
    kept_values: tuple
    nibble: int
    n: int
    m: int

    @property
    def index_bits(self) -> tuple[str, ...]:
        """Each kept position as a binary string of ``index_bits(m)`` digits."""
        return tuple(format(i, f"0{index_bits(self.m)}b") for i in self.kept)

    @property
    def meta_bits(self) -> str:
        """The group's metadata, most significant bit first (the first kept index is the low bits)."""
        return format(self.nibble, f"0{self.n * index_bits(self.m)}b")

    def __str__(self) -> str:
        vals = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in self.values)
        kept = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in self.kept_values)
        idx = ", ".join(f"{p} -> {b}" for p, b in zip(self.kept, self.index_bits))
        return (
            f"group [{vals}]\n"
            f"  kept positions {list(self.kept)} -> values [{kept}]\n"
            f"  indices {idx}\n"
            f"  metadata bits {self.meta_bits} (= {self.nibble}; first index in the low bits)\n"
            f"  stored: {self.n} values + {self.n * index_bits(self.m)} bits instead of {self.m} values"
        )

    def _repr_html_(self) -> str:
        cells = "".join(
            f'<td style="padding:4px 10px;border:1px solid #888;{"background:#cfe3f7;font-weight:bold;" if i in self.kept else "color:#999;"}">{html.escape(str(v))}</td>'
            for i, v in enumerate(self.values)
        )
        return f"<table><tr>{cells}</tr></table><pre>{html.escape(str(self))}</pre>"


def explain_group(values, n: int = 2, m: int = 4) -> GroupExplanation:
    """Take one group apart: which values are kept, their position indices, the metadata bits.

    >>> g = explain_group([0.0, 1.5, 0.0, -2.0])
    >>> g.kept, g.index_bits, g.meta_bits
    ((1, 3), ('01', '11'), '1101')
    """
    if isinstance(values, torch.Tensor):
        t = values
    else:
        try:
            t = torch.tensor(values)
        except (TypeError, ValueError, RuntimeError, OverflowError) as exc:  # 2**70 overflows int64 inside torch
            raise ValueError(f"values must be one group of m={m} numbers that fit a tensor (ints within int64, "
                             f"floats), got {str(values)[:80]}: {str(exc).splitlines()[0][:80]}") from None
    if t.dim() != 1 or t.numel() != m:
        raise ValueError(f"values must be one group of m={m} numbers, got shape {tuple(t.shape)}")
    p = pack(t.reshape(1, m), n, m)
    kept = tuple(int(i) for i in p.indices()[0, 0].tolist())
    nibble = int(unpack_codes(p.meta, 1, n * index_bits(m))[0, 0])
    as_list = t.tolist()
    return GroupExplanation(
        values=tuple(as_list),
        kept=kept,
        kept_values=tuple(as_list[i] for i in kept),
        nibble=nibble,
        n=n,
        m=m,
    )
