"""The dense vs 2:4 GEMM model: limits, padding, wave quantization, fitting."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from twofour.hardware import get_gpu
from twofour.packing import packed_ratio
from twofour.roofline import (
    DEFAULT_EFFICIENCY,
    Efficiency,
    arithmetic_intensity,
    ceilings,
    crossover_m,
    fit,
    gemm_speedup,
    gemm_time_s,
    pad_multiple,
    predict,
    ridge_point,
    wave_efficiency,
)
import torch

SPARSE_GPUS = ["A10G", "L4", "A100", "H100", "H200", "B200"]


@pytest.mark.parametrize("gpu", SPARSE_GPUS)
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_huge_M_approaches_compute_ceiling(gpu, dtype):
    e = Efficiency(dense_overhead_us=0, sparse_overhead_us=0)
    # M a multiple of tile_m * sms so waves are full for both kernels
    M = 128 * get_gpu(gpu).sms * 8
    p = predict(M, 8192, 8192, dtype, gpu, params=e)
    assert p.bound_dense == p.bound_sparse == "compute"
    assert p.speedup == pytest.approx(2 * e.sparse_compute / e.dense_compute, rel=1e-9)


@pytest.mark.parametrize("gpu", SPARSE_GPUS)
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "int8"])
def test_M1_is_memory_bound_and_capped_by_bytes(gpu, dtype):
    if get_gpu(gpu).sparse_tflops.get(dtype) is None:
        pytest.skip(f"{gpu} has no {dtype}")
    p = predict(1, 4096, 4096, dtype, gpu)
    assert p.bound_dense == "memory" and p.bound_sparse == "memory"
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "int8": torch.int8}[dtype]
    assert p.speedup <= 1 / packed_ratio(torch_dtype)
    # without overheads and with equal bandwidth efficiency it approaches the bytes ceiling
    e = Efficiency(dense_overhead_us=0, sparse_overhead_us=0)
    q = predict(1, 16384, 16384, dtype, gpu, params=e)
    assert 0.97 * ceilings(dtype)["memory"] < q.speedup <= ceilings(dtype)["memory"]


def test_overhead_makes_decode_lose_and_crossover_exists():
    p = predict(1, 4096, 4096, "fp16", "H100")
    assert p.speedup < 1
    m = crossover_m(4096, 4096, "fp16", "H100")
    assert m is not None and m > 1
    assert gemm_speedup(m, 4096, 4096, "fp16", "H100") > 1
    assert all(gemm_speedup(k, 4096, 4096, "fp16", "H100") <= 1 for k in range(1, m))


def test_crossover_none_when_sparse_never_wins():
    slow = Efficiency(sparse_compute=0.2, sparse_memory=0.3)
    assert crossover_m(4096, 4096, "fp16", "H100", params=slow, m_max=512) is None


def test_padding_rows_up_to_backend_multiple():
    assert pad_multiple("cuSPARSELt", "fp16") == 8 and pad_multiple("cuSPARSELt", "int8") == 16
    ts = [predict(M, 4096, 4096, "fp16", "A100").sparse_us for M in range(1, 9)]
    assert max(ts) == min(ts)  # M=1..8 all run as 8 rows
    assert predict(9, 4096, 4096, "fp16", "A100").M_padded == 16
    a = predict(1, 4096, 4096, "fp16", "A100", params=Efficiency(pad_to=32))
    b = predict(1, 4096, 4096, "fp16", "A100", params=Efficiency())
    assert a.M_padded == 32 and a.sparse_us > b.sparse_us
    # dense is never padded
    assert predict(3, 4096, 4096, "fp16", "A100").dense_us < predict(8, 4096, 4096, "fp16", "A100").dense_us


@settings(max_examples=60, deadline=None)
@given(M=st.integers(1, 20000), N=st.integers(1, 30000), sms=st.integers(1, 200))
def test_wave_efficiency_bounds(M, N, sms):
    w = wave_efficiency(M, N, sms)
    assert 0 < w <= 1
    tiles = math.ceil(M / 128) * math.ceil(N / 128)
    assert w == pytest.approx(tiles / (math.ceil(tiles / sms) * sms))
    if tiles % sms == 0:
        assert w == 1


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 40), sms=st.integers(1, 200))
def test_wave_efficiency_sawtooth(k, sms):
    # within one wave, adding tiles raises efficiency; one tile past a full wave drops it
    N = 128
    full = wave_efficiency(128 * sms * k, N, sms)
    assert full == 1
    if sms > 1:
        assert wave_efficiency(128 * (sms * k + 1), N, sms) < full
        assert wave_efficiency(128 * (sms * k + 1), N, sms) <= wave_efficiency(128 * (sms * k + 2), N, sms)


@settings(max_examples=40, deadline=None)
@given(M=st.integers(1, 8192))
def test_times_are_monotone_in_M_without_wave_effects(M):
    # with a single SM there is no idle slot, so time can only grow with M
    kw = dict(mem_bw_gbs=3000, sms=1, weight_bytes=4096 * 4096 * 2, in_bytes=2, out_bytes=2, compute_eff=0.7,
              memory_eff=0.8, overhead_us=5, tile_m=128, tile_n=128, peak_tflops=900)
    assert gemm_time_s(M, 4096, 4096, **kw)[0] <= gemm_time_s(M + 1, 4096, 4096, **kw)[0]


def test_formula_matches_hand_computation():
    # 2*M*N*K / (peak*eff*wave) vs bytes / (bw*eff), written out for the JS port
    t, bound, wave = gemm_time_s(256, 4096, 4096, peak_tflops=1000, mem_bw_gbs=2000, sms=100,
                                 weight_bytes=4096 * 4096 * 2, in_bytes=2, out_bytes=2, compute_eff=0.5,
                                 memory_eff=0.5, overhead_us=10, tile_m=128, tile_n=128)
    tiles = 2 * 32
    assert wave == tiles / 100
    t_compute = 2 * 256 * 4096 * 4096 / (1000e12 * 0.5 * wave)
    t_memory = (4096 * 4096 * 2 + 256 * 4096 * 2 + 256 * 4096 * 2) / (2000e9 * 0.5)
    assert t == pytest.approx(max(t_compute, t_memory) + 10e-6, rel=1e-12)
    assert bound == ("compute" if t_compute >= t_memory else "memory")


def test_intensity_and_ridge():
    assert arithmetic_intensity(1, 4096, 4096, "fp16") < 1.01
    assert arithmetic_intensity(1, 4096, 4096, "fp16", sparse=True) > arithmetic_intensity(1, 4096, 4096, "fp16")
    assert ridge_point("H100", "fp16") == pytest.approx(989.5e12 / 3350e9)


def test_fit_recovers_known_parameters():
    truth = Efficiency(dense_compute=0.81, sparse_compute=0.47, dense_memory=0.72, sparse_memory=0.66,
                       dense_overhead_us=4.0, sparse_overhead_us=22.0)
    pts = []
    for gpu in ("H100", "A100"):
        for N, K in ((4096, 4096), (14336, 4096)):
            for M in (1, 4, 16, 64, 512, 2048, 8192, 16384):
                p = predict(M, N, K, "fp16", gpu, params=truth)
                pts.append(dict(M=M, N=N, K=K, dtype="fp16", gpu=gpu, dense_ms=p.dense_us / 1e3, sparse_ms=p.sparse_us / 1e3))
    rep = fit(pts, base=Efficiency())  # the truth's tile shape
    got = rep.params
    for name in ("dense_compute", "sparse_compute", "dense_memory", "sparse_memory"):
        assert getattr(got, name) == pytest.approx(getattr(truth, name), rel=0.01), name
    assert got.dense_overhead_us == pytest.approx(4.0, abs=0.3)
    assert got.sparse_overhead_us == pytest.approx(22.0, abs=0.5)
    assert rep.dense_rms_rel_err < 0.01 and rep.sparse_rms_rel_err < 0.01
    assert rep.dense_compute_points > 0 and rep.sparse_compute_points > 0


def test_fit_needs_enough_points():
    with pytest.raises(ValueError, match="at least 3 points"):
        fit([dict(M=1, N=64, K=64, dtype="fp16", gpu="H100", dense_ms=0.01, sparse_ms=0.02)])
    with pytest.raises(ValueError, match="needs a 'gpu'"):
        fit([dict(M=m, N=64, K=64, dtype="fp16", dense_ms=0.01, sparse_ms=0.02) for m in (1, 2, 3)])


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="M must be a positive int"):
        predict(0, 64, 64)
    with pytest.raises(ValueError, match="K must be a multiple of 4"):
        predict(1, 64, 66)
    with pytest.raises(ValueError, match="T4 .* has no sparse tensor cores"):
        predict(1, 64, 64, "fp16", "T4")
    with pytest.raises(ValueError, match="backend 'CUTLASS' is not available on H100"):
        predict(1, 64, 64, "fp16", "H100", backend="CUTLASS")
    with pytest.raises(ValueError, match="use 'tf32'"):
        predict(1, 64, 64, "float32", "H100")
    with pytest.raises(ValueError, match="A100 has no dense tensor-core peak for dtype 'fp8'"):
        predict(1, 64, 64, "fp8", "A100")
    with pytest.raises(ValueError, match="dense_compute must be a fraction"):
        Efficiency(dense_compute=1.5)
    with pytest.raises(ValueError, match="sparse_overhead_us must be"):
        Efficiency(sparse_overhead_us=-1)
    with pytest.raises(ValueError, match="tile_m must be a positive int"):
        Efficiency(tile_m=0)
    with pytest.raises(ValueError, match="unknown Efficiency fields"):
        Efficiency.from_dict({"speed": 1})
    with pytest.raises(ValueError, match="no 2:4 padding rule"):
        pad_multiple("CUTLASS", "fp8")
    with pytest.raises(TypeError, match="params must be an Efficiency"):
        predict(1, 64, 64, params={"dense_compute": 0.5})


def test_efficiency_round_trip():
    assert Efficiency.from_dict(DEFAULT_EFFICIENCY.to_dict()) == DEFAULT_EFFICIENCY


def test_fit_never_returns_a_set_that_beats_a_ceiling():
    # 2:4 times that would need a 2:4 kernel more efficient than dense: the fit clamps, it does not raise
    pts = [dict(M=M, N=4096, K=4096, dtype="fp16", gpu="H100", dense_ms=predict(M, 4096, 4096, params=Efficiency()).dense_us / 1e3,
                sparse_ms=predict(M, 4096, 4096, params=Efficiency()).dense_us / 1e3 * 0.5) for M in (1, 16, 4096, 16384)]
    got = fit(pts, base=Efficiency()).params
    assert got.sparse_memory <= got.dense_memory and got.sparse_compute <= got.dense_compute
    assert got.sparse_overhead_us >= got.dense_overhead_us
