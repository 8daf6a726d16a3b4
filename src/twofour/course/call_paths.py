"""The call paths behind the verdict's rows: F.linear against the direct library call, and the sweep as it was.

The algorithm sweep timed ``torch._cslt_sparse_mm`` on a padded ``x``; ``F.linear`` pads, copies and
wraps, and what that adds per call (:func:`linear_path_cost`) is added to the sweep's times
(:func:`searched_on_linear`).
"""

from __future__ import annotations

from ..request import Workload
from ..request.inputs import gemm_shapes
from .deployment import BENCH_FILE, CHAT, GPU, SWEEP_FILE, verdict_results

__all__ = ["linear_path_cost", "searched_on_linear", "searched_fit_error", "sweep_sentence"]


def linear_path_cost(workload: Workload = CHAT) -> dict:
    """F.linear's cost per call beyond the direct ``torch._cslt_sparse_mm``, per pruned decode GEMM:
    algorithm 0 timed both ways (graph replays, L2 flushed); a GEMM whose ``F.linear`` timing is flagged
    gets the others' median. Returns ``{"by_kind": {kind: us}, "rule": {kind: rule}, "range_us", "source"}``.

    >>> c = linear_path_cost()
    >>> c["rule"]["gate_proj"], [round(x, 1) for x in c["range_us"]]
    ('median-of-unflagged', [2.1, 4.6])
    """
    import statistics

    from ..bench import recorded_alg_search
    from ..bench.trusted import trusted_gemm_table

    linear = trusted_gemm_table(verdict_results(), "float16", "graph")
    direct = {(c["M"], c["N"], c["K"]): c for c in recorded_alg_search()}
    shapes = gemm_shapes(workload.model, "decode", workload.batch)
    by_kind, rule = {}, {}
    for kind in workload.pruned:
        row, case = linear.get(shapes[kind]), direct.get(shapes[kind])
        if case is None or case.get("default_ms") is None:
            raise ValueError(f"{SWEEP_FILE} has no algorithm-0 time of {kind} at M = {shapes[kind][0]}")
        if row is not None and not row["flagged"]:
            by_kind[kind], rule[kind] = (row["sparse_ms"] - case["default_ms"]) * 1e3, "measured"
    measured = sorted(set(by_kind.values()))
    for kind in workload.pruned:
        if kind not in by_kind:
            by_kind[kind], rule[kind] = statistics.median(measured), "median-of-unflagged"
    return {"by_kind": by_kind, "rule": rule, "range_us": (min(measured), max(measured)),
            "source": f"{BENCH_FILE} (graph, F.linear, algorithm 0) minus {SWEEP_FILE} (direct call, algorithm 0)"}


def searched_fit_error() -> float:
    """The largest relative error of the searched family's fit on the sweep it was fitted to (its only check).

    >>> 0.1 < searched_fit_error() < 0.5
    True
    """
    from ..bench import recorded_alg_search
    from ..roofline import predict

    return max(abs(predict(c["M_padded"], c["N"], c["K"], "fp16", GPU, scenario="cached", algorithm="searched",
                           l2="flushed").sparse_us / (c["best"]["ms"] * 1e3) - 1) for c in recorded_alg_search())


def searched_on_linear(workload: Workload) -> float:
    """The sweep's fastest algorithm per GEMM plus F.linear's measured cost per call (:func:`linear_path_cost`)."""
    from ..bench import recorded_alg_search

    cost = linear_path_cost(workload)["by_kind"]
    cases = {(c["M"], c["N"], c["K"]): c for c in recorded_alg_search()}
    shapes = gemm_shapes(workload.model, "decode", workload.batch)
    dense = sum(cases[shapes[k]]["dense_ms"] for k in workload.pruned)
    sparse = sum(cases[shapes[k]]["best"]["ms"] + cost[k] * 1e-3 for k in workload.pruned)
    return dense / sparse


def sweep_sentence() -> str:
    """The algorithm sweep as it was, in the words every page that quotes it uses.

    >>> sweep_sentence()[:60]
    'algorithms 0-7 of those the library accepts, each called dir'
    """
    from ..bench import recorded_alg_search

    cases = recorded_alg_search()
    timed = sorted({c["alg_id"] for case in cases for c in case["configs"] if "ms" in c})
    untimed = [c for c in cases if not c["searched_alg_ids_timed"]]
    ids = sorted({c["search_alg_id"] for c in untimed if isinstance(c["search_alg_id"], int)})
    return (f"algorithms {timed[0]}-{timed[-1]} of those the library accepts, each called directly on pre-padded x; "
            f"the library's own search chose IDs never timed ({', '.join(map(str, ids))}) in {len(untimed)} of "
            f"{len(cases)} cases")
