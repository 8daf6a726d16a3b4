"""Which measured points to distrust, by one written rule computed from a results file's own numbers.

A (shape, M, dtype) point's speedup in one timing mode is suspect when either side (dense, or a
2:4 backend) is flagged. The rules never edit a file; they run whenever one is read
(:meth:`twofour.bench.Results.flags`), so older files are judged the same way.

``clock`` (kernel mode)
    The profiler's summed kernel time exceeds the same call's graph replay or lone call by more
    than 2%: the kernels are part of both, so the GPU ran slower during the kernel-mode pass.
``drift`` (any mode)
    The raw repeats rise steadily (:func:`drifts`): the GPU's state changed while it was measured.
``graph-outlier`` (graph mode)
    The replay takes more than 15 µs *and* 25% longer than its own kernel time (the replay's own
    cost elsewhere is 2-13 µs), or, without a kernel time, the dense replay takes more than 25%
    and 10 µs longer than the fastest dense replay at a larger M of the same weight (cuBLAS never
    got slower with fewer rows in any recorded series; 2:4 times do fall with M at decode).
``clock-drop`` (any mode, files with clocks)
    The SM clock read after the mode's timings is more than 5% below the one read before it.

Flagged points are shown (chapter 4 marks them) and kept out of every fit.

Example:
    >>> drifts([1.0, 1.01, 1.02, 1.04, 1.06]), drifts([1.0, 1.2, 1.1, 1.3, 1.4])
    (True, False)
"""

from __future__ import annotations

from ..vocabulary import TIMING_MODES

__all__ = ["flag_points", "flagged_keys", "drifts", "timing_entry", "point_key"]


def drifts(raw) -> bool:
    """True when ``raw`` (5 or more repeats) rises at every step and ends at least 5% above its start."""
    raw = list(raw or [])
    return (len(raw) >= 5 and all(b > a for a, b in zip(raw, raw[1:]))
            and raw[-1] >= 1.05 * raw[0])


def timing_entry(point: dict, mode: str, side: str) -> dict | None:
    """The timing of ``side`` (``"dense"`` or a 2:4 backend) in ``mode``, if it has a median."""
    block = point if mode == "lone" else (point.get("modes") or {}).get(mode) or {}
    entry = block.get("dense") if side == "dense" else (block.get("sparse") or {}).get(side)
    return entry if isinstance(entry, dict) and "median_ms" in entry else None


def _us(point, mode, side):
    e = timing_entry(point, mode, side)
    return None if e is None else e["median_ms"] * 1e3


def point_key(point: dict, mode: str) -> tuple:
    """``(shape, M, N, K, dtype, mode)``: what a flag marks."""
    return (point.get("shape"), point["M"], point["N"], point["K"], point["dtype"], mode)


def flag_points(points) -> list[dict]:
    """One dict per (point, mode, side, rule) that fires, with the evidence in words."""
    series: dict = {}
    for p in points:
        series.setdefault((p.get("shape"), p["N"], p["K"], p["dtype"]), []).append(p)
    out = []
    for p in points:
        base = {"shape": p.get("shape"), "M": p["M"], "N": p["N"], "K": p["K"], "dtype": p["dtype"]}
        for side in ["dense"] + sorted((p.get("sparse") or {}).keys()):
            k, g, e = _us(p, "kernel", side), _us(p, "graph", side), _us(p, "lone", side)
            others = [x for x in (g, e) if x is not None]
            if k is not None and others and k > 1.02 * min(others):
                out.append({**base, "mode": "kernel", "side": side, "rule": "clock",
                            "evidence": f"kernel {k:.1f} µs > " + " / ".join(
                                f"{n} {x:.1f}" for n, x in (("graph", g), ("lone", e)) if x is not None) + " µs"})
            for mode in TIMING_MODES:
                entry = timing_entry(p, mode, side)
                if entry is not None and drifts(entry.get("raw_ms")):
                    out.append({**base, "mode": mode, "side": side, "rule": "drift",
                                "evidence": "repeats " + ", ".join(f"{x * 1e3:.1f}" for x in entry["raw_ms"]) + " µs"})
            if g is not None and k is not None:
                if g - k > 15.0 and g > 1.25 * k:
                    out.append({**base, "mode": "graph", "side": side, "rule": "graph-outlier",
                                "evidence": f"graph {g:.1f} µs vs its kernel time {k:.1f} µs"})
            elif g is not None and side == "dense":
                later = [x for x in (_us(q, "graph", "dense") for q in series[(p.get("shape"), p["N"], p["K"], p["dtype"])]
                                     if q["M"] > p["M"]) if x is not None]
                if later and g > 1.25 * min(later) and g - min(later) > 10.0:
                    out.append({**base, "mode": "graph", "side": side, "rule": "graph-outlier",
                                "evidence": f"graph {g:.1f} µs vs {min(later):.1f} µs at a larger M"})
        for mode, reading in (p.get("clocks") or {}).items():
            before, after = (reading or {}).get("before") or {}, (reading or {}).get("after") or {}
            b, a = before.get("sm_clock_mhz"), after.get("sm_clock_mhz")
            if b and a and a < 0.95 * b:
                out.append({**base, "mode": mode, "side": "all", "rule": "clock-drop",
                            "evidence": f"SM clock {b:.0f} MHz before, {a:.0f} MHz after"})
    return out


def flagged_keys(points) -> dict[tuple, list[str]]:
    """``{point_key: [reasons]}`` of every (point, mode) whose speedup is suspect."""
    out: dict[tuple, list[str]] = {}
    for f in flag_points(points):
        out.setdefault(point_key(f, f["mode"]), []).append(f"{f['rule']} ({f['side']}): {f['evidence']}")
    return out
