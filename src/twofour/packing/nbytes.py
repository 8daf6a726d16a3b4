"""Byte accounting: what a weight occupies dense, and packed in an N:M form (values plus metadata)."""

from __future__ import annotations

import math
import operator

import torch

from ..vocabulary import DTYPES, nm_ratio
from .._passes.bits import unsupported_reason
from .._passes.tensors import SUPPORTED_DTYPES, dtype_name, require_nm


def index_bits(m: int) -> int:
    """Bits needed to name one position in a group of ``m``: ``ceil(log2 m)`` (2 for m=4).

    >>> index_bits(4), index_bits(8), index_bits(2)
    (2, 3, 1)
    """
    require_nm(1, m)
    return max(1, math.ceil(math.log2(m)))


# Integer dtypes byte accounting accepts besides the weight dtypes (an index, a code book).
_ACCOUNTING_INTS = (torch.int64, torch.uint16, torch.uint32, torch.uint64)


def _element_bits(dtype) -> int:
    if isinstance(dtype, torch.dtype):
        if dtype in SUPPORTED_DTYPES or dtype in _ACCOUNTING_INTS:
            return torch.empty((), dtype=dtype).element_size() * 8
        raise TypeError(
            f"dtype {dtype_name(dtype)} has no N:M packed form ({unsupported_reason(dtype)}); "
            "pass a weight dtype such as torch.float16, or a bit width such as 4 for FP4"
        )
    if isinstance(dtype, int) and not isinstance(dtype, bool) and dtype > 0:
        return dtype
    raise TypeError(
        f"dtype must be a torch.dtype or a positive bit width such as 4 (FP4), got {type(dtype).__name__} {dtype!r}"
    )


def _meta_bits(dtype, n: int, m: int, given) -> int:
    """``meta_bits_per_value`` checked, or its default for ``dtype`` and ``n:m``."""
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 0:
            raise ValueError(f"meta_bits_per_value must be a non-negative int, got {given!r}")
        return given
    # A torch dtype in the hardware's own form takes the dtype table's metadata bits: sparse tensor cores
    # write fp32 1:2 metadata as two 16-bit halves, each named by a 2-bit index (4 bits per kept value).
    return next((facts.meta_bits for facts in DTYPES.values() if isinstance(dtype, torch.dtype)
                 and dtype == getattr(torch, facts.torch_name, None) and (n, m) == (facts.n, facts.m)), index_bits(m))


def dense_bytes(shape, dtype) -> int:
    """Bytes of a dense tensor of ``shape`` and ``dtype`` (a dtype or a bit width).

    >>> dense_bytes((4096, 14336), torch.float16)
    117440512
    """
    return math.prod(shape_dims(shape)) * _element_bits(dtype) // 8


def shape_dims(shape, arg: str = "shape") -> list[int]:
    """The sizes of ``shape`` (a tuple, list or torch.Size of positive ints), or a clear error."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list, torch.Size)):
        raise TypeError(
            f"{arg} must be a tuple of ints such as (4096, 14336), got {type(shape).__name__} {shape!r}"
        )
    dims = []
    for d in shape:  # an integer: Python, NumPy or a 0-d integer tensor; never a bool or a float
        try:
            dims.append(None if isinstance(d, bool) else operator.index(d))
        except TypeError:
            dims.append(None)
        if dims[-1] is None:
            raise TypeError(f"{arg} must hold ints, got {type(d).__name__} {d!r} in {tuple(shape)!r}")
    if not dims or any(d <= 0 for d in dims):
        raise ValueError(f"{arg} must be non-empty with positive sizes, got {tuple(dims)}")
    return dims


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
    dims = shape_dims(shape)
    if dims[-1] % m:
        raise ValueError(f"shape's last dimension {dims[-1]} must be a multiple of m={m}")
    kept = math.prod(dims) // m * n
    return math.ceil(kept * (_meta_bits(dtype, n, m, meta_bits_per_value) + _element_bits(dtype)) / 8)


def packed_ratio(dtype, n: int = 2, m: int = 4, *, meta_bits_per_value: int | None = None) -> float:
    """Packed bytes / dense bytes: ``n/m * (1 + meta_bits / element_bits)``.

    >>> [packed_ratio(d) for d in (torch.float16, torch.bfloat16, torch.int8)]
    [0.5625, 0.5625, 0.625]
    >>> packed_ratio(torch.float32, 1, 2), packed_ratio(4, 4, 8, meta_bits_per_value=1)
    (0.5625, 0.625)
    """
    require_nm(n, m)
    return nm_ratio(_element_bits(dtype), n, m, _meta_bits(dtype, n, m, meta_bits_per_value))
