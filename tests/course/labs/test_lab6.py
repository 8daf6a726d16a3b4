"""Lab 6 checkers: right answers pass, typical mistakes get the matching hint, stubs say 'not done yet';
the exercise and solution notebooks agree outside the exercise cells."""

from __future__ import annotations

import doctest

import pytest

from twofour.course.labs import lab6
from twofour.course.labs._common import CheckFailed
from twofour.request import estimate



def eligible_fraction(rows, pruned, *, all_linear=False, drop_overhead=False, over_linear=False):
    names = {f"linear:{k}" for k in pruned}
    eligible = sum(r["time_us"] for r in rows if (r["op"].startswith("linear:") if all_linear else r["op"] in names))
    if over_linear:
        return eligible / sum(r["time_us"] for r in rows if r["op"].startswith("linear:"))
    total = sum(r["time_us"] for r in rows if not (drop_overhead and r["op"] == "step_overhead"))
    return eligible / total


def request_bound(pre, dec, output_len, pruned, s, *, steps_off=0, average=False, decode_only=False, averaged_phases=False):
    steps = output_len - 1 + steps_off
    total = lambda rows: sum(r["time_us"] for r in rows)  # noqa: E731
    elig = lambda rows: eligible_fraction(rows, pruned) * total(rows)  # noqa: E731
    if decode_only:
        p = eligible_fraction(dec, pruned)
        return 1 / ((1 - p) + p / s)
    if averaged_phases:
        w = total(pre) / (total(pre) + steps * total(dec))
        S = lambda p: 1 / ((1 - p) + p / s)  # noqa: E731
        return w * S(eligible_fraction(pre, pruned)) + (1 - w) * S(eligible_fraction(dec, pruned))
    p = (elig(pre) + steps * elig(dec)) / (total(pre) + steps * total(dec))
    return p * s + (1 - p) if average else 1 / ((1 - p) + p / s)


def biggest_lever(baseline, changes, gpu, *, by_value=False):
    base = estimate(baseline, gpu).speedup("request")
    moves = {n: estimate(w, gpu).speedup("request") - base for n, w in changes.items()}
    return max(moves, key=(lambda n: moves[n]) if by_value else (lambda n: abs(moves[n])))


def test_solutions_pass(capsys):
    assert lab6.check_eligible_fraction(eligible_fraction).passed is True
    assert lab6.check_request_bound(request_bound).passed is True
    assert lab6.check_biggest_lever(biggest_lever).passed is True
    assert capsys.readouterr().out.count("passed:") == 3


def test_stubs_are_not_done_yet(capsys):
    def stub(*args):
        raise NotImplementedError

    assert lab6.check_eligible_fraction(stub).passed is False
    assert lab6.check_request_bound(stub).passed is False
    assert lab6.check_biggest_lever(stub).passed is False
    assert capsys.readouterr().out.count("not done yet") == 3


@pytest.mark.parametrize("kwargs, hint", [
    ({"all_linear": True}, "counted every linear row"),
    ({"drop_overhead": True}, "keep it in the denominator"),
    ({"over_linear": True}, "not by the time of the linear layers"),
])
def test_fraction_mistakes_get_hints(kwargs, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab6.check_eligible_fraction(lambda rows, pruned: eligible_fraction(rows, pruned, **kwargs))


def test_fraction_type_and_range_hints():
    with pytest.raises(CheckFailed, match="return a finite float"):
        lab6.check_eligible_fraction(lambda rows, pruned: "87%")
    with pytest.raises(CheckFailed, match="between 0 and 1"):
        lab6.check_eligible_fraction(lambda rows, pruned: 87.0)


@pytest.mark.parametrize("kwargs, hint", [
    ({"steps_off": 1}, "output_len - 1 decode steps"),
    ({"average": True}, "averaging mistake"),
    ({"decode_only": True}, "prefill step is part of the request"),
    ({"averaged_phases": True}, "averaged the two phases' speedups"),
])
def test_bound_mistakes_get_hints(kwargs, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab6.check_request_bound(lambda *a: request_bound(*a, **kwargs))


def test_lever_hints():
    with pytest.raises(CheckFailed, match="highest speedup"):
        lab6.check_biggest_lever(lambda b, c, g: biggest_lever(b, c, g, by_value=True))
    with pytest.raises(CheckFailed, match="name of one change"):
        lab6.check_biggest_lever(lambda b, c, g: 3)
    # remembering the first answer does not pass the hidden second workload
    first = biggest_lever(lab6.WORKLOAD, lab6.CHANGES, lab6.GPU)
    with pytest.raises(CheckFailed, match="second workload"):
        lab6.check_biggest_lever(lambda b, c, g: first if first in c else "not a change")


def test_profile_is_consistent_with_the_model():
    est = estimate(lab6.WORKLOAD, lab6.GPU)
    decode_us = sum(r["time_us"] for r in lab6.profile("decode", step_overhead_us=0.0))
    assert decode_us == pytest.approx(est.tpot_dense_s * 1e6, rel=1e-9)
    with pytest.raises(ValueError, match="phase must be"):
        lab6.profile("generate")


def test_doctests():
    result = doctest.testmod(lab6, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
