"""After you ran it: which kernels did the matmul use? Proof from the profiler.

A weight's class tells you what *should* run; the profiler tells you what *did*. :func:`kernels`
runs a callable under ``torch.profiler`` and sorts every kernel (GPU) or operator (CPU) into one
of :data:`CLASSES` by its name (``_MARKERS``), with the time spent in each class. Names to know:
cuSPARSELt's ``sm80_xmma_sparse_gemm_...``, CUTLASS's ``spgemm`` (cutlass#103) and ``SparseGemm``
(pytorch PR #123458), recent cuBLAS's Hopper GEMMs ``nvjet_...`` (GindaChen/nsys-ai PR #582).
Convolutions are ``other`` although cuDNN runs them as GEMMs: PyTorch's 2:4 path serves linear
layers only.

Sparse markers are tested first: a sparse kernel name also contains ``gemm``. Kernel names
differ by GPU and library version, so treat a new name with care. On the CPU, time spent in an
operator is attributed to the sparse class of its outermost sparse ancestor, because a
``torch.sparse.mm`` does its work in child operators with dense-looking names.

>>> classify("sm80_xmma_sparse_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x64")
'sparse-cusparselt'
>>> classify("cutlass_tensorop_h16832spgemm_256x128_64x3_nn_align8")
'sparse-cutlass'
>>> classify("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_nn"), classify("aten::addmm")
('dense-gemm', 'dense-gemm')
>>> classify("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nchw_tilesize64x64x64")
'other'
"""

from __future__ import annotations

import contextlib
import functools
import html
from collections import defaultdict
from dataclasses import dataclass, field

import torch

from .._common.stderr import without_profiler_chatter
from .rules import cusparselt_version_str
from ..vocabulary import (DENSE, KERNEL_CLASSES, OTHER, SPARSE_CLASSES, SPARSE_CUSPARSELT, SPARSE_CUTLASS,
                                  SPARSE_GENERAL)

__all__ = [
    "CLASSES",
    "SPARSE_CLASSES",
    "NON_GEMM_MARKERS",
    "classify",
    "OpRecord",
    "KernelRow",
    "KernelReport",
    "summarize",
    "classify_records",
    "records_from_profiler",
    "kernels",
    "RecordedReport",
    "recorded_reports",
]

CLASSES: tuple[str, ...] = KERNEL_CLASSES

# Convolutions: cuDNN runs them as implicit GEMMs (sm80_xmma_fprop_implicit_gemm_..., dgrad, wgrad),
# yet PyTorch's 2:4 path serves linear layers only, so they are not eligible GEMMs.
_CONV_MARKERS = ("implicit_gemm", "implicit_convolve", "_fprop_", "_dgrad_", "_wgrad_", "convolve", "winograd",
                 "aten::conv", "aten::_conv", "aten::cudnn_conv", "aten::miopen_conv", "aten::mkldnn_conv",
                 "aten::slow_conv", "aten::thnn_conv", "cutlass::conv")
# Checked in this order; the first hit wins. Packing ops are not matmuls.
_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (OTHER, ("_cslt_compress", "_sparse_semi_structured_tile", "_sparse_semi_structured_apply") + _CONV_MARKERS),
    (SPARSE_CUSPARSELT, ("xmma_sparse_gemm", "sparse_gemm", "cusparselt", "_cslt_sparse_mm", "cslt_")),
    (SPARSE_CUTLASS, ("spgemm", "sparsegemm", "sparse_gemm_", "_sparse_semi_structured_mm", "_sparse_semi_structured_addmm", "semi_structured::cutlass_mm")),
    (
        SPARSE_GENERAL,
        ("aten::_sparse_mm", "aten::_sparse_addmm", "aten::_sparse_csr_mm", "aten::_sparse_csr_addmm",
         "aten::sspaddmm", "aten::_sparse_sparse_matmul", "aten::sparse_sampled_addmm", "aten::hspmm",
         "csrmm", "spmm", "coomm"),
    ),
    (
        DENSE,
        ("gemm", "gemv", "cublas", "cutlass", "xmma", "nvjet", "aten::mm", "aten::addmm", "aten::bmm",
         "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_scaled_mm", "aten::dot", "aten::mv"),
    ),
)
# Children that only a sparse (CSR/COO) operand produces: a dense-named matmul with one of these
# below it is running on a torch.sparse tensor.
_SPARSE_INDEX_OPS = frozenset(
    {"aten::crow_indices", "aten::col_indices", "aten::ccol_indices", "aten::row_indices", "aten::_indices", "aten::_nnz"}
)


# GPU kernels known to be neither a GEMM nor attention, by a piece of their name: copies, fills,
# element-wise, reduction and normalisation passes, PyTorch's and Triton's generic kernels. Two
# readers, one list: launched by a GEMM operator, such a kernel is a helper (a bias copy, a zero
# fill, a split-K reduction), not the GEMM; in a trace it is "other", not "unclassified".
NON_GEMM_MARKERS: tuple[str, ...] = (
    "at::native::", "c10::", "cub::", "memcpy", "memset", "copy", "fill", "elementwise", "reduce", "pad", "cat",
    "index", "transpose", "triton_poi", "triton_red", "triton_per", "softmax", "layer_norm", "layernorm", "rms_norm",
    "rmsnorm", "group_norm", "batch_norm", "rotary", "act_and_mul",
) + _CONV_MARKERS


def classify(name: str) -> str:
    """The class of one kernel or operator name: one of :data:`CLASSES`.

    >>> classify("void at::native::vectorized_elementwise_kernel<4>")
    'other'
    >>> classify("aten::_cslt_sparse_mm"), classify("aten::_sparse_mm")
    ('sparse-cusparselt', 'sparse-general')
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a kernel or operator name (str), got {type(name).__name__}")
    return _classify(name)


@functools.lru_cache(maxsize=1 << 16)
def _classify(name: str) -> str:
    # Cached: a trace repeats a few hundred names millions of times.
    low = name.lower()
    return next((cls for cls, markers in _MARKERS if any(m in low for m in markers)), OTHER)


@dataclass(frozen=True)
class OpRecord:
    """One profiled event, reduced to what classification needs.

    ``parent`` indexes, in the same list, the enclosing CPU operator of an operator, or the
    operator that launched a GPU kernel (None when unknown); ``device`` is ``"cpu"`` for
    operators and ``"cuda"`` for GPU kernels.
    """

    name: str
    device: str
    self_us: float
    parent: int | None = None


@dataclass(frozen=True)
class KernelRow:
    name: str
    cls: str
    device: str
    count: int
    time_us: float


@dataclass(frozen=True)
class KernelReport:
    """Kernels (GPU) or operators (CPU) that ran, classified, with time per class.

    ``device`` is ``"cuda"`` when GPU kernels were recorded (then the classes count kernel
    time only; CPU operators are listed but not added in), else ``"cpu"``.
    """

    rows: tuple[KernelRow, ...]
    device: str
    calls: int = 1
    time_us: dict = field(default_factory=dict)  # class -> microseconds on `device`, summed over calls

    @property
    def ran(self) -> tuple[str, ...]:
        """Classes with time on ``device``, most time first."""
        return tuple(c for c, t in sorted(self.time_us.items(), key=lambda kv: -kv[1]) if t > 0)

    @property
    def sparse_ran(self) -> bool:
        """True when a 2:4 sparse tensor-core kernel (cuSPARSELt or CUTLASS) ran."""
        return any(self.time_us.get(c, 0) > 0 for c in (SPARSE_CUSPARSELT, SPARSE_CUTLASS))

    @property
    def gemm_class(self) -> str | None:
        """The matmul class with the most time (sparse or dense), or None when no matmul ran."""
        gemms = [(t, c) for c, t in self.time_us.items() if c != OTHER and t > 0]
        return max(gemms)[1] if gemms else None

    def time_ms_per_call(self, cls: str) -> float:
        """Milliseconds per call of the profiled function spent in ``cls``."""
        if cls not in CLASSES:
            raise ValueError(f"cls must be one of {CLASSES}, got {cls!r}")
        return self.time_us.get(cls, 0.0) / 1000 / self.calls

    def _top(self, n: int) -> list[KernelRow]:
        """The ``n`` rows with the most time on the report's device."""
        return sorted((r for r in self.rows if r.device == self.device), key=lambda r: -r.time_us)[:n]

    def table(self, top: int = 8) -> str:
        """The ``top`` rows by time on the report's device, as text."""
        rows = self._top(top)
        width = min(max((len(r.name) for r in rows), default=4), 70)
        lines = [f"{'name':<{width}}  {'class':<17} {'calls':>5} {'ms/call':>9}"]
        for r in rows:
            name = r.name if len(r.name) <= width else r.name[: width - 3] + "..."
            lines.append(f"{name:<{width}}  {r.cls:<17} {r.count // self.calls:>5} {r.time_us / 1000 / self.calls:>9.3f}")
        return "\n".join(lines)

    def summary(self) -> str:
        parts = ", ".join(f"{c} {self.time_ms_per_call(c):.3f} ms" for c in self.ran)
        verdict = "a 2:4 sparse kernel ran" if self.sparse_ran else "no 2:4 sparse kernel ran"
        return f"{verdict} ({self.device}; per call: {parts or 'nothing recorded'})"

    def __str__(self) -> str:
        return self.summary() + "\n" + self.table()

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td><code>{html.escape(r.name[:90])}</code></td><td>{r.cls}</td>"
            f"<td>{r.count // self.calls}</td><td>{r.time_us / 1000 / self.calls:.3f}</td></tr>"
            for r in self._top(8)
        )
        return (
            f"<p><strong>{html.escape(self.summary())}</strong></p>"
            f"<table><thead><tr><th>name</th><th>class</th><th>calls</th><th>ms/call</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )


def classify_records(records) -> list[str]:
    """The class of every record, in order, by :func:`classify` and the context rules below.

    A GPU kernel launched by PyTorch's cuSPARSELt or CUTLASS 2:4 operator belongs to that
    backend whatever its name; an unfamiliar kernel launched straight from ``aten::mm`` is the
    GEMM itself unless its name says it is a helper; a CPU operator inside a sparse operator (or
    a dense-named matmul reading CSR/COO indices) takes the sparse class.

    >>> recs = [OpRecord("aten::_cslt_sparse_mm", "cpu", 5.0), OpRecord("sm90_xmma_gemm_f16_new", "cuda", 9.0, parent=0)]
    >>> classify_records(recs)
    ['sparse-cusparselt', 'sparse-cusparselt']
    """
    records = list(records)
    own = [classify(r.name) for r in records]
    children: dict[int, set[str]] = defaultdict(set)
    for r in records:
        if r.parent is not None:
            children[r.parent].add(r.name)
    for i, r in enumerate(records):
        if r.device == "cpu" and own[i] == DENSE and children[i] & _SPARSE_INDEX_OPS:
            own[i] = SPARSE_GENERAL
    # A dense-named wrapper (aten::matmul -> aten::mm) around a sparse operator is sparse too.
    # Children are recorded after their parents, so one backward pass carries it to the top.
    for i in reversed(range(len(records))):
        j = records[i].parent
        if j is not None and records[i].device == "cpu" and own[i] in SPARSE_CLASSES and own[j] == DENSE:
            own[j] = own[i]

    def effective(i: int) -> str:
        j = records[i].parent
        if records[i].device != "cpu":
            # A kernel's parent launched it; library kernel names change between versions.
            if j is not None and own[i] != OTHER and own[j] in (SPARSE_CUSPARSELT, SPARSE_CUTLASS):
                return own[j]
            low = records[i].name.lower()
            if j is not None and own[i] == OTHER and own[j] == DENSE and not any(h in low for h in NON_GEMM_MARKERS):
                return DENSE
            return own[i]
        inherited = None
        while j is not None:  # the outermost sparse ancestor decides
            if own[j] in SPARSE_CLASSES:
                inherited = own[j]
            j = records[j].parent
        return inherited or own[i]

    return [effective(i) for i in range(len(records))]


def summarize(records, *, calls: int = 1) -> KernelReport:
    """Classify profiled events (:func:`classify_records`) and add up time per class.

    >>> recs = [OpRecord("aten::linear", "cpu", 5.0), OpRecord("aten::addmm", "cpu", 95.0, parent=0)]
    >>> summarize(recs).time_us
    {'dense-gemm': 100.0}
    """
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1:
        raise ValueError(f"calls must be a positive int (how many calls the records cover), got {calls!r}")
    records = list(records)
    classes = classify_records(records)
    device = "cuda" if any(r.device == "cuda" for r in records) else "cpu"
    grouped: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    totals: dict[str, float] = defaultdict(float)
    for r, cls in zip(records, classes):
        grouped[(r.name, cls, r.device)].append(r.self_us)
        if r.device == device:
            totals[cls] += r.self_us
    rows = tuple(
        KernelRow(name, cls, dev, len(times), float(sum(times))) for (name, cls, dev), times in grouped.items()
    )
    return KernelReport(rows=rows, device=device, calls=calls, time_us={c: float(totals[c]) for c in CLASSES if c in totals})


def records_from_profiler(prof) -> list[OpRecord]:
    """:class:`OpRecord` list from a finished ``torch.profiler.profile``."""
    events = list(prof.events())
    cpu = torch.autograd.DeviceType.CPU
    by_object = {id(e): i for i, e in enumerate(events)}
    # A kernel carries the id of the operator that launched it as its linked correlation id.
    by_op_id = {e.id: i for i, e in enumerate(events) if e.device_type == cpu}
    out = []
    for e in events:
        is_cpu = e.device_type == cpu
        if is_cpu:  # no cpu_parent: id(None) is no event's
            parent = by_object.get(id(getattr(e, "cpu_parent", None)))
        else:
            parent = by_op_id.get(getattr(e, "linked_correlation_id", 0) or -1)
        self_us = e.self_cpu_time_total if is_cpu else e.self_device_time_total
        out.append(OpRecord(name=e.name, device="cpu" if is_cpu else "cuda", self_us=float(self_us), parent=parent))
    return out


def kernels(fn, *args, warmup: int = 1, calls: int = 1, **kwargs) -> KernelReport:
    """Run ``fn(*args, **kwargs)`` under the profiler and classify what ran.

    Args:
        fn: any callable, e.g. ``lambda: layer(x)``.
        warmup: unprofiled calls first (library initialisation, cuSPARSELt plan caches,
            CPU thread pools), so the profile shows the steady state.
        calls: profiled calls; times in the report are summed, ``time_ms_per_call`` divides.

    >>> import torch
    >>> W, x = torch.randn(64, 128), torch.randn(32, 128)
    >>> report = kernels(torch.nn.functional.linear, x, W)
    >>> report.gemm_class, report.sparse_ran
    ('dense-gemm', False)
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, e.g. lambda: layer(x); got {type(fn).__name__}")
    prof = profile_calls(lambda: fn(*args, **kwargs), calls, warmup)
    return summarize(records_from_profiler(prof), calls=calls)


def profile_calls(fn, calls: int, warmup: int, *, calls_name: str = "calls", step_name: str | None = None):
    """The finished ``torch.profiler.profile`` of ``calls`` calls of ``fn()`` after ``warmup`` unprofiled ones.

    GPU kernels are recorded when CUDA is available; with ``step_name`` each call runs inside
    ``record_function(f"{step_name}_{i}")``. ``calls_name`` is what an error calls ``calls``.
    """
    for arg, value, low in ((calls_name, calls, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{arg} must be an int >= {low}, got {value!r}")
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = torch.cuda.is_available()
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    with without_profiler_chatter():
        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
            for i in range(calls):
                with record_function(f"{step_name}_{i}") if step_name else contextlib.nullcontext():
                    fn()
            if cuda:
                torch.cuda.synchronize()
    return prof


# ------------------------------------------------------------------------------------------
# Kernel tables recorded on a GPU (make gpu-check), so a CPU-only reader sees real names


@dataclass(frozen=True)
class RecordedReport:
    """One profiled call recorded on a GPU: the case, its :class:`KernelReport`, where it ran."""

    M: int
    N: int
    K: int
    dtype: str
    weight: str  # "dense tensor (2:4 zeros)" or "to_sparse_semi_structured"
    report: KernelReport
    provenance: dict

    @property
    def where(self) -> str:
        p = self.provenance
        return (f"{p.get('gpu_name')}, torch {p.get('torch')}, cuSPARSELt {cusparselt_version_str(p.get('cusparselt'))}, "
                f"{str(p.get('date', ''))[:10]}")


_ROW = {
    "type": "object",
    "required": ["name", "class", "device", "count", "time_us"],
    "properties": {"name": {"type": "string"}, "class": {"enum": list(CLASSES)}, "device": {"type": "string"},
                   "count": {"type": "integer", "minimum": 0}, "time_us": {"type": "number", "minimum": 0}},
}
# A kernel table file (``scripts/gpu_measure.py kernels`` writes them), as recorded_reports reads it.
KERNEL_TABLE_SCHEMA = {
    "type": "object",
    "required": ["schema", "provenance", "cases"],
    "properties": {
        "schema": {"const": "twofour-kernels/1"},
        "provenance": {"type": "object"},
        "probe": {"type": "array", "items": {"type": "array"}},
        "cases": {"type": "array", "items": {
            "type": "object",
            "required": ["M", "N", "K", "dtype", "weight", "device", "calls", "time_us", "rows"],
            "properties": {
                "M": {"type": "integer", "minimum": 1}, "N": {"type": "integer", "minimum": 1},
                "K": {"type": "integer", "minimum": 1}, "calls": {"type": "integer", "minimum": 1},
                "time_us": {"type": "object", "additionalProperties": {"type": "number"}},
                "rows": {"type": "array", "items": _ROW},
            },
        }},
    },
}


def recorded_reports(folder=None) -> list[RecordedReport]:
    """Kernel tables shipped in ``twofour/data/kernels-*.json`` (written by ``scripts/gpu_measure.py kernels``).

    Returns an empty list when none are recorded; a caller must then say so.

    >>> recs = recorded_reports()
    >>> all(r.report.device == "cuda" for r in recs)
    True
    >>> any(r.report.sparse_ran for r in recs) and any(not r.report.sparse_ran for r in recs)
    True
    """
    from pathlib import Path

    from .._common.jsonfile import read_json

    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent.parent / "data"
    out = []
    for path in sorted(folder.glob("kernels-*.json")):
        data = read_json(path, "kernel table file", schema=KERNEL_TABLE_SCHEMA)
        for case in data.get("cases", []):
            rows = tuple(KernelRow(r["name"], r["class"], r["device"], int(r["count"]), float(r["time_us"])) for r in case["rows"])
            report = KernelReport(rows=rows, device=case["device"], calls=int(case["calls"]),
                                  time_us={k: float(v) for k, v in case["time_us"].items()})
            out.append(RecordedReport(case["M"], case["N"], case["K"], case["dtype"], case["weight"], report,
                                      data["provenance"]))
    return out

