"""Zero, NaN and inf by the bits, for every dtype torch has.

Reading the bits (not comparing values) is exact for every format and works where a CPU build
lacks float8 comparisons. The rules are derived from each format's definition, not listed:

* IEEE-style floats (float64/32/16, bfloat16, float8_e5m2): zero is exponent 0 and mantissa 0
  with either sign (``-0.0`` is zero); an all-ones exponent is inf (mantissa 0) or NaN.
* ``fn`` ("finite"): float8_e4m3fn has no inf; only S.1111.111 is NaN; ``-0.0`` exists.
* ``fnuz`` ("finite, no negative zero"): float8_e4m3fnuz and float8_e5m2fnuz have one zero,
  0x00; the code that would be ``-0.0``, 0x80, is their only NaN (clearing the sign bit before
  testing for zero would read it as zero).
* float8_e8m0fnu (a power-of-two scale) has no zero, and float4_e2m1fn_x2 holds two values per
  byte: neither has an element-wise N:M meaning, so both are refused.
* Integers: zero is all bits zero (``-128`` is the sign bit alone and is non-zero).

>>> FORMATS[torch.float8_e4m3fnuz].classify(0x80), FORMATS[torch.float8_e4m3fn].classify(0x80)
('nan', 'zero')
>>> nonzero_mask(torch.tensor([0.0, -0.0, 1.0, float("nan")])).tolist()
[False, False, True, True]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "FloatFormat",
    "FORMATS",
    "SUPPORTED_DTYPES",
    "unsupported_reason",
    "zero_bits",
    "sign_bit_counts",
    "signed_int_view",
    "same_size_int_view",
    "nonzero_mask",
]


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: field widths and which special values it has. ``nan`` says where
    NaN lives: ``"ieee"`` (all-ones exponent, non-zero mantissa), ``"all-ones"`` (all-ones exponent and
    mantissa: the ``fn`` formats), or ``"negative-zero"`` (the code of ``-0.0``: the ``fnuz`` formats).

    >>> FloatFormat("float16", 5, 10, inf=True, nan="ieee").zero_codes()
    (0, 32768)
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    inf: bool
    nan: str
    signed: bool = True
    has_zero: bool = True

    @property
    def bits(self) -> int:
        return int(self.signed) + self.exponent_bits + self.mantissa_bits

    @property
    def signed_zero(self) -> bool:
        """True when ``-0.0`` is a zero (it is NaN in the fnuz formats)."""
        return self.signed and self.has_zero and self.nan != "negative-zero"

    def classify(self, code: int) -> str:
        """``"zero"``, ``"nan"``, ``"inf"`` or ``"finite"`` for one bit pattern (an int)."""
        sign = code >> (self.bits - 1) & 1 if self.signed else 0
        exponent = code >> self.mantissa_bits & ((1 << self.exponent_bits) - 1)
        mantissa = code & ((1 << self.mantissa_bits) - 1)
        all_ones = exponent == (1 << self.exponent_bits) - 1
        if self.nan == "negative-zero" and sign and exponent == 0 and mantissa == 0:
            return "nan"
        if self.nan == "ieee" and all_ones:
            return "nan" if mantissa else ("inf" if self.inf else "finite")
        if self.nan == "all-ones" and all_ones and mantissa == (1 << self.mantissa_bits) - 1:
            return "nan"
        if self.has_zero and exponent == 0 and mantissa == 0:
            return "zero"
        return "finite"

    def zero_codes(self) -> tuple[int, ...]:
        """Every bit pattern whose value is zero."""
        if not self.has_zero:
            return ()
        return (0, 1 << (self.bits - 1)) if self.signed_zero else (0,)


FORMATS: dict[torch.dtype, FloatFormat] = {getattr(torch, f.name): f for f in (
    FloatFormat("float64", 11, 52, inf=True, nan="ieee"),
    FloatFormat("float32", 8, 23, inf=True, nan="ieee"),
    FloatFormat("float16", 5, 10, inf=True, nan="ieee"),
    FloatFormat("bfloat16", 8, 7, inf=True, nan="ieee"),
    FloatFormat("float8_e5m2", 5, 2, inf=True, nan="ieee"),
    FloatFormat("float8_e4m3fn", 4, 3, inf=False, nan="all-ones"),
    FloatFormat("float8_e4m3fnuz", 4, 3, inf=False, nan="negative-zero"),
    FloatFormat("float8_e5m2fnuz", 5, 2, inf=False, nan="negative-zero"),
    FloatFormat("float8_e8m0fnu", 8, 0, inf=False, nan="all-ones", signed=False, has_zero=False),
) if hasattr(torch, f.name)}

# Integers a weight can be stored in, and the floats with a zero (float64 is there for numerics).
_INTS = (torch.int8, torch.uint8, torch.int16, torch.int32)
SUPPORTED_DTYPES: tuple[torch.dtype, ...] = tuple(d for d, f in FORMATS.items() if f.has_zero) + _INTS

_SIGNED_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def unsupported_reason(dtype: torch.dtype) -> str | None:
    """None for a supported dtype, else why it has no element-wise N:M meaning (one phrase).

    >>> unsupported_reason(torch.float16) is None, unsupported_reason(torch.float8_e8m0fnu)
    (True, 'float8_e8m0fnu has no zero (it encodes powers of two only, a scale format)')
    """
    if dtype in SUPPORTED_DTYPES:
        return None
    name = str(dtype).replace("torch.", "")
    if dtype in FORMATS and not FORMATS[dtype].has_zero:
        return f"{name} has no zero (it encodes powers of two only, a scale format)"
    if name.startswith("float4") or name.endswith("x2") or name.endswith("x4") or name.endswith("x8"):
        return f"{name} packs several values into each byte; unpack it to one value per element first"
    if dtype.is_complex:
        return f"{name} is complex; sparse tensor cores multiply real numbers"
    if dtype == torch.bool:
        return "bool is a mask, not a weight"
    if name.startswith(("q", "bits")):
        return f"{name} is a quantized or raw-bits type; dequantize it (or view its integer codes) first"
    return f"{name} is not a weight dtype that N:M kernels know"


def zero_bits(dtype: torch.dtype) -> int:
    """Mask of the bits that must all be 0 for an element to be zero (the sign bit excluded when ``-0.0`` is zero).

    >>> hex(zero_bits(torch.float16)), hex(zero_bits(torch.float8_e5m2fnuz)), hex(zero_bits(torch.int8))
    ('0x7fff', '0xff', '0xff')
    """
    bits = torch.empty((), dtype=dtype).element_size() * 8
    fmt = FORMATS.get(dtype)
    return (1 << (bits - 1)) - 1 if fmt is not None and fmt.signed_zero else (1 << bits) - 1


def sign_bit_counts(dtype: torch.dtype) -> bool:
    """True when the top bit alone makes an element non-zero (integers, fnuz floats)."""
    fmt = FORMATS.get(dtype)
    return fmt is None or not fmt.signed_zero


def signed_int_view(t: torch.Tensor) -> torch.Tensor:
    """``t``'s bits as the signed integer dtype of the same size (no copy)."""
    return t.view(_SIGNED_OF_SIZE[t.element_size()])


def same_size_int_view(t: torch.Tensor) -> torch.Tensor:
    """View ``t``'s bits as an integer tensor of the same element size (no copy; 1 byte: uint8)."""
    return t.view(_INT_OF_SIZE[t.element_size()])


def nonzero_mask(t: torch.Tensor) -> torch.Tensor:
    """Boolean mask of non-zero elements by the bits: ``-0.0`` is zero, NaN and inf are non-zero (the
    reference rule; ``twofour._passes.groupcount`` computes it with word arithmetic).

    >>> nonzero_mask(torch.tensor([0x00, 0x80], dtype=torch.uint8).view(torch.float8_e4m3fnuz)).tolist()
    [False, True]
    """
    if not t.is_floating_point():
        return t != 0
    mask = zero_bits(t.dtype)
    bits = signed_int_view(t)
    if mask >= 1 << (8 * t.element_size() - 1):  # every bit matters: compare the whole code
        return bits != 0
    return torch.bitwise_and(bits, mask) != 0
