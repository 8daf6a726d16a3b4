"""A comparison compares like with like: the same work in both traces, and a baseline that is dense.

A measured speedup means something only when both runs did the same steps of the same phases
with the same GEMMs, on the same GPU, with a baseline that ran no 2:4 kernel; :func:`check`
refuses anything else with one :class:`~.read.TraceError` naming both files. When both traces
carry operand shapes (:mod:`.shapes`), each GEMM's call (the outermost operator around it,
``aten::linear`` in both runs) must get the same operand shapes and types at the same place in
the same step; where they cannot be compared (no shapes, or a direct ``aten::_cslt_sparse_mm``
taking the compressed weight), :func:`check`'s note for the phase says so beside the speedups.
"""

from __future__ import annotations

import filecmp
import os

from ..._common.text import printable, show_path as _shown
from .validate import TraceError
from .shapes import describe


def check(tr, btr, phases, bphases: dict) -> dict:
    """Refuse to compare the :class:`~.read.Trace` ``tr`` with a baseline ``btr`` that did other work (see the
    module doc); when the runs match, ``{phase: shapes note}``."""
    shown, bshown = _shown(tr.path), _shown(btr.path)
    try:  # one file (a link, a second path), or the same bytes
        same = os.path.samefile(tr.path, btr.path) or (os.path.getsize(tr.path) == os.path.getsize(btr.path)
                                                       and filecmp.cmp(tr.path, btr.path, shallow=False))
    except OSError:
        same = False
    if same:
        raise TraceError(f"{bshown}: --compare got the same trace as FILE ({shown}); give the dense run of the same "
                         "steps as the baseline")
    if tr.device_name and btr.device_name and tr.device_name != btr.device_name:
        raise TraceError(f"{bshown}: the baseline was recorded on {btr.device_name}, the trace ({shown}) "
                         f"on {tr.device_name}: a speedup across two GPUs measures the GPUs, not 2:4; record "
                         "the dense run on the same GPU")
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
        mine, theirs = [st.gemms for st in ph.steps], [st.gemms for st in b.steps]
        if mine != theirs:
            k = next(i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y)
            raise TraceError(
                f"{bshown}: {name} step {k} ({ph.steps[k].name!r}) ran {mine[k]} GEMMs in the trace and {theirs[k]} in "
                f"the baseline (per step: {_short(mine)} against {_short(theirs)}): the runs did not do the same work, "
                "so their GEMM times are not comparable")
    return {name: _shapes(tr, btr, name, ph, bphases[name]) for name, ph in ours.items()}


def gpu_note(trace_path: str, base_path: str, devices) -> str:
    """What the comparison knows of the two GPUs, when either trace names none (``deviceProperties``); else ``""``.

    >>> gpu_note("s.json", "d.json", ("NVIDIA H200", None))
    'the baseline (d.json) names no GPU (no deviceProperties): the speedup assumes both runs used the same one'
    >>> gpu_note("s.json", "d.json", ("NVIDIA H200", "NVIDIA H200"))
    ''
    """
    if all(devices):
        return ""
    if not any(devices):
        which = "neither trace names its GPU"
    else:
        which = f"the trace ({_base(trace_path)}) names" if devices[1] else f"the baseline ({_base(base_path)}) names"
        which += " no GPU"
    return f"{which} (no deviceProperties): the speedup assumes both runs used the same one"


def _base(path: str) -> str:
    return printable(os.path.basename(path), 120)


def _shapes(tr, btr, name: str, ph, b) -> str:
    """Compare the operands of each GEMM's call, step by step; refuse the first mismatch, else describe what was compared."""
    if not (tr.has_shapes and btr.has_shapes):
        which = "neither trace carries them"
        if tr.has_shapes or btr.has_shapes:
            which = (f"the trace ({_base(tr.path)}) carries none" if btr.has_shapes
                     else f"the baseline ({_base(btr.path)}) carries none")
        return (f"not compared: {which} (recorded without torch.profiler.profile(record_shapes=True)); "
                "only the GEMM counts per step were checked")
    same = other_call = unknown = 0
    first_other = None
    for k, (st, bst) in enumerate(zip(ph.steps, b.steps)):
        for i, ((op, sig), (bop, bsig)) in enumerate(zip(st.gemm_ops, bst.gemm_ops)):
            if op is None or bop is None or sig is None or bsig is None:
                unknown += 1  # no operator launched it (a graph replay), or that operator has no shapes
            elif op != bop:
                other_call += 1
                first_other = first_other or (op, bop)
            elif sig != bsig:
                bshown = _shown(btr.path)
                raise TraceError(
                    f"{bshown}: {name} step {k} ({st.name!r}), GEMM {i + 1} of {len(st.gemm_ops)}: {op} got "
                    f"{describe(sig)} in the trace ({_shown(tr.path)}) and {describe(bsig)} in the baseline "
                    f"({bshown}): the runs did not do the same work, so their GEMM times are not comparable")
            else:
                same += 1
    total = same + other_call + unknown
    left = []
    if other_call:
        left.append(f"{other_call} called through different operators ({first_other[0]} in the trace, {first_other[1]} "
                    "in the baseline; a 2:4 operand is stored compressed)")
    if unknown:
        left.append(f"{unknown} launched by no operator (a CUDA-graph replay) or by one without shapes")
    if not same:  # nothing compared: said as plainly as a trace without shapes
        return f"not compared: {'; '.join(left) or 'no GEMM ran'}"
    matched = f"{same} of {total} GEMMs' calls match in shapes and types"
    return f"{matched}; not compared: {'; '.join(left)}" if left else matched


def _short(counts: list[int]) -> str:
    return str(counts if len(counts) <= 8 else counts[:8] + ["..."])
