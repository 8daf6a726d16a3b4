"""Plausibility before a verdict: events a recorded run cannot have produced, and speedups past physics.

:mod:`.validate` checks each event's own fields; this module checks events against the run.
"""

from __future__ import annotations

import numpy as np

from ..._common.text import show_path as _shown
from .validate import TraceError
from .read import ANNOTATION, OP, RUNTIME, Trace

# Device-wide waits only: a stream or event synchronize waits for one stream, and a kernel on
# another stream may rightly run on after it returns.
_SYNC_CALLS = ("cudaDeviceSynchronize", "cuCtxSynchronize")
_BEYOND_US = 1.0  # real traces: kernels start >= 1.3 us into their step's window (the shipped H200 traces)
_SKEW_US = 5.0  # ... and >= 6 us after the call that launched them: 5 us allows for clock skew
# No 2:4 kernel does less than half the math of dense: past 2x the two runs did different work.
# A quarter more is allowed for a dense run that was itself slowed (a bad tile, a cold cache).
MAX_GEMM_SPEEDUP = 2.5
# Operators that exist only in CUDA builds' kernels: seen in a trace with no GPU activity,
# they say the run was on a GPU and the device side was not recorded.
_CUDA_ONLY_PREFIXES = ("aten::_cslt_", "aten::_sparse_semi_structured_", "aten::cudnn_", "aten::_cudnn_",
                       "aten::_flash_attention_", "aten::_efficient_attention_", "aten::_cufft_",
                       "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_efficient_attention")


def implausible_rows(ix, tr: Trace, steps, windows, by_step, outside, invalid: dict) -> set:
    """Rows a recorded run cannot have produced, counted in ``invalid``; ``outside``: positions in ``ix.gpu``
    of events no step holds (left out without a verdict on them). ``beyond step``:

    * a GPU event starting before its step's window (the steps of :func:`~.analyze._layout`) or its
      launch, an operator or runtime call of a step's own thread ending after the step;
    * a GPU event ending after a device-wide synchronize that began after its launch had returned
      (it cannot return before the GPU is done) or, without one, after the last CPU activity by more
      than the CPU's whole span (one absurd duration made "GPU busy 100%" out of 4%).

    And step annotations (:meth:`~.read.Trace.step_rows`) of zero length, or overlapping another
    without nesting in it (the later one).
    """
    bad = set()

    def mark(rows, reason: str) -> None:
        for row in rows:
            bad.add(row)
            tr.mark_invalid(invalid, reason, row)

    g = ix.gpu
    for si, gpos in by_step.items():
        ts = tr.ts[g[gpos]]
        early = (ts < windows[si][0] - _BEYOND_US) | (ts < ix.launch_ts[gpos] - _SKEW_US)
        mark(g[gpos][early].tolist(), "beyond step")
    cpu = np.flatnonzero((tr.kind == OP) | (tr.kind == RUNTIME))
    cpu = cpu[np.argsort(tr.ts[cpu], kind="stable")]
    cpu_ts = tr.ts[cpu]
    for _, _, cs, ce, thread in steps:
        if thread >= 0:
            lo, hi = np.searchsorted(cpu_ts, [cs, ce])
            rows = cpu[lo:hi]
            mark(rows[(tr.thread[rows] == thread) & (ix.end[rows] > ce + _BEYOND_US)].tolist(), "beyond step")
    if len(g):
        ends = ix.end[g]
        sync_ids = [i for i, n in enumerate(tr.names) if n.startswith(_SYNC_CALLS)]
        syncs = np.flatnonzero((tr.kind == RUNTIME) & np.isin(tr.name, sync_ids))
        late = np.zeros(len(g), dtype=bool)
        if len(syncs):
            order = np.argsort(tr.ts[syncs], kind="stable")
            s_start, s_end = tr.ts[syncs][order], ix.end[syncs][order]
            # for each GPU event, the earliest end among syncs that began after its launch
            suffix_min = np.minimum.accumulate(s_end[::-1])[::-1]
            k = np.searchsorted(s_start, ix.launch_ts, side="right")
            has = k < len(s_start)
            late[has] = ends[has] > suffix_min[np.minimum(k[has], len(s_start) - 1)] + _SKEW_US
        cpu = np.flatnonzero(np.isin(tr.kind, (OP, RUNTIME, ANNOTATION)))
        if len(cpu):
            first, last = float(tr.ts[cpu].min()), float(ix.end[cpu].max())
            late |= ends > last + max(last - first, 1e3)
        late[np.asarray(outside, dtype=np.int64)] = False
        mark(g[late].tolist(), "beyond step")
    spans = sorted((float(tr.ts[r]), float(tr.ts[r] + tr.dur[r]), int(r)) for r in tr.step_rows()[0])
    zero = {r for s, e, r in spans if e - s <= 0}
    mark(zero, "zero-length step")
    reach, reach_row = -np.inf, -1
    for s, e, r in spans:
        if r in zero:
            continue
        if reach_row >= 0 and reach - 1e-3 > s and e > reach + 1e-3 and tr.thread[r] == tr.thread[reach_row]:
            mark([r], "overlapping step")  # starts inside an earlier step and ends after it
            continue
        if e > reach:
            reach, reach_row = e, r
    return bad


def check_speedup(ph, shown_path: str) -> None:
    """Refuse a phase's measured GEMM speedup no 2:4 kernel can give (the two runs did different work)."""
    s = ph.comparison.gemm_speedup
    if s == s and s > MAX_GEMM_SPEEDUP:
        raise TraceError(
            f"{shown_path}: {ph.phase}: a measured 2:4 GEMM speedup of {s:,.2f}x against the baseline, past "
            f"the {ph.ceiling:.2f}x ceiling of {ph.phase} GEMMs (2x math at most, and {MAX_GEMM_SPEEDUP}x "
            "allowed): the two traces did not time the same GEMMs, or one has absurd times; no verdict")


def refuse_gpu_run_without_kernels(tr: Trace, ix, what: str) -> None:
    """A trace of a GPU run (a named GPU, CUDA runtime calls or CUDA-only operators) without GPU kernels: no verdict."""
    if len(ix.gpu):
        return
    n_runtime = int((tr.kind == RUNTIME).sum())
    device = tr.device_name
    why = ("CPU times are launch times, not the work; no verdict (a CPU analysis would promise a speedup the GPU never "
           "showed). Record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    if n_runtime or device:
        on = f"on {device}" if device else f"with {n_runtime:,} CUDA runtime calls"
        left = sum(i.count for i in tr.invalid.values())
        left_out = f" ({left:,} invalid events left out)" if left else ""
        raise TraceError(f"{_shown(tr.path)}: {what} was recorded {on} but holds no GPU kernels{left_out}: they were not "
                         f"recorded or were removed, and its {why}")
    ids = [i for i, n in enumerate(tr.names) if n.startswith(_CUDA_ONLY_PREFIXES)]
    rows = np.flatnonzero((tr.kind == OP) & np.isin(tr.name, ids))
    if len(rows):
        raise TraceError(f"{_shown(tr.path)}: {what} holds no GPU kernels but {len(rows):,} calls of CUDA-only operators "
                         f"(first: {tr.names[tr.name[rows[0]]]!r}): a GPU run recorded without device activity, whose {why}")
