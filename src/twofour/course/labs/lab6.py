"""Lab 6, "Budget a request": checkers for the eligible fraction, the request-level bound, and the biggest lever.

From a synthetic profiler-style breakdown of one prefill and one decode step (:func:`profile`, not
a measurement), the learner writes:

* ``eligible_fraction(rows, pruned)``: the share of the step's time in the pruned linear layers;
* ``request_bound(prefill_rows, decode_rows, output_len, pruned, s)``: the whole request's speedup
  when the pruned GEMMs get ``s`` times faster;
* ``biggest_lever(baseline, changes, gpu)``: the change of the workload that moves the request
  speedup of :func:`twofour.request.estimate` the most, up or down.

>>> from twofour.course.labs import lab6
>>> sorted({row["op"] for row in lab6.profile("decode")})[:3]
['attention', 'embedding', 'kv_cache']
>>> lab6.check_eligible_fraction(lambda rows, pruned: 2.0)
Traceback (most recent call last):
...
twofour.course.labs._common.CheckFailed: case 'decode, every block linear pruned': a fraction of the step's time must be between 0 and 1, got 2.0.
"""

from __future__ import annotations

import math

from ...amdahl import speedup
from ...models import LLAMA_3_8B
from ...request import BLOCK_LINEARS, LINEAR_KINDS, Assumptions, Workload, estimate
from ._common import CheckFailed, exercise_check

__all__ = [
    "WORKLOAD",
    "GPU",
    "STEP_OVERHEAD_US",
    "CHANGES",
    "profile",
    "check_eligible_fraction",
    "check_request_bound",
    "check_biggest_lever",
    "reference_eligible_fraction",
    "reference_request_bound",
]

# The lab's service: a chat assistant on Llama-3-8B in bf16, 8 sequences per batch.
WORKLOAD = Workload(LLAMA_3_8B, batch=8, prompt_len=2048, output_len=256)
GPU = "H100"
# Sampling, scheduling and launches per step: an assumption for the lab, not a measurement.
STEP_OVERHEAD_US = 300.0

MLP = ("gate_proj", "up_proj", "down_proj")
CHANGES = {
    "batch 8 -> 32": Workload(LLAMA_3_8B, 32, 2048, 256),
    "prompt 2048 -> 8000 tokens": Workload(LLAMA_3_8B, 8, 8000, 256),
    "bf16 -> fp8": Workload(LLAMA_3_8B, 8, 2048, 256, dtype="fp8"),
    "prune only the MLP": Workload(LLAMA_3_8B, 8, 2048, 256, pruned=MLP),
    "prune the LM head too": Workload(LLAMA_3_8B, 8, 2048, 256, pruned=LINEAR_KINDS),
}
# A second set the checker uses, so that an answer must be computed, not remembered.
_HIDDEN_BASE = Workload(LLAMA_3_8B, 8, 8000, 16)
# A prefill-heavy request 2:4 speeds up; its biggest move is down (a long answer, mostly decode, where
# 2:4 loses), so picking the highest speedup instead of the biggest move gives another answer.
_HIDDEN_CHANGES = {
    "batch 8 -> 16": Workload(LLAMA_3_8B, 16, 8000, 16),
    "output 16 -> 1024": Workload(LLAMA_3_8B, 8, 8000, 1024),
    "bf16 -> fp8": Workload(LLAMA_3_8B, 8, 8000, 16, dtype="fp8"),
}

_LABELS = {"attention": "flash attention (scores and context)", "kv_cache": "KV-cache read/write",
           "embedding": "embedding gather", "other": "rmsnorm / rope / silu / residual add",
           "step_overhead": "sampling + scheduler + launches"}


def profile(phase: str, workload: Workload = WORKLOAD, gpu: str = GPU, step_overhead_us: float = STEP_OVERHEAD_US) -> list[dict]:
    """A profiler-style table of ONE step of ``phase`` (``"prefill"`` or ``"decode"``), dense model.

    Rows ``{"kernel", "op", "time_us"}``, ``op`` ``"linear:<kind>"`` for a GEMM (summed over layers);
    the decode step is the request's average step, from :func:`twofour.request.estimate`.
    """
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
    est = estimate(workload, gpu, assumptions=Assumptions(step_overhead_s=step_overhead_us * 1e-6))
    ph = est.prefill if phase == "prefill" else est.decode
    steps = max(ph.steps, 1)
    rows = [{"kernel": f"gemm {kind} (x{workload.model.layers if kind != 'lm_head' else 1})", "op": f"linear:{kind}",
             "time_us": ph.linear_dense[kind] / steps * 1e6} for kind in LINEAR_KINDS]
    return rows + [{"kernel": label, "op": component, "time_us": ph.dense[component] / steps * 1e6}
                   for component, label in _LABELS.items()]


# ---- reference answers --------------------------------------------------------------------


def _total(rows) -> float:
    return sum(r["time_us"] for r in rows)


def _eligible(rows, pruned) -> float:
    names = {f"linear:{k}" for k in pruned}
    return sum(r["time_us"] for r in rows if r["op"] in names)


def reference_eligible_fraction(rows, pruned) -> float:
    """Eligible time over the whole step's time (overheads included)."""
    return _eligible(rows, pruned) / _total(rows)


def reference_request_bound(prefill_rows, decode_rows, output_len, pruned, s) -> float:
    """Amdahl over the request: one prefill step plus ``output_len - 1`` decode steps."""
    steps = output_len - 1
    total = _total(prefill_rows) + steps * _total(decode_rows)
    eligible = _eligible(prefill_rows, pruned) + steps * _eligible(decode_rows, pruned)
    return speedup(eligible / total, s)


# ---- checkers -----------------------------------------------------------------------------


def _number(value, case: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"case {case!r}: return a finite float, got {type(value).__name__} {value!r}")
    return float(value)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


@exercise_check("eligible_fraction")
def check_eligible_fraction(fn) -> str:
    """Check ``eligible_fraction(rows, pruned)`` on the lab's profiles and a hand-made one."""
    tiny = [
        {"kernel": "gemm q_proj", "op": "linear:q_proj", "time_us": 30.0},
        {"kernel": "gemm down_proj", "op": "linear:down_proj", "time_us": 50.0},
        {"kernel": "gemm lm_head", "op": "linear:lm_head", "time_us": 10.0},
        {"kernel": "attention", "op": "attention", "time_us": 5.0},
        {"kernel": "sampling", "op": "step_overhead", "time_us": 5.0},
    ]
    cases = [
        ("decode, every block linear pruned", profile("decode"), BLOCK_LINEARS),
        ("prefill, every block linear pruned", profile("prefill"), BLOCK_LINEARS),
        ("decode, MLP only", profile("decode"), MLP),
        ("decode, LM head pruned too", profile("decode"), LINEAR_KINDS),
        ("hand-made step of 100 us", tiny, ("q_proj", "down_proj")),
    ]
    for case, rows, pruned in cases:
        got = _number(fn([dict(r) for r in rows], tuple(pruned)), case)
        if _close(got, reference_eligible_fraction(rows, pruned)):
            continue
        if not 0.0 <= got <= 1.0:
            raise CheckFailed(f"case {case!r}: a fraction of the step's time must be between 0 and 1, got {got!r}.")
        linear_all = sum(r["time_us"] for r in rows if r["op"].startswith("linear:"))
        without_overhead = _total(rows) - sum(r["time_us"] for r in rows if r["op"] == "step_overhead")
        if _close(got, linear_all / _total(rows)):
            raise CheckFailed(f"case {case!r}: you counted every linear row; only the kinds in `pruned` are eligible "
                              "(the LM head is usually left dense).")
        if _close(got, _eligible(rows, pruned) / without_overhead):
            raise CheckFailed(f"case {case!r}: the fixed per-step overhead is part of the step's time; keep it in the denominator.")
        if linear_all and _close(got, _eligible(rows, pruned) / linear_all):
            raise CheckFailed(f"case {case!r}: divide by the whole step's time, not by the time of the linear layers.")
        raise CheckFailed(f"case {case!r}: got {got:.4f}, which is not the pruned GEMMs' share of the step. Sum the "
                          "rows whose op is 'linear:<name>' for the names in `pruned`, then divide by the sum of all rows.")
    return "eligible fraction right on all 5 profiles"


@exercise_check("request_bound")
def check_request_bound(fn) -> str:
    """Check ``request_bound(prefill_rows, decode_rows, output_len, pruned, s)`` on several requests."""
    pre, dec = profile("prefill"), profile("decode")
    cases = [
        ("the lab's request, s = 1.5", 256, BLOCK_LINEARS, 1.5),
        ("two output tokens, s = 1.5", 2, BLOCK_LINEARS, 1.5),
        ("one output token (prefill only), s = 1.7", 1, BLOCK_LINEARS, 1.7),
        ("MLP only, s = 1.78", 64, MLP, 1.78),
        ("a kernel slower than dense, s = 0.8", 256, BLOCK_LINEARS, 0.8),
    ]
    for case, output_len, pruned, s in cases:
        got = _number(fn([dict(r) for r in pre], [dict(r) for r in dec], output_len, tuple(pruned), s), case)
        want = reference_request_bound(pre, dec, output_len, pruned, s)
        if _close(got, want):
            continue
        if output_len > 1 and _close(got, reference_request_bound(pre, dec, output_len + 1, pruned, s)):
            raise CheckFailed(f"case {case!r}: the first output token comes out of prefill, so there are "
                              "output_len - 1 decode steps, not output_len.")
        p_pre = reference_eligible_fraction(pre, pruned)
        p_dec = reference_eligible_fraction(dec, pruned)
        steps = output_len - 1
        w_pre = _total(pre) / (_total(pre) + steps * _total(dec))
        averaged = w_pre * speedup(p_pre, s) + (1 - w_pre) * speedup(p_dec, s)
        if output_len > 1 and _close(got, averaged):
            raise CheckFailed(f"case {case!r}: you averaged the two phases' speedups. Add the phases' times first "
                              "(dense and 2:4), then divide: speedups do not add, times do.")
        if _close(got, speedup(p_dec, s)) and not _close(want, speedup(p_dec, s)):
            raise CheckFailed(f"case {case!r}: the prefill step is part of the request too; include its time.")
        p_req = (_eligible(pre, pruned) + steps * _eligible(dec, pruned)) / (_total(pre) + steps * _total(dec))
        if _close(got, p_req * s + (1 - p_req)):
            raise CheckFailed(f"case {case!r}: that is the averaging mistake, p*s + (1-p). The new time is "
                              "(1-p) + p/s of the old; the speedup is its inverse.")
        raise CheckFailed(f"case {case!r}: got {got:.4f}. Total the dense time and the eligible time over one prefill "
                          "step and output_len - 1 decode steps, then apply 1 / ((1 - p) + p / s).")
    return "request-level bound right on all 5 requests"


@exercise_check("biggest_lever")
def check_biggest_lever(fn) -> str:
    """Check ``biggest_lever(baseline, changes, gpu)`` on the lab's changes and on a second, hidden set."""
    for case, base, changes in (("the lab's changes", WORKLOAD, CHANGES), ("a second workload", _HIDDEN_BASE, _HIDDEN_CHANGES)):
        got = fn(base, dict(changes), GPU)
        if not isinstance(got, str) or got not in changes:
            raise CheckFailed(f"{case}: return the name of one change (a key of `changes`), got {got!r}.")
        before = estimate(base, GPU).speedup("request")
        moves = {name: estimate(w, GPU).speedup("request") - before for name, w in changes.items()}
        if got == max(moves, key=lambda n: abs(moves[n])):
            continue
        if got == max(moves, key=lambda n: moves[n]):
            raise CheckFailed(f"{case}: you picked the change with the highest speedup; the question is which change "
                              "moves the speedup the most from the baseline's, up or down (compare absolute differences).")
        raise CheckFailed(f"{case}: {got!r} is not the biggest move. Compute estimate(w, gpu).speedup('request') for the "
                          "baseline and for every change, and compare the differences.")
    return "biggest lever found for both workloads"
