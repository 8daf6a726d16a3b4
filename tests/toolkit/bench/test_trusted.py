"""The trust filter: flagged timings replaced by a rule that reads the results file, never the fitted model."""

from __future__ import annotations

import ast
import inspect
import statistics

import pytest

from twofour.bench import recorded_results, trusted
from twofour.bench.flags import timing_entry


@pytest.fixture(scope="module")
def run_8b():
    return [r for r in recorded_results("gpu") if "llama-3-8b" in str(r.path)]


def test_the_trust_filter_imports_nothing_of_the_fitted_model():
    """The fit reads trusted timings; the filter must not read the fit (no upward arrow)."""
    tree = ast.parse(inspect.getsource(trusted))
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any("roofline" in m or "request" in m for m in imported), imported
    assert not hasattr(trusted, "watch_uses") and not hasattr(trusted, "_WATCHERS")


def test_a_flagged_graph_time_takes_its_own_weights_replay_cost(run_8b):
    """gate/up at M = 1: the 2:4 replay (65.3 µs) is flagged; it becomes its kernel time plus the median
    graph-minus-kernel of the same weight's unflagged points at M <= 256 (13.5, 13.5, 8.3, ... µs), not a
    run-wide or fitted cost."""
    row = trusted.trusted_gemm_table(run_8b, "float16", "graph")[(1, 14336, 4096)]
    assert row["rule"] == "kernel-plus-graph-cost" and round(row["raw_sparse_ms"] * 1e3, 1) == 65.3
    points = [p for p in run_8b[0].points if p["dtype"] == "float16" and (p["N"], p["K"]) == (14336, 4096)
              and p.get("shape", "").startswith("Llama-3-8B")]
    flagged = {(f["M"], f["mode"], f["side"]) for f in run_8b[0].flags()}
    diffs = [timing_entry(p, "graph", "cuSPARSELt")["median_ms"] - timing_entry(p, "kernel", "cuSPARSELt")["median_ms"]
             for p in points if 1 < p["M"] <= 256 and not {(p["M"], m, s) for m in ("graph", "kernel")
                                                           for s in ("cuSPARSELt", "all")} & flagged]
    kernel = next(timing_entry(p, "kernel", "cuSPARSELt") for p in points if p["M"] == 1)["median_ms"]
    assert row["sparse_ms"] == pytest.approx(kernel + statistics.median(diffs), rel=1e-12)
    assert round(row["sparse_ms"] * 1e3, 1) == 58.9


def test_the_graph_cost_rule_is_an_argument(run_8b):
    """A caller can state another rule; one that knows no cost leaves the flagged point to the next rule or out."""
    zero = trusted.trusted_gemm_table(run_8b, "float16", "graph", graph_cost=lambda point, side, same: 0.0)[(1, 14336, 4096)]
    kernel = next(timing_entry(p, "kernel", "cuSPARSELt") for p in run_8b[0].points
                  if (p["M"], p["N"], p["K"], p["dtype"]) == (1, 14336, 4096, "float16"))["median_ms"]
    assert zero["sparse_ms"] == kernel and zero["rule"] == "kernel-plus-graph-cost"
    none = trusted.trusted_gemm_table(run_8b, "float16", "graph", graph_cost=lambda point, side, same: None)
    assert (1, 14336, 4096) not in none  # a 2:4 side with no rule left: the point is dropped


def test_neighbours_come_from_the_same_m_class_only():
    def pt(M, g, k):
        return {"M": M, "modes": {m: {"dense": {"median_ms": v}} for m, v in (("graph", g), ("kernel", k))}}

    one = pt(1, 0.09, 0.03)
    assert trusted.neighbour_graph_cost(one, "dense", [one, pt(2, 0.04, 0.03), pt(512, 0.5, 0.9)]) == pytest.approx(0.01)
    assert trusted.neighbour_graph_cost(one, "dense", [one, pt(512, 0.5, 0.9)]) is None
