"""Independent oracles for bytes per weight and the roofline's ceilings: numbers derived by hand in this file.

As in the request model's oracles (tests/toolkit/request/test_oracles.py), each expected number is an
integer literal or a one-line product whose arithmetic is written out in the comments, so a wrong
constant in ``twofour.packing`` or ``twofour.roofline`` fails here even when the JavaScript copies it.
"""

from __future__ import annotations

import pytest
import torch

from twofour import packing, roofline
from twofour.roofline import formats


@pytest.mark.parametrize("dtype, expected", [
    # 4096^3 GEMM: 2 * 4096^3 FLOPs over W (4096^2 x in), x (4096^2 x in) and y (4096^2 x out):
    # fp16: 2 * 4096 / (2 + 2 + 2) = 1365.33 FLOP/B; int8 and fp8 write bf16: 2 * 4096 / (1 + 1 + 2)
    # = 2048 FLOP/B (not 2 * 4096 / 3 = 2730.67, which counting a 1-byte output would give).
    ("fp16", 2 * 4096 / 6), ("int8", 2048.0), ("fp8", 2048.0), ("tf32", 2 * 4096 / 12),
])
def test_arithmetic_intensity_by_hand(dtype, expected):
    assert roofline.arithmetic_intensity(4096, 4096, 4096, dtype) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("dtype, dense, packed", [
    # 4096 x 4096 = 16,777,216 values; 2:4 keeps 8,388,608 with 2 bits of position each.
    # fp16/bf16: dense 33,554,432 B; packed 8,388,608 x (16 + 2) / 8 = 18,874,368 B (ratio 0.5625)
    (torch.float16, 33_554_432, 18_874_368),
    (torch.bfloat16, 33_554_432, 18_874_368),
    # int8/fp8: dense 16,777,216 B; packed 8,388,608 x (8 + 2) / 8 = 10,485,760 B (ratio 0.625)
    (torch.int8, 16_777_216, 10_485_760),
    (torch.float8_e4m3fn, 16_777_216, 10_485_760),
])
def test_packed_bytes_per_dtype(dtype, dense, packed):
    assert packing.dense_bytes((4096, 4096), dtype) == dense
    assert packing.packed_bytes((4096, 4096), dtype) == packed
    assert packing.packed_ratio(dtype) == packed / dense


def test_fp32_packs_one_of_two_with_four_metadata_bits():
    # Sparse tensor cores run fp32 as 1:2: 16,777,216 values -> 8,388,608 kept, 32 bits each
    # plus 4 bits of metadata (written as for two 16-bit halves): 8,388,608 x 36 / 8 =
    # 37,748,736 B of a dense 67,108,864 B: ratio 0.5625, like fp16.
    assert packing.packed_bytes((4096, 4096), torch.float32, 1, 2) == 37_748_736
    assert packing.packed_ratio(torch.float32, 1, 2) == 0.5625
    assert roofline.ceilings("tf32")["memory"] == 1 / 0.5625


def test_packed_ratios_and_bytes_ceilings():
    # 1/2 of the values plus 2 bits per kept value: 16-bit 1/2 x 18/16 = 9/16; 8-bit 1/2 x 10/8 = 5/8
    assert roofline.ceilings("bf16") == {"compute": 2.0, "memory": 16 / 9}
    assert roofline.ceilings("fp8") == {"compute": 2.0, "memory": 8 / 5}
    assert formats.bits_per_weight("bf16+2:4") == 9.0
    assert formats.bits_per_weight("fp8+2:4") == 5.0
    # Sparse-Marlin: 4-bit values, 2:4 (2 + 1 bits per weight), a 16-bit scale per 128: 3.125
    assert formats.bits_per_weight("int4-g128+2:4") == 2.0 + 1.0 + 16 / 128
