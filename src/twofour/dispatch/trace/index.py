"""The index of one trace: GPU events in time order, operator nesting, launches and busy intervals."""

from __future__ import annotations

import numpy as np

from .read import GPU_KINDS, OP, OVERHEAD, RUNTIME, Trace


class Index:
    """Structures shared by every step of one trace: built once (it walks every event) by
    :func:`~.analyze.analyze`, kept on its :class:`~.report.TraceReport` (``report.index``) so that
    rendering a timeline does not build it again."""

    def __init__(self, tr: Trace):
        self.tr = tr
        kind, ts, dur = tr.kind, tr.ts, tr.dur
        # Indices are int32 and per-event extras small: on a 1 GB trace every byte per event counts.
        i32 = np.int32
        self.end = ts + dur
        gpu = np.flatnonzero(np.isin(kind, GPU_KINDS)).astype(i32)
        self.gpu = gpu[np.argsort(ts[gpu], kind="stable")]
        del gpu
        self.ops = np.flatnonzero(kind == OP).astype(i32)
        # Nesting of operators and runtime calls, per thread (a runtime call is a leaf). Walked
        # in chunks turned into Python lists: fast, and bounded memory on a huge trace.
        nested = np.flatnonzero((kind == OP) | (kind == RUNTIME)).astype(i32)
        threads = tr.thread
        order = nested[np.lexsort((-dur[nested], ts[nested], threads[nested]))]
        del nested
        self.parent = np.full(len(tr), -1, dtype=i32)
        self.self_us = dur.astype(np.float32)  # an operator's own time: float32 is plenty
        stack: list[tuple[int, float]] = []
        cur_thread = None
        for lo in range(0, len(order), 1 << 16):
            idx = order[lo:lo + (1 << 16)]
            kids, pars = [], []
            for i, t, e, th in zip(idx.tolist(), ts[idx].tolist(), self.end[idx].tolist(), threads[idx].tolist()):
                if th != cur_thread:
                    stack = []
                    cur_thread = th
                while stack and stack[-1][1] <= t + 1e-3:
                    stack.pop()
                if stack:
                    kids.append(i)
                    pars.append(stack[-1][0])
                stack.append((i, e))
            kids_a, pars_a = np.array(kids, dtype=i32), np.array(pars, dtype=i32)
            self.parent[kids_a] = pars_a
            is_op = kind[kids_a] == OP
            np.subtract.at(self.self_us, pars_a[is_op], dur[kids_a[is_op]].astype(np.float32))
        np.maximum(self.self_us, 0.0, out=self.self_us)
        # The launching thread: most runtime calls (else most operators). Its events are one
        # contiguous run of `order` (sorted by thread first).
        rt = np.flatnonzero(kind == RUNTIME).astype(i32)
        pool = rt if len(rt) else self.ops
        self.launch_thread = int(np.bincount(threads[pool]).argmax()) if len(pool) else -1
        th_sorted = threads[order]
        lo, hi = np.searchsorted(th_sorted, [self.launch_thread, self.launch_thread + 1])
        del th_sorted
        self.lt_events = order[lo:hi].copy()
        del order
        self.lt_starts = ts[self.lt_events]
        # Profiler-overhead events by start time, with the furthest end reached so far: a gap finds
        # the ones that may cover half of it by bisection, not by a walk over all of them.
        ov = np.flatnonzero(kind == OVERHEAD)
        self.overhead = ov[np.argsort(ts[ov], kind="stable")]
        self.overhead_ts = ts[self.overhead]
        self.overhead_reach = np.maximum.accumulate(self.end[self.overhead]) if len(ov) else np.zeros(0)
        del ov
        # External id -> operator; correlation -> runtime call.
        op_ext = self.ops[tr.ext[self.ops] >= 0]
        o = np.argsort(tr.ext[op_ext], kind="stable")
        self.ext_keys, self.ext_ops = tr.ext[op_ext][o], op_ext[o]
        rt_c = rt[tr.corr[rt] >= 0]
        o = np.argsort(tr.corr[rt_c], kind="stable")
        self.corr_keys, self.corr_rt = tr.corr[rt_c][o], rt_c[o]
        del op_ext, rt_c, o, rt
        # Each GPU event: launch time and launching operator.
        g = self.gpu
        self.launch_ts = ts[g].copy()
        rt_idx = self._lookup(self.corr_keys, self.corr_rt, tr.corr[g])
        has_rt = rt_idx >= 0
        self.launch_ts[has_rt] = ts[rt_idx[has_rt]]
        ext = tr.ext[g].copy()
        ext[(ext < 0) & has_rt] = tr.ext[rt_idx[(ext < 0) & has_rt]]
        op_idx = self._lookup(self.ext_keys, self.ext_ops, ext)
        self.launch_op = op_idx
        no_rt = ~has_rt & (op_idx >= 0)
        self.launch_ts[no_rt] = ts[op_idx[no_rt]]
        # Merged GPU busy intervals, with the first event of each.
        if len(g):
            s, e = ts[g], self.end[g]
            run_end = np.maximum.accumulate(e)
            brk = np.flatnonzero(s[1:] > run_end[:-1] + 1e-6) + 1
            first = np.concatenate(([0], brk))
            last = np.concatenate((brk - 1, [len(g) - 1]))
            self.busy_s, self.busy_e, self.busy_first = s[first], run_end[last], first
        else:
            self.busy_s = self.busy_e = np.zeros(0)
            self.busy_first = np.zeros(0, dtype=np.int64)

    @staticmethod
    def _lookup(keys, values, queries):
        out = np.full(len(queries), -1, dtype=np.int32)
        if len(keys) == 0 or len(queries) == 0:
            return out
        pos = np.searchsorted(keys, queries)
        ok = (pos < len(keys)) & (queries >= 0)
        pos = np.minimum(pos, len(keys) - 1)
        ok &= keys[pos] == queries
        out[ok] = values[pos[ok]]
        return out

    def overhead_covering(self, a: float, b: float) -> int:
        """The first (in file order) profiler-overhead event covering at least half of [a, b]; -1 for none."""
        half = 0.5 * (b - a)
        lo = int(np.searchsorted(self.overhead_reach, a + half - 1e-3, side="left"))
        hi = int(np.searchsorted(self.overhead_ts, b - half + 1e-3, side="right"))
        if hi <= lo:
            return -1
        c = self.overhead[lo:hi]
        ok = np.minimum(self.end[c], b) - np.maximum(self.tr.ts[c], a) >= half
        return int(c[ok].min()) if ok.any() else -1

    def name(self, i) -> str:
        return self.tr.names[self.tr.name[i]]

    def stack_at(self, t: float) -> list[int]:
        """Operators and runtime calls on the launching thread containing time t, outer to inner."""
        if self.launch_thread < 0:
            return []
        j = int(np.searchsorted(self.lt_starts, t, side="right")) - 1
        if j < 0:
            return []
        i = int(self.lt_events[j])
        while i >= 0 and self.end[i] < t:
            i = int(self.parent[i])
        out = []
        while i >= 0:
            out.append(i)
            i = int(self.parent[i])
        return out[::-1]
