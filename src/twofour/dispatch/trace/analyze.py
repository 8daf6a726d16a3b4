"""Measure a trace: cut it into steps and phases, sum GPU time by class, find the idle gaps and who caused them.

What is measured, and how (step windows, gaps and their culprits, time by class, the eligible
share p, a dense baseline's speedups), is described in :mod:`twofour.dispatch.trace`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict

import numpy as np

from ..._common.text import show_path
from ..kernels import OpRecord, SPARSE_CUSPARSELT, SPARSE_CUTLASS, classify_records
from .classify import BACKEND_NAME, ELIGIBLE, UNCLASSIFIED, is_attention_op, kernel_dtype_bits, trace_class
from . import compare, plausibility, validate
from .validate import TraceError
from .index import Index
from .read import GPU_ANNOTATION, GPU_KINDS, OP, Trace, load
from .report import Comparison, Gap, PhaseReport, StepStats, TraceReport

def _steps(ix: Index):
    """(name, phase, cpu_start, cpu_end, thread or -1) of every step, in time order."""
    tr = ix.tr
    names = tr.names
    rows, phased = tr.step_rows()
    if not len(rows):
        keep = np.flatnonzero(tr.kind != GPU_ANNOTATION)
        if not len(keep):
            return []
        return [("whole trace", "trace", float(tr.ts[keep].min()), float(ix.end[keep].max()), -1)]
    picked = sorted(rows.tolist(), key=lambda i: (tr.ts[i], -tr.dur[i] if phased else 0))
    if phased:  # the innermost annotations are the steps: each ends before the next (in start order) begins
        picked = [a for a, b in zip(picked, picked[1:] + [None]) if b is None or tr.ts[b] >= ix.end[a] - 1e-3]

    def phase(i: int) -> str:
        return ("prefill" if "prefill" in names[tr.name[i]].lower() else "decode") if phased else "step"

    return [(names[tr.name[i]], phase(i), float(tr.ts[i]), float(ix.end[i]), int(tr.thread[i]))
            for i in picked]


def analyze(trace, *, phase: str | None = None, baseline=None, progress: bool | None = None,
            exclude_invalid: bool = False) -> TraceReport:
    """Measure a trace: per step, per phase, the funnel and the verdicts.

    Args:
        trace: a :class:`Trace` or a path for :func:`load`.
        phase: ``"prefill"`` or ``"decode"`` to report only the steps of that phase (their
            annotation names must say so); None reports every phase found.
        baseline: the dense run of the same workload (a :class:`Trace` or a path): adds the
            measured GEMM and end-to-end speedups and a measured funnel.
        progress: passed to :func:`load` for paths.
        exclude_invalid: leave invalid events (:mod:`.validate`: NaN or negative times,
            duplicates, durations beyond their step ...) out and say so in the report's first
            lines; by default a trace with any is refused.

    Raises:
        TraceError: no events, no steps of the requested phase, nothing comparable, invalid
            events (unless ``exclude_invalid``), numbers that contradict each other (GEMM time
            above busy or wall time), a GPU trace without its kernels.

    >>> from twofour.dispatch.trace import recorded
    >>> r = analyze(recorded("dense-eager"))
    >>> ph = r.phase("decode")
    >>> ph.gemms, ph.sparse_gemms, round(ph.p, 2) < 0.6
    (42, 0, True)
    >>> print(ph.verdicts()[0])  # doctest: +ELLIPSIS
    2:4 kernels ran: 0 of 42 GEMMs: if this was meant to be the 2:4 run, dispatch failed ...
    """
    if phase is not None and phase not in ("prefill", "decode"):
        raise TraceError(f"phase must be 'prefill' or 'decode' (or None for every phase), got {phase!r}")
    if not isinstance(exclude_invalid, bool):
        raise TypeError(f"exclude_invalid must be True or False, got {exclude_invalid!r}")
    tr = trace if isinstance(trace, Trace) else load(trace, progress=progress)
    phases, ix, excluded, outside = _analyze(tr, phase, exclude=exclude_invalid)
    base_path, base_excluded, base_outside = None, {}, 0
    if baseline is not None:
        btr = baseline if isinstance(baseline, Trace) else load(baseline, progress=progress)
        base_path = btr.path
        bphases_list, _, base_excluded, base_outside = _analyze(btr, phase, what="the baseline", exclude=exclude_invalid)
        bphases = {p.phase: p for p in bphases_list}
        notes = compare.check(tr, btr, phases, bphases)
        gpus = compare.gpu_note(tr.path, btr.path, (tr.device_name, btr.device_name))
        for ph in phases:  # compare.check refuses phases found in one run only: every phase has its baseline
            b = bphases[ph.phase]
            ph.comparison = Comparison(
                baseline_path=btr.path, dense_wall_us=b.wall_us, sparse_wall_us=ph.wall_us,
                dense_gemm_us=b.gemm_us, sparse_gemm_us=ph.gemm_us, dense_p=b.p,
                dense_idle_fraction=b.idle_fraction, baseline_sparse_gemms=b.sparse_gemms,
                shapes=notes[ph.phase], gpus=gpus,
            )
            plausibility.check_speedup(ph, show_path(tr.path))
    return TraceReport(path=tr.path, trace=ix.tr, phases=phases, baseline_path=base_path, excluded=excluded,
                       baseline_excluded=base_excluded, index=ix, outside_steps=(outside, base_outside))


def _refuse_invalid(tr: Trace, invalid: dict, what: str) -> None:
    raise TraceError(
        f"{show_path(tr.path)}: {validate.summary(invalid, what)}. A verdict from these numbers would be wrong: fix the "
        "trace, or pass --drop-invalid (exclude_invalid=True) to leave them out, which the report then says"
    )


def _layout(tr: Trace, want: str | None, what: str):
    """The index, the steps (of phase ``want``, in time order), which step launched each GPU event, the
    windows, and the positions (in ``ix.gpu``) of GPU events launched inside no step of any phase."""
    ix = Index(tr)
    plausibility.refuse_gpu_run_without_kernels(tr, ix, what)
    steps = _steps(ix)
    # GPU event -> step, by its launch time inside the step's CPU window (every phase's steps).
    starts = np.array([s[2] for s in steps])
    ends = np.array([s[3] for s in steps])
    gstep = np.full(len(ix.gpu), -1, dtype=np.int64)
    if len(ix.gpu) and len(steps):
        k = np.searchsorted(starts, ix.launch_ts, side="right") - 1
        ok = (k >= 0) & (ix.launch_ts <= ends[np.maximum(k, 0)] + 1e-3)
        gstep[ok] = k[ok]
    outside = np.flatnonzero(gstep < 0)
    if want is not None:
        found = sorted({s[1] for s in steps})
        keep = [i for i, s in enumerate(steps) if s[1] == want]
        if not keep:
            raise TraceError(
                f"{show_path(tr.path)}: --phase {want}: no step annotation in {what} has {want!r} in its name (steps found: "
                f"{', '.join(found) or 'none'}); wrap each step in torch.profiler.record_function('{want}_step_i')"
            )
        new_no = np.full(len(steps) + 1, -1, dtype=np.int64)  # old step number -> kept number; -1 -> -1
        new_no[keep] = np.arange(len(keep))
        gstep = new_no[gstep]
        steps = [steps[i] for i in keep]
    by_step = defaultdict(list)
    for pos, s in enumerate(gstep.tolist()):
        if s >= 0:
            by_step[s].append(pos)
    # Step windows: from the CPU start (or the previous step's end) to the last GPU activity (or CPU end).
    windows = []
    prev_end = -math.inf
    for si, (_, _, cs, ce, _) in enumerate(steps):
        gpos = by_step.get(si, [])
        a = max(cs, prev_end)
        prev_end = max(ce, float(ix.end[ix.gpu[gpos]].max()) if gpos else -math.inf, a)
        windows.append((a, prev_end))
    return ix, steps, by_step, windows, outside


def _analyze(tr: Trace, want: str | None, what: str = "the trace",
             exclude: bool = False) -> tuple[list[PhaseReport], Index, dict, int]:
    if tr.invalid and not exclude:
        _refuse_invalid(tr, tr.invalid, what)
    if not len(tr) or not ((tr.kind == OP).any() or np.isin(tr.kind, GPU_KINDS).any()):
        raise TraceError(
            f"{show_path(tr.path)}: {what} holds no CPU operators or GPU kernels ({tr.n_read:,} events read); was the "
            "profiled code inside the `with torch.profiler.profile(...)` block, and the trace exported after it?"
        )
    ix, steps, by_step, windows, outside = _layout(tr, want, what)
    invalid = {k: dataclasses.replace(v) for k, v in tr.invalid.items()}
    # GPU events launched in no step (TraceReport.outside_steps): left out and counted, never a refusal.
    n_outside = len(outside)
    bad = plausibility.implausible_rows(ix, tr, steps, windows, by_step, outside, invalid)
    if bad:
        if not exclude:
            _refuse_invalid(tr, invalid, what)
        # left out, and everything measured again without them (columns copied once, names and threads shared)
        keep = np.ones(len(tr), dtype=bool)
        keep[np.fromiter(bad, dtype=np.int64)] = False
        cols = ("kind", "name", "ts", "dur", "thread", "ext", "corr", "index", "shape")
        tr = dataclasses.replace(tr, **{c: np.ascontiguousarray(getattr(tr, c)[keep]) for c in cols})
        ix, steps, by_step, windows, outside = _layout(tr, want, what)
    device = "cuda" if len(ix.gpu) else "cpu"
    dtype_bits = kernel_dtype_bits([tr.names[i] for i in np.unique(tr.name[ix.gpu])]) if device == "cuda" else 16
    op_order = ix.ops[np.lexsort((-tr.dur[ix.ops], tr.ts[ix.ops]))]
    op_ts = tr.ts[op_order]

    reports: dict[str, PhaseReport] = {}
    per_phase_steps = defaultdict(list)
    for si, step in enumerate(steps):
        per_phase_steps[step[1]].append(si)
    for ph, sis in per_phase_steps.items():
        first = 1 if len(sis) >= 3 else 0  # the first of three steps or more carries warm-up: not summarized
        rep = PhaseReport(phase=ph, device=device, steps=[], summarized=list(range(first, len(sis))),
                          dtype_bits=dtype_bits, gpu=tr.device_name)
        backends = set()
        for j, si in enumerate(sis):
            name, _, cs, ce, _ = steps[si]
            a, b = windows[si]
            st, seen, kt = _step_stats(ix, tr, name, ph, a, b, cs, ce, by_step.get(si, []), op_order, op_ts)
            rep.steps.append(st)
            rep.gemms += st.gemms
            rep.sparse_gemms += st.sparse_gemms
            backends |= seen
            if j < first:
                continue
            for key, (n, us) in kt.items():
                cur = rep.kernel_table.setdefault(key, [0, 0.0])
                cur[0] += n
                cur[1] += us
            if device == "cuda":
                _gaps(ix, rep, name, a, b)
        rep.unclassified = {nm: us for (nm, c), (_, us) in rep.kernel_table.items() if c == UNCLASSIFIED}
        rep.sparse_backends = tuple(BACKEND_NAME[c] for c in BACKEND_NAME if c in backends)
        reports[ph] = rep
    rank = {"prefill": 0, "decode": 1, "step": 2, "trace": 3}
    phases = [reports[k] for k in sorted(reports, key=rank.get)]
    validate.check_consistency(phases, show_path(tr.path), what)
    return phases, ix, invalid, n_outside


def _step_stats(ix, tr, name, ph, a, b, cs, ce, gpos, op_order, op_ts):
    """StepStats for one step, plus the 2:4 classes seen and its kernel table ((name, class) -> [count, us])."""
    lo, hi = np.searchsorted(op_ts, [cs - 1e-3, ce + 1e-3])
    ops = op_order[lo:hi]
    ops = ops[ix.end[ops] <= ce + 1e-3]
    local = {int(g): k for k, g in enumerate(ops.tolist())}
    names = tr.names
    recs = [OpRecord(names[tr.name[g]], "cpu", float(ix.self_us[g]), local.get(int(ix.parent[g])))
            for g in ops.tolist()]
    gidx = ix.gpu[gpos] if gpos else np.zeros(0, dtype=np.int64)
    for pos, g in zip(gpos, gidx.tolist()):
        lop = int(ix.launch_op[pos])
        recs.append(OpRecord(names[tr.name[g]], "cuda", float(tr.dur[g]), local.get(lop)))
    base = classify_records(recs)
    n_ops = len(ops)
    # Attention context flows from an operator to everything inside it and everything it launches.
    in_att = [False] * len(recs)
    for k, r in enumerate(recs):
        in_att[k] = (r.parent is not None and in_att[r.parent]) or (k < n_ops and is_attention_op(r.name))
    device = "cuda" if len(ix.gpu) else "cpu"
    classes = [trace_class(r.name, c, device=r.device, in_attention=att) for r, c, att in zip(recs, base, in_att)]
    time_us: dict[str, float] = defaultdict(float)
    kt: dict[tuple, list] = {}
    gemms = sparse = 0
    seen = set()
    issuers = []  # per counted GEMM, in time order: the outermost operator around it (compare.py's shapes)
    op_rows = ops.tolist()
    for k, (r, c) in enumerate(zip(recs, classes)):
        if r.device != device:
            continue
        time_us[c] += r.self_us
        cur = kt.setdefault((r.name, c), [0, 0.0])
        cur[0] += 1
        cur[1] += r.self_us
        if c in ELIGIBLE:
            if r.device == "cuda":
                counts = "reduce" not in r.name.lower()  # a split-K GEMM's second kernel
            else:  # the outermost matmul operator of a call (aten::linear > matmul > mm is one GEMM)
                p = r.parent
                while p is not None and classes[p] not in ELIGIBLE:
                    p = recs[p].parent
                counts = p is None
            if counts:
                gemms += 1
                issuers.append(_issuer(ix, tr, op_rows[k] if k < n_ops else int(ix.launch_op[gpos[k - n_ops]])))
                if c in (SPARSE_CUSPARSELT, SPARSE_CUTLASS):
                    sparse += 1
                    seen.add(c)
    wall = b - a
    busy = outside = None
    if device == "cuda":  # the merged busy intervals, clipped to the window
        lo, hi = np.searchsorted(ix.busy_e, a, side="right"), np.searchsorted(ix.busy_s, b, side="left")
        overlap = np.minimum(ix.busy_e[lo:hi], b) - np.maximum(ix.busy_s[lo:hi], a)
        busy = float(np.clip(overlap, 0.0, None).sum())
    else:
        # Time inside the step not covered by any operator (on any thread).
        blocks = []  # the step's outermost operators, merged where they overlap
        for s, e in sorted((float(tr.ts[g]), float(ix.end[g])) for g in op_rows if int(ix.parent[g]) not in local):
            if blocks and s <= blocks[-1][1]:
                blocks[-1][1] = max(blocks[-1][1], e)
            else:
                blocks.append([s, e])
        outside = max(0.0, wall - sum(e - s for s, e in blocks))
    st = StepStats(name=name, phase=ph, start_us=a, wall_us=wall, busy_us=busy, time_us=dict(time_us),
                   gemms=gemms, sparse_gemms=sparse, outside_ops_us=outside, gemm_ops=tuple(issuers))
    return st, seen, kt


def _issuer(ix, tr: Trace, row: int) -> tuple:
    """(name, operand signature or None) of the outermost operator holding ``row``; (None, None) for none.

    A 2:4 run and its dense baseline issue a GEMM through the same call (``aten::linear`` with
    the weight's logical shape); the operators inside it differ (``aten::_cslt_sparse_mm`` takes
    the compressed weight), so the outermost one is what the two runs can share.
    """
    if row < 0:
        return None, None  # a kernel no operator launched (a CUDA-graph replay)
    parent = ix.parent
    while parent[row] >= 0:
        row = int(parent[row])
    s = int(tr.shape[row])
    return tr.names[tr.name[row]], (tr.shapes[s] if s >= 0 else None)


def _culprit(ix, a, b):
    """(label, stack names, set-up operator index or -1) for the gap [a, b]."""
    tr = ix.tr
    half = 0.5 * (b - a)
    i = ix.overhead_covering(a, b)
    if i >= 0:
        return f"profiler overhead ({ix.name(i)})", (), -1
    stack = ix.stack_at(0.5 * (a + b))
    chosen = next((i for i in reversed(stack) if min(ix.end[i], b) - max(tr.ts[i], a) >= half), -1)
    if chosen < 0:
        if ix.launch_thread < 0:
            return "no CPU activity recorded", (), -1
        return "no operator (Python or framework code between operators)", tuple(map(ix.name, stack)), -1
    return ix.name(chosen), tuple(ix.name(i) for i in stack[: stack.index(chosen) + 1]), chosen


def _gaps(ix, rep: PhaseReport, step: str, a: float, b: float, keep: int = 5, min_us: float = 1e-3) -> None:
    """Add the idle gaps of one step window to the phase's culprit totals and largest gaps."""
    s, e = ix.busy_s, ix.busy_e
    lo = np.searchsorted(e, a, side="right")
    hi = np.searchsorted(s, b, side="left")
    cur = a
    gaps = []  # (start, end, index of the busy interval after it or -1)
    for k in range(lo, hi):
        if s[k] > cur + min_us:
            gaps.append((cur, float(s[k]), k))
        cur = max(cur, float(e[k]))
    if b > cur + min_us:
        gaps.append((cur, b, -1))
    for ga, gb, k in gaps:
        label, stack, chosen = _culprit(ix, ga, gb)
        d = gb - ga
        nxt, setup = None, False
        if k >= 0:
            pos = int(ix.busy_first[k])
            nxt = ix.name(ix.gpu[pos])
            j = int(ix.launch_op[pos])  # set-up when the culprit is the launching operator or holds it
            while chosen >= 0 and j >= 0 and j != chosen:
                j = int(ix.parent[j])
            setup = chosen >= 0 and j == chosen
        rep.culprits[label] = rep.culprits.get(label, 0.0) + d
        if setup:
            rep.setup_us[label] = rep.setup_us.get(label, 0.0) + d
        if len(rep.largest_gaps) < keep or d > rep.largest_gaps[-1].dur_us:
            rep.largest_gaps.append(Gap(step=step, at_us=ga - a, dur_us=d, culprit=label, during=stack,
                                        setup=setup, next_kernel=nxt))
            rep.largest_gaps.sort(key=lambda g: -g.dur_us)
            del rep.largest_gaps[keep:]
