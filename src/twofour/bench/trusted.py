"""Which GPU timings a quoted number may rest on: flagged points dropped or replaced by a named rule.

Every reader that turns recorded GEMM timings into a number the site quotes (the request's
measured speedups, the verdict, the practice bank) goes through :func:`trusted_gemm_table`: an
unflagged timing (:mod:`twofour.bench.flags`) stays as it is; a flagged side is replaced by one
of :data:`FLAG_RULES` (whose name travels with the value), or the point is dropped when no rule
applies. The replacement reads the results file only, never the kernel model, which is itself
fitted to trusted timings.

Example:
    >>> from twofour.course.answer import verdict_results
    >>> t = trusted_gemm_table(verdict_results(), "float16", "graph")
    >>> g = t[(1, 14336, 4096)]                    # gate/up, one token: its 2:4 replay is flagged
    >>> g["rule"], round(g["raw_sparse_ms"] * 1e3, 1), round(g["sparse_ms"] * 1e3, 1)
    ('kernel-plus-graph-cost', 65.3, 58.9)
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .flags import point_key, timing_entry

__all__ = ["FLAG_RULES", "CALL_PATHS", "TILE_M", "trusted_gemm_table", "neighbour_graph_cost"]

FLAG_RULES = {
    "kernel-plus-graph-cost": (
        "a flagged CUDA-graph time replaced by the same side's kernel time (kernel mode, unflagged) plus what a "
        "replay of that side cost beyond its kernel at the same weight's other points (the median of graph minus "
        "kernel time over its unflagged points in the same M class, M <= 256 or above: the default 2:4 kernel's "
        "token tile is 256 wide)"),
    "dense-at-larger-m": (
        "a flagged dense CUDA-graph time with no kernel time beside it replaced by the fastest dense replay of "
        "the same weight at a larger M (cuBLAS never got slower with fewer rows in any recorded fp16 "
        "kernel-mode series); this favours dense"),
}

# How each recorded timing was called (twofour.bench.results derives it per row; see there).
CALL_PATHS = {
    "F.linear": "F.linear on a to_sparse_semi_structured weight (PyTorch's 2:4 path: x padded and copied, "
                "then cuSPARSELt)",
    "_cslt_sparse_mm": "torch._cslt_sparse_mm called directly on x already padded to a multiple of 8 rows "
                       "(no F.linear wrapper, no pad or copy kernels)",
    "cuBLAS": "cuBLAS through F.linear on the dense weight",
}

# The M classes of neighbour_graph_cost: the default cuSPARSELt kernel's token tile (128 x 256, from
# the kernel names) is one M-tile up to 256 tokens, so a replay costs alike within M <= 256.
TILE_M = 256


def _flagged(point: dict, mode: str, side: str) -> bool:
    return any(f["mode"] == mode and f["side"] in (side, "all") for f in point.get("_flags", []))


def neighbour_graph_cost(point: dict, side: str, same_weight: list[dict]) -> float | None:
    """ms a graph replay of ``side`` (``"dense"`` or a 2:4 backend) costs beyond its kernels: the median of
    graph minus kernel time over ``same_weight``'s other points in ``point``'s M class (:data:`TILE_M`),
    neither mode flagged (``_flags``, as :func:`trusted_gemm_table` annotates them); None when there are none.

    Example:
        >>> def pt(M, g, k):
        ...     return {"M": M, "modes": {m: {"dense": {"median_ms": v}} for m, v in (("graph", g), ("kernel", k))}}
        >>> round(neighbour_graph_cost(pt(1, 0.09, 0.03), "dense", [pt(2, 0.04, 0.03), pt(4, 0.045, 0.03)]), 4)
        0.0125
    """
    diffs = []
    for q in same_weight:
        if q is point or (q["M"] <= TILE_M) != (point["M"] <= TILE_M):
            continue
        g, k = timing_entry(q, "graph", side), timing_entry(q, "kernel", side)
        if g is not None and k is not None and not _flagged(q, "graph", side) and not _flagged(q, "kernel", side):
            diffs.append(g["median_ms"] - k["median_ms"])
    return statistics.median(diffs) if diffs else None


def _replace(point: dict, side: str, mode: str, by_weight: dict, graph_cost) -> tuple[float | None, str | None]:
    """The replacement of ``side``'s flagged time in ``mode`` (ms) and the rule's name, or (None, None)."""
    if mode != "graph":
        return None, None
    kernel = timing_entry(point, "kernel", side)
    same_weight = by_weight[(point.get("shape"), point["N"], point["K"])]
    if kernel is not None and not _flagged(point, "kernel", side):
        cost = graph_cost(point, side, same_weight)
        if cost is not None:
            return kernel["median_ms"] + cost, "kernel-plus-graph-cost"
    if side == "dense":
        later = [timing_entry(q, "graph", "dense") for q in same_weight
                 if q["M"] > point["M"] and not _flagged(q, "graph", "dense")]
        later = [e["median_ms"] for e in later if e is not None]
        if later:
            return min(later), "dense-at-larger-m"
    return None, None


def trusted_gemm_table(results, dtype_name: str, mode: str, backend: str = "cuSPARSELt", *,
                       graph_cost=neighbour_graph_cost) -> dict[tuple, dict]:
    """``{(M, N, K): row}`` of ``results`` (one :class:`twofour.bench.Results` or a list) in ``mode``.

    Each row: ``dense_ms``, ``sparse_ms`` (what a number may use), ``raw_dense_ms``, ``raw_sparse_ms``
    (as recorded), ``flagged`` (reasons or None), ``rule`` (the :data:`FLAG_RULES` name that
    replaced a flagged side, or None), ``call_path``, ``dense_call_path`` (:data:`CALL_PATHS`) and
    ``file``. A later results file's point replaces an earlier one's. ``graph_cost``: called as
    :func:`neighbour_graph_cost` (the default) is; None from it and the rule does not apply.
    """
    if dtype_name not in ("float16", "bfloat16", "float32"):
        raise ValueError(f"dtype_name must be 'float16', 'bfloat16' or 'float32', got {dtype_name!r}")
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    table: dict[tuple, dict] = {}
    for res in results:
        points = {point_key(p, mode): dict(p, _flags=[]) for p in res.points}  # keyed by point, mode fixed
        for f in res.flags():
            points[point_key(f, mode)]["_flags"].append(f)
        by_weight: dict = {}
        for q in points.values():
            by_weight.setdefault((q.get("shape"), q["N"], q["K"]), []).append(q)
        for row in res.gpu_points(mode):
            if row["dtype"] != dtype_name or row["backend"] != backend:
                continue
            q = points[point_key(row, mode)]
            out = {"dense_ms": row["dense_ms"], "sparse_ms": row["sparse_ms"], "raw_dense_ms": row["dense_ms"],
                   "raw_sparse_ms": row["sparse_ms"], "flagged": row["flagged"], "rule": None,
                   "call_path": row["call_path"], "dense_call_path": row["dense_call_path"],
                   "file": Path(res.path).name if res.path else None, "mode": mode, "shape": row["shape"],
                   "dtype": dtype_name}
            if row["flagged"]:
                sides = {f["side"] for f in q["_flags"] if f["mode"] == mode}
                sides = {"dense", backend} if "all" in sides else sides
                rules = []
                for side in sorted(sides):
                    value, rule = _replace(q, "dense" if side == "dense" else backend, mode, by_weight, graph_cost)
                    if value is None:
                        rules = None
                        break
                    out["dense_ms" if side == "dense" else "sparse_ms"] = value
                    rules.append(rule)
                if not rules:
                    continue  # no rule: the point is dropped
                out["rule"] = "+".join(sorted(set(rules)))
            table[(row["M"], row["N"], row["K"])] = out
    return table
