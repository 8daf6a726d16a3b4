"""Zero, NaN and inf by the bits, for every dtype torch has (issue 17, item 2).

The oracle is torch's own conversion to float32/float64: an element is zero when its value
converts to 0 (``-0.0`` included) and is not NaN. Every 8-bit float is tested on all 256
codes, float16 and bfloat16 on all 65,536, through every path that reads the bits: the
reference mask, ``check``, ``pack``/``unpack`` and ``nonzeros_per_group``.
"""

from __future__ import annotations

import pytest
import torch

import twofour
from twofour._passes.bits import FORMATS, SUPPORTED_DTYPES, nonzero_mask, unsupported_reason

ALL_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
FLOAT8 = [d for d in FORMATS if torch.empty((), dtype=d).element_size() == 1]


def every_code(dtype: torch.dtype) -> torch.Tensor:
    """All bit patterns of a 1- or 2-byte dtype, in code order, as a 1-D tensor of that dtype."""
    size = torch.empty((), dtype=dtype).element_size()
    codes = torch.arange(1 << (8 * size), dtype=torch.int64)
    return codes.to(torch.uint8 if size == 1 else torch.int16).view(dtype)


def oracle_nonzero(t: torch.Tensor) -> torch.Tensor:
    if t.is_floating_point():
        v = t.to(torch.float64) if t.element_size() > 1 else t.float()
        return (v != 0) | torch.isnan(v)
    return t.to(torch.int64) != 0


def oracle_class(value: float) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf"
    return "zero" if value == 0 else "finite"


def test_the_float8_family_is_all_here():
    names = {str(d).replace("torch.", "") for d in FLOAT8}
    assert {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"} <= names


@pytest.mark.parametrize("dtype", FLOAT8, ids=str)
def test_format_rules_match_torch_on_all_256_codes(dtype):
    fmt = FORMATS[dtype]
    values = every_code(dtype).float().tolist()
    derived = [fmt.classify(code) for code in range(256)]
    assert derived == [oracle_class(v) for v in values]
    assert tuple(c for c in range(256) if derived[c] == "zero") == fmt.zero_codes()


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz], ids=str)
def test_fnuz_0x80_is_nan_and_nonzero(dtype):
    t = torch.tensor([0x80], dtype=torch.uint8).view(dtype)
    assert torch.isnan(t.float()).all()
    assert nonzero_mask(t).tolist() == [True]
    assert FORMATS[dtype].zero_codes() == (0,)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_format_rules_match_torch_on_every_16_bit_code(dtype):
    fmt = FORMATS[dtype]
    values = every_code(dtype).double().tolist()
    assert [fmt.classify(c) for c in range(1 << 16)] == [oracle_class(v) for v in values]


@pytest.mark.parametrize("dtype", [d for d in SUPPORTED_DTYPES if torch.empty((), dtype=d).element_size() <= 2], ids=str)
def test_every_code_through_every_path(dtype):
    """All codes of the dtype, each in a group ``[code, 0, 1, 1]``: the group breaks 2:4 exactly when the code is non-zero."""
    codes = every_code(dtype) if dtype.is_floating_point else torch.arange(
        torch.iinfo(dtype).min, torch.iinfo(dtype).max + 1
    ).to(dtype)
    expected = oracle_nonzero(codes)
    assert torch.equal(nonzero_mask(codes), expected)
    zero = torch.zeros((), dtype=torch.int64).to(dtype)
    one = torch.ones((), dtype=torch.int64).to(dtype)
    # Each group: [code, 0, one, one] -> 3 non-zeros (bad) exactly when the code is non-zero.
    n = codes.numel()
    W = torch.stack([codes, zero.expand(n), one.expand(n), one.expand(n)], dim=1).reshape(64, -1)
    bad = expected.reshape(64, -1)
    report = twofour.check(W)
    assert torch.equal(report.bad_groups_per_row, bad.sum(dim=1))
    assert report.nonzero_fraction == pytest.approx((expected.sum().item() + 2 * n) / (4 * n))
    assert torch.equal(twofour.nonzeros_per_group(W).reshape(-1).long(), expected.long() + 2)
    # [code, 0, 0, one]: always 2:4; pack keeps the code's bits exactly when it is non-zero.
    W2 = torch.stack([codes, zero.expand(n), zero.expand(n), one.expand(n)], dim=1).reshape(64, -1)
    assert twofour.check(W2).valid
    back = twofour.unpack(twofour.pack(W2))
    bits = lambda t: t.view(torch.uint8 if t.element_size() == 1 else torch.int16)  # noqa: E731
    position = torch.arange(W2.numel()).reshape(W2.shape) % 4
    code_nonzero = expected.reshape(64, -1).repeat_interleave(4, dim=1)
    kept = (code_nonzero & (position == 0)) | (position == 3)
    assert torch.equal(bits(back)[kept], bits(W2)[kept])  # every non-zero (NaN payloads too) bit for bit
    assert not oracle_nonzero(back[~kept]).any()


def zeros_of(dtype: torch.dtype) -> torch.Tensor:
    if dtype in (torch.qint8, torch.quint8, torch.qint32):
        return torch.quantize_per_tensor(torch.zeros(2, 8), 1.0, 0, dtype)
    if dtype in (torch.quint4x2, torch.quint2x4):
        return torch.quantize_per_tensor(torch.zeros(2, 8), 1.0, 0, dtype)
    return torch.zeros(2, 8, dtype=dtype)


@pytest.mark.filterwarnings("ignore::UserWarning")  # complex32 and quantized types warn when made
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_every_torch_dtype_is_handled_or_refused_by_name(dtype):
    name = str(dtype).replace("torch.", "")
    try:
        W = zeros_of(dtype)
    except (RuntimeError, TypeError, NotImplementedError):
        pytest.skip(f"torch cannot make a {name} tensor here")
    if dtype in SUPPORTED_DTYPES:
        assert unsupported_reason(dtype) is None
        assert twofour.check(W).valid
        return
    reason = unsupported_reason(dtype)
    assert reason
    for fn in (twofour.check, twofour.pack, twofour.prune):
        with pytest.raises(TypeError, match=f"dtype {name}: "):
            fn(W)


def test_scale_and_packed_formats_say_why():
    assert "has no zero" in unsupported_reason(torch.float8_e8m0fnu)
    assert "several values into each byte" in unsupported_reason(torch.float4_e2m1fn_x2)
