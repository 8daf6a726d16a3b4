"""Fitting the model's efficiencies and per-call costs to measurements, and keeping a fitted set under its ceilings."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..hardware import get_gpu
from .model import _IN_BYTES, _OUT_BYTES, _packed_weight_bytes, _resolve, pad_multiple, wave_efficiency
from .params import DEFAULT_EFFICIENCY, Efficiency


@dataclass(frozen=True)
class FitReport:
    """Fitted :class:`Efficiency` and how well it reproduces the measurements.

    ``*_rms_rel_err`` is the root-mean-square of ``(predicted - measured) / measured``.
    ``*_compute_points`` counts points the fitted model calls compute-bound: with none, the
    compute efficiency is not determined by the data (any value large enough fits).
    """

    params: Efficiency
    n_points: int
    dense_rms_rel_err: float
    sparse_rms_rel_err: float
    dense_compute_points: int
    sparse_compute_points: int


def _side_terms(points, spec_of, kind: str, tile_m: int, tile_n: int, pad_to):
    """Per point: seconds at efficiency 1 for compute (incl. waves) and memory, and t measured."""
    import numpy as np

    F, B, T = [], [], []
    for p in points:
        spec, d, backend = _resolve(spec_of(p), p["dtype"], p.get("backend"))
        M, N, K = int(p["M"]), int(p["N"]), int(p["K"])
        if kind == "sparse":
            mult = pad_to or pad_multiple(backend, d)
            M = math.ceil(M / mult) * mult
            weight = _packed_weight_bytes(N, K, d)
            peak = spec.peak_tflops(d, sparse=True)
        else:
            weight = N * K * _IN_BYTES[d]
            peak = spec.peak_tflops(d)
        wave = wave_efficiency(M, N, spec.sms, tile_m, tile_n)
        F.append(2 * M * N * K / (peak * 1e12 * wave))
        B.append((weight + M * K * _IN_BYTES[d] + M * N * _OUT_BYTES[d]) / (spec.mem_bw_gbs * 1e9))
        T.append(float(p[f"{kind}_ms"]) * 1e-3)
    return np.array(F), np.array(B), np.array(T)


def _fit_side(F, B, T):
    """Least squares in relative error over (compute_eff, memory_eff) on a refined grid; overhead in closed form."""
    import numpy as np

    w = 1.0 / T**2

    def best_on(ce_grid, me_grid):
        ce = ce_grid[:, None, None]
        me = me_grid[None, :, None]
        r = np.maximum(F / ce, B / me)  # [nce, nme, npts]
        # minimise sum(w * (r + o - T)^2) over o >= 0: o = sum(w (T - r)) / sum(w), clipped
        o = np.clip(((T - r) * w).sum(-1) / w.sum(), 0.0, None)
        err = (((r + o[..., None] - T) ** 2) * w).sum(-1)
        i, j = np.unravel_index(np.argmin(err), err.shape)
        return ce_grid[i], me_grid[j], o[i, j]

    ce_grid = np.geomspace(0.01, 1.0, 120)
    me_grid = np.geomspace(0.01, 1.0, 120)
    ce, me, o = best_on(ce_grid, me_grid)
    for _ in range(4):  # zoom in around the best cell
        ce_grid = np.clip(np.geomspace(ce / 1.1, ce * 1.1, 41), 1e-4, 1.0)
        me_grid = np.clip(np.geomspace(me / 1.1, me * 1.1, 41), 1e-4, 1.0)
        ce, me, o = best_on(ce_grid, me_grid)
    pred = np.maximum(F / ce, B / me) + o
    rms = float(np.sqrt(np.mean(((pred - T) / T) ** 2)))
    compute_points = int(np.sum(F / ce >= B / me))
    return float(ce), float(me), float(o), rms, compute_points


def fit(results, gpu=None, *, base: Efficiency | None = None) -> FitReport:
    """Fit compute/memory efficiencies and per-call overheads (dense and 2:4) to measurements.

    Args:
        results: a :class:`twofour.bench.Results` or a list of dicts with keys ``M, N, K,
            dtype, dense_ms, sparse_ms`` (medians) and optionally ``backend`` and ``gpu``.
        gpu: GPU name or spec for every point; default: each point's ``gpu`` key, else the
            results' provenance GPU name.
        base: supplies the fixed parameters (tile shape, ``pad_to``); default the defaults.

    The fit minimises the squared *relative* error, so a 10 µs decode GEMM weighs as much
    as a 10 ms prefill one. Wave quantization and padding are applied as in :func:`predict`.

    Example:
        >>> from twofour.roofline import predict, default_params
        >>> pts = [dict(M=M, N=4096, K=4096, dtype="fp16", gpu="H100",
        ...             dense_ms=predict(M, 4096, 4096).dense_us / 1e3,
        ...             sparse_ms=predict(M, 4096, 4096).sparse_us / 1e3) for M in (1, 16, 4096, 16384)]
        >>> rep = fit(pts)
        >>> round(rep.params.sparse_overhead_us) == round(default_params("H100").sparse_overhead_us)
        True
        >>> rep.dense_rms_rel_err < 1e-2
        True
    """
    base = base or DEFAULT_EFFICIENCY
    points = results.gpu_points() if hasattr(results, "gpu_points") else list(results)
    default_gpu = gpu
    if default_gpu is None and hasattr(results, "provenance"):
        default_gpu = results.provenance.get("gpu_name")
    points = [p for p in points if p.get("sparse_ms") is not None and p.get("dense_ms") is not None]
    if len(points) < 3:
        raise ValueError(
            f"results must hold at least 3 points with both dense_ms and sparse_ms to fit 3 "
            f"parameters per kernel, got {len(points)}"
        )

    def spec_of(p):
        name = p.get("gpu", default_gpu)
        if name is None:
            raise ValueError("each result point needs a 'gpu' (or pass gpu=...) to know its peaks")
        from ..hardware import match_device_name

        if isinstance(name, str):
            matched = match_device_name(name)
            if matched is not None:
                return matched
        return get_gpu(name)

    out = {}
    rms = {}
    ncomp = {}
    for kind in ("dense", "sparse"):
        F, B, T = _side_terms(points, spec_of, kind, base.tile_m, base.tile_n, base.pad_to)
        ce, me, o, rms[kind], ncomp[kind] = _fit_side(F, B, T)
        out[f"{kind}_compute"] = ce
        out[f"{kind}_memory"] = me
        out[f"{kind}_overhead_us"] = o * 1e6
    merged, _ = ceiling_order({**base.to_dict(), **out})
    return FitReport(Efficiency.from_dict(merged), len(points), rms["dense"], rms["sparse"], ncomp["dense"], ncomp["sparse"])


def ceiling_order(values: dict) -> tuple[dict, list[str]]:
    """Make a parameter dict respect the ceilings: 2:4 never more efficient, never cheaper per call.

    Returns the corrected copy and one line per value it moved (a fit to noisy points can land
    a 2:4 efficiency a hair above the dense one; left as it is, the model would predict more
    than the 2x or bytes ceiling).

    Example:
        >>> v, moved = ceiling_order({"dense_compute": 0.8, "sparse_compute": 0.9, "dense_memory": 0.7,
        ...     "sparse_memory": 0.5, "dense_overhead_us": 5, "sparse_overhead_us": 4, "dense_host_us": 0, "sparse_host_us": 0})
        >>> v["sparse_compute"], v["sparse_overhead_us"], len(moved)
        (0.8, 5, 2)
    """
    values, moved = dict(values), []
    for name in ("compute", "memory"):
        d, s = values[f"dense_{name}"], values[f"sparse_{name}"]
        if s > d:
            moved.append(f"sparse_{name} {s:.4g} > dense_{name} {d:.4g}: set to {d:.4g}")
            values[f"sparse_{name}"] = d
    for name in ("overhead_us", "host_us"):
        d, s = values.get(f"dense_{name}", 0.0), values.get(f"sparse_{name}", 0.0)
        if s < d:
            moved.append(f"sparse_{name} {s:.4g} < dense_{name} {d:.4g}: set to {d:.4g}")
            values[f"sparse_{name}"] = d
    return values, moved
