"""Pack and unpack exactly: the values kept in every group, and each one's position as metadata.

:func:`pack` refuses a weight that is not N:M instead of dropping a value; :func:`unpack`
refuses corrupt metadata.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from .._passes import wordpack as _wordpack
from .._passes.groupcount import Scratch, contiguous
from .._passes.tensors import SUPPORTED_DTYPES, blocks, dtype_name, nonzero_mask, require_nm, require_weight, same_size_int_view
from .._passes.threads import map_blocks
from ..structure import check
from .nbytes import shape_dims, index_bits

# pack() uses a lookup table over the 2**m patterns of non-zeros in a group.
_MAX_M = 16


@lru_cache(maxsize=None)
def _pattern_codes(n: int, m: int, device_type: str) -> torch.Tensor:
    """Metadata code for every non-zero pattern of a group (bit i set = position i non-zero): the kept
    positions in increasing order, ``index_bits(m)`` bits each, the first in the lowest bits; -1 for a
    pattern with more than ``n`` non-zeros (refused, never truncated). A group with fewer is filled from
    ``m/2, ..., m-1, m/2-1, ..., 0``, PyTorch's CUTLASS encoder's choice (see :func:`pack`)."""
    bits = index_bits(m)
    order = list(range(m // 2, m)) + list(range(m // 2 - 1, -1, -1))
    codes = []
    for pattern in range(1 << m):
        nonzero = [i for i in range(m) if pattern >> i & 1]
        if len(nonzero) > n:
            codes.append(-1)
            continue
        kept = sorted(nonzero + [i for i in order if i not in nonzero][: n - len(nonzero)])
        codes.append(sum(idx << (bits * j) for j, idx in enumerate(kept)))
    return torch.tensor(codes, dtype=torch.int64, device=torch.device(device_type))


@dataclass(frozen=True)
class Packed:
    """An N:M weight in packed form: kept values plus bit-packed positions.

    Attributes:
        values: ``[N, K*n/m]`` tensor, same dtype as the weight: the kept values of each group,
            in position order.
        meta: ``[N, ceil(K/m * n * index_bits(m) / 8)]`` uint8 tensor: each kept value's position
            within its group, ``index_bits(m)`` bits each, little-endian. For 2:4 every group is
            one 4-bit nibble, two per byte, in the nibble order sparse tensor cores use.
        shape, dtype, n, m: the dense weight's shape and dtype, and the pattern.
    """

    values: torch.Tensor
    meta: torch.Tensor
    shape: tuple[int, int]
    dtype: torch.dtype
    n: int = 2
    m: int = 4

    def __post_init__(self):
        require_nm(self.n, self.m)
        for name in ("values", "meta"):
            part = getattr(self, name)
            if not isinstance(part, torch.Tensor):
                raise TypeError(f"Packed.{name} must be a torch.Tensor, got {type(part).__name__}")
            if part.layout != torch.strided or part.dim() != 2:
                raise ValueError(
                    f"Packed.{name} must be a dense 2-D tensor, got layout {part.layout} with shape {tuple(part.shape)}"
                )
            if part.device.type == "meta":  # unpack would fail inside torch
                raise ValueError(f"Packed.{name} is on the meta device (a shape without values); give real tensors")
        if not isinstance(self.dtype, torch.dtype):
            raise TypeError(f"Packed.dtype must be a torch.dtype such as torch.float16, got {type(self.dtype).__name__}")
        if self.dtype not in SUPPORTED_DTYPES:
            raise TypeError(
                f"Packed.dtype {dtype_name(self.dtype)} has no packed N:M form; "
                f"supported: {', '.join(dtype_name(d) for d in SUPPORTED_DTYPES)}"
            )
        shape = shape_dims(self.shape, "Packed.shape")
        if len(shape) != 2:
            raise ValueError(f"Packed.shape must be (N, K), two sizes, got {tuple(shape)}")
        if shape[1] % self.m:
            raise ValueError(f"Packed.shape must be (N, K) with K a multiple of m={self.m}, got {tuple(shape)}")
        object.__setattr__(self, "shape", (shape[0], shape[1]))
        N, K = self.shape
        want_values = (N, K // self.m * self.n)
        if tuple(self.values.shape) != want_values:
            raise ValueError(
                f"Packed parts disagree: values has shape {tuple(self.values.shape)} but shape {self.shape} "
                f"with {self.n}:{self.m} needs {want_values}"
            )
        if self.values.dtype != self.dtype:
            raise ValueError(f"Packed parts disagree: values dtype {self.values.dtype} but dtype {self.dtype}")
        want_meta = (N, -(-(K // self.m) * self.n * index_bits(self.m) // 8))  # whole bytes per row
        if self.meta.dtype != torch.uint8 or tuple(self.meta.shape) != want_meta:
            raise ValueError(
                f"Packed parts disagree: meta must be uint8 of shape {want_meta}, "
                f"got {self.meta.dtype} {tuple(self.meta.shape)}"
            )
        if self.meta.device != self.values.device:
            raise ValueError(f"Packed parts disagree: values on {self.values.device}, meta on {self.meta.device}")

    @property
    def n_bytes(self) -> int:
        """Bytes actually held: values plus metadata."""
        return self.values.numel() * self.values.element_size() + self.meta.numel()

    @property
    def dense_n_bytes(self) -> int:
        """Bytes of the same weight stored dense."""
        return self.shape[0] * self.shape[1] * self.values.element_size()

    def indices(self) -> torch.Tensor:
        """Positions of the kept values, int64 ``[N, K/m, n]``, decoded from ``meta``."""
        width = self.n * index_bits(self.m)
        return _codes_to_indices(unpack_codes(self.meta, self.shape[1] // self.m, width), self.n, self.m)

    def __repr__(self) -> str:
        N, K = self.shape
        return (
            f"Packed({self.n}:{self.m}, shape=({N}, {K}), dtype={str(self.dtype).replace('torch.', '')}, "
            f"{self.n_bytes:,} bytes = {self.n_bytes / self.dense_n_bytes:.4f} of dense)"
        )


def _group_patterns(chunk: torch.Tensor, m: int) -> torch.Tensor:
    """Per group, an int64 whose bit i says whether position i is non-zero."""
    rows, K = chunk.shape
    nz = nonzero_mask(chunk)
    if m == 4:
        # A group's 4 bool bytes are one int32: one multiply gathers b0 + 2*b1 + 4*b2 + 8*b3 in its top byte.
        as_int = nz.view(torch.uint8).view(rows, K // 4, 4).view(torch.int32).view(rows, K // 4)
        return (((as_int * 0x01020408) >> 24) & 0xF).long()
    weights = 1 << torch.arange(m, device=chunk.device, dtype=torch.int32)
    return (nz.view(rows, K // m, m).to(torch.int32) * weights).sum(dim=-1, dtype=torch.int64)


def _codes_to_indices(codes: torch.Tensor, n: int, m: int) -> torch.Tensor:
    """Split ``[rows, G]`` metadata codes into kept positions ``[rows, G, n]`` (int64)."""
    bits = index_bits(m)
    shifts = bits * torch.arange(n, device=codes.device)
    return (codes.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)


def _pack_codes(codes: torch.Tensor, width: int) -> torch.Tensor:
    """Bit-pack ``[rows, G]`` integer codes of ``width`` bits each into uint8 ``[rows, bytes]``."""
    rows, G = codes.shape
    if width == 4:
        if G % 2:
            codes = torch.nn.functional.pad(codes, (0, 1))
        c = codes.to(torch.uint8).view(rows, -1, 2)
        return c[..., 0] | (c[..., 1] << 4)
    bit_pos = torch.arange(width, device=codes.device)
    bits = ((codes.unsqueeze(-1) >> bit_pos) & 1).view(rows, G * width)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = torch.nn.functional.pad(bits, (0, pad))
    byte_weights = 1 << torch.arange(8, device=codes.device)
    return (bits.view(rows, -1, 8) * byte_weights).sum(-1).to(torch.uint8)


def unpack_codes(meta: torch.Tensor, groups: int, width: int) -> torch.Tensor:
    """Inverse of :func:`_pack_codes`: int64 ``[rows, groups]``."""
    rows = meta.shape[0]
    if width == 4:
        m64 = meta.to(torch.int64)
        return torch.stack((m64 & 0xF, m64 >> 4), dim=-1).view(rows, -1)[:, :groups]
    bits = ((meta.to(torch.int64).unsqueeze(-1) >> torch.arange(8, device=meta.device)) & 1).view(rows, -1)
    bits = bits[:, : groups * width].view(rows, groups, width)
    return (bits << torch.arange(width, device=meta.device)).sum(-1)


def pack(W: torch.Tensor, n: int = 2, m: int = 4) -> Packed:
    """Pack an N:M weight into ``values`` + bit-packed ``meta``; refuse anything that is not N:M.

    A group with fewer than ``n`` non-zeros also keeps some zeros to fill its ``n`` slots
    (positions 2 then 3 for 2:4, as PyTorch's CUTLASS encoder does, so :func:`to_cutlass` stays
    bit-identical to it). Kept values are copied bit for bit (NaN payloads, a kept ``-0.0``), so
    ``unpack(pack(W))`` equals ``W`` bit for bit except that a ``-0.0`` outside the kept positions
    becomes ``+0.0`` (keeping every ``-0.0`` would need more than ``n`` slots in ``[-0.0, 1, 2, 0]``).
    ``W`` may be any 2-D view (transposed, sliced, expanded).

    Raises ``ValueError`` if any group holds more than ``n`` non-zeros: nothing is dropped silently.

    >>> pack(torch.tensor([[1.0, 2.0, 3.0, 0.0]]))
    Traceback (most recent call last):
    ...
    ValueError: W is not 2:4 sparse: 1 of 1 groups hold more than 2 non-zeros (first: row 0, group 0 (columns 0-3): 3 non-zeros [1, 2, 3, 0]). Packing would drop values; see twofour.check(W) for where, or twofour.prune(W) to prune first.
    """
    require_nm(n, m)
    W = require_weight(W, m)
    if m > _MAX_M:
        raise ValueError(f"pack supports group sizes m <= {_MAX_M}, got m={m}")
    rows, K = W.shape
    G = K // m
    codes_table = _pattern_codes(n, m, W.device.type)
    width = n * index_bits(m)
    bits_dtype = same_size_int_view(W[:0, :0]).dtype  # values are copied as integers: bit for bit
    values = torch.empty((rows, G * n), dtype=bits_dtype, device=W.device)
    meta = torch.empty((rows, -(-G * width // 8)), dtype=torch.uint8, device=W.device)
    fast = _wordpack.supports(W.dtype, n, m, K)
    luts = _wordpack.position_luts(tuple(codes_table.tolist())) if fast else None

    def pack_block(block, scratch):
        r0, r1, c0, c1 = block
        g0, g1 = c0 // m, c1 // m
        dense = contiguous(W[r0:r1, c0:c1], scratch)
        v_out = values[r0:r1, g0 * n : g1 * n]
        m_out = meta[r0:r1, g0 * width // 8 : -(-g1 * width // 8)]
        if fast:
            n_bad = _wordpack.pack_block(dense, v_out, m_out, luts, scratch)
        else:
            n_bad = _pack_block(dense, v_out, m_out, codes_table, n, m, width)
        if n_bad:
            raise _NotNM  # stops the other workers; _refuse() then says where

    try:
        # Blocks of whole groups of 8: every block's metadata starts on a byte.
        map_blocks(pack_block, blocks(rows, K, unit=8 * m), state=lambda: Scratch(W.device), device=W.device)
    except _NotNM:
        _refuse(W, n, m)
    return Packed(values=values.view(W.dtype), meta=meta, shape=(rows, K), dtype=W.dtype, n=n, m=m)


class _NotNM(Exception):
    """A block of the weight breaks the pattern (internal: pack raises the full error)."""


def _pack_block(block, v_out, m_out, codes_table, n: int, m: int, width: int) -> int:
    """The general path (any n:m, dtype): pattern -> code table lookup -> gather. Returns bad groups."""
    rows, k = block.shape
    G = k // m
    codes = codes_table[_group_patterns(block, m)]  # [r, G], -1 = too many non-zeros
    n_bad = int((codes < 0).sum())
    if n_bad:
        return n_bad
    idx = _codes_to_indices(codes, n, m)
    groups = same_size_int_view(block).view(rows, G, m)
    v_out.copy_(torch.gather(groups, -1, idx).view(rows, G * n))
    m_out.copy_(_pack_codes(codes, width))
    return 0


def _refuse(W: torch.Tensor, n: int, m: int):
    report = check(W, n, m, max_examples=1)
    first = f" (first: {report.examples[0]})" if report.examples else ""
    raise ValueError(
        f"W is not {n}:{m} sparse: {report.num_bad_groups:,} of {report.num_groups:,} groups hold more than "
        f"{n} non-zeros{first}. Packing would drop values; see twofour.check(W) for where, "
        f"or twofour.prune(W) to prune first."
    )


def unpack(packed: Packed) -> torch.Tensor:
    """Rebuild the dense weight from a :class:`Packed`: kept values bit for bit, the rest ``+0.0``.

    Raises ``ValueError`` if the metadata is corrupt: a position outside the group, or positions
    not strictly increasing within a group (undefined on the hardware).

    >>> W = torch.tensor([[0.0, -0.0, 5.0, 0.0]])
    >>> unpack(pack(W)).tolist()
    [[0.0, 0.0, 5.0, 0.0]]
    """
    if not isinstance(packed, Packed):
        raise TypeError(f"packed must be a twofour.Packed (from twofour.pack), got {type(packed).__name__}")
    N, K = packed.shape
    n, m = packed.n, packed.m
    width = n * index_bits(m)
    value_bits = same_size_int_view(packed.values)
    out = torch.empty((N, K), dtype=value_bits.dtype, device=value_bits.device)
    fast = _wordpack.supports(packed.dtype, n, m, K)

    def unpack_block(block, scratch):
        r0, r1, c0, c1 = block
        g0, g1 = c0 // m, c1 // m
        v = value_bits[r0:r1, g0 * n : g1 * n].contiguous()
        meta = packed.meta[r0:r1, g0 * width // 8 : -(-g1 * width // 8)].contiguous()
        dense = out[r0:r1, c0:c1]
        if fast:
            return _wordpack.unpack_block(v, meta, dense, scratch)
        return _unpack_block(v, meta, dense, n, m)

    n_bad = map_blocks(unpack_block, blocks(N, K, unit=8 * m), state=lambda: Scratch(out.device), device=out.device)
    if any(n_bad):
        raise_corrupt(packed)
    return out.view(packed.dtype)


def _unpack_block(values, meta, out, n: int, m: int) -> int:
    """The general path: decode positions, validate, scatter. Returns the number of corrupt groups."""
    rows, k = out.shape
    G = k // m
    idx = _codes_to_indices(unpack_codes(meta, G, n * index_bits(m)), n, m)  # [r, G, n]
    n_bad = int(_bad_positions(idx, m).sum())
    if n_bad:
        return n_bad
    out.view(rows, G, m).zero_().scatter_(-1, idx, values.view(rows, G, n))
    return 0


def _bad_positions(idx: torch.Tensor, m: int) -> torch.Tensor:
    return (idx >= m).any(-1) | (idx[..., 1:] <= idx[..., :-1]).any(-1)  # out of the group, or not increasing


def raise_corrupt(packed: Packed):
    """Raise the corrupt-metadata error: how many groups, and the first one."""
    N, K = packed.shape
    n, m = packed.n, packed.m
    width = n * index_bits(m)
    total, first = 0, None
    for r0, r1, c0, c1 in blocks(N, K, unit=8 * m):
        g0, g1 = c0 // m, c1 // m
        meta = packed.meta[r0:r1, g0 * width // 8 : -(-g1 * width // 8)]
        idx = _codes_to_indices(unpack_codes(meta, g1 - g0, width), n, m)
        bad = _bad_positions(idx, m)
        total += int(bad.sum())
        if first is None and bool(bad.any()):
            r, g = torch.nonzero(bad)[0].tolist()
            first = (r + r0, g + g0, idx[r, g].tolist())
    r, g, positions = first
    raise ValueError(
        f"packed.meta is corrupt: {total:,} groups name a position outside 0..{m - 1} or repeat/"
        f"reorder positions (first: row {r}, group {g}, positions {positions})"
    )
