"""twofour.amdahl at its edges (mutation testing): p = 0, p = 1, and bad input."""

from __future__ import annotations

import math

import pytest

from twofour.amdahl import (
    averaged_speedup_mistake,
    combined_speedup,
    max_speedup,
    required_part_speedup,
    speedup,
)


def test_required_part_speedup_at_p_1_is_the_target():
    # Everything speeds up: the part must reach the target itself.
    assert required_part_speedup(1.0, 1.5) == 1.5
    assert required_part_speedup(1.0, 0.5) == 0.5
    assert required_part_speedup(0.5, 1.0) == 1.0


def test_required_part_speedup_at_p_0_says_nothing_changes():
    with pytest.raises(ValueError, match=r"target 1.5 is unreachable with p = 0: nothing changes"):
        required_part_speedup(0.0, 1.5)
    with pytest.raises(ValueError, match=r"target 0.5 is unreachable with p = 0: nothing changes"):
        required_part_speedup(0.0, 0.5)


def test_required_part_speedup_by_hand_and_at_the_bound():
    # p = 0.5, target 4/3: new time 3/4 = 0.5 + 0.5 / s, so s = 2.
    assert required_part_speedup(0.5, 4 / 3) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match=r"the Amdahl bound 1/\(1-p\) is 2.0"):
        required_part_speedup(0.5, 2.0)


def test_speedup_and_bound_by_hand():
    assert speedup(0.75, 3.0) == 2.0  # 1 / (0.25 + 0.25)
    assert speedup(0.5, 0.5) == pytest.approx(2 / 3, rel=1e-15)  # a slower part slows the whole
    assert max_speedup(0.75) == 4.0
    assert max_speedup(1.0) == math.inf
    assert max_speedup(0.0) == 1.0


def test_combined_and_averaged_by_hand():
    # Parts 0.5 at 2x and 0.25 at 4x, 0.25 unchanged: time 0.25 + 0.25 + 0.0625 = 0.5625.
    assert combined_speedup([0.5, 0.25], [2.0, 4.0]) == pytest.approx(1 / 0.5625, rel=1e-15)
    # The mistake: 0.25 + 0.5 * 2 + 0.25 * 4 = 2.25.
    assert averaged_speedup_mistake([0.5, 0.25], [2.0, 4.0]) == 2.25
    assert combined_speedup([], []) == 1.0
    # Fractions summing to 1 up to rounding are accepted; clearly more is refused.
    assert combined_speedup([0.1] * 10, [2.0] * 10) == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match="fractions must add up to at most 1 .* got sum 1.1"):
        combined_speedup([0.6, 0.5], [2.0, 2.0])


@pytest.mark.parametrize("call", [combined_speedup, averaged_speedup_mistake])
def test_parts_errors_name_the_argument_and_the_type(call):
    with pytest.raises(TypeError, match="fractions must be a sequence of numbers, got str"):
        call("0.5", [2.0])
    with pytest.raises(TypeError, match="speedups must be a sequence of numbers, got float"):
        call([0.5], 2.0)
    with pytest.raises(ValueError, match="same length .* got 2 and 1"):
        call([0.5, 0.1], [2.0])
    with pytest.raises(ValueError, match=r"fractions\[1\] must be a fraction of time in \[0, 1\], got 1.5"):
        call([0.5, 1.5], [2.0, 2.0])
    with pytest.raises(ValueError, match=r"speedups\[0\] must be a positive finite speedup"):
        call([0.5], [0.0])


@pytest.mark.parametrize("bad", [-0.1, 1.1, math.nan])
def test_fractions_out_of_range_name_p(bad):
    with pytest.raises(ValueError, match=r"^p must be a fraction of time in \[0, 1\]"):
        speedup(bad, 2.0)
    with pytest.raises(ValueError, match=r"^p must be a fraction of time"):
        required_part_speedup(bad, 2.0)
    with pytest.raises(TypeError, match=r"^p must be a number in \[0, 1\] \(a fraction of time\), got bool True"):
        speedup(True, 2.0)
    with pytest.raises(ValueError, match=r"^target must be a positive finite speedup"):
        required_part_speedup(0.5, -1.0)


def test_too_much_time_says_where_the_rest_goes():
    with pytest.raises(ValueError, match=r"the remainder 1 - sum is the unchanged part$"):
        combined_speedup([0.7, 0.7], [2.0, 2.0])
