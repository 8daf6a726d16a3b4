"""Plausibility before a verdict: events a recorded run cannot have produced, and speedups past physics.

:mod:`.validate` checks each event's own fields; this module checks events against the run:

* a GPU event that ends after a device-wide synchronize that began after its launch had
  returned (the CPU cannot come back from waiting before the GPU's work is done) or, without
  such a call, after the last CPU activity by more than the CPU's whole span: ``beyond step``
  (one absurd duration made "GPU busy 100%" out of 4%);
* a step annotation of zero length, or one that starts inside another and ends after it;
* a trace without GPU kernels of a GPU run (it names its GPU, or holds CUDA runtime calls or
  CUDA-only operators), whose host times are launch times;
* a measured GEMM speedup flagged above the roofline ceiling, refused above :data:`MAX_GEMM_SPEEDUP`.
"""

from __future__ import annotations

import numpy as np

from ..._common.text import show_path as _shown
from .validate import TraceError
from .read import ANNOTATION, OP, RUNTIME, Trace

# Device-wide waits only: a stream or event synchronize waits for one stream, and a kernel on
# another stream may rightly run on after it returns.
_SYNC_CALLS = ("cudaDeviceSynchronize", "cuCtxSynchronize")
_SKEW_US = 5.0  # the clock skew allowed between the CPU and GPU timelines (as in analyze)
# No 2:4 kernel does less than half the math of dense: past 2x the two runs did different work.
# A quarter more is allowed for a dense run that was itself slowed (a bad tile, a cold cache).
MAX_GEMM_SPEEDUP = 2.5
# Operators that exist only in CUDA builds' kernels: seen in a trace with no GPU activity,
# they say the run was on a GPU and the device side was not recorded.
_CUDA_ONLY_PREFIXES = ("aten::_cslt_", "aten::_sparse_semi_structured_", "aten::cudnn_", "aten::_cudnn_",
                       "aten::_flash_attention_", "aten::_efficient_attention_", "aten::_cufft_",
                       "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_efficient_attention")


def late_gpu_rows(ix, tr: Trace, invalid: dict, skip=()) -> set:
    """GPU events that end after the CPU had seen them finish (see the module doc), counted as ``beyond step``.

    ``skip``: positions in ``ix.gpu`` of events no step holds (left out without a verdict on them).
    """
    g = ix.gpu
    if not len(g):
        return set()
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
    late[np.asarray(skip, dtype=np.int64)] = False
    rows = set(g[late].tolist())
    for row in rows:
        tr.mark_invalid(invalid, "beyond step", row)
    return rows


def bad_step_rows(tr: Trace, invalid: dict) -> set:
    """Step annotations (:meth:`~.read.Trace.step_rows`) of zero length, or overlapping another without nesting in it
    (the later one)."""
    rows = set()
    spans = sorted((float(tr.ts[r]), float(tr.ts[r] + tr.dur[r]), int(r)) for r in tr.step_rows()[0])
    for s, e, r in spans:
        if e - s <= 0:
            rows.add(r)
            tr.mark_invalid(invalid, "zero-length step", r)
    live = [x for x in spans if x[2] not in rows]
    reach, reach_row = -np.inf, -1
    for s, e, r in live:
        if reach_row >= 0 and reach - 1e-3 > s and e > reach + 1e-3 and tr.thread[r] == tr.thread[reach_row]:
            rows.add(r)  # starts inside an earlier step and ends after it
            tr.mark_invalid(invalid, "overlapping step", r)
            continue
        if e > reach:
            reach, reach_row = e, r
    return rows


def check_speedup(phases, shown_path: str) -> None:
    """Refuse a measured GEMM speedup no 2:4 kernel can give (the two runs did different work)."""
    for ph in phases:
        cmp = ph.comparison
        if cmp is None:
            continue
        s = cmp.gemm_speedup
        if s == s and s > MAX_GEMM_SPEEDUP:
            raise TraceError(
                f"{shown_path}: {ph.phase}: a measured 2:4 GEMM speedup of {s:,.2f}x against the baseline, past the "
                f"{ph.ceiling:.2f}x ceiling of {ph.phase} GEMMs (2x math at most, and {MAX_GEMM_SPEEDUP}x allowed): "
                "the two traces did not time the same GEMMs, or one has absurd times; no verdict")


def above_ceiling(ph) -> str | None:
    """A warning line when a measured GEMM speedup exceeds this phase's roofline ceiling, else None."""
    cmp = ph.comparison
    if cmp is None:
        return None
    s = cmp.gemm_speedup
    if s == s and s > ph.ceiling * 1.02:
        return (f"IMPLAUSIBLE: the measured 2:4 GEMM speedup {s:.2f}x is above the {ph.ceiling:.2f}x ceiling of "
                f"{ph.phase} GEMMs: the dense run was slowed by something 2:4 did not pay (check both runs' shapes, "
                "clocks and warm-up) before believing it")
    return None


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
