"""Fit the kernel model to this project's GPU run, and say how well it predicts what it never saw.

What ``twofour calibrate`` runs (:func:`fit_all`, :func:`evaluate`, :func:`save`):

1. **Tiles** from the recorded Llama-3-8B fp16 cuBLAS kernel names
   (:func:`twofour.roofline.tiles.tile_table_from_names`).
2. **Costs outside the GEMM kernel**, medians of measurements: helper kernels, the chain idle
   per GEMM (what ``cached`` adds), the legacy replay artefact, the host time of eager calls.
3. **The families' constants** (:func:`twofour.roofline.fitting.fit_family`) on the points
   :data:`twofour.roofline.published.FIT_RULES` allow and the GEMM-chain traces: cuBLAS first
   (with the GPU-wide DRAM and L2-flush numbers), then cuSPARSELt on fp16 and its bf16 kernel on
   bf16. CUTLASS takes cuSPARSELt's constants with its own tile and no split (an assumption: no
   CUTLASS 2:4 kernel runs on the H200).
4. **The searched algorithm**'s tile, fitted to the sweep's fastest times (it recorded no names).
5. **Per GPU** with usable published points (A100, H100): the 2:4 families' ``compute_eff``
   refitted to that GPU's points. GPUs without any keep the base set.

:func:`evaluate` reports the median ``|predicted speedup / measured - 1|`` per M regime, each
table held out in its own way; :func:`ceiling_check` checks the ceilings on a grid.

Example:
    >>> cal = fit_all()
    >>> cal.base.cusparselt.tiles, cal.base_source.startswith("twofour bench, NVIDIA H200")
    (((None, None, 128, 256),), True)
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from ._fitfile import FIT_PATH, FIT_SCHEMA, load_fit
from .evidence import chain_idle_us, helper_costs, tile_observations, trace_points
from .fitting import FREE, fit_family
from ..hardware import get_gpu
from .model import ALGORITHMS, L2_STATES, ceilings, predict
from .scenarios import SCENARIOS
from .params import ASSUMED_PARAMS, DEFAULT_TILE_TABLES, KernelFamily, KernelParams
from .published import FIT_RULES, HELD_OUT_MODEL, LONE, Point, points
from .tiles import tile_table_from_names

__all__ = ["Calibration", "fit_all", "fit_base", "fit_bf16", "bf16_held_out", "legacy_graph_params", "predicted_speedup", "error_row", "held_out_points", "fit_points", "leave_one_source_out", "evaluate",
           "error_table", "ceiling_check", "save", "load_fit", "FIT_PATH", "SEARCH_TILES", "TRACE_WEIGHT"]

TRACE_WEIGHT = 5.0  # one GEMM-chain trace point counts as five bench points (four of them pin the L2 flush)
# Candidate tiles of the searched cuSPARSELt algorithm: (tile_n, tile_m, max_split).
SEARCH_TILES = tuple((tn, tm, ms) for tn in (64, 128, 256) for tm in (16, 32, 64, 128, 256) for ms in (1, 4))
REGIMES = ("M<=16", "16<M<=256", "M>256")


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters: one base set and one set per GPU (or GPU/backend), with what each rests on."""

    base: KernelParams
    base_source: str
    per_gpu: dict  # "H200", "A100", "A100/CUTLASS", ... -> KernelParams
    notes: dict  # the same keys -> one line: what the set was fitted to
    n_points: int = 0
    sources: tuple[str, ...] = ()
    fitted_on: tuple[str, ...] = field(default=(), repr=False)
    info: dict = field(default_factory=dict, repr=False)

    def params_for(self, gpu: str | None, backend: str | None = None) -> KernelParams:
        """The set for ``gpu`` and ``backend``, else for ``gpu``, else the base set."""
        return self.per_gpu.get(f"{gpu}/{backend}", self.per_gpu.get(gpu, self.base))


def fit_points(pts: list[Point] | None = None) -> list[Point]:
    """The measured points the base set is fitted to (:data:`FIT_RULES`), and the GEMM-chain traces."""
    pts = points() if pts is None else pts
    return [p for p in pts if p.origin == "measured" and p.fit_ok] + trace_points(TRACE_WEIGHT)


def legacy_graph_params(params: KernelParams) -> KernelParams:
    """``params`` as a legacy-method graph timing saw them (the bench's replay launch inside ``cached``).

    Example:
        >>> from twofour.roofline import DEFAULT_PARAMS
        >>> p = legacy_graph_params(DEFAULT_PARAMS)
        >>> p.graph_sparse_us == DEFAULT_PARAMS.bench_replay_sparse_us > DEFAULT_PARAMS.graph_sparse_us
        True
    """
    return replace(params, graph_dense_us=params.bench_replay_dense_us, graph_sparse_us=params.bench_replay_sparse_us)


def _as_measured(p: Point, params: KernelParams) -> KernelParams:
    """``params`` as the point was timed: a legacy-method graph timing holds the bench's replay artefact."""
    return legacy_graph_params(params) if p.scenario == "cached" and p.extra.get("legacy_replay") else params


def held_out_points(pts: list[Point]) -> list[Point]:
    """The held-out test set, flagged too: fp16 kernel and graph timings of :data:`HELD_OUT_MODEL` shapes."""
    return [p for p in pts if p.origin == "measured" and p.extra.get("held_out") and p.dtype == "fp16"
            and p.scenario in ("kernel", "cached")]


def _fit(pts: list[Point], side: str, family: KernelFamily, params: KernelParams, **kw) -> tuple:
    """:func:`fit_family` on the ``side`` times of ``pts``, each as it was timed and with its weight."""
    at = [dict(M=p.M, N=p.N, K=p.K, dtype=p.dtype, gpu=p.gpu, l2=p.extra.get("l2", "flushed")) for p in pts]
    weights = [p.extra.get("weight", 1.0) for p in pts]
    extra = [getattr(_as_measured(p, params), f"graph_{side}_us") if p.scenario == "cached" else 0.0
             for p in pts]  # what each timing adds to the kernel: a graph replay's cost, else nothing
    return fit_family(at, [getattr(p, f"{side}_us") for p in pts], family, params, sparse=side == "sparse",
                      extra_us=extra, weights=weights, **kw)


def _call_costs(pts: list[Point]) -> dict:
    """The chain idle per GEMM (traces), the legacy replay artefact (graph minus kernel time, medians per side), the host time of host-bound eager calls."""
    by = {}
    for p in pts:
        if p.origin == "measured" and p.dtype == "fp16" and not p.extra.get("held_out") and p.scenario != LONE:
            by.setdefault((p.source_url, p.extra.get("shape"), p.M, p.dtype, p.backend), {})[p.scenario] = p
    graph = {"dense": [], "sparse": []}
    host = {"dense": [], "sparse": []}
    for modes in by.values():
        k, g, e = modes.get("kernel"), modes.get("cached"), modes.get("eager")
        for side in ("dense", "sparse"):
            if k and g and g.extra.get("legacy_replay") and not k.extra.get("flagged") and not g.extra.get("flagged"):
                graph[side].append(getattr(g, f"{side}_us") - getattr(k, f"{side}_us"))
            if k and e and getattr(k, f"{side}_us") < 0.5 * getattr(e, f"{side}_us"):  # bound by the host, 2x over
                host[side].append(getattr(e, f"{side}_us"))
    if not host["sparse"]:
        raise ValueError("the fit needs measured kernel and stream timings (twofour bench --modes stream kernel)")
    replay = {f"bench_replay_{side}_us": statistics.median(graph[side]) if graph[side] else getattr(ASSUMED_PARAMS, f"bench_replay_{side}_us")
              for side in ("dense", "sparse")}
    return {"graph_dense_us": chain_idle_us("dense-graph"), "graph_sparse_us": chain_idle_us("sparse-graph"), **replay,
            "host_dense_us": statistics.median(host["dense"] or [ASSUMED_PARAMS.host_dense_us]),
            "host_sparse_us": statistics.median(host["sparse"])}


def _searched(params: KernelParams) -> tuple:
    """The searched algorithm's family: each candidate tile fitted to the sweep's fastest times, the best kept."""
    from ..bench import recorded_alg_search

    cases = recorded_alg_search()
    pts = [dict(M=c["M_padded"], N=c["N"], K=c["K"], dtype="fp16", gpu="H200", l2="flushed") for c in cases]
    meas = [c["best"]["ms"] * 1e3 for c in cases]
    extra = [params.bench_replay_sparse_us] * len(cases)  # the sweep of 2026-11-30 timed one-GEMM graphs the legacy way
    trials = []
    for tn, tm, ms in SEARCH_TILES:
        start = replace(params.cusparselt, tiles=((None, None, tn, tm),), max_split=ms)
        fam, _, rms = fit_family(pts, meas, start, params, sparse=True, extra_us=extra)
        trials.append((rms, tn, tm, ms, fam))
    trials.sort(key=lambda t: t[0])
    summary = [{"tile_n": tn, "tile_m": tm, "max_split": ms, "rms_log": round(rms, 4)} for rms, tn, tm, ms, _ in trials[:6]]
    return trials[0][4], summary, len(cases)


def fit_base(pts: list[Point]) -> tuple[KernelParams, dict]:
    """Steps 1-4 of the module doc: the base set fitted on the H200 run; returns it and what the fit saw."""
    fit_set = fit_points(pts)
    helpers = helper_costs()
    cublas_tiles = tile_table_from_names(tile_observations(shape_prefix="Llama-3-8B"))
    sparse_tiles = {(o[3], o[4]) for o in tile_observations(library="cuSPARSELt")}
    if len(sparse_tiles) != 1:
        raise ValueError(f"cuSPARSELt algorithm 0 ran several tiles {sorted(sparse_tiles)}: its table needs M or N classes")
    (stn, stm), = sparse_tiles
    params = replace(
        ASSUMED_PARAMS, pad_us=helpers["pad_fill_us"] + helpers["pad_copy_us"], **_call_costs(pts),
        cublas=replace(ASSUMED_PARAMS.cublas, tiles=cublas_tiles, helper_split_us=helpers["splitk_reduce_us"]),
        cusparselt=replace(ASSUMED_PARAMS.cusparselt, tiles=((None, None, stn, stm),), helper_split_us=helpers["memset_us"]))
    fp16 = [p for p in fit_set if p.dtype == "fp16"]
    fam_d, params, rms_d = _fit(fp16, "dense", params.cublas, params, fit_dram=True)
    fam_s, _, rms_s = _fit(fp16, "sparse", params.cusparselt, params)
    params = replace(params, cublas=fam_d, cusparselt=fam_s,
                     cutlass=replace(fam_s, tiles=DEFAULT_TILE_TABLES["cutlass"], cta_target=0, max_split=1,
                                     helper_split_us=0.0))
    fam_b, rms_b = fit_bf16(params, [p for p in fit_set if p.dtype == "bf16"])
    params = replace(params, cusparselt_bf16=fam_b)
    searched, trials, n_sweep = _searched(params)
    params = replace(params, cusparselt_searched=searched)
    info = {"n_fit_points": len(fit_set), "n_trace_points": sum(p.extra.get("mode") == "trace" for p in fit_set),
            "n_bf16_points": sum(p.dtype == "bf16" for p in fit_set),
            "dense_rms_log": round(rms_d, 4), "sparse_rms_log": round(rms_s, 4), "bf16_sparse_rms_log": round(rms_b, 4),
            "helpers_us": helpers,
            "searched_tile_trials": trials, "n_sweep_cases": n_sweep,
            "fitted_on": [p.id for p in fit_set]}
    return params, info


def fit_bf16(params: KernelParams, pts: list[Point]) -> tuple:
    """The bf16 2:4 family fitted to bf16 points, and its rms log error (too few points: the fp16 family)."""
    if len(pts) < len(FREE):
        return params.cusparselt, float("nan")
    start = replace(params.cusparselt, tiles=DEFAULT_TILE_TABLES["cusparselt_bf16"])
    fam, _, rms = _fit(pts, "sparse", start, params)
    return fam, rms


def predicted_speedup(p: Point, params: KernelParams) -> float:
    """The speedup ``params`` predict for point ``p``, timed as ``p`` was (scenario, L2, a legacy graph's replay)."""
    params = _as_measured(p, params)
    return predict(p.M, p.N, p.K, p.dtype, p.gpu, p.backend, params, scenario=p.scenario,
                   l2=p.extra.get("l2", "clean") if p.origin == "measured" else "clean").speedup


def _refit_sparse_compute(base: KernelParams, pts: list[Point]) -> KernelParams:
    """The 2:4 families' ``compute_eff`` (cuSPARSELt default and CUTLASS) refitted to ``pts`` on a grid, least squares in log speedup."""
    grid = [base.cublas.compute_eff * i / 200 for i in range(10, 201)]

    ratio = base.cusparselt_bf16.compute_eff / base.cusparselt.compute_eff  # the bf16 kernel keeps its H200 ratio

    def with_ce(ce):
        return replace(base, cusparselt=replace(base.cusparselt, compute_eff=ce), cutlass=replace(base.cutlass, compute_eff=ce),
                       cusparselt_bf16=replace(base.cusparselt_bf16, compute_eff=min(1.0, ce * ratio)))

    best = min(grid, key=lambda ce: sum(math.log(predicted_speedup(p, with_ce(ce)) / p.speedup) ** 2 for p in pts))
    return with_ce(round(best, 4))


def fit_all(pts: list[Point] | None = None, *, exclude_source: str | None = None,
            base: KernelParams | None = None, info: dict | None = None) -> Calibration:
    """The base set (or ``base``, already fitted) and every GPU's set; ``exclude_source`` leaves a published source out."""
    pts = points() if pts is None else pts
    if base is None:
        base, info = fit_base(pts)
    info = info or {}
    measured_label = next(p.source for p in pts if p.origin == "measured" and p.fit_ok)
    published = [p for p in pts if p.origin == "published" and p.fit_ok and p.source != exclude_source]
    per_gpu, notes = {"H200": base}, {"H200": f"measured here: {measured_label}"}
    # One set per GPU, all its backends together: a set per backend would rest on one or two
    # points (the A100 has one CUTLASS point), and leaving one source out would leave it none.
    for gpu in sorted({p.gpu for p in published} - {"H200"}):
        mine = [p for p in published if p.gpu == gpu]
        per_gpu[gpu] = _refit_sparse_compute(base, mine)
        notes[gpu] = (f"base set with the 2:4 compute_eff refitted to {len(mine)} published point(s) from "
                      f"{len({p.source for p in mine})} source(s)")
    fitted = info.get("fitted_on", [])
    return Calibration(base=base, base_source=measured_label, per_gpu=per_gpu, notes=notes,
                       n_points=len(fitted) + len(published), sources=tuple(sorted({measured_label, "GEMM-chain traces, NVIDIA H200"}
                                                                               | {p.source for p in published})),
                       fitted_on=tuple(fitted) + tuple(p.id for p in published), info=info)


def error_row(p: Point, pred: float) -> dict:
    """One row of an error table: the point, its measured and predicted speedup, ``rel_err``."""
    return {"id": p.id, "source": p.source, "origin": p.origin, "gpu": p.gpu, "regime": p.regime, "scenario": p.scenario,
            "M": p.M, "N": p.N, "K": p.K, "measured": p.speedup, "predicted": pred, "rel_err": abs(pred / p.speedup - 1)}


def leave_one_source_out(pts: list[Point], cal: Calibration) -> list[dict]:
    """For each published source: the per-GPU refit without it, then its points predicted. One row per point."""
    published = [p for p in pts if p.origin == "published" and p.fit_ok]
    rows = []
    for source in sorted({p.source for p in published}):
        without = fit_all(pts, exclude_source=source, base=cal.base, info=cal.info)
        rows += [error_row(p, predicted_speedup(p, without.params_for(p.gpu, p.backend)))
                 for p in published if p.source == source]
    return rows


def error_table(rows: list[dict], by: str = "regime") -> list[dict]:
    """Median and 90th percentile of ``rel_err`` per value of ``by`` (and ``all``).

    Example:
        >>> error_table([{"regime": "M<=16", "rel_err": 0.1}, {"regime": "M<=16", "rel_err": 0.3}])
        [{'regime': 'M<=16', 'n': 2, 'median': 0.2, 'p90': 0.28}, {'regime': 'all', 'n': 2, 'median': 0.2, 'p90': 0.28}]
    """
    groups: dict[str, list[float]] = {}
    for r in rows:
        groups.setdefault(str(r[by]), []).append(r["rel_err"])
    order = {r: i for i, r in enumerate(REGIMES)}
    groups = dict(sorted(groups.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    groups["all"] = [r["rel_err"] for r in rows]
    out = []
    for key, errs in groups.items():
        if not errs:
            continue
        errs = sorted(errs)
        p90 = errs[0] if len(errs) == 1 else statistics.quantiles(errs, n=10, method="inclusive")[-1]
        out.append({by: key, "n": len(errs), "median": round(statistics.median(errs), 4), "p90": round(p90, 4)})
    return out


def ceiling_check(params_for, *, Ms=None, shapes=None, gpus=("H200", "H100", "A100"), dtypes=("fp16", "bf16", "fp8", "int8")) -> dict:
    """Largest predicted speedup over a grid against its ceiling (at most 1), and how often the guard bound.

    ``params_for(gpu)``: the parameter set of a GPU.
    """
    Ms = Ms or [2 ** i for i in range(17)]
    shapes = shapes or [(n, k) for n in (512, 1024, 2048, 3072, 4096, 5120, 8192, 14336, 16384, 28672)
                        for k in (1024, 2048, 4096, 8192, 14336, 28672)]
    n = guarded = 0
    worst = (0.0, None)
    for dtype, gpu in itertools.product(dtypes, gpus):
        if get_gpu(gpu).dense_tflops.get(dtype) is None:
            continue
        cap, params = ceilings(dtype), params_for(gpu)
        for M, (N, K), alg, sc, l2 in itertools.product(Ms, shapes, ALGORITHMS, SCENARIOS, L2_STATES):
            p = predict(M, N, K, dtype, gpu, None, params, scenario=sc, algorithm=alg, l2=l2)
            n += 1
            guarded += p.ceiling_guard
            c = cap["compute"] if p.dense.bound == "compute" else cap["memory"]
            if p.speedup / c > worst[0]:
                worst = (p.speedup / c, [dtype, gpu, M, N, K, alg, sc, l2])
    return {"n_predictions": n, "n_guarded": guarded, "guarded_share": round(guarded / n, 5),
            "max_speedup_over_ceiling": worst[0], "at": worst[1]}


def bf16_held_out(pts: list[Point], base: KernelParams) -> list[dict]:
    """bf16 points, each weight shape's predicted by a bf16 family fitted without that shape (one row per point)."""
    bf = [p for p in fit_points(pts) if p.dtype == "bf16"]
    rows = []
    for nk in sorted({(p.N, p.K) for p in bf}):
        fam, _ = fit_bf16(base, [p for p in bf if (p.N, p.K) != nk])
        prm = replace(base, cusparselt_bf16=fam)
        rows += [{**error_row(p, predicted_speedup(p, prm)), "mode": p.extra["mode"]} for p in bf if (p.N, p.K) == nk]
    return rows


def evaluate(pts: list[Point] | None = None, cal: Calibration | None = None) -> dict:
    """Every error table the site shows, each held out in its own way (see the keys)."""
    pts = points() if pts is None else pts
    cal = cal or fit_all(pts)
    held, flagged = [], []
    for p in held_out_points(pts):
        (flagged if p.extra.get("flagged") else held).append({**error_row(p, predicted_speedup(p, cal.base)), "mode": p.extra["mode"],
                                                              "flagged": p.extra.get("flagged")})
    fit_set = [p for p in fit_points(pts) if p.extra.get("mode") != "trace"]
    in_sample = [{**error_row(p, predicted_speedup(p, cal.base)), "mode": p.extra["mode"], "dtype": p.dtype} for p in fit_set]
    loso = leave_one_source_out(pts, cal)
    bf16 = bf16_held_out(pts, cal.base)

    def modes(rows):
        return {m: error_table([r for r in rows if r["mode"] == m]) for m in ("kernel", "graph")}

    return {
        "held_out": {"label": f"{HELD_OUT_MODEL} shapes on the H200 (fp16, never in the fit)", "by_mode": modes(held),
                     "points": held, "flagged": flagged},
        "held_out_bf16": {"label": "bf16 on the H200, each weight shape left out of the bf16 fit (no "
                                   f"{HELD_OUT_MODEL} shape was timed in bf16)", "by_mode": modes(bf16), "points": bf16},
        "in_sample": {"label": "the fit set (Llama-3-8B and reference shapes, unflagged), per dtype",
                      "by_mode": modes([r for r in in_sample if r["dtype"] == "fp16"]),
                      "by_dtype": {d: modes([r for r in in_sample if r["dtype"] == d]) for d in ("fp16", "bf16")}},
        "published_leave_one_source_out": {"by_regime": error_table(loso, "regime"), "by_gpu": error_table(loso, "gpu"),
                                           "points": loso, "n_sources": len({r["source"] for r in loso})},
    }


def _to_json(cal: Calibration, errors: dict, checks: dict) -> dict:
    from .. import __version__

    info = {k: v for k, v in cal.info.items() if k != "fitted_on"}
    return {
        "schema": FIT_SCHEMA,
        "provenance": {
            "date": _dt.date.today().isoformat(),
            "twofour": __version__,
            "code": "twofour.roofline.calibration (twofour calibrate --out)",
            "model": "tile model: tiles and split-K from kernel names, bandwidth from busy SMs (twofour.roofline.model)",
            "n_points": cal.n_points,
            "sources": list(cal.sources),
            "rules": list(FIT_RULES),
            "held_out_model": HELD_OUT_MODEL,
            "fit": info,
        },
        "base": {"params": cal.base.to_dict(), "source": cal.base_source},
        "per_gpu": {g: {"params": e.to_dict(), "note": cal.notes[g]} for g, e in cal.per_gpu.items()},
        "errors": errors,
        "checks": checks,
        "fitted_on": list(cal.fitted_on),
    }


def fit_inputs() -> list[Path]:
    """The files a fit reads: the published measurements and the GPU results files (never its output)."""
    from ..bench.results import DATA_DIR
    from .published import PUBLISHED_PATH

    return [PUBLISHED_PATH, *sorted(DATA_DIR.glob("bench-*.json"))]


def save(path=None, *, pts: list[Point] | None = None, cal: Calibration | None = None,
         errors: dict | None = None) -> Path:
    """Fit unless ``cal`` is given, evaluate, check the ceilings, and write the JSON (never over an input)."""
    from .._common.atomic import check_output, write_text

    path = Path(path) if path is not None else FIT_PATH
    check_output(path, fit_inputs())  # before the fit
    pts = points() if pts is None else pts
    cal = cal or fit_all(pts)
    errors = errors or evaluate(pts, cal)
    checks = {"ceilings": ceiling_check(lambda gpu: cal.params_for(gpu))}
    write_text(path, json.dumps(_to_json(cal, errors, checks), indent=1) + "\n", fit_inputs())
    return path
