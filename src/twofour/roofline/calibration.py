"""Fit the kernel model to measurements, and say how well it predicts the ones it did not see.

The model's free numbers (:class:`twofour.roofline.Efficiency`) are fitted, not assumed:

1. **Base set, from this project's own GPU measurements** (``twofour bench`` results shipped in
   ``twofour/data``; today one NVIDIA H200 run). Per kernel family (dense, 2:4):
   compute and memory efficiency and the device per-call cost are fitted to the ``cached``
   points (profiler kernel time); the host time per call to the ``eager`` points (eager calls
   issued back to back, where a call costs ``max(cached time, host time)``). The tile shape of the wave model is the candidate that fits both families best.
2. **Per GPU**, the base set with the 2:4 compute efficiency refitted to that GPU's usable
   published points (:data:`twofour.roofline.published.FIT_RULES`), which are almost all large
   GEMMs, where that efficiency is what decides the speedup. A GPU without usable published
   points keeps the base set, and says so.
3. **Ceilings hold by construction**: a fitted 2:4 efficiency never exceeds the dense one, and
   the 2:4 per-call costs are never below the dense ones, so no prediction passes 2x, nor
   ``1 / packed_ratio`` where the weight's bytes decide. A fit that wanted otherwise is clamped
   and the clamp is recorded.

:func:`leave_one_source_out` refits everything without one source at a time and predicts that
source's points: the error a reader should expect on a GPU, shape or software the fit has
not seen. Without the project's own run the base set falls back to the assumed defaults
(:data:`twofour.roofline.ASSUMED_EFFICIENCY`), which is also "the model before the refit".

Example:
    >>> cal = fit_all()
    >>> cal.base_source.startswith("twofour bench, NVIDIA H200")
    True
    >>> p = cal.params_for("H200")
    >>> p.sparse_compute <= p.dense_compute and p.sparse_overhead_us >= p.dense_overhead_us
    True
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from .fitting import _fit_side, _side_terms, ceiling_order
from .model import predict
from .params import ASSUMED_EFFICIENCY, Efficiency
from ._fitfile import FIT_PATH, FIT_SCHEMA, load_fit
from .published import FIT_RULES, Point, points

__all__ = ["Calibration", "fit_all", "leave_one_source_out", "leave_one_shape_out", "in_sample", "with_params",
           "evaluate", "error_table", "FIT_PATH", "TILE_CANDIDATES", "save", "load_fit"]

# Wave-model tiles tried for the base fit; the one with the smallest summed error wins.
TILE_CANDIDATES = ((128, 128), (64, 128), (64, 64))


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters: one base set and one set per GPU, with what each was fitted to."""

    base: Efficiency
    base_source: str  # which measurements the base set comes from
    per_gpu: dict  # GPU name -> Efficiency
    notes: dict  # GPU name -> one line: what its set was fitted to
    clamps: tuple[str, ...] = ()
    n_points: int = 0
    sources: tuple[str, ...] = ()
    fitted_on: tuple[str, ...] = field(default=(), repr=False)  # ids of the points used

    def params_for(self, gpu: str | None, backend: str | None = None) -> Efficiency:
        """The set for ``gpu`` and ``backend``, else for ``gpu``, else the base set."""
        return self.per_gpu.get(f"{gpu}/{backend}", self.per_gpu.get(gpu, self.base))


def _time_points(pts: list[Point], scenario: str) -> list[dict]:
    return [dict(M=p.M, N=p.N, K=p.K, dtype=p.dtype, backend=p.backend, gpu=p.gpu,
                 dense_ms=p.dense_us / 1e3, sparse_ms=p.sparse_us / 1e3)
            for p in pts if p.scenario == scenario and p.dense_us and p.sparse_us]


def _fit_base(pts: list[Point]) -> tuple[Efficiency, list[str]]:
    """Efficiencies and device cost on ``cached`` points, host cost on ``eager`` points."""
    import numpy as np

    from ..hardware import get_gpu

    cached = _time_points(pts, "cached")
    eager = _time_points(pts, "eager")
    if len(cached) < 3:
        raise ValueError(f"the base fit needs at least 3 measured 'cached' points with times, got {len(cached)}")
    best = None
    for tile_m, tile_n in TILE_CANDIDATES:
        sides = {}
        total = 0.0
        for kind in ("dense", "sparse"):
            F, B, T = _side_terms(cached, lambda p: get_gpu(p["gpu"]), kind, tile_m, tile_n, None)
            ce, me, o, rms, _ = _fit_side(F, B, T)
            sides[kind] = (ce, me, o)
            total += rms
        if best is None or total < best[0]:
            best = (total, tile_m, tile_n, sides)
    _, tile_m, tile_n, sides = best
    values = {"tile_m": tile_m, "tile_n": tile_n}
    for kind, (ce, me, o) in sides.items():
        values.update({f"{kind}_compute": ce, f"{kind}_memory": me, f"{kind}_overhead_us": o * 1e6})
    # Host time per call: eager calls cost max(cached time, host); least squares in relative error.
    for kind in ("dense", "sparse"):
        if not eager:
            values[f"{kind}_host_us"] = 0.0
            continue
        F, B, T = _side_terms(eager, lambda p: get_gpu(p["gpu"]), kind, tile_m, tile_n, None)
        ce, me, o = sides[kind]
        cached_t = np.maximum(F / ce, B / me) + o
        grid = np.concatenate([[0.0], np.geomspace(1e-7, 1e-2, 2001)])
        errs = [float((((np.maximum(cached_t, h) - T) / T) ** 2).sum()) for h in grid]
        values[f"{kind}_host_us"] = float(grid[int(np.argmin(errs))]) * 1e6
    return _clamped(values)


def _clamped(values: dict) -> tuple[Efficiency, list[str]]:
    """Enforce the ceilings (:func:`twofour.roofline.ceiling_order`) and round for storage."""
    values, clamps = ceiling_order(values)
    rounded = {k: (round(v, 4) if k.endswith(("compute", "memory")) else round(v, 2)) if isinstance(v, float) else v
               for k, v in values.items()}
    return Efficiency(**rounded), clamps


def _speedup(p: Point, params: Efficiency) -> float:
    return predict(p.M, p.N, p.K, p.dtype, p.gpu, p.backend, params, scenario=p.scenario).speedup


def _refit_sparse_compute(base: Efficiency, pts: list[Point]) -> Efficiency:
    """Least squares in log speedup over ``sparse_compute`` alone (never above dense_compute)."""
    grid = [round(base.dense_compute * i / 200, 6) for i in range(20, 200)] + [base.dense_compute]

    def err(ce):
        q = replace(base, sparse_compute=ce)
        return sum(math.log(_speedup(p, q) / p.speedup) ** 2 for p in pts)

    best = min(grid, key=err)
    return replace(base, sparse_compute=min(round(best, 4), base.dense_compute))


def fit_all(pts: list[Point] | None = None, *, exclude_source: str | None = None,
            exclude_shape: tuple[int, int] | None = None) -> Calibration:
    """Fit the base set and every GPU's set to the usable points (all of them by default).

    ``exclude_source`` / ``exclude_shape`` (``(N, K)``) leave points out, for cross-validation.
    """
    pts = [p for p in (pts if pts is not None else points())
           if p.fit_ok and p.source != exclude_source and (exclude_shape is None or (p.N, p.K) != exclude_shape)]
    measured = [p for p in pts if p.origin == "measured"]
    if measured:
        base, clamps = _fit_base(measured)
        base_source = "; ".join(sorted({p.source for p in measured}))
        base_gpus = sorted({p.gpu for p in measured})
    else:
        base, clamps, base_source, base_gpus = ASSUMED_EFFICIENCY, [], "assumed (no measured GPU results)", []
    per_gpu, notes = {}, {}
    for gpu in sorted({p.gpu for p in pts}):
        published = [p for p in pts if p.gpu == gpu and p.origin == "published"]
        if gpu in base_gpus:
            per_gpu[gpu] = base
            notes[gpu] = f"measured here: {base_source}"
            continue
        if published:
            per_gpu[gpu] = _refit_sparse_compute(base, published)
            notes[gpu] = (f"base set with sparse_compute refitted to {len(published)} published point(s) "
                          f"from {len({p.source for p in published})} source(s)")
        for backend in sorted({p.backend for p in published}):
            mine = [p for p in published if p.backend == backend]
            if len(mine) < len(published):  # a backend-specific set only where it differs from the GPU's
                per_gpu[f"{gpu}/{backend}"] = _refit_sparse_compute(base, mine)
                notes[f"{gpu}/{backend}"] = (f"base set with sparse_compute refitted to {len(mine)} published {backend} "
                                             f"point(s) from {len({p.source for p in mine})} source(s)")
    return Calibration(base=base, base_source=base_source, per_gpu=per_gpu, notes=notes, clamps=tuple(clamps),
                       n_points=len(pts), sources=tuple(sorted({p.source for p in pts})),
                       fitted_on=tuple(p.id for p in pts))


def _rel_err(p: Point, cal: Calibration) -> float:
    return abs(_speedup(p, cal.params_for(p.gpu, p.backend)) / p.speedup - 1)


def leave_one_source_out(pts: list[Point] | None = None) -> list[dict]:
    """For each source: refit without it, predict its points. One row per point.

    Rows: ``id, source, origin, gpu, regime, scenario, measured, predicted, rel_err`` with
    ``rel_err = |predicted / measured - 1|`` on the speedup.
    """
    pts = [p for p in (pts if pts is not None else points()) if p.fit_ok]
    rows = []
    for source in sorted({p.source for p in pts}):
        cal = fit_all(pts, exclude_source=source)
        for p in pts:
            if p.source != source:
                continue
            pred = _speedup(p, cal.params_for(p.gpu, p.backend))
            rows.append({"id": p.id, "source": source, "origin": p.origin, "gpu": p.gpu, "regime": p.regime,
                         "scenario": p.scenario, "measured": p.speedup, "predicted": pred,
                         "rel_err": abs(pred / p.speedup - 1)})
    return rows


def leave_one_shape_out(pts: list[Point] | None = None) -> list[dict]:
    """For each weight shape ``(N, K)`` measured here: refit without it, predict its points.

    With one measured source, leaving the source out leaves no measurement of the base set at
    all; leaving one shape out asks the useful question: does the fit carry to a shape it has
    not seen, on the same GPU and software? Rows as :func:`leave_one_source_out`.
    """
    pts = [p for p in (pts if pts is not None else points()) if p.fit_ok]
    rows = []
    for shape in sorted({(p.N, p.K) for p in pts if p.origin == "measured"}):
        cal = fit_all(pts, exclude_shape=shape)
        for p in pts:
            if p.origin != "measured" or (p.N, p.K) != shape:
                continue
            pred = _speedup(p, cal.params_for(p.gpu, p.backend))
            rows.append({"id": p.id, "source": p.source, "origin": p.origin, "gpu": p.gpu, "regime": p.regime,
                         "scenario": p.scenario, "measured": p.speedup, "predicted": pred,
                         "rel_err": abs(pred / p.speedup - 1)})
    return rows


def in_sample(pts: list[Point] | None = None, cal: Calibration | None = None) -> list[dict]:
    """Rows as :func:`leave_one_source_out`, but predicted by the fit that saw every point."""
    pts = [p for p in (pts if pts is not None else points()) if p.fit_ok]
    cal = cal or fit_all(pts)
    return [{"id": p.id, "source": p.source, "origin": p.origin, "gpu": p.gpu, "regime": p.regime, "scenario": p.scenario,
             "measured": p.speedup, "predicted": _speedup(p, cal.params_for(p.gpu, p.backend)), "rel_err": _rel_err(p, cal)}
            for p in pts]


def with_params(pts: list[Point], params: Efficiency) -> list[dict]:
    """Rows predicted by one fixed parameter set (e.g. the assumed defaults: the model before the refit)."""
    rows = []
    for p in (p for p in pts if p.fit_ok):
        pred = _speedup(p, params)
        rows.append({"id": p.id, "source": p.source, "origin": p.origin, "gpu": p.gpu, "regime": p.regime,
                     "scenario": p.scenario, "measured": p.speedup, "predicted": pred, "rel_err": abs(pred / p.speedup - 1)})
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
    groups["all"] = [r["rel_err"] for r in rows]
    out = []
    for key, errs in groups.items():
        if not errs:
            continue
        errs = sorted(errs)
        p90 = errs[0] if len(errs) == 1 else statistics.quantiles(errs, n=10, method="inclusive")[-1]
        out.append({by: key, "n": len(errs), "median": round(statistics.median(errs), 4), "p90": round(p90, 4)})
    return out


# ------------------------------------------------------------------------------------------
# The fitted parameters as package data


def _to_json(cal: Calibration, errors: dict) -> dict:
    from .. import __version__

    return {
        "schema": FIT_SCHEMA,
        "provenance": {
            "date": _dt.date.today().isoformat(),
            "twofour": __version__,
            "code": "twofour.roofline.calibration.fit_all (twofour calibrate --out)",
            "n_points": cal.n_points,
            "sources": list(cal.sources),
            "rules": list(FIT_RULES),
            "tile_candidates": [list(t) for t in TILE_CANDIDATES],
        },
        "base": {"params": cal.base.to_dict(), "source": cal.base_source},
        "per_gpu": {g: {"params": e.to_dict(), "note": cal.notes[g]} for g, e in cal.per_gpu.items()},
        "clamps": list(cal.clamps),
        "errors": errors,
        "fitted_on": list(cal.fitted_on),
    }


def evaluate(pts: list[Point] | None = None) -> dict:
    """Every error table the site shows, each held out in its own way (see the keys)."""
    pts = [p for p in (pts if pts is not None else points()) if p.fit_ok]
    published = [p for p in pts if p.origin == "published"]
    loso = [r for r in leave_one_source_out(pts) if r["origin"] == "published"]
    shapes = leave_one_shape_out(pts)
    before = with_params([p for p in pts if p.origin == "measured"], ASSUMED_EFFICIENCY)
    after = [r for r in in_sample(pts) if r["origin"] == "measured"]
    return {
        "published_leave_one_source_out": {"by_regime": error_table(loso, "regime"), "by_gpu": error_table(loso, "gpu"),
                                           "points": loso, "n_sources": len({p.source for p in published})},
        "measured_leave_one_shape_out": {"by_regime": error_table(shapes, "regime"),
                                         "by_scenario": error_table(shapes, "scenario")},
        "measured_before_refit": {"by_regime": error_table(before, "regime"), "by_scenario": error_table(before, "scenario"),
                                  "params": "ASSUMED_EFFICIENCY (no host cost; 5 / 15 us per call)"},
        "measured_in_sample": {"by_regime": error_table(after, "regime"), "by_scenario": error_table(after, "scenario")},
    }


def fit_inputs() -> list[Path]:
    """The files a fit reads: the published measurements and the GPU results files (never its output)."""
    from ..bench.results import DATA_DIR
    from .published import PUBLISHED_PATH

    return [PUBLISHED_PATH, *sorted(DATA_DIR.glob("bench-*.json"))]


def save(path=None) -> Path:
    """Fit everything, evaluate leave-one-source-out, and write the JSON (default: package data).

    Written atomically and never over one of :func:`fit_inputs` (:mod:`twofour._common.atomic`).
    """
    from .._common.atomic import check_output, write_text

    path = Path(path) if path is not None else FIT_PATH
    check_output(path, fit_inputs())  # before minutes of fitting
    pts = points()
    cal = fit_all(pts)
    write_text(path, json.dumps(_to_json(cal, evaluate(pts)), indent=1) + "\n", fit_inputs())
    return path
