"""The funnel: from the data sheet's 2x to the speedup a request actually gets, step by step.

The five **steps** are not the six *stages* of the answer: stages 1-3 decide whether a sparse
kernel runs at all; the steps measure how much of the 2x is left once one does. Each step is a
speedup explaining one loss (formulas: :func:`funnel`):

1. ``datasheet`` — sparse peak / dense peak FLOP/s of the GPU for the dtype (2x on every data sheet).
2. ``roofline_ceiling`` — what perfect 2:4 kernels could give on *this phase's* GEMMs: 2x when
   compute-bound, only ``1 / packed_ratio`` when memory-bound (decode).
3. ``kernel`` — the 2:4 GEMM speedup, predicted by :mod:`twofour.roofline` or measured.
4. ``eligible_fraction`` — after Amdahl: only the eligible share ``p`` of the GPU time gets step 3.
5. ``request`` — end to end (per token for the decode scope), fixed overheads included.

A step can *rise* (a measured kernel above the ceiling, or a kernel slower than dense, which
Amdahl dilutes toward 1).

>>> from twofour.models import LLAMA_3_8B
>>> from twofour.request import Workload, estimate
>>> est = estimate(Workload(LLAMA_3_8B, 1, 512, 256), "H100", gemm_speedup=1.6)
>>> [s.key for s in funnel(est, "decode")]
['datasheet', 'roofline_ceiling', 'kernel', 'eligible_fraction', 'request']
>>> round(funnel(est, "decode")[2].speedup, 3)
1.6
>>> funnel(est, "decode")[3].title
'step 4: speedup after Amdahl (GPU work)'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .request import RequestEstimate

__all__ = ["FunnelStep", "STEP_KEYS", "SCOPES", "funnel", "funnel_dict"]

SCOPES = ("request", "prefill", "decode")
STEP_KEYS = ("datasheet", "roofline_ceiling", "kernel", "eligible_fraction", "request")
# What each step's number is, said as a speedup ("eligible fraction" alone reads like a share).
_STEP_TITLES = {
    "datasheet": "data-sheet speedup",
    "roofline_ceiling": "ceiling speedup (perfect kernels)",
    "kernel": "2:4 GEMM speedup",
    "eligible_fraction": "speedup after Amdahl (GPU work)",
}


@dataclass(frozen=True)
class FunnelStep:
    """One step of the funnel: a key, a short label, the speedup, what it accounts for and how it was obtained.

    ``label`` is the short name the site's calculator mirrors. ``how`` is ``"predicted"``,
    ``"measured"`` or ``"data sheet"`` (:meth:`twofour.dispatch.trace.PhaseReport.funnel` marks each).
    """

    key: str
    label: str
    speedup: float
    explains: str
    how: str = "predicted"

    @property
    def step(self) -> int:
        """1 to 5, in funnel order (0 for a key that is not a funnel step)."""
        return STEP_KEYS.index(self.key) + 1 if self.key in STEP_KEYS else 0

    @property
    def title(self) -> str:
        """``"step N: <what> speedup"``, e.g. ``"step 5: per-token speedup"``."""
        what = _STEP_TITLES.get(self.key, f"{self.label} speedup")
        if self.key == "request":
            what = "per-token speedup" if self.label == "per token" else "end-to-end speedup"
        return f"step {self.step}: {what}" if self.step else what


def funnel(est: RequestEstimate, scope: str = "request") -> list[FunnelStep]:
    """The five steps of the funnel for one scope of a request estimate.

    ``scope``: ``"request"``, ``"prefill"`` (TTFT) or ``"decode"`` (step 5 is then the TPOT speedup).

    Spec (mirrored by the site's JavaScript), with the phases' fields of :class:`~twofour.request.PhaseTime`:

    * ``datasheet = sparse_flops / dense_flops``
    * ``roofline_ceiling = ceiling_speedup`` of the scope (for ``request``: the request's)
    * ``kernel = gemm_speedup`` of the scope
    * ``eligible_fraction = (dense_s - overhead_s) / (sparse_s - overhead_s)`` summed over
      the scope's phases: the speedup of the GPU work alone (1 if there is none)
    * ``request = dense_s / sparse_s`` of the scope (for ``decode``: TPOT dense / TPOT 2:4)
    """
    if not isinstance(est, RequestEstimate):
        raise TypeError(f"est must be a RequestEstimate (from twofour.request.estimate), got {type(est).__name__}")
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    r = est.inputs
    phases = {"request": (est.prefill, est.decode), "prefill": (est.prefill,), "decode": (est.decode,)}[scope]
    if scope == "request":
        ceiling, kernel = est.ceiling_speedup_request, est.gemm_speedup_request
    else:
        ceiling, kernel = phases[0].ceiling_speedup, phases[0].gemm_speedup
    final = est.speedup(scope)  # "prefill" is the TTFT speedup, "decode" the TPOT one
    work_dense = work_sparse = 0.0
    for ph in phases:
        work_dense += ph.dense_s - ph.overhead_s
        work_sparse += ph.sparse_s - ph.overhead_s
    gpu_work = work_dense / work_sparse if work_sparse > 0.0 else 1.0

    phase_word = {"request": "the request's", "prefill": "prefill", "decode": "decode"}[scope]
    return [
        FunnelStep("datasheet", "data sheet", r.sparse_flops / r.dense_flops,
                    "peak 2:4 FLOP/s over peak dense FLOP/s for this GPU and dtype"),
        FunnelStep("roofline_ceiling", "roofline ceiling", ceiling,
                    f"perfect kernels on {phase_word} GEMMs: compute-bound ones keep 2x, "
                    "bytes-bound ones get only 1/packed ratio"),
        FunnelStep("kernel", "2:4 GEMM", kernel,
                    "the GEMM speedup the kernels reach (predicted or measured): padding, efficiency, "
                    "waves, per-call overhead"),
        FunnelStep("eligible_fraction", "eligible fraction", gpu_work,
                    "Amdahl over the GPU work: attention, KV-cache reads, embeddings, LM head and "
                    "per-layer ops stay as they are"),
        FunnelStep("request", "end to end" if scope != "decode" else "per token", final,
                    "fixed per-step and per-request overheads included"
                    + (" and prefill and decode mixed by their time" if scope == "request" else "")),
    ]


def funnel_dict(est: RequestEstimate, scope: str = "request") -> list[dict]:
    """:func:`funnel` as JSON-ready dicts (without ``how``: every step of :func:`funnel` is predicted)."""
    return [{k: v for k, v in asdict(s).items() if k != "how"} for s in funnel(est, scope)]

