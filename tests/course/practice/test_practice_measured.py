"""A bank number that says "measured" names the call it was measured on, and one that rests on a
replaced (flagged) timing says so, with the rule.

Which numbers rest on what is found by moving the data, not by reading the expressions: every
recorded GPU timing is made 13% slower on the 2:4 side (``Results.gpu_points``: PyTorch's
``F.linear`` path, against cuBLAS), then the algorithm sweep's (the direct
``torch._cslt_sparse_mm`` call), then only the values a :data:`twofour.bench.trusted.FLAG_RULES`
rule put in place of a flagged timing, one rule at a time; a number whose value moves rests on
what was moved. A number whose label claims a measurement must then name that call (in its label
or source), and one resting on a replaced timing must name the rule, so the reader never takes a
replacement for a measurement. The reverse holds too: a label that names a rule rests on it.
"""

from __future__ import annotations

import copy
import math

import pytest

from twofour import bench
from twofour.bench.results import Results
from twofour.course import answer
from twofour.course.practice import helpers, load_bank
from twofour.course.practice import questions as bank_questions
from twofour.bench import trusted

# Every test here reads one costly walk over the bank (the module fixture below): on one worker.
pytestmark = pytest.mark.xdist_group("bank-rests-on")

CALLS = {"bench": "F.linear", "sweep": "_cslt_sparse_mm"}


def _clear():
    answer.verdict_table.cache_clear()
    helpers._measured_table.cache_clear()
    bank_questions._evaluate_cached.cache_clear()


def _values() -> dict:
    _clear()
    try:
        return {(q.id, n.name): v for q in load_bank() for n, v in ((n, q.evaluate()[n.name]) for n in q.numbers)}
    finally:
        _clear()


def _moved(base: dict, other: dict) -> set:
    out = set()
    for key, a in base.items():
        b = other[key]
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not math.isclose(a, b, rel_tol=1e-9):
                out.add(key)
        elif repr(a) != repr(b):
            out.add(key)
    return out


def what_numbers_rest_on() -> dict:
    """{what: set of (question id, number name)} for what in bench, sweep and each FLAG_RULES name."""
    mp = pytest.MonkeyPatch()
    base = _values()
    out = {}
    try:
        original = Results.gpu_points

        def slower_points(self, mode="lone"):
            return [dict(r, sparse_ms=r["sparse_ms"] * 1.13) for r in original(self, mode)]

        mp.setattr(Results, "gpu_points", slower_points)
        out["bench"] = _moved(base, _values())
        mp.undo()

        sweep = bench.recorded_alg_search

        def slower_sweep(*args, **kw):
            cases = copy.deepcopy(sweep(*args, **kw))
            for c in cases:
                c["default_ms"] = c["default_ms"] * 1.13 if c.get("default_ms") is not None else None
                if c.get("best"):
                    c["best"]["ms"] *= 1.13
            return cases

        mp.setattr(bench, "recorded_alg_search", slower_sweep)
        out["sweep"] = _moved(base, _values())
        mp.undo()

        replace = trusted._replace
        for rule in trusted.FLAG_RULES:
            def moved_rule(point, side, mode, by_weight, graph_cost, rule=rule):
                value, name = replace(point, side, mode, by_weight, graph_cost)
                return (value * 1.37 if value is not None and name == rule else value), name

            mp.setattr(trusted, "_replace", moved_rule)
            out[rule] = _moved(base, _values())
            mp.undo()
    finally:
        mp.undo()
        _clear()
    return out


@pytest.fixture(scope="module")
def rests_on():
    return what_numbers_rest_on()


def _numbers():
    return {(q.id, n.name): n for q in load_bank() for n in q.numbers}


def _said(n) -> str:
    return f"{n.label} {n.source or ''}"


def test_the_perturbations_find_what_they_should(rests_on):
    # the verdict's CUDA-graph row rests on gate/up's replaced M = 1 replay; the sweep on the direct call
    assert ("measured-decode-verdict", "g_graph") in rests_on["bench"] & rests_on["kernel-plus-graph-cost"]
    assert ("two-minute-answer", "best") in rests_on["sweep"]
    assert ("calc-chunked-prefill", "s_512") in rests_on["bench"] and ("what-is-two-four", "ratio") not in rests_on["bench"]


@pytest.mark.parametrize("source", sorted(CALLS))
def test_a_number_labelled_measured_names_the_call_it_was_measured_on(rests_on, source):
    numbers = _numbers()
    unnamed = [f"{qid}.{name}: {numbers[qid, name].label}" for qid, name in sorted(rests_on[source])
               if "measured" in numbers[qid, name].label and CALLS[source] not in _said(numbers[qid, name])]
    assert not unnamed, f"labelled measured, resting on the {CALLS[source]} timings, without naming the call:\n" + \
        "\n".join(unnamed)


@pytest.mark.parametrize("rule", sorted(trusted.FLAG_RULES))
def test_a_number_on_a_replaced_timing_names_the_rule_and_only_then(rests_on, rule):
    numbers = _numbers()
    silent = [f"{qid}.{name}: {numbers[qid, name].label}" for qid, name in sorted(rests_on[rule])
              if "measured" in _said(numbers[qid, name]) and rule not in _said(numbers[qid, name])]
    assert not silent, f"said to be measured, resting on timings rule {rule!r} replaced, without saying so:\n" + \
        "\n".join(silent)
    claimed = {key for key, n in numbers.items() if rule in _said(n)}
    assert claimed <= rests_on[rule], f"names rule {rule!r} but does not rest on it: {sorted(claimed - rests_on[rule])}"
