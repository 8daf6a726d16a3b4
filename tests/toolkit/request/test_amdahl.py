"""twofour.amdahl: the law, its limits, the composition over parts, and the averaging mistake."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twofour.amdahl import (
    averaged_speedup_mistake,
    combined_speedup,
    max_speedup,
    required_part_speedup,
    speedup,
)

fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
speedups = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)
gains = st.floats(min_value=1.0, max_value=1e3, allow_nan=False)


# --- limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("s", [0.25, 1.0, 1.78, 2.0, 1e6])
def test_p_zero_changes_nothing(s):
    assert speedup(0.0, s) == 1.0


@pytest.mark.parametrize("s", [0.25, 1.0, 1.78, 2.0, 1e6])
def test_p_one_gives_the_part_speedup(s):
    assert speedup(1.0, s) == pytest.approx(s, rel=1e-15)


@pytest.mark.parametrize("p", [0.0, 0.13, 0.5, 0.87, 1.0])
def test_s_one_changes_nothing(p):
    assert speedup(p, 1.0) == pytest.approx(1.0, rel=1e-15)


def test_known_value_from_the_facts_table():
    # decode at batch 1: f = 0.87 (Llama-3-8B's eligible weight bytes), s = 1.78 (fp16 bytes ceiling) -> about 1.6x
    assert speedup(0.87, 1.78) == pytest.approx(1.0 / (0.13 + 0.87 / 1.78))
    assert 1.55 < speedup(0.87, 1.78) < 1.65


def test_max_speedup_limits():
    assert max_speedup(0.0) == 1.0
    assert max_speedup(0.5) == 2.0
    assert max_speedup(1.0) == math.inf


def test_slower_part_makes_the_whole_slower():
    assert speedup(0.9, 0.5) < 1.0


# --- properties ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(p=fractions, s=gains)
def test_bounded_by_part_speedup_and_amdahl_limit(p, s):
    S = speedup(p, s)
    assert 1.0 - 1e-12 <= S <= s * (1 + 1e-12)
    if p < 1.0:
        assert S <= max_speedup(p) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(p1=fractions, p2=fractions, s=gains)
def test_monotone_in_p_for_a_gain(p1, p2, s):
    lo, hi = sorted((p1, p2))
    assert speedup(lo, s) <= speedup(hi, s) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(p=fractions, s1=speedups, s2=speedups)
def test_monotone_in_s(p, s1, s2):
    lo, hi = sorted((s1, s2))
    assert speedup(p, lo) <= speedup(p, hi) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(p=st.floats(min_value=0.01, max_value=0.99), s=st.floats(min_value=1.01, max_value=100.0))
def test_required_part_speedup_inverts_speedup(p, s):
    assert required_part_speedup(p, speedup(p, s)) == pytest.approx(s, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.tuples(st.floats(min_value=0.0, max_value=0.3), speedups), min_size=1, max_size=3))
def test_average_never_below_the_correct_combination(parts):
    fs = [f for f, _ in parts]
    ss = [s for _, s in parts]
    right = combined_speedup(fs, ss)
    wrong = averaged_speedup_mistake(fs, ss)
    # Weighted arithmetic mean >= weighted harmonic mean (equality only when all speedups are equal).
    assert wrong >= right * (1 - 1e-12)


def test_average_is_strictly_too_optimistic_when_speedups_differ():
    right = combined_speedup([0.6, 0.3], [2.0, 1.0])
    wrong = averaged_speedup_mistake([0.6, 0.3], [2.0, 1.0])
    assert wrong == pytest.approx(0.1 + 0.6 * 2.0 + 0.3 * 1.0)
    assert right == pytest.approx(1.0 / (0.1 + 0.3 + 0.3))
    assert wrong > right + 0.1


def test_combined_with_one_part_is_speedup():
    assert combined_speedup([0.7], [1.5]) == speedup(0.7, 1.5)


def test_combined_with_parts_covering_everything():
    assert combined_speedup([0.5, 0.5], [2.0, 2.0]) == pytest.approx(2.0)


def test_combined_tolerates_rounding_in_fractions_that_sum_to_one():
    fs = [0.1] * 10  # sums to 0.9999999999999999 or 1.0000000000000002 depending on order
    assert combined_speedup(fs, [2.0] * 10) == pytest.approx(2.0)


def test_required_part_speedup_limits():
    assert required_part_speedup(0.5, 1.0) == 1.0
    with pytest.raises(ValueError, match="unreachable.*bound"):
        required_part_speedup(0.5, 2.0)
    with pytest.raises(ValueError, match="p = 0"):
        required_part_speedup(0.0, 1.1)


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [-0.1, 1.0001, math.nan, math.inf, -math.inf])
def test_bad_p_is_rejected_by_name(p):
    with pytest.raises(ValueError, match=r"p must be a fraction of time in \[0, 1\]"):
        speedup(p, 2.0)


@pytest.mark.parametrize("s", [0.0, -1.0, math.nan, math.inf])
def test_bad_s_is_rejected_by_name(s):
    with pytest.raises(ValueError, match="s must be a positive finite speedup"):
        speedup(0.5, s)


@pytest.mark.parametrize("value", ["0.5", None, True, [0.5]])
def test_non_numbers_are_type_errors(value):
    with pytest.raises(TypeError, match="p must be a number"):
        speedup(value, 2.0)
    with pytest.raises(TypeError, match="s must be a positive finite number"):
        speedup(0.5, value)


def test_parts_must_match_and_fit_in_one():
    with pytest.raises(ValueError, match="same length"):
        combined_speedup([0.5, 0.2], [2.0])
    with pytest.raises(ValueError, match="add up to at most 1"):
        combined_speedup([0.7, 0.4], [2.0, 2.0])
    with pytest.raises(ValueError, match=r"fractions\[1\]"):
        combined_speedup([0.2, -0.1], [2.0, 2.0])
    with pytest.raises(ValueError, match=r"speedups\[0\]"):
        averaged_speedup_mistake([0.2], [0.0])
    with pytest.raises(TypeError, match="fractions must be a sequence"):
        combined_speedup(0.5, [2.0])
    with pytest.raises(TypeError, match="speedups must be a sequence"):
        combined_speedup([0.5], "2")


def test_max_speedup_rejects_bad_p():
    with pytest.raises(ValueError, match="p must be"):
        max_speedup(2.0)
