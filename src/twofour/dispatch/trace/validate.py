"""A trace is validated before it is believed: invalid events are counted, named and either refused or left out.

An event is *invalid* when its numbers cannot be true of a recorded run; :data:`REASONS` names
each kind. Python's JSON reader accepts bare ``NaN`` and ``Infinity`` (``1e400`` reads as
Infinity); past 2^53 us a double cannot hold a microsecond. Nothing invalid is ever read as 0:
:func:`~.analyze.analyze` refuses a verdict from a trace with invalid events unless
``exclude_invalid=True`` (``--drop-invalid``), which leaves them out and says so in the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._common.text import printable

MAX_US = float(2**53)
MAX_ID = 2**63
REASONS = {  # each reads after a count: "3 events with a NaN or Infinity ts or dur"
    "non-finite": "with a NaN or Infinity ts or dur",
    "negative": "with a negative ts or dur",
    "out of range": "with a ts or dur beyond 2^53 us",
    "no time": "without a number as ts or dur",
    "malformed": "with a name that is not a string, a pid/tid neither a number nor a string, or an id outside [0, 2^63)",
    "duplicate": "exactly repeating an earlier event (a trace appended to itself?)",
    "stream overlap": "overlapping the previous GPU event on their stream",
    "beyond step": "reaching beyond the step that holds them",
    "zero-length step": "step annotations of zero length (they hold nothing)",
    "overlapping step": "step annotations starting inside another step and ending after it",
    "malformed shapes": "with an \"Input Dims\" or \"Input type\" that is not a list of sizes or of type names",
    "begin/end": "recorded as begin/end pairs (ph \"B\"/\"E\"), which this reader does not pair",
}
_OVERLAP_US, _OVERLAP_SHARE = 2.0, 0.1


# The one error of twofour.dispatch.trace (every stage raises it; it lives here, the stage every
# other one imports, so that none imports a later stage).
class TraceError(ValueError):
    """The file is not a usable trace, or the question cannot be answered from it (one sentence)."""


@dataclass
class Invalid:
    """Events left out of a trace for one reason (a key of :data:`REASONS`): how many, and the first."""

    reason: str
    count: int
    first_event: int  # index in traceEvents
    first_name: str


def add(invalid: dict, reason: str, event: int, name, count: int = 1) -> None:
    """Count ``count`` events of ``reason``, keeping the one with the smallest event number as the first."""
    name = printable(name if isinstance(name, str) else repr(name), 200)
    cur = invalid.setdefault(reason, Invalid(reason, 0, event, name))
    cur.count += count
    if event < cur.first_event:
        cur.first_event, cur.first_name = event, name


def field_problem(ev: dict) -> str | None:
    """The reason an event's fields are invalid, or None (the slow path: called only when the fast check failed)."""
    times = (ev.get("ts"), ev.get("dur"))
    if any(type(v) not in (int, float) for v in times):
        return "no time"
    if any(isinstance(v, float) and not math.isfinite(v) for v in times):
        return "non-finite"
    if any(v < 0 for v in times):
        return "negative"
    return "out of range" if any(v > MAX_US for v in times) else "malformed"


def summary(invalid: dict, what: str = "the trace") -> str:
    """One line: how many invalid events of each kind (``invalid``: reason -> :class:`Invalid`), and the first of each."""
    items = sorted(invalid.values(), key=lambda i: i.first_event)
    total = sum(i.count for i in items)
    return f"{total:,} invalid event{'s' if total != 1 else ''} in {what}: " + "; ".join(
        f"{i.count:,} {REASONS[i.reason]} (first: event {i.first_event:,}, {printable(i.first_name, 80)!r})"
        for i in items)


def duplicate_rows(kind, name, thread, ts, dur, ext, corr) -> np.ndarray:
    """Rows that exactly repeat an earlier row (all seven columns equal), as a boolean mask.

    Duplicates share ``ts``, so only rows whose ``ts`` occurs more than once are compared in
    full; in each set of equal rows the earliest (file order) is kept, the others marked.
    """
    n = len(ts)
    out = np.zeros(n, dtype=bool)
    order = np.argsort(ts, kind="stable")
    t = ts[order]
    same = t[1:] == t[:-1]
    if not same.any():  # also a trace of fewer than two events
        return out
    cand = np.zeros(n, dtype=bool)
    cand[1:] |= same
    cand[:-1] |= same
    rows = order[cand]
    # The row number is the last tie-breaker: the first row of each run of equal rows is the earliest.
    o = rows[np.lexsort((rows, corr[rows], ext[rows], dur[rows], ts[rows], thread[rows], name[rows], kind[rows]))]
    eq = np.ones(len(o) - 1, dtype=bool)
    for col in (kind, name, thread, ts, dur, ext, corr):
        eq &= col[o[1:]] == col[o[:-1]]
    out[o[1:][eq]] = True
    return out


def stream_overlaps(gpu_rows, thread, ts, dur) -> np.ndarray:
    """GPU rows (indices) that overlap an earlier event on their stream by more than 2 us and 10% of the
    shorter: a stream runs one kernel after another, and real traces overlap by under a microsecond."""
    if len(gpu_rows) < 2:
        return np.zeros(0, dtype=np.int64)
    o = gpu_rows[np.lexsort((ts[gpu_rows], thread[gpu_rows]))]
    th, s, d = thread[o], ts[o], dur[o]
    ends = s + d
    prev_end = np.empty(len(o))
    prev_dur = np.empty(len(o))
    bounds = np.flatnonzero(np.concatenate(([True], th[1:] != th[:-1], [True])))
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):  # one stream at a time (few streams)
        run = np.maximum.accumulate(ends[lo:hi])
        prev_end[lo] = -np.inf
        prev_end[lo + 1:hi] = run[:-1]
        prev_dur[lo] = 0.0
        prev_dur[lo + 1:hi] = d[lo:hi - 1]
    overlap = prev_end - s
    shorter = np.minimum(d, prev_dur)
    bad = (overlap > _OVERLAP_US) & (overlap > _OVERLAP_SHARE * shorter)
    return o[bad]


def check_consistency(phases, shown_path: str, what: str = "the trace") -> None:
    """Refuse a verdict whose numbers contradict each other: per step GEMM <= GPU busy <= wall, p in [0, 1].

    Raises :class:`TraceError` naming the step and the numbers (kernels overlapping on
    several streams, or times the analysis cannot reconcile), never prints an impossible number.
    """
    def fail(step: str, why: str):
        raise TraceError(f"{shown_path}: {what}, step {printable(step, 60)!r}: {why}; the trace's numbers contradict "
                         "each other, so no verdict (were kernels running on several streams at once, or the times edited?)")

    for ph in phases:
        for st in ph.steps:
            wall, gemm, busy = st.wall_us, st.gemm_us, st.busy_us
            tol = 1.0 + 1e-3 * abs(wall)
            if not (math.isfinite(wall) and wall >= 0):
                fail(st.name, f"wall time {wall!r} us")
            if not math.isfinite(gemm) or gemm < 0 or gemm > wall + tol:
                fail(st.name, f"GEMM time {gemm:,.1f} us is not within the step's wall time {wall:,.1f} us")
            if busy is not None:
                if not (math.isfinite(busy) and -tol <= busy <= wall + tol):
                    fail(st.name, f"GPU busy time {busy:,.1f} us is not within the step's wall time {wall:,.1f} us")
                if gemm > busy + tol:
                    fail(st.name, f"GEMM time {gemm:,.1f} us exceeds the GPU busy time {busy:,.1f} us")
        if ph.n and not 0.0 <= ph.p <= 1.0 + 1e-9:
            fail(ph.step_names, f"the eligible share p = {ph.p!r} is outside [0, 1]")
