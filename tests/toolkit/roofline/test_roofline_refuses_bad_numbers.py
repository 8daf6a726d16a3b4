"""Every numeric routine is bounded: a hostile argument is refused by name, never a hang, an inf or a traceback.

The cases are the ones an adversarial round found: a bisection whose tolerance is below one ulp
(it never ended), a TPOT target of 1e25 s (``b -= 1`` on a float that no longer changes), wave
counts of 5e-324 tokens (a division by zero tiles), ``inf`` where a count belongs, ``sparse="no"``
counted as sparse, and integer counts rounded through floats. The bank can reach these helpers
from an expression, so each one must refuse what would run long, not rely on the bank's deadline.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from twofour.course.practice import BankError, evaluate_expression
from twofour.course.practice.helpers import wave_count
from twofour.models import LLAMA_3_8B, LLAMA_3_70B
from twofour.packing import packed_bytes, packed_ratio
from twofour.packing.explain import explain_group
from twofour.roofline.formats import (break_even_bandwidth_ratio, capacity_at_tpot, decode_tokens_per_s,
                                      kv_bytes_per_token)
from twofour.roofline.model import arithmetic_intensity, ridge_point, speedup_curve
from twofour.roofline.tiles import wave_efficiency

pytestmark = pytest.mark.timeout(60)  # each case used to hang: fail it instead of stalling the suite

_BREAK_EVEN = dict(context=4096, tpot_target_s=0.05)


@pytest.mark.parametrize("tol", [0, -1e-3, 1e-300, 5e-324, math.nan, math.inf, True, "1e-4", 0.9])
def test_break_even_refuses_a_tolerance_that_never_ends_or_means_nothing(tol):
    with pytest.raises(ValueError, match=r"tol must be a number from 1e-12 to 0\.5"):
        break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", tol=tol, **_BREAK_EVEN)


def test_break_even_at_the_smallest_tolerance_still_answers():
    r = break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", tol=1e-12, **_BREAK_EVEN)
    coarse = break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", **_BREAK_EVEN)
    assert 0 < r <= 1 and abs(r - coarse) <= 1e-4


@pytest.mark.parametrize("target", [10**25, 1e25, math.inf, math.nan, -1, 0, 3601, True])
def test_capacity_refuses_a_tpot_target_that_never_ends(target):
    with pytest.raises(ValueError, match=r"tpot_target_s must be a number in \(0, 3600\]"):
        capacity_at_tpot(LLAMA_3_8B, "L4", "bf16", context=4096, tpot_target_s=target)


@pytest.mark.parametrize("kw, fragment", [
    (dict(memory_bytes=math.inf), "memory_bytes must be a number in (0, 1e+18]"),
    (dict(memory_bytes=10**400), "an int of 401 digits"),
    (dict(step_overhead_s=math.nan), "step_overhead_s must be a number from 0 to 3600"),
    (dict(step_overhead_s=True), "step_overhead_s"),
    (dict(context=10**20), "context must be an int from 1 to"),
    (dict(kv_bytes_per_element=1e-300), "over 2**53 sequences fit"),
    (dict(kv_bytes_per_element=math.inf), "kv_bytes_per_element must be a number in (0, 64]"),
])
def test_capacity_refuses_inputs_that_overflow(kw, fragment):
    args = dict(context=4096, tpot_target_s=0.1) | kw
    with pytest.raises(ValueError, match=re_escape(fragment)):
        capacity_at_tpot(LLAMA_3_8B, "H200", "bf16", **args)


def test_capacity_at_an_hour_per_token_is_a_finite_memory_bound_answer():
    c = capacity_at_tpot(LLAMA_3_8B, "H200", "bf16", context=4096, tpot_target_s=3600)
    assert c.bound == "memory" and c.batch == c.batch_by_memory > 0 and math.isfinite(c.tokens_per_s)


def test_the_bank_cannot_reach_a_loop_that_outlives_its_deadline():
    for expr in ("formats.capacity_at_tpot(LLAMA_3_8B, 'L4', 'bf16', context=4096, tpot_target_s=10**25)",
                 "formats.break_even_bandwidth_ratio(LLAMA_3_70B, 'H200', 'fp8+2:4', 'fp8', context=4096, "
                 "tpot_target_s=0.05, tol=0)"):
        with pytest.raises(BankError, match="must be a number"):
            evaluate_expression(expr)


@pytest.mark.parametrize("call, fragment", [
    (lambda: wave_efficiency(5e-324, 4096, 132), "M must be a number from 1"),
    (lambda: wave_efficiency(1, 4096, 132.5), "sms must be an int from 1"),
    (lambda: wave_efficiency(math.inf, 4096, 132), "M must be a number from 1"),
    (lambda: speedup_curve([math.inf], 4096, 4096), "Ms[0] must be an int >= 1"),
    (lambda: speedup_curve([1, "2"], 4096, 4096), "Ms[1] must be an int >= 1"),
    (lambda: speedup_curve([2.0], 4096, 4096), "Ms[0] must be an int >= 1"),
    (lambda: speedup_curve([True], 4096, 4096), "Ms[0] must be an int >= 1"),
    (lambda: kv_bytes_per_token(LLAMA_3_8B, math.inf), "kv_bytes_per_element must be a number in (0, 64]"),
    (lambda: kv_bytes_per_token(LLAMA_3_8B, True), "kv_bytes_per_element"),
    (lambda: decode_tokens_per_s(5e-324, "A100"), "n_bytes must be a number of bytes from 1"),
    (lambda: decode_tokens_per_s(math.inf, "A100"), "n_bytes must be a number of bytes from 1"),
    (lambda: decode_tokens_per_s(1e9, "A100", efficiency=math.nan), "efficiency must be in (0, 1]"),
    (lambda: packed_ratio(torch.float16, meta_bits_per_value=-4), "meta_bits_per_value must be a non-negative int"),
    (lambda: packed_ratio(torch.float16, meta_bits_per_value=-16), "meta_bits_per_value must be a non-negative int"),
    (lambda: packed_ratio(torch.float16, meta_bits_per_value=1.5), "meta_bits_per_value must be a non-negative int"),
    (lambda: explain_group([2**70, 0, 0, 1]), "values must be one group of m=4 numbers that fit a tensor"),
])
def test_model_helpers_refuse_by_name(call, fragment):
    with pytest.raises(ValueError, match=re_escape(fragment)):
        call()


@pytest.mark.parametrize("sparse", ["no", math.nan, 0, 1, None])
def test_sparse_flags_are_booleans(sparse):
    with pytest.raises(TypeError, match="sparse must be True or False"):
        arithmetic_intensity(1, 4096, 4096, sparse=sparse)
    with pytest.raises(TypeError, match="sparse must be True or False"):
        ridge_point("H100", sparse=sparse)


def test_packed_ratio_agrees_with_packed_bytes_and_stays_above_the_floor():
    for meta in range(0, 9):
        assert packed_ratio(torch.float16, meta_bits_per_value=meta) == pytest.approx(
            packed_bytes((8, 16), torch.float16, meta_bits_per_value=meta) / (8 * 16 * 2))
        assert packed_ratio(torch.float16, meta_bits_per_value=meta) >= 0.5


def test_wave_counts_are_exact_integers_at_any_size():
    assert wave_count(10**12, 10**12 + 128, 132) == -(-(-(-10**12 // 128) * -(-(10**12 + 128) // 128)) // 132)
    assert wave_count(10**12, 10**12 + 128, 132) == 462387547407670455  # the float route gave ...464
    assert wave_efficiency(10**12, 10**12 + 128, 132) <= 1.0


def test_fuzz_model_helpers_answer_finite_or_refuse_by_name():
    """Seeded, bounded fuzz: random hostile numbers into every helper; each answers a finite number or a ValueError/TypeError."""
    rng = random.Random(40)
    pool = [0, -1, 1, 2, 7, 132, 4096, 2**31, 2**53 + 1, 10**12, 10**40, 5e-324, 1e-300, 0.5, 1.5, 1e25, 1e308,
            math.inf, -math.inf, math.nan, True, False, "2", None]

    def one(f, *args, **kw):
        try:
            out = f(*args, **kw)
        except (ValueError, TypeError) as exc:
            assert str(exc) and "Traceback" not in str(exc)
            return
        vals = [out] if isinstance(out, (int, float)) else [p.speedup for p in out] if isinstance(out, list) else \
            [out.tokens_per_s, out.tpot_s] if hasattr(out, "tokens_per_s") else []
        for v in vals:
            assert v is None or math.isfinite(v), (f.__name__, args, kw, out)

    for _ in range(150):
        a, b, c = (rng.choice(pool) for _ in range(3))
        one(wave_efficiency, a, b, c)
        one(wave_count, a, b, c)
        one(kv_bytes_per_token, LLAMA_3_8B, a)
        one(decode_tokens_per_s, a, "H200", efficiency=rng.choice(pool))
        one(capacity_at_tpot, LLAMA_3_8B, "H200", "bf16+2:4", context=a, tpot_target_s=b,
            step_overhead_s=rng.choice([0.0, c]), sparse_bandwidth_ratio=rng.choice([1.0, c]))
        one(packed_ratio, torch.float16, meta_bits_per_value=a)
        one(arithmetic_intensity, 16, 4096, 4096, sparse=a)
    for _ in range(15):
        one(speedup_curve, [rng.choice(pool)], 4096, 4096)
        one(break_even_bandwidth_ratio, LLAMA_3_70B, "H200", "fp8+2:4", "fp8", context=4096,
            tpot_target_s=rng.choice([0.05, rng.choice(pool)]), tol=rng.choice([1e-4, rng.choice(pool)]))


def re_escape(s: str) -> str:
    import re

    return re.escape(s)
