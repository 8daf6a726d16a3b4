"""The kernel model: tiles, split-K and launches; the arithmetic worked by hand; scenarios, guard, parameters."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from twofour.bench import recorded_results
from twofour.hardware import get_gpu
from twofour.roofline import (
    ASSUMED_PARAMS,
    DEFAULT_PARAMS,
    SCENARIOS,
    KernelFamily,
    KernelParams,
    arithmetic_intensity,
    ceilings,
    crossover_m,
    default_params,
    gemm_speedup,
    kernel_time,
    launch,
    pad_multiple,
    predict,
    ridge_point,
    wave_efficiency,
)
from twofour.roofline import evidence, fitting
from twofour.roofline.params import DEFAULT_TILE_TABLES
from twofour.roofline.tiles import (check_tile_table, choose_tile, kernel_role, parse_kernel_name, split_k,
                                    tile_table_from_names)

SPARSE_GPUS = ["A10G", "L4", "A100", "H100", "H200", "B200"]
SHAPES_8B = {"q": (4096, 4096), "k": (1024, 4096), "gate": (14336, 4096), "down": (4096, 14336)}


# --- kernel names and tile tables ------------------------------------------------------------

def test_parse_cublas_and_cusparselt_names():
    k = parse_kernel_name("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_splitK_TNT")
    assert (k.library, k.tile_n, k.tile_m, k.tile_k, k.cluster, k.split_k_named) == ("cuBLAS", 256, 128, 64, "1x2", True)
    assert not parse_kernel_name("nvjet_sm90_hsh_128x8_64x12_4x1_v_bz_TNT").split_k_named
    s = parse_kernel_name("sm90_xmma_sparse_gemm_bf16bf16_bf16f32_f32_tn_t_tilesize128x256x64_cgasize1x1x1_"
                          "warpgroupsize2x1x1_execute_segment_k_off_kernel_5x_cusparselt")
    assert (s.library, s.tile, s.cluster, s.split_k_named) == ("cuSPARSELt", (128, 256), "1x1x1", False)
    assert parse_kernel_name("void cublasLt::splitKreduce_kernel<32, 16, int>") is None
    assert [kernel_role(n) for n in ("void cublasLt::splitKreduce_kernel<32>", "Memset (Device)",
                                     "vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::Half>>",
                                     "Memcpy DtoD (Device -> Device)", "something")] == [
        "splitk_reduce", "memset", "pad_fill", "pad_copy", "other"]


def test_the_cublas_table_is_read_off_the_recorded_names():
    """The shipped table, the stored fit's table and the names of the 8B run agree; cuSPARSELt alg 0 ran one tile."""
    derived = tile_table_from_names(evidence.tile_observations(shape_prefix="Llama-3-8B"))
    assert derived == DEFAULT_TILE_TABLES["cublas"] == DEFAULT_PARAMS.cublas.tiles
    assert {(o[3], o[4]) for o in evidence.tile_observations(library="cuSPARSELt")} == {(128, 256)}
    assert DEFAULT_PARAMS.cusparselt.tiles == ((None, None, 128, 256),)


def test_tile_table_checks_and_first_matching_row():
    rows = ((8, 1024, 64, 8), (8, None, 128, 8), (None, None, 256, 128))
    assert [choose_tile(rows, M, N) for M, N in ((1, 1024), (8, 1025), (9, 1))] == [(64, 8), (128, 8), (256, 128)]
    with pytest.raises(ValueError, match="last row must be"):
        check_tile_table("t", [[8, None, 64, 8]])
    with pytest.raises(ValueError, match="t tile_m must be a positive int"):
        check_tile_table("t", [[None, None, 64, 0]])
    with pytest.raises(ValueError, match="each row is"):
        check_tile_table("t", [[None, None, 64]])
    with pytest.raises(ValueError, match="no recorded tile for M=1 at"):
        tile_table_from_names([(1, 64, 64, 8, 8), (2, 128, 64, 8, 8)])


def test_split_rule_reproduces_every_launch_grid_of_the_traces():
    """The GEMM-chain traces (M = 16) recorded CTAs per GEMM: the rule gives them all, both libraries."""
    checked = 0
    for tag, family in (("sparse-graph", "cusparselt"), ("dense-graph", "cublas")):
        for g in {(x["N"], x["K"]): x for x in evidence.trace_grids(tag)}.values():
            k = kernel_time(evidence.TRACE_M, g["N"], g["K"], "fp16", "H200", family)
            assert k.ctas == g["ctas"], (tag, g)
            if family == "cusparselt":  # cuBLAS ran 128x16 split 4 for down_proj; the table (decided by q_proj's K) 64x16 split 2
                assert (k.tile_n, k.tile_m, k.split) == (g["tile_n"], g["tile_m"], g["split"]), g
            checked += 1
    assert checked == 8


def test_split_rule_matches_the_segment_k_flag_of_every_single_wave_2to4_name():
    fam = DEFAULT_PARAMS.cusparselt
    checked = 0
    for res in recorded_results("gpu"):
        for p in res.points:
            entry = (((p.get("modes") or {}).get("kernel") or {}).get("sparse") or {}).get("cuSPARSELt") or {}
            for name in entry.get("kernels") or {}:
                k = parse_kernel_name(name)
                if k is None or p["dtype"] != "float16":
                    continue
                got = kernel_time(p["M"], p["N"], p["K"], "fp16", "H200", "cusparselt")
                if got.tiles < fam.cta_target:  # below one wave; above it segment-K balances tails
                    assert (got.split > 1) == k.split_k_named, (p["shape"], p["M"])
                    checked += 1
    assert checked >= 40


@settings(max_examples=80, deadline=None)
@given(M=st.integers(1, 70000), N=st.integers(1, 60000), K=st.integers(1, 40000).map(lambda k: 4 * k),
       sms=st.integers(1, 200), target=st.integers(0, 300), max_split=st.integers(1, 16), iters=st.integers(1, 32))
def test_launch_invariants(M, N, K, sms, target, max_split, iters):
    L = launch(M, N, K, ((None, None, 128, 64),), sms, cta_target=target, max_split=max_split, min_k_iters=iters)
    assert L.tiles == math.ceil(N / 128) * math.ceil(M / 64)
    assert 1 <= L.split <= max_split and L.ctas == L.tiles * L.split
    assert L.waves == math.ceil(L.ctas / sms) and L.busy_sms == min(L.ctas, sms)
    if L.split > 1:  # a split never takes the CTAs past the target, nor a K piece under min_k_iters steps of 64
        assert L.ctas <= (target or sms) and K // L.split >= 64 * iters


def test_split_k_examples():
    assert split_k(32, 4096, 132, cta_target=120, max_split=4, min_k_iters=16) == 3
    assert split_k(8, 4096, 132, cta_target=120, max_split=4, min_k_iters=16) == 4
    assert split_k(8, 512, 132, cta_target=120, max_split=4, min_k_iters=16) == 1  # too short a K to split
    assert split_k(32, 4096, 132, cta_target=0, max_split=16, min_k_iters=1) == 4  # target 0: the SMs


# --- the arithmetic ---------------------------------------------------------------------------

def _hand_params():
    fam = KernelFamily(((None, None, 128, 256),), cta_target=120, max_split=4, min_k_iters=16, compute_eff=0.5,
                       sm_compute_eff=1.0, mem_eff=0.5, per_sm_gbs=20.0, fill_gain=0.0, latency_us=5.0,
                       helper_split_us=1.0)
    return replace(ASSUMED_PARAMS, cusparselt=fam, pad_us=2.0, dram_eff=1.0, flush_dirty_mb=1.0, flush_dirty_frac=0.25)


def test_one_2to4_decode_call_worked_by_hand():
    """The docstring's arithmetic, one line at a time, for q_proj at M = 1 on the H200 (the JS mirror's golden case)."""
    prm = _hand_params()
    k = kernel_time(1, 4096, 4096, "fp16", "H200", "cusparselt", prm, l2="flushed")
    assert (k.tile_n, k.tile_m, k.tiles, k.split, k.ctas, k.waves, k.busy_sms) == (128, 256, 32, 3, 96, 1, 96)
    n_bytes = 4096 * 4096 * 2 * 9 // 16 + 8 * 4096 * 2 + 1 * 4096 * 2 + 2 * (96 - 32) * 128 * 256 * 4
    assert k.n_bytes == n_bytes
    sat, per_sm = 4800 * 0.5, 20.0
    assert k.bw_gbs == sat * 96 / (96 + sat / per_sm)
    dirty = min(n_bytes * 0.25, 1.0 * 1e6)
    assert k.t_memory_us == max(n_bytes / (k.bw_gbs * 1e3), (n_bytes + dirty) / (4800 * 1.0 * 1e3))
    cta_flops = 2 * 128 * 256 * math.ceil(4096 / 3)  # the whole 128 x 256 tile: 8 padded rows of 256 columns are math too
    assert k.t_compute_us == 1 * cta_flops / min(1979.0 * 1e6 / 132 * 1.0, 1979.0 * 1e6 * 0.5 / 96)
    assert k.kernel_us == 5.0 + max(k.t_compute_us, k.t_memory_us) + 1.0 + 2.0
    assert k.bound == "memory"
    clean = kernel_time(1, 4096, 4096, "fp16", "H200", "cusparselt", prm, l2="clean")
    assert clean.t_memory_us == n_bytes / (k.bw_gbs * 1e3)


def test_vectorised_fit_arithmetic_is_the_model():
    """fitting.kernel_us repeats kernel_time on arrays: the same numbers, every family, both L2 states."""
    pts = [dict(M=M, N=N, K=K, dtype=d, gpu=g, l2=l2) for M in (1, 7, 16, 300, 4096) for N, K in ((1024, 4096), (14336, 4096))
           for d, g in (("fp16", "H200"), ("int8", "A100")) for l2 in ("flushed", "clean")]
    for name in ("cublas", "cusparselt", "cusparselt_bf16", "cusparselt_searched"):
        fam = DEFAULT_PARAMS.family(name)
        got = fitting.kernel_us(fitting.structure(pts, fam, sparse=name != "cublas"), fam, DEFAULT_PARAMS)
        want = [kernel_time(p["M"], p["N"], p["K"], p["dtype"], p["gpu"], name, DEFAULT_PARAMS, l2=p["l2"]).kernel_us
                for p in pts]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_bandwidth_grows_with_busy_sms_and_saturates():
    g = get_gpu("H200")
    fam = DEFAULT_PARAMS.cusparselt
    bws = [kernel_time(16, n, 4096, "fp16", "H200", "cusparselt").bw_gbs for n in (1024, 4096, 14336)]
    assert bws[0] < bws[1] < bws[2] < g.mem_bw_gbs * fam.mem_eff


def test_the_flush_costs_the_dram_bound_dense_kernel_not_the_2to4_one():
    d = [kernel_time(16, 14336, 4096, "fp16", "H200", "cublas", l2=l2).kernel_us for l2 in ("flushed", "clean")]
    s = [kernel_time(16, 14336, 4096, "fp16", "H200", "cusparselt", l2=l2).kernel_us for l2 in ("flushed", "clean")]
    assert d[0] > 1.1 * d[1]
    assert s[0] == pytest.approx(s[1], rel=0.02)


def test_decode_bandwidth_range_quoted_in_the_model_docstring():
    """model.py says the 2:4 kernel reached 16.7% to 49.5% of cuBLAS's bandwidth at M <= 16: the data say so."""
    from twofour.course.figures.kernel_launch import decode_bandwidth_range
    from twofour.roofline import model

    lo, hi = decode_bandwidth_range(recorded_results("gpu"))
    assert f"{lo:.1%} to {hi:.1%} of the bandwidth cuBLAS reaches" in " ".join(model.__doc__.split())


# --- what it reproduces -----------------------------------------------------------------------

def test_reproduces_the_decode_bandwidth_pattern():
    """Weight bytes / kernel time at M = 1: 2:4 grows with N as measured, within 15% (8B shapes)."""
    from twofour.course.figures.kernel_launch import bandwidth_rows

    rows = [r for r in bandwidth_rows(recorded_results("gpu")) if r["shape"].startswith("Llama-3-8B")]
    by_n = sorted((r for r in rows if r["K"] == 4096), key=lambda r: r["N"])
    assert [r["N"] for r in by_n] == [1024, 4096, 14336]
    assert by_n[0]["2:4 model"] < by_n[1]["2:4 model"] < by_n[2]["2:4 model"]
    assert all(abs(r["2:4 model"] / r["2:4 measured"] - 1) < 0.15 for r in rows)
    assert all(abs(r["dense model"] / r["dense measured"] - 1) < 0.15 for r in rows)


def test_searched_algorithm_beats_dense_at_decode_where_the_sweep_did():
    """Timed as the sweep timed (one-GEMM graphs of the legacy method, L2 flushed by a write)."""
    from twofour.roofline.calibration import legacy_graph_params

    as_swept = dict(params=legacy_graph_params(DEFAULT_PARAMS), l2="flushed")
    for key in ("q", "gate", "down"):
        N, K = SHAPES_8B[key]
        assert predict(1, N, K, "fp16", "H200", **as_swept).speedup < 1 < \
            predict(1, N, K, "fp16", "H200", algorithm="searched", **as_swept).speedup


def test_the_default_2to4_kernel_launches_few_ctas_at_decode():
    k = kernel_time(1, 1024, 4096, "fp16", "H200", "cusparselt")
    assert (k.tiles, k.split, k.ctas) == (8, 4, 32)  # 32 of 132 SMs
    assert kernel_time(1, 1024, 4096, "fp16", "H200", "cublas").ctas > k.ctas


# --- scenarios, the guard, ceilings -----------------------------------------------------------

def test_scenarios_only_add_cost_and_eager_waits_for_the_host():
    for M in (1, 16, 256, 4096):
        p = {s: predict(M, 4096, 4096, "fp16", "H200", scenario=s) for s in SCENARIOS}
        for side in ("dense_us", "sparse_us"):
            assert getattr(p["kernel"], side) < getattr(p["cached"], side)
            assert getattr(p["kernel"], side) <= getattr(p["eager"], side)
        assert p["cached"].sparse_us == pytest.approx(p["kernel"].sparse.kernel_us + DEFAULT_PARAMS.graph_sparse_us)
    e = predict(1, 4096, 4096, "fp16", "H200", scenario="eager")
    assert e.sparse_us == DEFAULT_PARAMS.host_sparse_us and e.bound_sparse == "host"
    # PyTorch's CUTLASS path builds no cuSPARSELt plan: an eager call pays the dense host time
    c = predict(1, 3072, 10240, "fp16", "A100", "CUTLASS", scenario="eager")
    assert c.sparse_us < DEFAULT_PARAMS.host_sparse_us


def test_a_name_outside_the_scenarios_gets_the_one_error_that_lists_them():
    # "ideal" included: no name gets a message of its own
    for name in ("ideal", "graph", "Kernel", ""):
        with pytest.raises(ValueError, match=rf"^scenario must be one of \('eager', 'cached', 'kernel'\) .*, got '{name}'$"):
            predict(1, 4096, 4096, scenario=name)


def test_guard_binds_when_the_2to4_side_would_pass_a_ceiling():
    slow_dense = ASSUMED_PARAMS.with_family("cublas", latency_us=1000.0)
    p = predict(1, 14336, 4096, "fp16", "H200", params=slow_dense, scenario="kernel")
    assert p.ceiling_guard and p.speedup == pytest.approx(1 / 0.5625) and p.dense.bound == "memory"
    big = predict(16384, 8192, 8192, "fp16", "H200", params=ASSUMED_PARAMS.with_family("cublas", compute_eff=0.05,
                                                                                         sm_compute_eff=0.05),
                  scenario="kernel")
    assert big.ceiling_guard and big.speedup == pytest.approx(2.0) and big.dense.bound == "compute"
    assert not predict(1, 14336, 4096, "fp16", "H200", scenario="kernel").ceiling_guard


def test_no_prediction_passes_a_ceiling_and_the_guard_is_rare():
    """A grid of dtypes, GPUs, M, shapes, both algorithms, every scenario and both L2 states."""
    n = guarded = 0
    for dtype, gpu in (("fp16", "H200"), ("bf16", "H100"), ("int8", "A100"), ("fp8", "L4")):
        cap = ceilings(dtype)
        for M in (1, 8, 64, 256, 1024, 4096, 32768):
            for N, K in ((1024, 4096), (5120, 2048), (28672, 8192)):
                for alg in ("default", "searched"):
                    for sc in SCENARIOS:
                        for l2 in ("flushed", "clean"):
                            p = predict(M, N, K, dtype, gpu, algorithm=alg, scenario=sc, l2=l2)
                            n += 1
                            guarded += p.ceiling_guard
                            limit = cap["compute"] if p.dense.bound == "compute" else cap["memory"]
                            assert p.speedup <= limit * (1 + 1e-12)
    assert guarded / n < 0.05


def test_stored_ceiling_check():
    from twofour.roofline._fitfile import load_fit

    from twofour.roofline import model

    c = load_fit()["checks"]["ceilings"]
    assert c["max_speedup_over_ceiling"] <= 1 + 1e-12
    doc = " ".join(model.__doc__.split())
    assert f"binds in {c['n_guarded']} of a grid of {c['n_predictions']:,} predictions, {c['guarded_share']:.1%}" in doc


# --- padding, crossover, ridge ----------------------------------------------------------------

def test_padding_rows_up_to_the_backend_multiple():
    assert pad_multiple("cuSPARSELt", "fp16") == 8 and pad_multiple("cuSPARSELt", "int8") == 16
    ts = [predict(M, 4096, 4096, "fp16", "A100").sparse.n_bytes - M * 4096 * 2 for M in range(1, 9)]
    assert max(ts) == min(ts)  # M=1..8 all run as 8 rows of x
    assert predict(9, 4096, 4096, "fp16", "A100").M_padded == 16
    a = predict(1, 4096, 4096, "fp16", "H200", params=replace(DEFAULT_PARAMS, pad_to=32))
    assert a.M_padded == 32 and a.sparse.n_bytes > predict(1, 4096, 4096, "fp16", "H200").sparse.n_bytes
    # the pad kernels run only when M is not a multiple
    assert predict(8, 4096, 4096, "fp16", "H200").sparse.helpers_us < predict(7, 4096, 4096, "fp16", "H200").sparse.helpers_us


def test_crossover_contract():
    m = crossover_m(4096, 4096, "fp16", "H100")
    assert m is not None and m > 1
    assert gemm_speedup(m, 4096, 4096, "fp16", "H100") > 1
    assert all(gemm_speedup(k, 4096, 4096, "fp16", "H100") <= 1 for k in range(1, m))
    assert crossover_m(4096, 4096, "fp16", "H100", scenario="eager", m_max=64) is None


def test_intensity_and_ridge():
    assert arithmetic_intensity(1, 4096, 4096, "fp16") < 1.01
    assert arithmetic_intensity(1, 4096, 4096, "fp16", sparse=True) > arithmetic_intensity(1, 4096, 4096, "fp16")
    assert ridge_point("H100", "fp16") == pytest.approx(989.5e12 / 3350e9)
    assert wave_efficiency(1, 4096, 132) == 32 / 132


# --- parameters ---------------------------------------------------------------------------------

def test_parameter_sets_round_trip_and_per_gpu_lookup():
    assert KernelParams.from_dict(DEFAULT_PARAMS.to_dict()) == DEFAULT_PARAMS
    assert default_params("L4") == DEFAULT_PARAMS  # never measured: the H200's set
    a100 = default_params("A100")
    assert a100.cusparselt.compute_eff != DEFAULT_PARAMS.cusparselt.compute_eff  # refitted to published points
    assert a100.cublas == DEFAULT_PARAMS.cublas and default_params("A100", "CUTLASS") == a100


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
    with pytest.raises(ValueError, match="algorithm must be one of"):
        predict(1, 64, 64, algorithm="alg1")
    with pytest.raises(ValueError, match="CUTLASS backend has none to search"):
        predict(1, 64, 64, "fp16", "A100", "CUTLASS", algorithm="searched")
    with pytest.raises(ValueError, match="l2 must be one of"):
        predict(1, 64, 64, l2="warm")
    with pytest.raises(ValueError, match="family must be one of"):
        kernel_time(1, 64, 64, family="cusparse")
    with pytest.raises(ValueError, match="mem_eff must be a fraction"):
        ASSUMED_PARAMS.with_family("cusparselt", mem_eff=1.5)
    with pytest.raises(ValueError, match="unknown KernelParams fields"):
        KernelParams.from_dict({**ASSUMED_PARAMS.to_dict(), "speed": 1})
    with pytest.raises(TypeError, match="params must be a KernelParams"):
        predict(1, 64, 64, params={"cublas": {}})


@pytest.mark.parametrize("gpu", SPARSE_GPUS)
def test_every_gpu_predicts_inside_its_ceilings_at_decode_and_prefill(gpu):
    for M in (1, 16384):
        p = predict(M, 8192, 8192, "fp16", gpu)
        assert 0 < p.speedup <= 2.0 * (1 + 1e-12)
        assert p.dense.busy_sms <= get_gpu(gpu).sms


# --- the token tile, bf16's own kernel, what a cached call costs ------------------------------


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_default_2to4_kernel_does_the_math_of_its_whole_token_tile(dtype):
    """Its 256 token columns are math at every M: the same math from M = 1 to 256, twice the
    tiles at 257 (the kernel tables: time flat to M = 256, growing with the M-tile waves beyond)."""
    k = {M: kernel_time(M, 14336, 4096, dtype, "H200", "cusparselt_bf16" if dtype == "bf16" else "cusparselt")
         for M in (1, 16, 256, 257)}
    assert k[1].t_compute_us == k[16].t_compute_us == k[256].t_compute_us > 0
    assert k[1].tile_m == 256 and k[257].tiles == 2 * k[256].tiles
    # the math of one CTA is 2 * tile_n * tile_m * K / split whatever the rows: at one token 256x the useful math
    spec = get_gpu("H200")
    per_cta = 2 * 128 * 256 * math.ceil(4096 / k[1].split)
    fam = DEFAULT_PARAMS.family(k[1].family)
    rate = min(spec.peak_tflops(dtype, sparse=True) * 1e6 / spec.sms * fam.sm_compute_eff,
               spec.peak_tflops(dtype, sparse=True) * 1e6 * fam.compute_eff / k[1].busy_sms)
    assert k[1].t_compute_us == pytest.approx(k[1].waves * per_cta / rate, rel=1e-12)


def test_bf16_runs_its_own_2to4_kernel_and_fp16_does_not():
    """The kernel tables name another kernel for bf16 (``..._bf16bf16_..._cgasize1x1x1``, 78.9 vs 44.7 µs
    at gate/up M = 1): the model gives it its own fitted family, slower at decode, as measured."""
    fp16, bf16 = (predict(1, 14336, 4096, d, "H200", scenario="kernel") for d in ("fp16", "bf16"))
    assert (fp16.sparse.family, bf16.sparse.family) == ("cusparselt", "cusparselt_bf16")
    assert DEFAULT_PARAMS.cusparselt_bf16 != DEFAULT_PARAMS.cusparselt
    assert bf16.sparse.kernel_us > 1.3 * fp16.sparse.kernel_us
    assert predict(1, 14336, 4096, "bf16", "H200", algorithm="searched").sparse.family == "cusparselt_searched"


def test_a_cached_call_costs_the_idle_inside_a_captured_chain_not_the_benchs_replay_launch():
    """The cached scenario adds what the GEMM-chain traces show between kernels (well under the
    7-8 µs the legacy bench's one-GEMM graphs held), and clean L2 is the default."""
    assert DEFAULT_PARAMS.graph_dense_us == pytest.approx(evidence.chain_idle_us("dense-graph"))
    assert DEFAULT_PARAMS.graph_sparse_us == pytest.approx(evidence.chain_idle_us("sparse-graph"))
    assert DEFAULT_PARAMS.graph_dense_us < 1 and DEFAULT_PARAMS.graph_sparse_us < 4
    assert DEFAULT_PARAMS.bench_replay_dense_us > 5 and DEFAULT_PARAMS.bench_replay_sparse_us > 5
    p = predict(1, 4096, 4096, "fp16", "H200")
    assert (p.scenario, p.l2) == ("cached", "clean")
    assert p.dense_us == pytest.approx(p.dense.kernel_us + DEFAULT_PARAMS.graph_dense_us)
