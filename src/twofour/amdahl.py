"""Amdahl's law for 2:4 sparsity: how much of the whole gets faster when one part does.

If a fraction ``p`` of the time gets ``s`` times faster, ``speedup(p, s) = 1 / ((1 - p) + p / s)``:
bounded by ``1 / (1 - p)``, and per-part speedups combine as a time-weighted *harmonic* mean,
never an arithmetic one (:func:`averaged_speedup_mistake` shows how far off that is).

>>> round(speedup(0.87, 1.78), 3)     # decode at batch 1, fp16 bytes ceiling
1.616
>>> round(combined_speedup([0.6, 0.2], [1.78, 1.5]), 3)
1.492
>>> round(averaged_speedup_mistake([0.6, 0.2], [1.78, 1.5]), 3)   # too optimistic
1.568

The site's JavaScript mirrors the arithmetic operation for operation (``scripts/golden.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "speedup",
    "max_speedup",
    "combined_speedup",
    "averaged_speedup_mistake",
    "required_part_speedup",
]


def _number(name: str, value, what: str) -> float:
    """``value`` as a float (an int beyond the doubles, e.g. 2**1024, as inf), else ``TypeError`` saying ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _require_fraction(name: str, value) -> float:
    value = _number(name, value, "a number in [0, 1] (a fraction of time)")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a fraction of time in [0, 1], got {value!r}")
    return value


# The smallest normal double. A speedup below it (a denormal such as 1e-320) makes p / s overflow:
# speedup(1, 1e-320) would be 0.0 and a request's 2:4 time infinite. The JS mirror refuses the same.
MIN_SPEEDUP = 2.2250738585072014e-308


def require_speedup(name: str, value) -> float:
    """``value`` as a speedup: a finite number at least :data:`MIN_SPEEDUP`, else an error naming ``name``."""
    value = _number(name, value, "a positive finite number (a speedup)")
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(
            f"{name} must be a positive finite speedup (1 = no change, 2 = twice as fast, 0.5 = twice as slow), got {value!r}"
        )
    if value < MIN_SPEEDUP:
        raise ValueError(f"{name} must be at least 2.2250738585072014e-308 (the smallest normal double; a smaller "
                         f"speedup makes the arithmetic overflow), got {value!r}")
    return value


def speedup(p: float, s: float) -> float:
    """Whole-task speedup when a fraction ``p`` of the time gets ``s`` times faster.

    ``p`` is the fraction of the *original* time, in [0, 1]; ``s`` is finite and at least
    :data:`MIN_SPEEDUP` (below 1: the part got slower). Returns ``1 / ((1 - p) + p / s)``.

    Example:
        >>> speedup(0.5, 2.0)
        1.3333333333333333
        >>> round(speedup(1.0, 1.78), 12), speedup(0.0, 100.0)
        (1.78, 1.0)
    """
    p = _require_fraction("p", p)
    s = require_speedup("s", s)
    return 1.0 / ((1.0 - p) + p / s)


def max_speedup(p: float) -> float:
    """The Amdahl bound ``1 / (1 - p)``: the speedup with an infinitely fast part (inf at p = 1).

    Example:
        >>> round(max_speedup(0.87), 2)
        7.69
    """
    p = _require_fraction("p", p)
    return math.inf if p == 1.0 else 1.0 / (1.0 - p)


def _require_parts(fractions: Sequence[float], speedups: Sequence[float]) -> tuple[list[float], list[float], float]:
    """The checked fractions and speedups, and the fractions' sum (added left to right, as the JavaScript does)."""
    for name, seq in (("fractions", fractions), ("speedups", speedups)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
            raise TypeError(f"{name} must be a sequence of numbers, got {type(seq).__name__}")
    if len(fractions) != len(speedups):
        raise ValueError(
            f"fractions and speedups must have the same length (one speedup per part), got {len(fractions)} and {len(speedups)}"
        )
    fs = [_require_fraction(f"fractions[{i}]", f) for i, f in enumerate(fractions)]
    ss = [require_speedup(f"speedups[{i}]", s) for i, s in enumerate(speedups)]
    total = 0.0
    for f in fs:
        total += f
    # A little slack for fractions that were themselves computed in floating point.
    if total > 1.0 + 1e-9:
        raise ValueError(
            f"fractions must add up to at most 1 (parts of one total time), got sum {total!r}; "
            "the remainder 1 - sum is the unchanged part"
        )
    return fs, ss, total


def combined_speedup(fractions: Sequence[float], speedups: Sequence[float]) -> float:
    """Amdahl over several parts: part ``i`` takes ``fractions[i]`` of the time and gets ``speedups[i]``.

    Whatever the fractions leave over (``1 - sum(fractions)``) is unchanged. The new time is
    ``(1 - sum f) + sum(f_i / s_i)``, computed left to right, and the speedup is its inverse.

    Example:
        >>> combined_speedup([0.5], [2.0]) == speedup(0.5, 2.0)
        True
        >>> round(combined_speedup([0.5, 0.3], [2.0, 1.5]), 4)   # two parts, rest 0.2 unchanged
        1.5385
    """
    fs, ss, covered = _require_parts(fractions, speedups)
    new_time = max(0.0, 1.0 - covered)
    for f, s in zip(fs, ss):
        new_time += f / s
    return 1.0 / new_time


def averaged_speedup_mistake(fractions: Sequence[float], speedups: Sequence[float]) -> float:
    """THE WRONG WAY, kept to show why it is wrong: a time-weighted *arithmetic* average of speedups.

    Time adds up, speedups divide it: by the AM-HM inequality this is never below the correct
    :func:`combined_speedup`, and above it whenever the parts' speedups differ.

    Example:
        >>> averaged_speedup_mistake([0.87], [1.78]) > combined_speedup([0.87], [1.78])
        True
    """
    fs, ss, covered = _require_parts(fractions, speedups)
    average = max(0.0, 1.0 - covered)
    for f, s in zip(fs, ss):
        average += f * s
    return average


def required_part_speedup(p: float, target: float) -> float:
    """Speedup the part must reach so that the whole reaches ``target`` (inverse of :func:`speedup`).

    Raises ``ValueError`` when the target is at or beyond the Amdahl bound ``1 / (1 - p)``.

    Example:
        >>> round(required_part_speedup(0.87, 1.5), 4)
        1.6211
    """
    p = _require_fraction("p", p)
    target = require_speedup("target", target)
    if target == 1.0:
        return 1.0
    if p == 0.0:
        raise ValueError(f"target {target!r} is unreachable with p = 0: nothing changes, so the speedup is 1")
    remaining = 1.0 / target - (1.0 - p)  # time the part may still take, as a fraction of the old total
    if remaining <= 0.0:
        raise ValueError(
            f"target {target!r} is unreachable with p = {p!r}: the Amdahl bound 1/(1-p) is {max_speedup(p)!r}"
        )
    return p / remaining
