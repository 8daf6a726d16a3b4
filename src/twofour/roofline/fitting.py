"""Fitting a kernel family's constants to measured times (numpy only: a small Nelder-Mead in log space).

The free numbers are a family's :data:`FREE` and, with ``fit_dram``, the GPU-wide :data:`FREE_DRAM`
(fitted on the dense side: DRAM limits its kernels). Tiles and the split-K rule are read off the kernel
names. The loss is the sum of squared ``log(predicted / measured)`` times, so a 10 µs decode GEMM
weighs as much as a 10 ms prefill one. The model's arithmetic is repeated on numpy arrays
(:func:`structure`), exactly as :func:`twofour.roofline.kernel_time` does it, so a fit runs in under a second.

Example:
    >>> f = lambda x: (x[0] - 1) ** 2 + (x[1] + 2) ** 2
    >>> [round(float(v), 3) for v in nelder_mead(f, [0.0, 0.0])]
    [1.0, -2.0]
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from ..hardware import get_gpu
from .model import launch_bytes, pad_multiple
from .params import KernelFamily, KernelParams

__all__ = ["nelder_mead", "structure", "kernel_us", "fit_family", "FREE", "FREE_DRAM"]

FREE = ("compute_eff", "sm_compute_eff", "mem_eff", "per_sm_gbs", "fill_gain", "latency_us")
FREE_DRAM = ("dram_eff", "flush_dirty_mb", "flush_dirty_frac")


def nelder_mead(f, x0, *, step: float = 0.3, iters: int = 3000, tol: float = 1e-10):
    """Minimise ``f`` from ``x0`` (a list of floats); returns the best point found (a list)."""
    n = len(x0)
    pts = [np.array(x0, float)] + [np.array(x0, float) + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    return [float(v) for v in pts[int(np.argmin(vals))]]


def structure(points, family: KernelFamily, *, sparse: bool, extra_us=None) -> SimpleNamespace:
    """Per point, what of :func:`twofour.roofline.kernel_time` the fitted numbers leave fixed (numpy arrays).

    ``points``: dicts or objects with ``M, N, K, dtype``, optional ``gpu``, ``l2``. ``extra_us``: per
    point, µs added to the kernel time (a graph replay's cost for points timed as replays); default 0.
    """
    rows = []
    for p in points:
        get = (lambda k, d=None: p.get(k, d)) if isinstance(p, dict) else (lambda k, d=None: getattr(p, k, d))
        M, N, K, d = get("M"), get("N"), get("K"), get("dtype")
        spec = get_gpu(get("gpu") or "H200")
        mult = pad_multiple("cuSPARSELt", d)
        Mp, L, n_bytes = launch_bytes(M, N, K, d, spec, family, sparse, mult)
        rows.append((L.busy_sms, L.waves, min(Mp, L.tile_m) / L.tile_m, n_bytes,
                     2 * L.tile_n * L.tile_m * -(-K // L.split),  # the whole tile
                     L.split > 1, bool(sparse and M % mult), get("l2", "flushed") == "flushed", spec.mem_bw_gbs,
                     spec.sms, spec.peak_tflops(d, sparse=sparse)))
    names = ("busy", "waves", "fill", "n_bytes", "cta_flops", "split", "pad", "flushed", "mem_bw", "sms", "peak")
    arrays = {k: np.array([r[i] for r in rows], dtype=float) for i, k in enumerate(names)}
    extra = np.zeros(len(points)) if extra_us is None else np.array(extra_us, dtype=float)
    return SimpleNamespace(**arrays, extra_us=extra)


def kernel_us(s: SimpleNamespace, family: KernelFamily, params: KernelParams):
    """The kernel times (µs, a numpy array) of :func:`structure`'s points plus ``extra_us``: the model's arithmetic."""
    sat = s.mem_bw * family.mem_eff
    per_sm = family.per_sm_gbs * (1 + family.fill_gain * s.fill)
    bw = sat * s.busy / (s.busy + sat / per_sm)
    dirty = np.where(s.flushed > 0, np.minimum(s.n_bytes * params.flush_dirty_frac, params.flush_dirty_mb * 1e6), 0.0)
    t_memory = np.maximum(s.n_bytes / (bw * 1e3), (s.n_bytes + dirty) / (s.mem_bw * params.dram_eff * 1e3))
    cta_rate = np.minimum(s.peak * 1e6 / s.sms * family.sm_compute_eff, s.peak * 1e6 * family.compute_eff / s.busy)
    t_compute = s.waves * s.cta_flops / cta_rate
    gemm = family.latency_us + np.maximum(t_compute, t_memory)
    helpers = np.where(s.split > 0, family.helper_split_us, 0.0) + np.where(s.pad > 0, params.pad_us, 0.0)
    return gemm + helpers + s.extra_us


def _logit(p):
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


# Fractions are searched through a logit, the other free numbers through a log.
_FRACTIONS = ("compute_eff", "sm_compute_eff", "mem_eff", "dram_eff", "flush_dirty_frac")


def _pack(family: KernelFamily, params: KernelParams, fit_dram: bool) -> list[float]:
    names = FREE + FREE_DRAM if fit_dram else FREE
    values = [getattr(params if n in FREE_DRAM else family, n) for n in names]
    return [_logit(v) if n in _FRACTIONS else math.log(max(v, 1e-3)) for n, v in zip(names, values)]


def _numbers(x, fit_dram: bool) -> tuple[dict, dict]:
    values = {n: 1 / (1 + math.exp(-v)) if n in _FRACTIONS else math.exp(v)
              for n, v in zip(FREE + FREE_DRAM, x)}
    return {n: values[n] for n in FREE}, {n: values[n] for n in FREE_DRAM if fit_dram}


# Starting points (compute_eff, mem_eff, per_sm_gbs, latency_us): the fit keeps the best of the runs.
_STARTS = ((0.7, 0.8, 30.0, 3.0), (0.5, 0.4, 20.0, 7.0), (0.9, 0.9, 50.0, 1.0))


def fit_family(points, measured_us, family: KernelFamily, params: KernelParams, *, sparse: bool, extra_us=None,
               weights=None, fit_dram: bool = False) -> tuple[KernelFamily, KernelParams, float]:
    """Fit ``family``'s free numbers (:data:`FREE`, and :data:`FREE_DRAM` of ``params`` with ``fit_dram``).

    ``points`` as :func:`structure` takes them, ``measured_us`` their times (µs, including
    ``extra_us`` where given), ``weights`` how much each counts (default 1). Returns the fitted
    family, the (possibly refitted) params, and the weighted root-mean-square log error.

    Example:
        >>> from twofour.roofline import ASSUMED_PARAMS, kernel_time
        >>> pts = [dict(M=M, N=N, K=4096, dtype="fp16") for M in (1, 16, 256, 4096) for N in (1024, 4096, 14336)]
        >>> true = ASSUMED_PARAMS.with_family("cusparselt", latency_us=7.0, mem_eff=0.5)
        >>> meas = [kernel_time(p["M"], p["N"], 4096, "fp16", "H200", "cusparselt", true).kernel_us for p in pts]
        >>> fam, _, rms = fit_family(pts, meas, ASSUMED_PARAMS.cusparselt, ASSUMED_PARAMS, sparse=True)
        >>> rms < 0.01
        True
    """
    s = structure(points, family, sparse=sparse, extra_us=extra_us)
    meas = np.array(measured_us, dtype=float)
    w = np.ones(len(meas)) if weights is None else np.array(weights, dtype=float)
    if len(meas) < len(FREE) + (len(FREE_DRAM) if fit_dram else 0):
        raise ValueError(f"fitting needs at least as many points as free numbers, got {len(meas)}")

    # The loss runs some 100,000 times per fit: it reads the numbers off plain namespaces rather than
    # building validated dataclasses (that took a third of the fit's time); the result is built once.
    fixed_fam, fixed_prm = vars(family), vars(params)

    def loss(x):
        fam, prm = _numbers(x, fit_dram)
        us = kernel_us(s, SimpleNamespace(**{**fixed_fam, **fam}), SimpleNamespace(**{**fixed_prm, **prm}))
        return float(np.sum(w * np.log(us / meas) ** 2))

    best = None
    for ce, me, bw, lat in _STARTS:
        start = replace(family, compute_eff=ce, sm_compute_eff=min(0.95, ce + 0.1), mem_eff=me, per_sm_gbs=bw,
                        latency_us=lat, fill_gain=1e-3)
        x0 = _pack(start, replace(params, dram_eff=0.9, flush_dirty_mb=30.0, flush_dirty_frac=0.5) if fit_dram else params,
                   fit_dram)
        x = nelder_mead(loss, x0)
        x = nelder_mead(loss, x)  # restart: Nelder-Mead stalls on ridges
        x = nelder_mead(loss, x, step=0.1)  # and a finer one: a whole tile's math is flat in M, a long ridge
        v = loss(x)
        if best is None or v < best[1]:
            best = (x, v)
    fam, prm = _numbers(best[0], fit_dram)
    return replace(family, **fam), replace(params, **prm), math.sqrt(best[1] / float(np.sum(w)))
