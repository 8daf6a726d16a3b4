"""Stage 2 of the answer: is the weight stored packed?

A dense tensor whose elements are half zeros occupies exactly as many bytes as before. Only a
*packed* form saves memory: for N:M sparsity it keeps the ``n`` chosen values of every group of
``m`` (``values``, shape ``[N, K*n/m]``, same dtype) plus, for each kept value, its position in
the group (``meta``, ``ceil(log2 m)`` bits each: 2 bits for 2:4). For 16-bit weights that is
``1/2 + 2/(2*16) = 0.5625`` of the dense bytes; for 8-bit weights ``0.625``.

This module packs and unpacks exactly (never dropping a value silently), counts bytes, and
converts to the layout PyTorch's CUTLASS backend feeds to the sparse tensor-core kernel.

>>> import torch
>>> W = torch.tensor([[0.0, 1.5, 0.0, -2.0, 3.0, 0.0, 0.0, 4.0]])
>>> p = pack(W)
>>> p.values.tolist(), p.indices().tolist()
([[1.5, -2.0, 3.0, 4.0]], [[[1, 3], [0, 3]]])
>>> unpack(p).equal(W)
True
>>> packed_ratio(torch.float16), packed_ratio(torch.int8)
(0.5625, 0.625)
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from ._tensors import nonzero_mask, require_nm, require_weight, row_chunks, same_size_int_view
from .structure import check

__all__ = [
    "Packed",
    "pack",
    "unpack",
    "to_cutlass",
    "cutlass_constraints",
    "dense_bytes",
    "packed_bytes",
    "packed_ratio",
    "index_bits",
    "explain_group",
    "GroupExplanation",
]

# pack() uses a lookup table over the 2**m patterns of non-zeros in a group.
_MAX_M = 16


def index_bits(m: int) -> int:
    """Bits needed to name one position in a group of ``m``: ``ceil(log2 m)`` (2 for m=4).

    >>> index_bits(4), index_bits(8), index_bits(2)
    (2, 3, 1)
    """
    require_nm(1, m)
    return max(1, math.ceil(math.log2(m)))


def _top_up_order(m: int) -> list[int]:
    """Positions used to fill a group that holds fewer than ``n`` non-zeros, most preferred first.

    The order ``m/2, ..., m-1, m/2-1, ..., 0`` (2, 3, 1, 0 for 2:4) is exactly the choice PyTorch's
    CUTLASS encoder makes for under-filled groups (an all-zero group is stored as positions 2 and
    3, metadata nibble 0b1110), so our metadata converts to that layout bit for bit.
    """
    half = m // 2
    return list(range(half, m)) + list(range(half - 1, -1, -1))


@lru_cache(maxsize=None)
def _pattern_codes(n: int, m: int, device_type: str) -> torch.Tensor:
    """Metadata code for every non-zero pattern of a group (bit i set = position i non-zero).

    The code lists the kept positions in increasing order, ``index_bits(m)`` bits each, the
    first kept position in the lowest bits. Patterns with more than ``n`` non-zeros map to -1:
    they are refused, never truncated.
    """
    bits = index_bits(m)
    order = _top_up_order(m)
    codes = []
    for pattern in range(1 << m):
        nonzero = [i for i in range(m) if pattern >> i & 1]
        if len(nonzero) > n:
            codes.append(-1)
            continue
        kept = sorted(nonzero + [i for i in order if i not in nonzero][: n - len(nonzero)])
        codes.append(sum(idx << (bits * j) for j, idx in enumerate(kept)))
    return torch.tensor(codes, dtype=torch.int64, device=torch.device(device_type))


def _meta_bytes_per_row(groups_per_row: int, n: int, m: int) -> int:
    return math.ceil(groups_per_row * n * index_bits(m) / 8)


@dataclass(frozen=True)
class Packed:
    """An N:M weight in packed form: kept values plus bit-packed positions.

    Attributes:
        values: ``[N, K*n/m]`` tensor, same dtype as the weight: the kept values of each group,
            in position order.
        meta: ``[N, ceil(K/m * n * index_bits(m) / 8)]`` uint8 tensor: each kept value's position
            within its group, ``index_bits(m)`` bits each, little-endian (the first kept position
            of the first group sits in the lowest bits of byte 0). For 2:4 every group is one
            4-bit nibble, two groups per byte, the same nibble order sparse tensor cores use.
        shape: ``(N, K)`` of the dense weight.
        dtype: the weight's dtype.
        n, m: the pattern.
    """

    values: torch.Tensor
    meta: torch.Tensor
    shape: tuple[int, int]
    dtype: torch.dtype
    n: int = 2
    m: int = 4

    def __post_init__(self):
        require_nm(self.n, self.m)
        if not isinstance(self.values, torch.Tensor) or not isinstance(self.meta, torch.Tensor):
            raise TypeError("Packed.values and Packed.meta must be torch.Tensors")
        if len(self.shape) != 2 or self.shape[1] % self.m:
            raise ValueError(f"Packed.shape must be (N, K) with K a multiple of m={self.m}, got {self.shape}")
        N, K = self.shape
        want_values = (N, K // self.m * self.n)
        if tuple(self.values.shape) != want_values:
            raise ValueError(
                f"Packed parts disagree: values has shape {tuple(self.values.shape)} but shape {self.shape} "
                f"with {self.n}:{self.m} needs {want_values}"
            )
        if self.values.dtype != self.dtype:
            raise ValueError(f"Packed parts disagree: values dtype {self.values.dtype} but dtype {self.dtype}")
        want_meta = (N, _meta_bytes_per_row(K // self.m, self.n, self.m))
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
        return _decode_indices(self)

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
        # Fast path: a group's 4 bool bytes are one int32 b0 + b1<<8 + b2<<16 + b3<<24; one
        # multiply gathers b0 + 2*b1 + 4*b2 + 8*b3 into the top byte (no carries: each sum < 16).
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
    if width == 8:
        return codes.to(torch.uint8)
    bit_pos = torch.arange(width, device=codes.device)
    bits = ((codes.unsqueeze(-1) >> bit_pos) & 1).view(rows, G * width)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = torch.nn.functional.pad(bits, (0, pad))
    byte_weights = 1 << torch.arange(8, device=codes.device)
    return (bits.view(rows, -1, 8) * byte_weights).sum(-1).to(torch.uint8)


def _unpack_codes(meta: torch.Tensor, groups: int, width: int) -> torch.Tensor:
    """Inverse of :func:`_pack_codes`: int64 ``[rows, groups]``."""
    rows = meta.shape[0]
    if width == 4:
        m64 = meta.to(torch.int64)
        return torch.stack((m64 & 0xF, m64 >> 4), dim=-1).view(rows, -1)[:, :groups]
    if width == 8:
        return meta.to(torch.int64)[:, :groups]
    bits = ((meta.to(torch.int64).unsqueeze(-1) >> torch.arange(8, device=meta.device)) & 1).view(rows, -1)
    bits = bits[:, : groups * width].view(rows, groups, width)
    return (bits << torch.arange(width, device=meta.device)).sum(-1)


def pack(W: torch.Tensor, n: int = 2, m: int = 4) -> Packed:
    """Pack an N:M weight into ``values`` + bit-packed ``meta``; refuse anything that is not N:M.

    Each group's non-zeros are kept. A group with fewer than ``n`` non-zeros also keeps some
    zeros to fill its ``n`` slots (positions 2 then 3 for 2:4, the same choice PyTorch's CUTLASS
    encoder makes). Kept values are copied bit for bit, so a kept ``-0.0`` stays ``-0.0``; a
    dropped position comes back from :func:`unpack` as ``+0.0``, which compares equal.

    Raises ``ValueError`` if any group holds more than ``n`` non-zeros, saying how many groups
    break the pattern: nothing is dropped silently (use :func:`twofour.check` to see where, and
    :func:`twofour.prune` to make a weight N:M first).

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
    bits_W = same_size_int_view(W)
    values = torch.empty((rows, G * n), dtype=bits_W.dtype, device=W.device)
    meta = torch.empty((rows, _meta_bytes_per_row(G, n, m)), dtype=torch.uint8, device=W.device)
    for start, stop in row_chunks(rows, K):
        codes = codes_table[_group_patterns(W[start:stop], m)]  # [r, G], -1 = too many non-zeros
        if bool((codes < 0).any()):
            _refuse(W, n, m)
        idx = _codes_to_indices(codes, n, m)
        groups = bits_W[start:stop].view(stop - start, G, m)
        values[start:stop] = torch.gather(groups, -1, idx).view(stop - start, G * n)
        meta[start:stop] = _pack_codes(codes, width)
    return Packed(values=values.view(W.dtype), meta=meta, shape=(rows, K), dtype=W.dtype, n=n, m=m)


def _refuse(W: torch.Tensor, n: int, m: int):
    report = check(W, n, m, max_examples=1)
    first = f" (first: {report.examples[0]})" if report.examples else ""
    raise ValueError(
        f"W is not {n}:{m} sparse: {report.num_bad_groups:,} of {report.num_groups:,} groups hold more than "
        f"{n} non-zeros{first}. Packing would drop values; see twofour.check(W) for where, "
        f"or twofour.prune(W) to prune first."
    )


def _decode_indices(p: Packed) -> torch.Tensor:
    G = p.shape[1] // p.m
    return _codes_to_indices(_unpack_codes(p.meta, G, p.n * index_bits(p.m)), p.n, p.m)


def unpack(packed: Packed) -> torch.Tensor:
    """Rebuild the dense weight from a :class:`Packed`: kept values bit for bit, the rest ``+0.0``.

    Raises ``ValueError`` if the metadata is corrupt: a position outside the group, or positions
    not strictly increasing within a group (a repeated position, which the hardware treats as
    undefined).

    >>> W = torch.tensor([[0.0, -0.0, 5.0, 0.0]])
    >>> unpack(pack(W)).tolist()
    [[0.0, 0.0, 5.0, 0.0]]
    """
    if not isinstance(packed, Packed):
        raise TypeError(f"packed must be a twofour.Packed (from twofour.pack), got {type(packed).__name__}")
    N, K = packed.shape
    n, m = packed.n, packed.m
    G = K // m
    idx = _decode_indices(packed)  # [N, G, n]
    bad = (idx >= m).any(-1)
    if n > 1:
        bad |= (idx[..., 1:] <= idx[..., :-1]).any(-1)
    if bool(bad.any()):
        r, g = torch.nonzero(bad)[0].tolist()
        raise ValueError(
            f"packed.meta is corrupt: {int(bad.sum()):,} groups name a position outside 0..{m - 1} or repeat/"
            f"reorder positions (first: row {r}, group {g}, positions {idx[r, g].tolist()})"
        )
    value_bits = same_size_int_view(packed.values).view(N, G, n)
    out = torch.zeros((N, G, m), dtype=value_bits.dtype, device=value_bits.device)
    out.scatter_(-1, idx, value_bits)
    return out.view(N, K).view(packed.dtype)


# ---------------------------------------------------------------------------------------------
# Byte accounting


def _element_bits(dtype) -> int:
    if isinstance(dtype, torch.dtype):
        if dtype == torch.bool or dtype.is_complex:
            raise TypeError(f"dtype {dtype} has no N:M packed form")
        return torch.empty((), dtype=dtype).element_size() * 8
    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype > 0:
        return dtype
    raise TypeError(f"dtype must be a torch.dtype or a positive bit width such as 4 (FP4), got {dtype!r}")


def _default_meta_bits(dtype, n: int, m: int) -> int:
    # Sparse tensor cores store fp32 as 1:2, but its metadata is written as if each 32-bit value
    # were two 16-bit halves, each named by a 2-bit index: 4 bits per kept fp32 value.
    if isinstance(dtype, torch.dtype) and dtype == torch.float32 and (n, m) == (1, 2):
        return 4
    return index_bits(m)


def dense_bytes(shape, dtype) -> int:
    """Bytes of a dense tensor of ``shape`` and ``dtype`` (a dtype or a bit width).

    >>> dense_bytes((4096, 14336), torch.float16)
    117440512
    """
    numel = _numel(shape)
    return numel * _element_bits(dtype) // 8


def _numel(shape) -> int:
    try:
        dims = [int(d) for d in shape]
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints such as (4096, 14336), got {shape!r}") from None
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"shape must be non-empty with positive sizes, got {tuple(dims)}")
    return math.prod(dims)


def packed_bytes(shape, dtype, n: int = 2, m: int = 4, *, meta_bits_per_value: int | None = None) -> int:
    """Bytes of the packed form: ``n/m`` of the values plus ``meta_bits_per_value`` bits per kept value.

    ``meta_bits_per_value`` defaults to ``index_bits(m)`` (2 for 2:4); for ``float32`` with 1:2 (the
    hardware's fp32 mode) it defaults to 4, as the hardware writes it. Pass 1 for FP4's
    *paired* 4:8 (a 2-bit index per pair of values). ``dtype`` may also be a bit width (``4``).
    The last dimension must divide by ``m``. Real library buffers may add padding.

    >>> packed_bytes((4096, 14336), torch.float16) / dense_bytes((4096, 14336), torch.float16)
    0.5625
    """
    require_nm(n, m)
    numel = _numel(shape)
    last = int(list(shape)[-1])
    if last % m:
        raise ValueError(f"shape's last dimension {last} must be a multiple of m={m}")
    meta_bits = _default_meta_bits(dtype, n, m) if meta_bits_per_value is None else meta_bits_per_value
    if isinstance(meta_bits, bool) or not isinstance(meta_bits, int) or meta_bits < 0:
        raise ValueError(f"meta_bits_per_value must be a non-negative int, got {meta_bits_per_value!r}")
    kept = numel // m * n
    return math.ceil(kept * (_element_bits(dtype) + meta_bits) / 8)


def packed_ratio(dtype, n: int = 2, m: int = 4, *, meta_bits_per_value: int | None = None) -> float:
    """Packed bytes / dense bytes: ``n/m * (1 + meta_bits / element_bits)``.

    >>> [packed_ratio(d) for d in (torch.float16, torch.bfloat16, torch.int8)]
    [0.5625, 0.5625, 0.625]
    >>> packed_ratio(torch.float32, 1, 2), packed_ratio(4, 4, 8, meta_bits_per_value=1)
    (0.5625, 0.625)
    """
    require_nm(n, m)
    bits = _element_bits(dtype)
    meta_bits = _default_meta_bits(dtype, n, m) if meta_bits_per_value is None else meta_bits_per_value
    return n / m * (bits + meta_bits) / bits


# ---------------------------------------------------------------------------------------------
# PyTorch CUTLASS layout

# Per dense dtype: (pattern n, m), metadata dtype, rows multiple, cols multiple, row block and
# interleave of the metadata reordering. Read off torch.sparse._semi_structured_conversions.
_CUTLASS = {
    torch.float16: ((2, 4), torch.int16, 32, 16, 32, 4),
    torch.bfloat16: ((2, 4), torch.int16, 32, 16, 32, 4),
    torch.int8: ((2, 4), torch.int32, 16, 32, 16, 2),
    torch.float32: ((1, 2), torch.int16, 32, 16, 32, 4),
}


def cutlass_constraints(dtype: torch.dtype) -> dict:
    """The shape rules of PyTorch's CUTLASS conversion for ``dtype``.

    >>> cutlass_constraints(torch.float16)["pattern"]
    '2:4'
    """
    if dtype not in _CUTLASS:
        raise ValueError(
            f"PyTorch's CUTLASS layout exists for float16, bfloat16, int8 and float32 (1:2), not {dtype}"
        )
    (n, m), meta_dtype, rows_mult, cols_mult, _, _ = _CUTLASS[dtype]
    return {
        "pattern": f"{n}:{m}",
        "meta_dtype": meta_dtype,
        "rows_multiple": rows_mult,
        "cols_multiple": cols_mult,
        # The 2x2 swizzle pairs metadata columns; an odd count sends one element out of range.
        "meta_cols_even": True,
    }


def _reorder_meta(meta: torch.Tensor, row_block: int, interleave: int) -> torch.Tensor:
    """Reorder a ``[rows, cols]`` metadata matrix into CUTLASS's ColumnMajorInterleaved<2> order.

    Why: in the sparse MMA each thread of a warp must load exactly the metadata of the rows it
    multiplies, in one aligned load. CUTLASS therefore (1) regroups rows inside each block of
    ``row_block`` rows so that rows ``i, i+8, i+16, ...`` sit next to each other, (2) transposes
    every 2x2 tile of metadata elements, and (3) stores the result column-major in pairs of
    columns. The three steps are three reshapes/permutes here.
    """
    rows, cols = meta.shape
    # (1) rows r = block*row_block + u*8 + v  ->  block*row_block + v*interleave + u
    regrouped = meta.view(rows // row_block, interleave, 8, cols).permute(0, 2, 1, 3).reshape(rows, cols)
    # (2)+(3): element (2p+i, 2q+j) lands at flat position ((q*rows/2 + p)*2 + j)*2 + i
    tiles = regrouped.view(rows // 2, 2, cols // 2, 2)
    return tiles.permute(2, 0, 3, 1).contiguous().view(rows, cols)


def to_cutlass(packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(values, meta)`` in the layout of PyTorch's CUTLASS 2:4 backend.

    The result is bit-identical to
    ``torch.sparse._semi_structured_conversions.sparse_semi_structured_from_dense_cutlass(unpack(packed))``
    (tested on many shapes, dtypes, and groups with 0, 1 or 2 non-zeros).

    * float16 / bfloat16: 2:4, ``meta`` int16 ``[N, K/16]`` (4 groups per element).
    * int8: 2:4, ``meta`` int32 ``[N, K/32]`` (8 groups per element).
    * float32: the hardware's 1:2 pattern (``pack(W, n=1, m=2)``); each kept fp32 value is named
      as two 16-bit halves, so ``meta`` is int16 ``[N, K/8]``.

    Values are each group's kept values in position order, which is already what
    :func:`pack` stores. Metadata is reordered (see ``_reorder_meta``) so that each thread of the
    sparse tensor-core instruction finds its rows' metadata in one load.

    Shape rules (same as PyTorch's function, which raises on the first two): rows a multiple of
    32 (16 for int8), columns a multiple of 16 (32 for int8), and an even number of metadata
    columns, i.e. K a multiple of 32 (64 for int8). PyTorch's function does not check the last
    rule: with an odd number of metadata columns (e.g. a 32x16 float16 weight) its scatter
    runs out of range and raises an index error; this function refuses such shapes clearly.
    """
    if not isinstance(packed, Packed):
        raise TypeError(f"packed must be a twofour.Packed (from twofour.pack), got {type(packed).__name__}")
    if packed.dtype not in _CUTLASS:
        raise ValueError(
            f"PyTorch's CUTLASS layout exists for float16, bfloat16, int8 and float32, not {packed.dtype}"
        )
    (n, m), meta_dtype, rows_mult, cols_mult, row_block, interleave = _CUTLASS[packed.dtype]
    if (packed.n, packed.m) != (n, m):
        hint = " (fp32 runs as 1:2 on sparse tensor cores: use pack(W, n=1, m=2))" if packed.dtype == torch.float32 else ""
        raise ValueError(
            f"the CUTLASS layout for {packed.dtype} is {n}:{m}, but packed is {packed.n}:{packed.m}{hint}"
        )
    N, K = packed.shape
    per_meta = 16 if meta_dtype == torch.int16 else 32  # dense columns covered by one meta element
    if N % rows_mult or K % cols_mult or (K // per_meta) % 2:
        raise ValueError(
            f"shape {packed.shape} does not fit PyTorch's CUTLASS layout for {packed.dtype}: rows must be a "
            f"multiple of {rows_mult} and columns a multiple of {2 * per_meta} (columns a multiple of {cols_mult}, "
            "and an even number of metadata columns)"
        )
    if packed.dtype == torch.float32:
        # 1:2 -> one nibble per pair: position p of the pair is encoded as halves (2p, 2p+1).
        pos = _unpack_codes(packed.meta, K // 2, 1)  # [N, K/2] in {0, 1}
        nibbles = torch.where(pos.bool(), 0b1110, 0b0100)
        raw = _pack_codes(nibbles, 4)
    else:
        raw = packed.meta
    meta = raw.contiguous().view(meta_dtype)
    return packed.values, _reorder_meta(meta, row_block, interleave)


# ---------------------------------------------------------------------------------------------
# Teaching helper


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
        b = index_bits(self.m)
        return tuple(format(i, f"0{b}b") for i in self.kept)

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
    t = values if isinstance(values, torch.Tensor) else torch.tensor(values)
    if t.dim() != 1 or t.numel() != m:
        raise ValueError(f"values must be one group of m={m} numbers, got shape {tuple(t.shape)}")
    p = pack(t.reshape(1, m), n, m)
    kept = tuple(int(i) for i in p.indices()[0, 0].tolist())
    nibble = int(_unpack_codes(p.meta, 1, n * index_bits(m))[0, 0])
    as_list = t.tolist()
    return GroupExplanation(
        values=tuple(as_list),
        kept=kept,
        kept_values=tuple(as_list[i] for i in kept),
        nibble=nibble,
        n=n,
        m=m,
    )
