"""The fitted kernel model: its data, its rules, its stored fit, its errors and its ceilings."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from twofour import roofline
from twofour.hardware import GPUS
from twofour.packing import packed_ratio
from twofour.request import Workload, estimate, measured_gemm_speedup, sensitivity
from twofour.models import LLAMA_3_8B, LLAMA_3_70B
from twofour.roofline import (ASSUMED_EFFICIENCY, SCENARIOS, Efficiency, check_scenario, default_params, fit_summary,
                              predict)
from twofour.roofline import calibration as cal
from twofour.roofline.published import FIT_RULES, KNOWN_IMMATURE, points, published_records


@pytest.fixture(scope="module")
def pts():
    return points()


@pytest.fixture(scope="module")
def stored():
    return cal.load_fit()


# --- the data -------------------------------------------------------------------------------

def test_published_records_keep_provenance(pts):
    pub = [p for p in pts if p.origin == "published"]
    assert len(pub) == len(published_records()) == 89
    assert all(p.reliability in ("high", "medium", "low") for p in pub)
    assert all(p.source_url or p.id.startswith("labreport") for p in pub)
    # contradictions are kept: the same 3072 x 3072 x 10240 fp16 layer at 0.41x and 1.15x
    same = sorted(round(p.speedup, 2) for p in pub if (p.M, p.N, p.K, p.dtype) == (3072, 3072, 10240, "fp16"))
    assert 0.41 in same and 1.15 in same


def test_every_excluded_point_says_which_rule(pts):
    excluded = [p for p in pts if not p.fit_ok]
    assert excluded and all(p.excluded for p in excluded)
    reasons = " ".join(p.excluded for p in excluded)
    for needle in ("not a single forward GEMM", "reliability 'low'", "not described in twofour.hardware",
                   "known immature kernel", "kept as evidence"):
        assert needle in reasons, needle
    assert all(pid in {p.id for p in pts} for pid in KNOWN_IMMATURE)
    assert len(FIT_RULES) >= 5


def test_measured_points_map_bench_modes_to_scenarios(pts):
    measured = [p for p in pts if p.origin == "measured"]
    assert {p.scenario for p in measured} == {"eager", "cached", "lone", "graph"}
    assert all(p.fit_ok == (p.scenario in ("eager", "cached")) for p in measured)
    assert all(p.gpu == "H200" and p.dense_us > 0 and p.sparse_us > 0 for p in measured)


# --- the stored fit -------------------------------------------------------------------------

def test_stored_fit_is_what_the_code_fits_today(pts, stored):
    fresh = cal.fit_all(pts)
    assert stored["base"]["params"] == fresh.base.to_dict()
    assert {g: e["params"] for g, e in stored["per_gpu"].items()} == {g: e.to_dict() for g, e in fresh.per_gpu.items()}
    assert stored["provenance"]["n_points"] == fresh.n_points
    assert default_params("H200") == fresh.base == roofline.DEFAULT_EFFICIENCY


def test_fitted_parameters_respect_the_ceiling_order(stored):
    for entry in [stored["base"], *stored["per_gpu"].values()]:
        e = Efficiency.from_dict(entry["params"])
        assert e.sparse_compute <= e.dense_compute and e.sparse_memory <= e.dense_memory
        assert e.sparse_overhead_us >= e.dense_overhead_us and e.sparse_host_us >= e.dense_host_us


def test_held_out_errors_meet_the_targets(stored):
    loso = stored["errors"]["published_leave_one_source_out"]
    big = [r for r in loso["points"] if r["gpu"] in ("A100", "H100") and r["regime"] == "M>256"]
    assert len(big) >= 5 and len({r["source"] for r in big}) >= 4
    errs = sorted(r["rel_err"] for r in big)
    median = errs[len(errs) // 2] if len(errs) % 2 else (errs[len(errs) // 2 - 1] + errs[len(errs) // 2]) / 2
    assert median <= 0.20
    shape = {r["regime"]: r for r in stored["errors"]["measured_leave_one_shape_out"]["by_regime"]}
    assert shape["M>256"]["median"] <= 0.20 and shape["M<=16"]["median"] <= 0.30
    before = {r["regime"]: r for r in stored["errors"]["measured_before_refit"]["by_regime"]}
    assert before["M<=16"]["median"] > 2 * shape["M<=16"]["median"]  # the refit is what made small M right


@pytest.mark.parametrize("pid, scenario, measured", [("pt177866-before", "eager", 0.412), ("pt177866-after", "cached", 1.148)])
def test_scenarios_reproduce_pytorch_177866(pts, pid, scenario, measured):
    p = next(p for p in pts if p.id == pid)
    assert p.scenario == scenario and p.speedup == pytest.approx(measured, abs=0.001)
    pred = predict(p.M, p.N, p.K, p.dtype, p.gpu, p.backend, scenario=scenario).speedup
    assert abs(pred / measured - 1) < 0.25


def test_error_table_is_a_median_and_p90():
    rows = [{"g": "a", "rel_err": e} for e in (0.1, 0.2, 0.3, 0.4, 1.0)]
    table = {r["g"]: r for r in cal.error_table(rows, "g")}
    assert table["a"]["median"] == 0.3 and table["a"]["n"] == 5
    assert 0.4 < table["a"]["p90"] < 1.0
    assert table["all"]["n"] == 5


def test_fit_without_measurements_falls_back_to_the_assumptions(pts):
    published_only = [p for p in pts if p.origin == "published"]
    c = cal.fit_all(published_only)
    assert c.base == ASSUMED_EFFICIENCY and "assumed" in c.base_source
    assert set(c.per_gpu) >= {"A100", "H100"}


def test_fit_summary_names_what_a_gpu_rests_on():
    assert "measured here" in fit_summary("H200")
    assert "refitted" in fit_summary("A100")
    assert "no usable measurement on this GPU" in fit_summary("L4")


# --- scenarios and the API ------------------------------------------------------------------

def test_scenario_order_and_errors():
    for M in (1, 16, 4096):
        s = {sc: predict(M, 4096, 4096, "fp16", "H200", scenario=sc) for sc in SCENARIOS}
        assert s["eager"].sparse_us >= s["cached"].sparse_us >= s["ideal"].sparse_us
        assert s["eager"].dense_us >= s["cached"].dense_us >= s["ideal"].dense_us
    with pytest.raises(ValueError, match="scenario must be one of .*eager.*cached.*ideal"):
        predict(1, 4096, 4096, scenario="fast")
    with pytest.raises(ValueError, match="scenario must be one of"):
        check_scenario("Eager")
    with pytest.raises(ValueError, match="scenario must be one of"):
        estimate(Workload(LLAMA_3_8B, 1, 16, 4), "H100", scenario="graph")


def test_backend_names_any_case():
    a = predict(64, 4096, 4096, "fp16", "A100", "cutlass")
    b = predict(64, 4096, 4096, "fp16", "A100", "CUTLASS")
    assert a == b and a.backend == "CUTLASS"
    with pytest.raises(ValueError, match="backend 'cutlass' is not available on H100"):
        predict(64, 4096, 4096, "fp16", "H100", "cutlass")


def test_efficiency_refuses_sets_that_would_break_a_ceiling():
    with pytest.raises(ValueError, match="sparse_compute=0.9 exceeds dense_compute"):
        Efficiency(sparse_compute=0.9)
    with pytest.raises(ValueError, match="sparse_memory=0.9 exceeds dense_memory"):
        Efficiency(dense_memory=0.8, sparse_memory=0.9)
    with pytest.raises(ValueError, match="sparse_overhead_us=1 is below dense_overhead_us"):
        Efficiency(sparse_overhead_us=1)
    with pytest.raises(ValueError, match="sparse_host_us=0.0 is below dense_host_us"):
        Efficiency(dense_host_us=10)
    with pytest.raises(ValueError, match="dense_host_us must be a finite number"):
        Efficiency(dense_host_us=float("nan"))


def test_cutlass_pays_the_dense_host_cost_not_the_plan():
    e = Efficiency(dense_host_us=20, sparse_host_us=500)
    assert e.host_us("sparse", "eager", "CUTLASS") == 20 and e.host_us("sparse", "eager", "cuSPARSELt") == 500


# --- ceilings (issue 14 item 3): a grid over every accepted input ---------------------------

_GRID_MS = [1, 2, 3, 7, 8, 16, 17, 64, 255, 256, 1024, 4097, 16384, 65536]
_GRID_SHAPES = [(1024, 4096), (4096, 4096), (14336, 4096), (4096, 14336), (8192, 28672), (256, 128)]


def _gpu_dtypes():
    for spec in GPUS.values():
        if not spec.sparse_24:
            continue
        for d in ("fp16", "bf16", "fp8", "int8", "tf32"):
            if spec.dense_tflops.get(d) and spec.sparse_tflops.get(d):
                yield spec.name, d


@pytest.mark.parametrize("gpu, dtype", list(_gpu_dtypes()))
def test_no_prediction_above_a_ceiling(gpu, dtype):
    """2x always; 1/packed_ratio wherever the GEMM is bound by bytes (which, with the fitted sets,
    is every M <= 16). Over the fitted sets, the same with zero per-call costs, and the assumptions."""
    from dataclasses import replace

    ceil = roofline.ceilings(dtype)
    count = 0
    for backend in GPUS[gpu].backends:
        if backend == "CUTLASS" and dtype == "fp8":
            continue
        fitted = default_params(gpu, backend)
        zero = replace(fitted, dense_overhead_us=0, sparse_overhead_us=0, dense_host_us=0, sparse_host_us=0)
        for (N, K), M, scenario in itertools.product(_GRID_SHAPES, _GRID_MS, SCENARIOS):
            for name, params in (("fitted", fitted), ("zero per-call cost", zero), ("assumed", ASSUMED_EFFICIENCY)):
                p = predict(M, N, K, dtype, gpu, backend, params, scenario=scenario)
                where = (gpu, dtype, backend, N, K, M, scenario, name)
                assert p.speedup <= ceil["compute"] + 1e-12, where
                if p.bound_dense == "memory" and p.bound_sparse in ("memory", "host"):
                    assert p.speedup <= ceil["memory"] + 1e-12, where
                if M <= 16 and name != "assumed" and N >= 1024:
                    assert p.bound_dense in ("memory", "host") and p.bound_sparse in ("memory", "host"), where
                    assert p.speedup <= ceil["memory"] + 1e-12, where
                count += 1
    assert count > 100


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_request_speedup_above_amdahl(scenario):
    for model, batch, prompt, out, gpu in itertools.product((LLAMA_3_8B, LLAMA_3_70B), (1, 64), (128, 4096), (2, 256),
                                                            ("A100", "H100", "H200", "L4", "B200")):
        e = estimate(Workload(model, batch, prompt, out), gpu, scenario=scenario)
        for phase in (e.prefill, e.decode):
            bound = math.inf if phase.p >= 1 else 1 / (1 - phase.p)
            assert phase.speedup <= bound + 1e-12
            assert phase.gemm_speedup <= roofline.ceilings("bf16")["compute"] + 1e-12
        assert e.decode.gemm_speedup <= 1 / packed_ratio(__import__("torch").bfloat16) + 1e-12 or batch > 16


# --- measured GEMMs into the request model --------------------------------------------------

def test_measured_gemm_speedup_uses_exact_shapes_only():
    from twofour.bench import recorded_results

    rec = recorded_results("gpu")
    chat = Workload(LLAMA_3_8B, 1, 512, 256)
    s = measured_gemm_speedup(rec, chat, mode="graph")
    assert 0 < s["decode"] < 1 and s["prefill"] > 0
    # a batch the run did not measure gives None, never a neighbour's number
    assert measured_gemm_speedup(rec, Workload(LLAMA_3_8B, 3, 100, 8), mode="graph") == {"prefill": None, "decode": None}
    assert measured_gemm_speedup(rec, Workload(LLAMA_3_8B, 1, 512, 8, dtype="fp8")) == {"prefill": None, "decode": None}
    with pytest.raises(ValueError, match="mode must be one of"):
        measured_gemm_speedup(rec, chat, mode="warm")
    # time-weighted over the layer's GEMMs (Amdahl inside a layer), from the raw rows
    rows = {(r["M"], r["N"], r["K"]): r for res in rec for r in res.gpu_points("graph") if r["dtype"] == "bfloat16"}
    shapes = [(1, 4096, 4096), (1, 1024, 4096), (1, 1024, 4096), (1, 4096, 4096), (1, 14336, 4096), (1, 14336, 4096), (1, 4096, 14336)]
    want = sum(rows[x]["dense_ms"] for x in shapes) / sum(rows[x]["sparse_ms"] for x in shapes)
    assert s["decode"] == pytest.approx(want, rel=1e-12)


def test_sensitivity_moves_the_right_way():
    chat = Workload(LLAMA_3_8B, 1, 512, 16)
    rows = sensitivity(chat, "H200", per_call_us=[0, 20, 400], memory_ratio=[0.5, 1.0])
    by = {(r["per_call_us"], r["memory_ratio"]): r["speedup"] for r in rows}
    floor = default_params("H200").dense_overhead_us
    assert (floor, 1.0) in by  # 0 us is raised to the dense call's own cost
    assert by[(floor, 1.0)] > by[(20, 1.0)] > by[(400, 1.0)]
    assert by[(20, 1.0)] > by[(20, 0.5)]
    assert max(by.values()) < roofline.ceilings("bf16")["memory"]
    with pytest.raises(ValueError, match="memory_ratio must be a finite number"):
        sensitivity(chat, "H200", per_call_us=[10], memory_ratio=[1.5])


@pytest.mark.slow
def test_calibrate_command(tmp_path, capsys):
    from twofour.cli import main

    out = tmp_path / "fit.json"
    assert main(["calibrate", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "usable by these rules" in text and "published points, each source left out" in text
    written = json.loads(out.read_text())
    assert written["base"] == cal.load_fit()["base"] and written["per_gpu"] == cal.load_fit()["per_gpu"]
    assert main(["calibrate", "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_bench_modes_option_on_cpu(capsys):
    from twofour.cli import main

    assert main(["bench", "--quick", "--modes", "graph", "--no-progress"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert main(["bench", "--quick", "--modes", "warp", "--no-progress"]) == 2
    assert "unknown warp; valid: eager graph stream kernel" in capsys.readouterr().err


def test_algorithm_sweep_data_and_searched_speedup():
    from twofour.bench import recorded_alg_search
    from twofour.request import searched_gemm_speedup

    cases = recorded_alg_search()
    assert len(cases) == 16 and all(c["provenance"]["gpu_name"] == "NVIDIA H200" for c in cases)
    for c in cases:
        ok = [x for x in c["configs"] if "ms" in x and x["rel_err"] < 1e-2]
        assert c["best"]["ms"] == min(x["ms"] for x in ok)  # the best is the fastest correct one
        assert c["default_ms"] == next(x["ms"] for x in ok if x["alg_id"] == 0 and x["split_k"] == 1)
    decode = Workload(LLAMA_3_8B, 1, 64, 8, dtype="fp16")
    best = searched_gemm_speedup(cases, decode)["decode"]
    default = searched_gemm_speedup(cases, decode, pick="default")["decode"]
    assert default < 1 < best < roofline.ceilings("fp16")["memory"]
    assert searched_gemm_speedup(cases, Workload(LLAMA_3_8B, 1, 64, 8, dtype="fp16"))["prefill"] == pytest.approx(
        searched_gemm_speedup(cases, decode)["prefill"])  # M = 64 prefill: measured too
    with pytest.raises(ValueError, match="sweeps are fp16"):
        searched_gemm_speedup(cases, Workload(LLAMA_3_8B, 1, 64, 8))
    with pytest.raises(ValueError, match="pick must be"):
        searched_gemm_speedup(cases, decode, pick="fastest")
