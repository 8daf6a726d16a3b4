"""The request model, Amdahl and the roofline under hostile numbers: bounded work and one-line errors.

A huge ``m_max`` must not be scanned, sizes beyond an int64 and denormal speedups must be refused
by name (not answered with 0.0 or infinite times), and an overflowing estimate must be refused.
"""

from __future__ import annotations

import pytest

from twofour import amdahl, request, roofline
from twofour.models import LLAMA_3_8B


# ---- bounded work -----------------------------------------------------------------------


def test_crossover_m_refuses_a_huge_m_max_at_once(monkeypatch):
    from twofour.roofline import model

    calls = []
    real = model._predict
    monkeypatch.setattr(model, "_predict", lambda *a: calls.append(a) or real(*a))
    with pytest.raises(ValueError, match=r"m_max must be at most 65,536 .* got 1,000,000,000"):
        roofline.crossover_m(4096, 4096, "fp16", "H100", m_max=10**9)
    assert calls == []  # refused before any M is predicted


def test_crossover_m_is_still_the_smallest_winning_m():
    m = roofline.crossover_m(4096, 4096, "fp16", "H100")
    assert roofline.gemm_speedup(m, 4096, 4096) > 1
    assert all(roofline.gemm_speedup(M, 4096, 4096) <= 1 for M in range(1, m))
    assert roofline.crossover_m(4096, 4096, "fp16", "H100", m_max=roofline.model.MAX_CROSSOVER_M) == m


@pytest.mark.parametrize("dims", [(10**400, 4096, 4096), (16, 10**400, 4096), (16, 4096, 4 * 10**30), (2**63, 8, 8)])
def test_gemm_sizes_beyond_an_int64_are_one_line(dims):
    with pytest.raises(ValueError, match=r"must be an int from 1 to 9,223,372,036,854,775,807 \(a GEMM dimension\)"):
        roofline.gemm_speedup(*dims)


def test_a_request_with_huge_but_valid_counts_still_runs():
    w = request.Workload(LLAMA_3_8B, 2**31 - 1, 2**31 - 1, 2)  # prefill M = batch x prompt passes 2^31
    assert request.estimate(w, "H200").total_dense_s > 0


def test_wave_efficiency_and_amdahl_refuse_what_would_divide_by_zero_or_overflow():
    with pytest.raises(ValueError, match="sms must be an int from 1"):
        roofline.wave_efficiency(1, 1, 0)
    with pytest.raises(ValueError, match="s must be a positive finite speedup"):
        amdahl.speedup(0.5, 2**1024)


# ---- Amdahl and the request model at the edge of the doubles ----------------------------


@pytest.mark.parametrize("s", [1e-320, 5e-324, 1e-310])
def test_a_denormal_speedup_is_refused_not_zero(s):
    with pytest.raises(ValueError, match=r"s must be at least 2\.2250738585072014e-308 \(the smallest normal double"):
        amdahl.speedup(1, s)
    with pytest.raises(ValueError, match=r"speedups\[0\] must be at least"):
        amdahl.combined_speedup([0.5], [s])
    assert amdahl.speedup(1, amdahl.MIN_SPEEDUP) > 0


@pytest.mark.parametrize("gemm_speedup", [1e-320, {"decode": 5e-324}])
def test_a_request_estimate_never_holds_infinite_times(gemm_speedup):
    w = request.Workload(LLAMA_3_8B, 1, 512, 256)
    with pytest.raises(ValueError, match="must be at least 2.2250738585072014e-308"):
        request.estimate(w, "H200", gemm_speedup=gemm_speedup)


def test_an_overflowing_estimate_is_refused():
    w = request.Workload(LLAMA_3_8B, 2**31 - 1, 2**31 - 1, 2**31 - 1)
    with pytest.raises(ValueError, match=r"out of range: ttft_sparse_s would be inf"):
        request.estimate(w, "H200", gemm_speedup=1e-300)
