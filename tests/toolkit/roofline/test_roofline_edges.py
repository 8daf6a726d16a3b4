"""twofour.roofline against bytes, FLOPs and launches counted by hand (mutation testing).

The dtype facts used here, stated once: fp16/bf16 store 2 bytes and write 2; int8/fp8 store 1
byte and write 2 (8-bit GEMMs are assumed to write bf16); 2:4 keeps half the values plus a
2-bit position per kept value. PERFECT below is a parameter set whose kernels reach the data
sheet: every efficiency 1, a per-SM bandwidth so large that one busy SM saturates DRAM, no
latency, no helper kernels, no L2 flush cost.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from twofour.roofline import (ASSUMED_PARAMS, KernelFamily, arithmetic_intensity, ceilings, kernel_time, predict,
                              ridge_point, wave_efficiency)

MI = 1 << 20


def _approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


@pytest.mark.parametrize("dtype, in_b, out_b", [("fp16", 2, 2), ("bf16", 2, 2), ("int8", 1, 2), ("fp8", 1, 2)])
def test_intensity_counts_weight_input_and_output_bytes(dtype, in_b, out_b):
    dense_bytes = 16 * MI * in_b + 16 * MI * in_b + 16 * MI * out_b
    assert arithmetic_intensity(4096, 4096, 4096, dtype) == _approx(2**37 / dense_bytes)
    packed_weight = 16 * MI * in_b * (2 * in_b + 0.5) / (4 * in_b)
    sparse_bytes = packed_weight + 16 * MI * in_b + 16 * MI * out_b
    assert arithmetic_intensity(4096, 4096, 4096, dtype, sparse=True) == _approx(2**37 / sparse_bytes)


def _perfect(tiles=((None, None, 128, 128),)):
    fam = KernelFamily(tiles, cta_target=0, max_split=1, min_k_iters=1, compute_eff=1.0, sm_compute_eff=1.0,
                       mem_eff=1.0, per_sm_gbs=1e12, fill_gain=0.0, latency_us=0.0, helper_split_us=0.0)
    return replace(ASSUMED_PARAMS, cublas=fam, cusparselt=fam, cusparselt_bf16=fam, cusparselt_searched=fam, cutlass=fam, pad_us=0.0,
                   graph_dense_us=0.0, graph_sparse_us=0.0, host_dense_us=0.0, host_sparse_us=0.0, dram_eff=1.0,
                   flush_dirty_mb=0.0, flush_dirty_frac=0.0)


PERFECT = _perfect()
# A kernel computes its whole tile: a 128 x 128 tile at one token is the math of 128 tokens, which
# outlasts streaming the weight. A 16-token tile (cuBLAS-like at decode) leaves decode to the bytes.
PERFECT_NARROW = _perfect(((None, None, 128, 16),))


def test_predicted_int8_decode_moves_the_bytes_counted_by_hand():
    # H100: 3,350 GB/s. A 1-token int8 GEMV is memory-bound on both sides.
    p = predict(1, 4096, 4096, "int8", "H100", params=PERFECT_NARROW, scenario="kernel")
    assert (p.bound_dense, p.bound_sparse) == ("memory", "memory")
    bw = 3350 * 32 / (32 + 3350 / 1e12)  # 32 tiles of 128 x 16: 32 busy SMs, each saturating
    # Dense: weight 16 Mi bytes, x 4 Ki bytes, y 4 Ki bf16 values = 8 Ki bytes.
    assert p.dense.n_bytes == 16 * MI + 4096 + 8192
    assert p.dense_us == _approx((16 * MI + 4096 + 8192) / (bw * 1e3))
    # 2:4: x is padded to 16 rows for int8; the packed weight is 10 Mi bytes (0.625 of dense); y keeps 1 row.
    assert p.M_padded == 16 and p.sparse.n_bytes == 10 * MI + 16 * 4096 + 4096 * 2
    assert p.sparse_us == _approx(p.sparse.n_bytes / (bw * 1e3))


def test_predicted_fp16_prefill_is_compute_bound_at_the_peaks():
    # 16384 x 4096 x 4096 on H100: 4096 tiles of 128 x 128 in 32 waves of 132 SMs, each CTA
    # 2 * 128 * 128 * 4096 FLOPs at a 132nd of the peak.
    p = predict(16384, 4096, 4096, "fp16", "H100", params=PERFECT, scenario="kernel")
    assert (p.dense.tiles, p.dense.waves, p.dense.busy_sms) == (4096, 32, 132)
    assert wave_efficiency(16384, 4096, 132) == _approx(4096 / (32 * 132))
    assert p.bound_dense == p.bound_sparse == "compute"
    cta = 2 * 128 * 128 * 4096
    assert p.dense_us == _approx(32 * cta / (989.5 * 1e6 / 132))
    assert p.sparse_us == _approx(32 * cta / (1979.0 * 1e6 / 132))
    assert p.speedup == _approx(2.0)


def test_split_k_partials_are_bytes_and_helpers_are_time():
    fam = replace(PERFECT.cusparselt, tiles=((None, None, 128, 256),), cta_target=120, max_split=4, min_k_iters=16,
                  helper_split_us=0.75, latency_us=2.5)
    prm = replace(PERFECT, cusparselt=fam, pad_us=1.25)
    k = kernel_time(1, 1024, 4096, "fp16", "H200", "cusparselt", prm)
    assert (k.tiles, k.split, k.ctas) == (8, 4, 32)
    partials = 2 * (32 - 8) * 128 * 256 * 4  # 3 of 4 splits write a 128 x 256 fp32 tile, the last reads them
    assert k.n_bytes == 1024 * 4096 * 2 * 9 // 16 + 8 * 4096 * 2 + 1024 * 2 + partials
    assert k.helpers_us == 0.75 + 1.25 and k.kernel_us == _approx(2.5 + max(k.t_compute_us, k.t_memory_us) + 2.0)
    assert kernel_time(8, 1024, 4096, "fp16", "H200", "cusparselt", prm).helpers_us == 0.75  # 8 rows: no pad


def test_few_busy_sms_pull_less_bandwidth():
    fam = replace(PERFECT.cusparselt, per_sm_gbs=40.0, mem_eff=0.5)
    prm = replace(PERFECT, cusparselt=fam)
    k = kernel_time(1, 128 * 10, 4096, "fp16", "H200", "cusparselt", prm)  # 10 tiles: 10 busy SMs
    assert k.busy_sms == 10 and k.bw_gbs == _approx(2400 * 10 / (10 + 2400 / 40.0))
    assert kernel_time(1, 128 * 100, 4096, "fp16", "H200", "cusparselt", prm).bw_gbs > k.bw_gbs


def test_a_writing_l2_flush_costs_the_write_back():
    prm = replace(PERFECT, dram_eff=0.5, flush_dirty_mb=10.0, flush_dirty_frac=0.5)
    flushed = kernel_time(1, 4096, 4096, "fp16", "H200", "cublas", prm, l2="flushed")
    clean = kernel_time(1, 4096, 4096, "fp16", "H200", "cublas", prm, l2="clean")
    n = flushed.n_bytes
    assert clean.t_memory_us == _approx(n / (4800 * 0.5 * 1e3))
    assert flushed.t_memory_us == _approx((n + min(n * 0.5, 10e6)) / (4800 * 0.5 * 1e3))


def test_scenario_costs_by_family():
    prm = replace(PERFECT, graph_dense_us=8.0, graph_sparse_us=7.0, host_dense_us=20.0, host_sparse_us=500.0)
    k = {sc: predict(1, 64, 64, "fp16", "A100", "cuSPARSELt", prm, scenario=sc) for sc in ("kernel", "cached", "eager")}
    assert k["cached"].dense_us == _approx(k["kernel"].dense_us + 8.0)
    assert k["cached"].sparse_us == _approx(k["kernel"].sparse_us + 7.0)
    assert (k["eager"].dense_us, k["eager"].sparse_us) == (20.0, 500.0)
    assert (k["eager"].bound_dense, k["eager"].bound_sparse) == ("host", "host")
    # CUTLASS builds no cuSPARSELt plan: its host cost is the dense one's, in any spelling.
    assert predict(1, 64, 64, "fp16", "A100", "cutlass", prm, scenario="eager").sparse_us == 20.0
    assert predict(1, 64, 64, "fp16", "A100", "cuSPARSELt", prm, scenario="eager", algorithm="searched").sparse_us == 500.0


def test_the_guard_caps_at_the_dense_kernels_own_bound():
    prm = replace(PERFECT_NARROW, cusparselt=replace(PERFECT_NARROW.cusparselt, latency_us=0.0),
                  cublas=replace(PERFECT_NARROW.cublas, latency_us=50.0))
    p = predict(1, 4096, 4096, "fp16", "H200", params=prm, scenario="kernel")  # dense memory-bound
    assert p.ceiling_guard and p.sparse_us == _approx(p.dense_us / (1 / 0.5625))
    assert p.sparse.kernel_us < p.sparse_us  # the kernel's own time is kept, the reported time is raised


def test_ceilings_and_ridge_point():
    assert ceilings("fp16") == {"compute": 2.0, "memory": 1 / 0.5625}
    assert ceilings("fp8")["memory"] == _approx(1 / 0.625)
    assert ceilings("int8")["memory"] == _approx(1.6)
    assert ridge_point("H100", "fp16") == _approx(989.5e12 / 3350e9)
    assert ridge_point("H100", "fp16", sparse=True) == _approx(1979e12 / 3350e9)


def test_fit_summary_names_the_gpu_and_each_regime_of_each_held_out_test():
    import re

    from twofour.roofline import fit_summary

    text = fit_summary("H100")
    assert text.startswith("H100: base set with the 2:4 compute_eff refitted to")
    for part in ("kernel time", "CUDA-graph replay"):
        assert re.search(part + r" M<=16 \d+% \(n=\d+\), 16<M<=256 \d+% \(n=\d+\), M>256 \d+% \(n=\d+\)", text), part
    assert re.search(r"each source left out: M>256 \d+% \(n=\d+\) from \d+ sources$", text)
    assert fit_summary().startswith("base set: no usable measurement on this GPU")


@pytest.mark.parametrize("pad_to", [0, -8, 2.5, True])
def test_pad_to_error_names_it(pad_to):
    with pytest.raises(ValueError, match=rf"^pad_to must be a positive int, got {pad_to!r}$"):
        replace(ASSUMED_PARAMS, pad_to=pad_to)


def test_fit_recovers_a_familys_constants():
    """Times made by the model with known constants fit back to them (the fit's own loss is the model's)."""
    from twofour.roofline.fitting import fit_family

    truth = ASSUMED_PARAMS.with_family("cusparselt", latency_us=7.0, mem_eff=0.55, per_sm_gbs=33.0, compute_eff=0.45)
    pts = [dict(M=M, N=N, K=K, dtype="fp16") for M in (1, 16, 64, 256, 1024, 4096, 16384)
           for N, K in ((1024, 4096), (4096, 4096), (14336, 4096), (4096, 14336))]
    meas = [kernel_time(p["M"], p["N"], p["K"], "fp16", "H200", "cusparselt", truth, l2="flushed").kernel_us for p in pts]
    fam, _, rms = fit_family(pts, meas, ASSUMED_PARAMS.cusparselt, ASSUMED_PARAMS, sparse=True)
    assert rms < 0.01
    assert fam.latency_us == pytest.approx(7.0, rel=0.05) and fam.mem_eff == pytest.approx(0.55, rel=0.05)
    with pytest.raises(ValueError, match="at least as many points"):
        fit_family(pts[:3], meas[:3], ASSUMED_PARAMS.cusparselt, ASSUMED_PARAMS, sparse=True)


def test_fit_recovers_the_per_sm_compute_efficiency():
    """sm_compute_eff is fitted too: compute-bound GEMMs on few SMs (one CTA's rate) pin it, many SMs pin compute_eff."""
    from twofour.roofline.fitting import fit_family

    truth = ASSUMED_PARAMS.with_family("cusparselt", latency_us=7.0, mem_eff=0.55, per_sm_gbs=33.0, compute_eff=0.45,
                                       sm_compute_eff=0.55)
    pts = [dict(M=M, N=N, K=K, dtype="fp16") for M in (1, 16, 256, 4096) for N, K in ((1024, 4096), (14336, 4096))]
    # 32 to 96 busy SMs, compute-bound: below 132 * 0.45 / 0.55 = 108 busy SMs the per-SM rate binds.
    pts += [dict(M=M, N=N, K=K, dtype="fp16") for M, N, K in ((512, 512, 16384), (512, 2048, 16384), (2048, 1024, 4096),
                                                              (1024, 2048, 16384))]
    assert ASSUMED_PARAMS.cusparselt.sm_compute_eff != 0.55  # the fit starts elsewhere
    meas = [kernel_time(p["M"], p["N"], p["K"], "fp16", "H200", "cusparselt", truth, l2="flushed").kernel_us for p in pts]
    fam, _, rms = fit_family(pts, meas, ASSUMED_PARAMS.cusparselt, ASSUMED_PARAMS, sparse=True)
    assert rms < 0.01
    assert fam.sm_compute_eff == pytest.approx(0.55, rel=0.01) and fam.compute_eff == pytest.approx(0.45, rel=0.01)


def test_fit_points_may_be_objects_with_attributes():
    """structure() reads M, N, K, dtype, gpu, l2 from a dict or from an object's attributes: the same arrays."""
    from types import SimpleNamespace

    import numpy as np

    from twofour.roofline.fitting import kernel_us, structure

    dicts = [dict(M=7, N=4096, K=4096, dtype="fp16", gpu="A100", l2="clean"), dict(M=300, N=14336, K=4096, dtype="int8")]
    objs = [SimpleNamespace(**d) for d in dicts]
    fam = ASSUMED_PARAMS.cusparselt
    a, b = structure(dicts, fam, sparse=True), structure(objs, fam, sparse=True)
    for field in vars(a):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    want = [kernel_time(d["M"], d["N"], d["K"], d["dtype"], d.get("gpu", "H200"), "cusparselt", ASSUMED_PARAMS,
                        l2=d.get("l2", "flushed")).kernel_us for d in dicts]
    np.testing.assert_allclose(kernel_us(b, fam, ASSUMED_PARAMS), want, rtol=1e-12)


def test_nelder_mead_keeps_the_reflection_when_the_expansion_is_no_better():
    """On a tie the expansion is refused (Lagarias et al. 1998: expand only if strictly better): on a plateau
    the search stops at the reflected point instead of stepping further out."""
    from twofour.roofline.fitting import nelder_mead

    seen = []

    def f(x):
        seen.append(round(float(x[0]), 9))
        return -min(float(x[0]), 1.0)  # falls to -1 at x = 1, flat beyond

    # Simplex {0, 0.3}; reflections 0.6 (expanded to 0.9), then 1.5, whose expansion 2.1 is no lower.
    assert nelder_mead(f, [0.0]) == [pytest.approx(1.5)]
    assert seen[:6] == [0.0, 0.3, 0.6, 0.9, 1.5, 2.1]


def test_nelder_mead_contracts_inside_when_the_reflection_overshoots():
    """A reflection worse than the worst point is followed by the inside contraction, halfway from the centroid
    back to the worst point, where a minimum between the two lies (not the outside one, beyond the centroid)."""
    from twofour.roofline.fitting import nelder_mead

    seen = []

    def f(x):
        seen.append(round(float(x[0]), 9))
        return (float(x[0]) - 0.14) ** 2

    # Simplex {0, 0.3}: best 0, reflection of 0.3 through 0 is -0.3, worse than 0.3; contract to 0.15.
    assert nelder_mead(f, [0.0]) == [pytest.approx(0.14, abs=1e-4)]
    assert seen[:4] == [0.0, 0.3, -0.3, 0.15]


def test_an_oversized_dimension_is_shown_by_its_digits_from_10_to_the_30():
    # Up to 30 digits the value is shown with separators; from 10**30 on, only how many digits it has.
    with pytest.raises(ValueError, match=r"^M must be an int from 1 to 9,223,372,036,854,775,807 \(a GEMM dimension\), "
                                         r"got 999,999,999,999,999,999,999,999,999,999$"):
        predict(10**30 - 1, 4096, 4096, "fp16", "H100")
    with pytest.raises(ValueError, match=r"got an int of 31 digits$"):
        predict(10**30, 4096, 4096, "fp16", "H100")
    with pytest.raises(ValueError, match=r"^K must be .* got an int of over 4,000 digits$"):
        predict(1, 4096, 10**4000, "fp16", "H100")


@pytest.mark.parametrize("gpu, backend, kw, message", [
    # a bad backend is reported before a bad scenario
    ("H100", "bogus", {"scenario": "bogus"}, r"^backend 'bogus' is not available on H100; valid: \['cuSPARSELt'\]$"),
    ("A100", "CUTLASS", {"algorithm": "searched"},
     r"^algorithm='searched' picks a cuSPARSELt algorithm; the CUTLASS backend has none to search"),
])
def test_crossover_m_refuses_what_predict_refuses_with_the_same_message(gpu, backend, kw, message):
    from twofour.roofline import crossover_m

    with pytest.raises(ValueError, match=message):
        predict(64, 4096, 4096, "fp16", gpu, backend, **kw)
    with pytest.raises(ValueError, match=message):
        crossover_m(4096, 4096, "fp16", gpu, backend, **kw)


def test_gemm_speedup_passes_the_algorithm_on():
    from twofour.roofline import gemm_speedup

    for M in (1, 256):
        searched = gemm_speedup(M, 4096, 4096, "fp16", "H100", scenario="kernel", algorithm="searched")
        assert searched == predict(M, 4096, 4096, "fp16", "H100", scenario="kernel", algorithm="searched").speedup
        assert searched != gemm_speedup(M, 4096, 4096, "fp16", "H100", scenario="kernel")


def test_cached_and_kernel_scenarios_are_never_host_bound():
    # Only eager calls wait on the host; a cached replay adds its fixed cost to a kernel that still
    # has its own bound, however large the host's per-call work.
    prm = replace(PERFECT_NARROW, graph_dense_us=8.0, graph_sparse_us=7.0, host_dense_us=1e6, host_sparse_us=1e6)
    for sc in ("cached", "kernel"):
        p = predict(1, 4096, 4096, "fp16", "H200", params=prm, scenario=sc)
        assert (p.bound_dense, p.bound_sparse) == ("memory", "memory"), sc
    p = predict(1, 4096, 4096, "fp16", "H200", params=prm, scenario="eager")
    assert (p.bound_dense, p.bound_sparse) == ("host", "host")


@pytest.mark.parametrize("arg", ["M", "N", "sms", "tile_m", "tile_n"])
def test_wave_efficiency_names_the_argument_it_refuses(arg):
    from twofour.roofline.tiles import wave_efficiency

    args = {"M": 1, "N": 4096, "sms": 132, "tile_m": 128, "tile_n": 128} | {arg: 0}
    with pytest.raises(ValueError, match=rf"^{arg} must be an? (int|number) from 1"):
        wave_efficiency(**args)


@pytest.mark.parametrize("dtype", ["fp16", "int8"])
@pytest.mark.parametrize("M", [1, 24, 4100])
def test_the_cutlass_kernel_time_is_the_kernel_predict_gives_for_the_cutlass_backend(dtype, M):
    # kernel_time(family="cutlass") runs on the GPU's CUTLASS backend: its parameters and its row multiple.
    k = kernel_time(M, 4096, 4096, dtype, "A100", "cutlass")
    assert k == predict(M, 4096, 4096, dtype, "A100", "CUTLASS", scenario="kernel").sparse
    assert k.family == "cutlass"


def test_nelder_mead_keeps_the_best_value_when_it_shrinks_the_simplex():
    """A shrink moves every point halfway to the best one and re-evaluates them; the best point stays with its own
    value, so a shrunk point that is better than the others but worse than the best never takes its place."""
    from twofour.roofline.fitting import nelder_mead

    seen = []
    table = {(0.0, 0.0): 0.0, (0.3, 0.0): 1.0, (0.0, 0.3): 2.0, (0.15, 0.0): 0.5}

    def f(x):
        seen.append(tuple(round(float(v), 9) for v in x))
        return table.get(seen[-1], 9.0)

    # Simplex {(0, 0), (0.3, 0), (0, 0.3)}: the reflection (0.3, -0.3) and the contraction (0.075, 0.15) are both
    # worse than the worst point, so it shrinks to {(0, 0), (0.15, 0), (0, 0.15)}: (0.15, 0) is 0.5, above the best 0.
    assert nelder_mead(f, [0.0, 0.0]) == [0.0, 0.0]
    assert seen[:7] == [(0.0, 0.0), (0.3, 0.0), (0.0, 0.3), (0.3, -0.3), (0.075, 0.15), (0.15, 0.0), (0.0, 0.15)]
