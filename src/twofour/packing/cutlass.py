"""The layout PyTorch's CUTLASS 2:4 backend feeds to the sparse tensor-core kernel: values and reordered metadata."""

from __future__ import annotations

from functools import lru_cache

import torch

from .._passes.tensors import dtype_name
from .._passes.threads import one_thread
from .packed import Packed, raise_corrupt

# Per dense dtype: (pattern n, m), metadata dtype, rows multiple, cols multiple, row block and
# interleave of the metadata reordering. Read off torch.sparse._semi_structured_conversions.
_CUTLASS = {
    torch.float16: ((2, 4), torch.int16, 32, 16, 32, 4),
    torch.bfloat16: ((2, 4), torch.int16, 32, 16, 32, 4),
    torch.int8: ((2, 4), torch.int32, 16, 32, 16, 2),
    torch.float32: ((1, 2), torch.int16, 32, 16, 32, 4),
}


def _layout(dtype: torch.dtype) -> tuple:
    if dtype not in _CUTLASS:
        raise ValueError(
            f"PyTorch's CUTLASS layout exists for float16, bfloat16, int8 and float32 (1:2), not {dtype}"
        )
    return _CUTLASS[dtype]


def cutlass_constraints(dtype: torch.dtype) -> dict:
    """The shape rules of PyTorch's CUTLASS conversion for ``dtype``.

    >>> cutlass_constraints(torch.float16)["pattern"]
    '2:4'
    """
    (n, m), meta_dtype, rows_mult, cols_mult, _, _ = _layout(dtype)
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

    In the sparse MMA each thread of a warp must load the metadata of its rows in one aligned
    load, so CUTLASS (1) regroups the rows of each ``row_block`` so that rows ``i, i+8, i+16, ...``
    sit together, (2) transposes every 2x2 tile, (3) stores pairs of columns column-major.
    """
    rows, cols = meta.shape
    # (1) rows r = block*row_block + u*8 + v  ->  block*row_block + v*interleave + u
    regrouped = meta.view(rows // row_block, interleave, 8, cols).permute(0, 2, 1, 3).reshape(rows, cols)
    # (2)+(3): element (2p+i, 2q+j) lands at flat position ((q*rows/2 + p)*2 + j)*2 + i
    return regrouped.view(rows // 2, 2, cols // 2, 2).permute(2, 0, 3, 1).contiguous().view(rows, cols)


def to_cutlass(packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(values, meta)`` in the layout of PyTorch's CUTLASS 2:4 backend.

    Bit-identical to
    ``torch.sparse._semi_structured_conversions.sparse_semi_structured_from_dense_cutlass(unpack(packed))``
    unless a kept value is a NaN (``meta`` always is): PyTorch rewrites bfloat16 NaNs to ``0xffff``
    and quiets float16 signalling NaNs; this keeps :func:`pack`'s bits. Corrupt metadata gets
    :func:`unpack`'s error (the hardware's result would be undefined).

    * float16 / bfloat16: 2:4, ``meta`` int16 ``[N, K/16]`` (4 groups per element).
    * int8: 2:4, ``meta`` int32 ``[N, K/32]`` (8 groups per element).
    * float32: the hardware's 1:2 pattern (``pack(W, n=1, m=2)``); each kept fp32 value is named
      as two 16-bit halves, so ``meta`` is int16 ``[N, K/8]``.

    Shapes: those PyTorch's function converts: rows a multiple of 32 (16 for int8), K of 32 for
    float16/bfloat16, 64 for int8, 16 for float32 (with an odd number of metadata columns
    PyTorch's scatter runs out of range; this refuses such shapes clearly).
    """
    return reorder_to_cutlass(packed, check_meta=True)


def reorder_to_cutlass(packed: Packed, *, check_meta: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`to_cutlass`; ``check_meta=False`` skips the 2:4 code check, so
    :mod:`twofour.course.meta_layout` can move label words (not 2:4 codes) through the same
    reordering to draw where each word lands."""
    if not isinstance(packed, Packed):
        raise TypeError(f"packed must be a twofour.Packed (from twofour.pack), got {type(packed).__name__}")
    (n, m), meta_dtype, rows_mult, cols_mult, row_block, interleave = _layout(packed.dtype)
    if (packed.n, packed.m) != (n, m):
        hint = " (fp32 runs as 1:2 on sparse tensor cores: use pack(W, n=1, m=2))" if packed.dtype == torch.float32 else ""
        raise ValueError(
            f"the CUTLASS layout for {packed.dtype} is {n}:{m}, but packed is {packed.n}:{packed.m}{hint}"
        )
    N, K = packed.shape
    # Dense columns one metadata element covers: its 4-bit codes x columns per code (float32's 1:2
    # pairs are each one 4-bit code: 8 columns per int16).
    per_meta = meta_dtype.itemsize * 2 * m
    if N % rows_mult or K % cols_mult or (K // per_meta) % 2:
        raise ValueError(
            f"packed.shape {packed.shape} does not fit PyTorch's CUTLASS layout for {dtype_name(packed.dtype)}: "
            f"rows must be a multiple of {rows_mult} and columns a multiple of {max(cols_mult, 2 * per_meta)} "
            f"(columns a multiple of {cols_mult}, and an even number of metadata columns of {per_meta} each)"
        )
    if check_meta and (n, m) == (2, 4) and _has_corrupt_groups(packed.meta):
        raise_corrupt(packed)  # unpack's error, word for word
    with one_thread():
        raw = packed.meta.contiguous()
        if packed.dtype == torch.float32:  # 1:2 bytes [N, K/16] -> 8 CUTLASS nibbles per byte: [N, K/4] bytes
            raw = _fp32_nibble_table(raw.device.type)[raw.to(torch.int64)].view(torch.uint8).view(N, -1)
        if raw.storage_offset() % meta_dtype.itemsize:  # a slice of a flat buffer: bytes not viewable as words
            raw = raw.clone()
        meta = _reorder_meta(raw.view(meta_dtype), row_block, interleave)
        values = packed.values.contiguous()
    return values, meta


def _has_corrupt_groups(meta: torch.Tensor) -> bool:
    """2:4 metadata: each nibble is one group, ``idx0 | idx1 << 2``; valid only when ``idx0 < idx1``.
    (1:2 metadata cannot be corrupt: each bit names position 0 or 1.)"""
    lo, hi = meta & 0xF, meta >> 4
    return bool((((lo & 3) >= (lo >> 2)) | ((hi & 3) >= (hi >> 2))).any())


@lru_cache(maxsize=None)
def _fp32_nibble_table(device_type: str) -> torch.Tensor:
    """For each meta byte of 1:2 (8 one-bit positions), the 8 CUTLASS nibbles as one 32-bit word:
    position p of a pair is named as the 16-bit halves (2p, 2p+1), 0 -> 0b0100, 1 -> 0b1110."""
    words = [sum((0b1110 if byte >> j & 1 else 0b0100) << (4 * j) for j in range(8)) for byte in range(256)]
    return torch.tensor(words, dtype=torch.int64, device=torch.device(device_type)).to(torch.int32)

