"""Which GPU timings a quoted number may rest on: flagged points dropped or replaced by a named rule.

:mod:`twofour.bench.flags` marks the (point, mode) timings to distrust. Every reader that turns
recorded GEMM timings into a number the site quotes (the request's measured GEMM speedups, the
verdict, the practice bank's helpers) goes through :func:`trusted_gemm_table`, which keeps an
unflagged timing as it is and, for a flagged one, either

* replaces the flagged side by one of :data:`FLAG_RULES` (the rule's name travels with the
  value, so a page can say which number was replaced and how), or
* drops the point, when no rule applies (a phase that needs it then has no measured speedup).

Every lookup can be watched (:func:`watch_uses`): the walking test collects what each quoted
number rested on and fails if one is a flagged timing taken as it was.

Example:
    >>> from twofour.bench import recorded_results
    >>> from twofour.course.answer import verdict_results
    >>> t = trusted_gemm_table(verdict_results(), "float16", "graph")
    >>> g = t[(1, 14336, 4096)]                    # gate/up, one token: its 2:4 replay is flagged
    >>> g["rule"], round(g["raw_sparse_ms"] * 1e3, 1), round(g["sparse_ms"] * 1e3, 1)
    ('kernel-plus-graph-cost', 65.3, 54.8)
"""

from __future__ import annotations

import contextlib

__all__ = ["FLAG_RULES", "CALL_PATHS", "trusted_gemm_table", "watch_uses"]

FLAG_RULES = {
    "kernel-plus-graph-cost": (
        "a flagged CUDA-graph time replaced by the same side's kernel time (kernel mode, unflagged) plus the "
        "fitted CUDA-graph replay cost of that side (twofour.roofline.default_params: graph_dense_us / "
        "graph_sparse_us, the median of graph minus kernel time over the unflagged fp16 points)"),
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

_WATCHERS: list[list] = []


@contextlib.contextmanager
def watch_uses():
    """Collect every timing a trusted lookup hands out while the block runs (a list of dicts).

    Each entry: ``file, mode, M, N, K, shape, dtype, flagged`` (the reasons, or None), ``rule`` (the
    :data:`FLAG_RULES` name that replaced it, or None) and ``raw`` (True when the value handed out
    is the timing as recorded).
    """
    seen: list = []
    _WATCHERS.append(seen)
    try:
        yield seen
    finally:
        _WATCHERS.remove(seen)


def _record(entry: dict) -> None:
    for seen in _WATCHERS:
        seen.append(entry)


def _graph_costs() -> dict:
    from ..roofline import default_params

    p = default_params("H200")
    return {"dense": p.graph_dense_us * 1e-3, "sparse": p.graph_sparse_us * 1e-3}


def _replace(point: dict, side: str, mode: str, by_weight: dict) -> tuple[float | None, str | None]:
    """The replacement of ``side``'s flagged time in ``mode`` (ms) and the rule's name, or (None, None)."""
    from ..bench.flags import timing_entry

    if mode != "graph":
        return None, None
    backend = "dense" if side == "dense" else side
    kernel = timing_entry(point, "kernel", backend)
    kernel_flagged = any(f["mode"] == "kernel" and f["side"] in (backend, "all") for f in point.get("_flags", []))
    if kernel is not None and not kernel_flagged:
        return kernel["median_ms"] + _graph_costs()["dense" if side == "dense" else "sparse"], "kernel-plus-graph-cost"
    if side == "dense":
        later = [timing_entry(q, "graph", "dense") for q in by_weight[(point.get("shape"), point["N"], point["K"])]
                 if q["M"] > point["M"] and not q.get("_flags_graph_dense")]
        later = [e["median_ms"] for e in later if e is not None]
        if later:
            return min(later), "dense-at-larger-m"
    return None, None


def trusted_gemm_table(results, dtype_name: str, mode: str, backend: str = "cuSPARSELt") -> dict[tuple, dict]:
    """``{(M, N, K): row}`` of ``results`` (one :class:`twofour.bench.Results` or a list) in ``mode``.

    Each row: ``dense_ms``, ``sparse_ms`` (what a number may use), ``raw_dense_ms``,
    ``raw_sparse_ms`` (as recorded), ``flagged`` (the reasons or None), ``rule`` (the
    :data:`FLAG_RULES` name that replaced a flagged side, or None), ``call_path`` and
    ``dense_call_path`` (keys of :data:`CALL_PATHS`) and ``file``. A flagged point no rule can
    replace is left out. A later results file's point replaces an earlier one's.
    """
    from pathlib import Path

    if dtype_name not in ("float16", "bfloat16", "float32"):
        raise ValueError(f"dtype_name must be 'float16', 'bfloat16' or 'float32', got {dtype_name!r}")
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    table: dict[tuple, dict] = {}
    for res in results:
        flags = res.flags()
        points = {}
        for p in res.points:
            q = dict(p)
            q["_flags"] = [f for f in flags if (f["shape"], f["M"], f["N"], f["K"], f["dtype"]) ==
                           (p.get("shape"), p["M"], p["N"], p["K"], p["dtype"])]
            q["_flags_graph_dense"] = any(f["mode"] == "graph" and f["side"] in ("dense", "all") for f in q["_flags"])
            points[(p.get("shape"), p["M"], p["N"], p["K"], p["dtype"])] = q
        by_weight: dict = {}
        for q in points.values():
            by_weight.setdefault((q.get("shape"), q["N"], q["K"]), []).append(q)
        for row in res.gpu_points(mode):
            if row["dtype"] != dtype_name or row["backend"] != backend:
                continue
            q = points[(row["shape"], row["M"], row["N"], row["K"], row["dtype"])]
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
                    value, rule = _replace(q, "dense" if side == "dense" else backend, mode, by_weight)
                    if value is None:
                        rules = None
                        break
                    out["dense_ms" if side == "dense" else "sparse_ms"] = value
                    rules.append(rule)
                if not rules:
                    continue  # no rule: the point is dropped
                out["rule"] = "+".join(sorted(set(rules)))
            table[(row["M"], row["N"], row["K"])] = out
    return _Watched(table)


class _Watched(dict):
    """The table, reporting each row handed out to :func:`watch_uses`."""

    def _note(self, key, row):
        if row is not None:
            _record({"file": row["file"], "mode": row["mode"], "M": key[0], "N": key[1], "K": key[2],
                     "shape": row["shape"], "dtype": row["dtype"], "flagged": row["flagged"], "rule": row["rule"],
                     "raw": (row["dense_ms"], row["sparse_ms"]) == (row["raw_dense_ms"], row["raw_sparse_ms"])})
        return row

    def get(self, key, default=None):
        return self._note(key, super().get(key)) if key in self else default

    def __getitem__(self, key):
        return self._note(key, super().__getitem__(key))

    def items(self):
        return [(k, self._note(k, v)) for k, v in super().items()]

    def values(self):
        return [v for _, v in self.items()]
