"""The funnel: from the data sheet's 2x to the speedup a request actually gets, stage by stage.

Each stage is a speedup, and each explains one loss:

1. ``datasheet`` — sparse peak / dense peak FLOP/s of the GPU for the dtype (2x on every
   NVIDIA data sheet).
2. ``roofline_ceiling`` — what perfect 2:4 kernels could give on *this phase's* GEMMs:
   compute-bound GEMMs keep 2x, memory-bound ones (decode) only ``1 / packed_ratio`` (1.78x for
   fp16/bf16, 1.6x for 8-bit), weighted by each GEMM's dense time.
3. ``kernel`` — the achieved GEMM speedup: predicted by :mod:`twofour.roofline` (padding,
   efficiency, waves, per-call overhead) or measured and typed in.
4. ``eligible_fraction`` — Amdahl over the GPU work of the scope: attention, KV-cache reads,
   LM head, norms do not get faster.
5. ``request`` — the end-to-end number, fixed per-step and per-request overheads included
   (for the ``"request"`` scope also the mix of prefill and decode).

A stage can *rise* (a measured kernel speedup above the roofline ceiling, or a kernel slower
than dense, which Amdahl then dilutes toward 1); the funnel shows what the numbers say.

>>> from twofour.models import LLAMA_3_8B
>>> from twofour.request import Workload, estimate
>>> est = estimate(Workload(LLAMA_3_8B, 1, 512, 256), "H100", gemm_speedup=1.6)
>>> [s.key for s in funnel(est, "decode")]
['datasheet', 'roofline_ceiling', 'kernel', 'eligible_fraction', 'request']
>>> round(funnel(est, "decode")[2].speedup, 3)
1.6
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .request import RequestEstimate

__all__ = ["FunnelStage", "SCOPES", "funnel", "funnel_dict"]

SCOPES = ("request", "prefill", "decode")


@dataclass(frozen=True)
class FunnelStage:
    """One stage: a key, a short label for plots, the speedup, and what it accounts for."""

    key: str
    label: str
    speedup: float
    explains: str


def funnel(est: RequestEstimate, scope: str = "request") -> list[FunnelStage]:
    """The five stages for one scope of a request estimate.

    Args:
        est: from :func:`twofour.request.estimate` or :func:`twofour.request.evaluate`.
        scope: ``"request"`` (whole request), ``"prefill"`` (TTFT) or ``"decode"`` (all decode
            steps; stage 5 is then the TPOT speedup).

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
        final = est.speedup("request")
    else:
        ceiling, kernel = phases[0].ceiling_speedup, phases[0].gemm_speedup
        final = est.speedup("ttft" if scope == "prefill" else "tpot")
    work_dense = work_sparse = 0.0
    for ph in phases:
        work_dense += ph.dense_s - ph.overhead_s
        work_sparse += ph.sparse_s - ph.overhead_s
    gpu_work = work_dense / work_sparse if work_sparse > 0.0 else 1.0

    phase_word = {"request": "the request's", "prefill": "prefill", "decode": "decode"}[scope]
    return [
        FunnelStage("datasheet", "data sheet", r.sparse_flops / r.dense_flops,
                    "peak 2:4 FLOP/s over peak dense FLOP/s for this GPU and dtype"),
        FunnelStage("roofline_ceiling", "roofline ceiling", ceiling,
                    f"perfect kernels on {phase_word} GEMMs: compute-bound ones keep 2x, "
                    "bytes-bound ones get only 1/packed ratio"),
        FunnelStage("kernel", "2:4 GEMM", kernel,
                    "the GEMM speedup the kernels reach (predicted or measured): padding, efficiency, "
                    "waves, per-call overhead"),
        FunnelStage("eligible_fraction", "eligible fraction", gpu_work,
                    "Amdahl over the GPU work: attention, KV-cache reads, embeddings, LM head and "
                    "per-layer ops stay as they are"),
        FunnelStage("request", "end to end" if scope != "decode" else "per token", final,
                    "fixed per-step and per-request overheads included"
                    + (" and prefill and decode mixed by their time" if scope == "request" else "")),
    ]


def funnel_dict(est: RequestEstimate, scope: str = "request") -> list[dict]:
    """:func:`funnel` as JSON-ready dicts."""
    return [asdict(s) for s in funnel(est, scope)]

