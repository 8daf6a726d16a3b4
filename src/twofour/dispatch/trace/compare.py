"""A comparison compares like with like: the same work in both traces, and a baseline that is dense.

A measured speedup is a ratio of two runs; it means something only when both ran the same
steps of the same phases with the same GEMMs. Before a 2:4-vs-dense verdict this refuses:

* the same file given twice (or two byte-identical files);
* a baseline that ran 2:4 kernels (it is not the dense run; are the files swapped?);
* phases found in one trace and not the other;
* a phase with a different number of steps, or different GEMM counts per step (2 GEMMs per step
  against 14 gave "2:4 GEMM 5.15x measured").

Each refusal is one :class:`~.read.TraceError` that says what differs. GEMM shapes are compared
through the GEMM counts per step; the traces do not carry operand shapes unless recorded with
``record_shapes=True``, which the reader does not keep.
"""

from __future__ import annotations

import filecmp
import os

from .read import TraceError, _shown


def same_file(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are one file (a link, a second path) or have the same bytes."""
    try:
        if os.path.samefile(a, b):
            return True
        return os.path.getsize(a) == os.path.getsize(b) and filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _per_step(ph) -> list[int]:
    return [st.gemms for st in ph.steps]


def check(trace_path: str, base_path: str, phases, bphases: dict) -> None:
    """Refuse a comparison of different work (see the module doc); return when the two runs match."""
    shown, bshown = _shown(trace_path), _shown(base_path)
    if same_file(trace_path, base_path):
        raise TraceError(f"{bshown}: --compare got the same trace as FILE ({shown}); give the dense run of the same "
                         "steps as the baseline")
    ours = {p.phase: p for p in phases}
    for name, b in bphases.items():
        if b.sparse_gemms:
            raise TraceError(
                f"{bshown}: the baseline ran {b.sparse_gemms} 2:4 GEMMs of {b.gemms} ({', '.join(b.sparse_backends)}) in "
                f"its {name} steps: it is not a dense run, so no 2:4-vs-dense speedup (are the two files swapped? FILE "
                "is the 2:4 run, --compare the dense one)")
    if set(ours) != set(bphases):
        raise TraceError(f"{bshown}: the baseline's phases {sorted(bphases)} differ from the trace's {sorted(ours)}: "
                         "the runs did not do the same work; record both with the same steps")
    for name, ph in ours.items():
        b = bphases[name]
        if len(ph.steps) != len(b.steps):
            raise TraceError(f"{bshown}: {name}: the trace has {len(ph.steps)} steps, the baseline {len(b.steps)}: "
                             "record the same steps in both runs")
        mine, theirs = _per_step(ph), _per_step(b)
        if mine != theirs:
            k = next(i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y)
            raise TraceError(
                f"{bshown}: {name} step {k} ({ph.steps[k].name!r}) ran {mine[k]} GEMMs in the trace and {theirs[k]} in "
                f"the baseline (per step: {_short(mine)} against {_short(theirs)}): the runs did not do the same work, "
                "so their GEMM times are not comparable")


def _short(counts: list[int]) -> str:
    return str(counts if len(counts) <= 8 else counts[:8] + ["..."])
