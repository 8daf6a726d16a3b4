"""Read a profiler trace someone recorded and measure where the promised 2x went.

:func:`~twofour.dispatch.kernels.kernels` profiles a call you make here. This module reads a
trace recorded anywhere (your serving box, a colleague's GPU) with ``torch.profiler`` and
``prof.export_chrome_trace(path)``, gzipped or not, and measures, per step (the
``ProfilerStep#N`` / ``decode_step_i`` / ``prefill`` annotations) and per phase:

* **GPU busy vs idle.** The step's window runs from its start on the CPU (or the end of the
  previous step's GPU work, if later) to the end of its last GPU activity. Idle time is split
  into gaps; each gap is charged to the innermost CPU operator that covers at least half of it
  (the "CPU ops running during it"), and called *set-up* when that operator launches the
  kernel that ends the gap: the GPU waited while the CPU prepared the next kernel.
* **Time by class.** Every GPU kernel (or, in a CPU-only trace, every operator's self time) is
  sorted into 2:4 GEMM by backend (cuSPARSELt, CUTLASS), CSR/COO sparse matmul, dense GEMM,
  attention, other, or *unclassified*: a name no rule knows is listed with its time, never
  guessed. Rules: :func:`~twofour.dispatch.kernels.classify` (with its context rules,
  :func:`~twofour.dispatch.kernels.classify_records`), plus the attention kernels PyTorch's
  SDPA backends launch (``pytorch_flash::flash_fwd_kernel``, ``fmha_cutlassF_...``, cuDNN's
  ``cudnn_generated_fort_native_sdpa_...``) and anything launched inside an attention operator.
* **The eligible share p**: GEMM time (2:4 and dense, outside attention) over step time, the
  ``p`` of Amdahl's law; with a dense baseline (``baseline=``), the measured GEMM speedup and
  end-to-end speedup, and the funnel (:mod:`twofour.funnel`'s stages) with each stage marked
  measured, predicted or data sheet.

Reading is streaming (:mod:`._jsonstream`): a 1 GB trace never sits in memory as text; each
kept event becomes a few numbers in compact arrays (about 45 bytes an event). Nsight Systems
exports are not read (an SQLite file gets a clear error); export a PyTorch profiler trace.

Phases are read from annotation names: ``prefill`` or ``decode`` anywhere in a
``record_function`` name marks a step of that phase (the innermost such annotations are the
steps); otherwise ``ProfilerStep#N`` steps; otherwise the whole trace is one step. When a phase
has three steps or more, its first step is left out of the summary (warm-up, lazy
initialisation, the profiler's own buffers); the per-step table shows every step.

>>> report = analyze(recorded("sparse-eager"), baseline=recorded("dense-eager"))
>>> ph = report.phase("decode")
>>> ph.sparse_gemms, ph.gemms, ph.sparse_backends
(42, 42, ('cuSPARSELt',))
>>> ph.idle_fraction > 0.9, ph.culprit
(True, 'aten::_cslt_sparse_mm')
>>> ph.comparison.end_to_end < 0.1      # 2:4 eager decode: 10x slower than dense here
True
"""

from __future__ import annotations

import functools
import gzip
import html
import math
import os
import re
import stat
import sys
from array import array
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._common.text import printable
from ..amdahl import max_speedup, speedup
from .kernels import DENSE, OTHER, SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, OpRecord, classify_records
from ._jsonstream import ChromeTraceStream, StreamError

__all__ = [
    "TraceError",
    "Trace",
    "load",
    "record",
    "recorded",
    "RECORDED",
    "TRACE_CLASSES",
    "ELIGIBLE",
    "trace_class",
    "Gap",
    "StepStats",
    "Comparison",
    "Stage",
    "PhaseReport",
    "TraceReport",
    "analyze",
]

# --- event kinds kept from a trace ------------------------------------------------------------
OP, ANNOTATION, GPU_ANNOTATION, KERNEL, MEMCPY, MEMSET, RUNTIME, OVERHEAD = range(8)
KIND_NAMES = ("cpu_op", "user_annotation", "gpu_user_annotation", "kernel", "gpu_memcpy", "gpu_memset", "runtime", "overhead")
# Kineto's categories (torch >= 1.10), and the older names some exports still carry.
_CATEGORIES = {
    "cpu_op": OP, "operator": OP,
    "user_annotation": ANNOTATION,
    "gpu_user_annotation": GPU_ANNOTATION,
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY, "memcpy": MEMCPY,
    "gpu_memset": MEMSET, "memset": MEMSET,
    "cuda_runtime": RUNTIME, "cuda_driver": RUNTIME, "runtime": RUNTIME,
    "overhead": OVERHEAD,
}
_GPU_KINDS = (KERNEL, MEMCPY, MEMSET)

# --- classes -------------------------------------------------------------------------------------
ATTENTION, UNCLASSIFIED = "attention", "unclassified"
TRACE_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE, ATTENTION, OTHER, UNCLASSIFIED)
ELIGIBLE: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE)
LABELS = {
    SPARSE_CUSPARSELT: "2:4 GEMM, cuSPARSELt",
    SPARSE_CUTLASS: "2:4 GEMM, CUTLASS",
    SPARSE_GENERAL: "CSR/COO sparse matmul",
    DENSE: "dense GEMM",
    ATTENTION: "attention",
    OTHER: "other",
    UNCLASSIFIED: "unclassified",
}
_BACKEND = {SPARSE_CUSPARSELT: "cuSPARSELt", SPARSE_CUTLASS: "CUTLASS"}

# Attention: PyTorch's SDPA kernels (flash: pytorch_flash::flash_fwd_kernel; memory-efficient:
# fmha_cutlassF_*; cuDNN: cudnn_generated_fort_native_sdpa_*), FlashAttention's flash::, and
# FlashInfer's BatchPrefill/BatchDecode kernels; on the CPU the aten SDPA operators. Checked
# before the GEMM markers, because "fmha_cutlassF" contains "cutlass".
_ATTENTION_MARKERS = ("attention", "pytorch_flash::", "flash::", "flash_fwd", "flash_bwd", "fmha", "sdpa",
                      "batchprefill", "batchdecode")
# Names known to be neither GEMM nor attention. Anything else that no rule claims is
# "unclassified": listed with its time, never guessed.
_KNOWN_OTHER_GPU = ("at::native::", "c10::", "memcpy", "memset", "elementwise", "reduce_kernel", "catarraybatchedcopy",
                    "splitkreduce", "cub::", "triton_poi", "triton_red", "triton_per", "softmax", "layer_norm",
                    "layernorm", "rms_norm", "rmsnorm", "group_norm", "batch_norm", "rotary", "act_and_mul")
_KNOWN_OTHER_CPU_PREFIXES = ("aten::", "prim::", "profiler::", "c10d::", "autograd::", "torch::", "cuda",
                             "PythonSubclass", "Optimizer.", "enumerate(DataLoader)", "ProfilerStep#")

_STEP_RE = re.compile(r"^ProfilerStep#\d+$")
_RUNTIME_RE = re.compile(r"^(cuda|cu[A-Z]|hip)")
_PHASE_RE = re.compile(r"prefill|decode", re.IGNORECASE)

_DATA = Path(__file__).resolve().parent.parent / "data" / "traces"
RECORDED = {
    f"{weights}-{how}": f"h200-20261130-trace-{weights}-{how}.json.gz"
    for weights in ("dense", "sparse")
    for how in ("eager", "graph")
}


class TraceError(ValueError):
    """The file is not a usable trace, or the question cannot be answered from it (one sentence)."""


def recorded(name: str) -> Path:
    """Path of a trace shipped with the package (recorded on an NVIDIA H200).

    3 decode steps (``record_function("decode_step_i")``) of the 7 linear layers of two
    Llama-3-8B blocks at M = 16 tokens, fp16, torch 2.11 with cuSPARSELt 0.8.0:
    ``dense-eager``, ``sparse-eager`` (``to_sparse_semi_structured`` weights), ``dense-graph``
    and ``sparse-graph`` (CUDA-graph replay). Made by ``scripts/gpu_measure.py traces``.

    >>> recorded("sparse-eager").name
    'h200-20261130-trace-sparse-eager.json.gz'
    """
    if name not in RECORDED:
        raise ValueError(f"name must be one of {sorted(RECORDED)}, got {name!r}")
    return _DATA / RECORDED[name]


def _has_marker(low: str, markers) -> bool:
    return any(m in low for m in markers)


@functools.lru_cache(maxsize=1 << 16)
def _is_attention_op(name: str) -> bool:
    """An operator whose kernels (and child operators) are attention: SDPA and friends."""
    return _has_marker(name.lower(), ("attention", "sdpa", "flash"))


def trace_class(name: str, base: str, *, device: str = "cuda", in_attention: bool = False) -> str:
    """The class of one event in a trace report, from its name and its class by ``classify_records``.

    ``in_attention`` is True when the event runs inside an attention operator (a kernel launched
    by one, an operator nested in one). 2:4 classes always win; a name nobody recognises is
    ``"unclassified"``.

    >>> trace_class("fmha_cutlassF_f16_aligned_64x128_rf_sm80", "dense-gemm")
    'attention'
    >>> trace_class("my_fused_thing_kernel", "other"), trace_class("Memset (Device)", "other")
    ('unclassified', 'other')
    """
    return _trace_class(name, base, device, in_attention)


@functools.lru_cache(maxsize=1 << 16)
def _trace_class(name: str, base: str, device: str, in_attention: bool) -> str:
    if base in (SPARSE_CUSPARSELT, SPARSE_CUTLASS):
        return base
    low = name.lower()
    if in_attention or _has_marker(low, _ATTENTION_MARKERS):
        return ATTENTION
    if base != OTHER:
        return base
    if device == "cpu":
        known = name.startswith(_KNOWN_OTHER_CPU_PREFIXES)
    else:
        known = _has_marker(low, _KNOWN_OTHER_GPU)
    return OTHER if known else UNCLASSIFIED


# =================================================================================================
# Loading


@dataclass
class Trace:
    """The events of one trace that the analysis needs, as compact columns.

    One row per kept event (CPU operators, annotations, GPU kernels, memcpy/memset, CUDA
    runtime calls, profiler overhead); ``names[name[i]]`` is its name, ``ts``/``dur`` are
    microseconds, ``thread[i]`` indexes ``threads`` (``(pid, tid)``), ``ext`` / ``corr`` are the
    profiler's "External id" and "correlation" (-1 when absent).
    """

    path: str
    meta: dict
    names: list
    threads: list
    kind: np.ndarray
    name: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    thread: np.ndarray
    ext: np.ndarray
    corr: np.ndarray
    n_read: int = 0  # every element of traceEvents, kept or not
    size_bytes: int = 0

    def __len__(self) -> int:
        return len(self.kind)

    def count(self, kind: str) -> int:
        """How many events of one kind (``"kernel"``, ``"cpu_op"``, ...) were kept."""
        return int((self.kind == KIND_NAMES.index(kind)).sum())

    @property
    def has_gpu(self) -> bool:
        """True when GPU activity (kernels, memcpy, memset) was recorded."""
        return bool(np.isin(self.kind, _GPU_KINDS).any())

    @property
    def device_name(self) -> str | None:
        """The GPU named in the trace's ``deviceProperties`` (None for a CPU trace)."""
        props = self.meta.get("deviceProperties") or []
        names = sorted({printable(p.get("name"), limit=80) for p in props if isinstance(p, dict) and p.get("name")})
        return ", ".join(names) or None

    def __repr__(self) -> str:
        what = f"GPU trace on {self.device_name or 'a GPU'}" if self.has_gpu else "CPU trace"
        return (f"Trace({os.path.basename(self.path)!r}: {what}, {self.count('kernel'):,} kernels, "
                f"{self.count('cpu_op'):,} CPU operators, {len(self):,} events kept of {self.n_read:,})")


def _shown(path) -> str:
    """A path as it is safe to print in an error (a file name can hold escape sequences)."""
    return printable(os.fspath(path), 200)


def _open(path: Path):
    """Binary file object over the (un-gzipped) content, and the raw file for progress."""
    raw = open(path, "rb")
    head = raw.read(16)
    raw.seek(0)
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    if head.startswith(b"SQLite format 3"):
        raw.close()
        raise TraceError(
            f"{_shown(path)}: an SQLite database (an Nsight Systems export?); twofour trace reads PyTorch profiler traces: "
            "record with torch.profiler and save with prof.export_chrome_trace('trace.json')"
        )
    return raw, raw


def _column(a: array, dtype) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def load(path, *, progress: bool | None = None) -> Trace:
    """Read a PyTorch profiler trace (Chrome-trace JSON, optionally gzipped), streaming.

    Args:
        path: the file ``prof.export_chrome_trace(path)`` wrote (``.json`` or ``.json.gz``;
            gzip is recognised by its content, not its name).
        progress: show a progress bar on stderr; default: for files over 64 MB when stderr
            is a terminal.

    Raises:
        TraceError: one sentence naming the file and what is wrong (missing, empty, not JSON,
            JSON but not a trace, truncated).

    >>> t = load(recorded("dense-graph"))
    >>> t.device_name, t.count("kernel"), t.has_gpu
    ('NVIDIA H200', 72, True)
    """
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TraceError(f"{_shown(path)}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{_shown(path)}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceError(f"{_shown(path)}: is a folder; give the trace file itself")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block or have effects when read
        raise TraceError(f"{_shown(path)}: is not a regular file (a pipe, device or socket); save the trace to a file first")
    size = st.st_size
    if size == 0:
        raise TraceError(f"{_shown(path)}: the file is empty (0 bytes)")
    f, raw = _open(path)
    bar = None
    if progress or (progress is None and size > (64 << 20) and sys.stderr.isatty()):
        from tqdm import tqdm

        bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", file=sys.stderr, leave=False)
    last = [0]

    def on_read():
        if bar is not None:
            now = raw.tell()
            bar.update(now - last[0])
            last[0] = now

    names: dict[str, int] = {}
    threads: dict[tuple, int] = {}
    kind, name_col, thread_col = array("b"), array("i"), array("i")
    ts_col, dur_col, ext_col, corr_col = array("d"), array("d"), array("q"), array("q")
    stream = ChromeTraceStream(f, on_read=on_read)
    categories = _CATEGORIES
    kind_append, name_append, thread_append = kind.append, name_col.append, thread_col.append
    ts_append, dur_append, ext_append, corr_append = ts_col.append, dur_col.append, ext_col.append, corr_col.append
    try:
        with f:
            for ev in stream.events():
                if type(ev) is not dict:
                    raise TraceError(f"{_shown(path)}: event {stream.n_events - 1:,} of traceEvents is not an object: not a profiler trace")
                if ev.get("ph") != "X":
                    continue
                cat = ev.get("cat")
                k = categories.get(cat) if type(cat) is str else None
                if k is None:
                    k = categories.get(cat.lower()) if type(cat) is str else None
                    if k is None:
                        continue
                ts, dur = ev.get("ts"), ev.get("dur", 0.0)
                if type(ts) not in (float, int) or type(dur) not in (float, int):
                    continue  # an event without a usable time cannot be placed
                nm = ev.get("name")
                i = names.get(nm)
                if i is None:
                    nm = nm if type(nm) is str else str(nm)
                    i = names.setdefault(nm, len(names))
                key = (ev.get("pid"), ev.get("tid"))
                t = threads.get(key)
                if t is None:
                    t = threads[key] = len(threads)
                args = ev.get("args")
                if type(args) is dict:
                    e = args.get("External id", -1)
                    c = args.get("correlation", -1)
                    if type(e) is not int:
                        e = -1
                    if type(c) is not int:
                        c = -1
                else:
                    e = c = -1
                kind_append(k)
                name_append(i)
                thread_append(t)
                ts_append(ts)
                dur_append(dur if dur > 0 else 0.0)
                ext_append(e)
                corr_append(c)
    except StreamError as exc:
        raise TraceError(f"{_shown(path)}: {exc}") from None
    finally:
        if bar is not None:
            bar.close()
        raw.close()
    return Trace(
        # every name reaches a terminal or a page through the report: keep it escaped (a trace
        # file cannot write escape sequences or forge report lines)
        path=str(path), meta=stream.meta, names=[printable(n, limit=400) for n in names], threads=list(threads),
        # Views on the arrays' own buffers: no copy, so the columns are held once.
        kind=_column(kind, np.int8), name=_column(name_col, np.int32), ts=_column(ts_col, np.float64),
        dur=_column(dur_col, np.float64), thread=_column(thread_col, np.int32), ext=_column(ext_col, np.int64),
        corr=_column(corr_col, np.int64), n_read=stream.n_events, size_bytes=size,
    )


def record(fn, path=None, *, steps: int = 4, name: str = "decode_step", warmup: int = 1) -> Path:
    """Profile ``fn()`` once per step and save the trace: a file for :func:`analyze` or ``twofour trace``.

    Equivalent to the usual recipe, which is what to run on your own serving code::

        with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(steps):
                with torch.profiler.record_function(f"decode_step_{i}"):
                    fn()
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)

    GPU kernels are recorded when CUDA is available. ``name`` should say the phase
    (``decode_step`` or ``prefill``) so the report can tell phases apart.

    >>> import torch
    >>> W, x = torch.randn(64, 128), torch.randn(8, 128)
    >>> path = record(lambda: torch.nn.functional.linear(x, W), steps=3)
    >>> analyze(path).phase("decode").gemms
    3
    """
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from .kernels import _without_profiler_chatter

    if not callable(fn):
        raise TypeError(f"fn must be callable (one step, e.g. lambda: model(tokens)), got {type(fn).__name__}")
    for arg, value, low in (("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{arg} must be an int >= {low}, got {value!r}")
    if path is None:
        fd, path = tempfile.mkstemp(prefix="twofour-trace-", suffix=".json")
        os.close(fd)
    path = Path(path)
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    with _without_profiler_chatter():
        with profile(activities=activities) as prof:
            for i in range(steps):
                with record_function(f"{name}_{i}"):
                    fn()
            if cuda:
                torch.cuda.synchronize()
        prof.export_chrome_trace(str(path))
    return path


# =================================================================================================
# Report objects


@dataclass(frozen=True)
class Gap:
    """One stretch of GPU idle time inside a step.

    ``at_us`` is measured from the step's start. ``during`` is the stack of CPU operators (outer
    to inner) on the launching thread at the gap's middle, down to the innermost one covering at
    least half the gap (empty when none does); ``culprit`` is that innermost one, or a phrase;
    ``setup`` is True when that operator launched the kernel that ends the gap.
    """

    step: str
    at_us: float
    dur_us: float
    culprit: str
    during: tuple[str, ...]
    setup: bool
    next_kernel: str | None


@dataclass(frozen=True)
class StepStats:
    """One step: its wall time, GPU busy time (None in a CPU trace) and time by class."""

    name: str
    phase: str
    start_us: float
    wall_us: float
    busy_us: float | None
    time_us: dict
    gemms: int
    sparse_gemms: int
    outside_ops_us: float | None = None  # CPU traces: step time outside any operator

    @property
    def gemm_us(self) -> float:
        return sum(self.time_us.get(c, 0.0) for c in ELIGIBLE)

    @property
    def p(self) -> float:
        """Eligible share: GEMM time / step time."""
        return self.gemm_us / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def idle_fraction(self) -> float | None:
        return None if self.busy_us is None else max(0.0, 1.0 - self.busy_us / self.wall_us) if self.wall_us > 0 else 0.0


@dataclass(frozen=True)
class Comparison:
    """2:4 run against its dense baseline, per summarized step of one phase (means)."""

    baseline_path: str
    dense_wall_us: float
    sparse_wall_us: float
    dense_gemm_us: float
    sparse_gemm_us: float
    dense_p: float
    dense_idle_fraction: float | None
    baseline_sparse_gemms: int

    @property
    def gemm_speedup(self) -> float:
        return self.dense_gemm_us / self.sparse_gemm_us if self.sparse_gemm_us > 0 else math.nan

    @property
    def end_to_end(self) -> float:
        return self.dense_wall_us / self.sparse_wall_us if self.sparse_wall_us > 0 else math.nan

    @property
    def amdahl(self) -> float:
        """What the GEMM speedup alone gives end to end at the dense run's p (Amdahl)."""
        s = self.gemm_speedup
        return speedup(min(self.dense_p, 1.0), s) if s > 0 and math.isfinite(s) else math.nan


@dataclass(frozen=True)
class Stage:
    """One funnel stage, marked ``"data sheet"``, ``"predicted"`` or ``"measured"``."""

    key: str
    label: str
    speedup: float
    how: str
    note: str


@dataclass
class PhaseReport:
    """Everything measured for one phase (prefill, decode, step or the whole trace)."""

    phase: str
    device: str  # "cuda" or "cpu"
    steps: list
    summarized: list  # indices into steps
    culprits: dict = field(default_factory=dict)  # label -> idle us over summarized steps
    setup_us: dict = field(default_factory=dict)  # label -> idle us where it was set-up
    largest_gaps: list = field(default_factory=list)
    unclassified: dict = field(default_factory=dict)  # name -> us over summarized steps
    kernel_table: dict = field(default_factory=dict)  # (name, class) -> [count, us] over summarized steps
    dtype_bits: int = 16
    comparison: Comparison | None = None
    all_gemms: int = 0
    all_sparse_gemms: int = 0
    all_backends: tuple = ()

    # -- sums over the summarized steps --
    def _sum(self, attr) -> float:
        return sum(getattr(self.steps[i], attr) or 0.0 for i in self.summarized)

    @property
    def n(self) -> int:
        return len(self.summarized)

    @property
    def wall_us(self) -> float:
        """Mean wall time of a summarized step (us)."""
        return self._sum("wall_us") / self.n

    @property
    def busy_us(self) -> float | None:
        return None if self.device == "cpu" else self._sum("busy_us") / self.n

    @property
    def time_us(self) -> dict:
        """Mean time per summarized step by class (us)."""
        out: dict[str, float] = defaultdict(float)
        for i in self.summarized:
            for c, t in self.steps[i].time_us.items():
                out[c] += t / self.n
        return {c: out[c] for c in TRACE_CLASSES if c in out}

    @property
    def gemm_us(self) -> float:
        return sum(self.time_us.get(c, 0.0) for c in ELIGIBLE)

    @property
    def p(self) -> float:
        """Measured eligible share: GEMM time / step time over the summarized steps."""
        return self.gemm_us / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def idle_fraction(self) -> float | None:
        if self.device == "cpu":
            return None
        return max(0.0, 1.0 - self.busy_us / self.wall_us) if self.wall_us > 0 else 0.0

    @property
    def outside_ops_fraction(self) -> float | None:
        if self.device != "cpu":
            return None
        return self._sum("outside_ops_us") / self.n / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def gemms(self) -> int:
        """GEMMs in all steps of the phase (a split-K GEMM's reduction kernel is not counted)."""
        return self.all_gemms

    @property
    def sparse_gemms(self) -> int:
        """2:4 GEMMs (cuSPARSELt or CUTLASS) in all steps of the phase."""
        return self.all_sparse_gemms

    @property
    def sparse_backends(self) -> tuple[str, ...]:
        return self.all_backends

    @property
    def idle_us(self) -> float:
        return sum(self.culprits.values())

    @property
    def culprit(self) -> str | None:
        """The CPU operator (or phrase) charged with the most idle GPU time, or None."""
        return max(self.culprits, key=self.culprits.get) if self.culprits else None

    @property
    def culprit_share(self) -> float:
        return self.culprits[self.culprit] / self.idle_us if self.culprit and self.idle_us > 0 else 0.0

    @property
    def step_names(self) -> str:
        names = [self.steps[i].name for i in self.summarized]
        return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}" if len(names) > 2 else " and ".join(names)

    # -- funnel and verdicts --
    @property
    def ceiling(self) -> float:
        """Roofline ceiling of the 2:4 GEMM: bytes-bound decode gets 1 / packed ratio, else 2x."""
        from ..packing import packed_ratio

        if self.phase == "decode":
            return 1.0 / packed_ratio(8 if self.dtype_bits == 8 else 16)
        return 2.0

    def funnel(self) -> list[Stage]:
        """The funnel for this phase, each stage marked how it was obtained.

        Stages follow :func:`twofour.funnel.funnel`: data sheet, roofline ceiling, 2:4 GEMM,
        eligible fraction (Amdahl over the step with p and the GEMM speedup), end to end.
        """
        cmp = self.comparison
        bits = "8-bit" if self.dtype_bits == 8 else "16-bit"
        if self.phase == "decode":
            ceiling_note = f"decode GEMMs are bytes-bound: 1 / packed ratio of {bits} weights"
        elif self.phase == "prefill":
            ceiling_note = "prefill GEMMs are compute-bound: the full 2x"
        else:
            ceiling_note = "phase not annotated: the compute-bound 2x (a decode step is capped at 1.78x)"
        stages = [
            Stage("datasheet", "data sheet", 2.0, "data sheet", "peak 2:4 over peak dense tensor-core FLOP/s"),
            Stage("roofline_ceiling", "roofline ceiling", self.ceiling, "predicted", ceiling_note),
        ]
        if cmp is not None and math.isfinite(cmp.gemm_speedup):
            s, p = cmp.gemm_speedup, min(cmp.dense_p, 1.0)
            stages.append(Stage("kernel", "2:4 GEMM", s, "measured",
                                f"dense {_ms(cmp.dense_gemm_us)} / 2:4 {_ms(cmp.sparse_gemm_us)} of GEMM per step"))
            stages.append(Stage("eligible_fraction", "eligible fraction", speedup(p, s), "measured",
                                f"Amdahl with measured p = {p:.2f} (dense run) and s = {s:.2f}"))
            stages.append(Stage("request", "end to end", cmp.end_to_end, "measured",
                                f"dense {_ms(cmp.dense_wall_us)} / 2:4 {_ms(cmp.sparse_wall_us)} per step"))
        else:
            s, p = self.ceiling, min(self.p, 1.0)
            stages.append(Stage("kernel", "2:4 GEMM", s, "predicted",
                                "not measured: assumed at the ceiling (give a dense baseline to measure it)"))
            e = speedup(p, s)
            stages.append(Stage("eligible_fraction", "eligible fraction", e, "predicted",
                                f"Amdahl with p = {p:.2f} measured in this trace"))
            stages.append(Stage("request", "end to end", e, "predicted",
                                "assumes host time and the rest of the step unchanged"))
        return stages

    def verdicts(self) -> list[str]:
        """The findings in words, most important first."""
        out = []
        steps_word = f"{len(self.steps)} step{'s' if len(self.steps) != 1 else ''}"
        if self.gemms == 0:
            out.append(f"no GEMM ran in the {steps_word}: nothing here for 2:4 to speed up")
        elif self.sparse_gemms == 0:
            why = (" (a CPU trace: sparse tensor cores exist only on NVIDIA GPUs)" if self.device == "cpu"
                   else ": if this was meant to be the 2:4 run, dispatch failed and the weights ran the dense path "
                   "(check them with `twofour audit`)")
            out.append(f"2:4 kernels ran: 0 of {self.gemms} GEMMs{why}")
        else:
            backends = " and ".join(self.sparse_backends)
            rest = "" if self.sparse_gemms == self.gemms else f"; the other {self.gemms - self.sparse_gemms} ran dense"
            out.append(f"2:4 kernels ran: {self.sparse_gemms} of {self.gemms} GEMMs ({backends}){rest}")
        idle = self.idle_fraction
        if idle is not None and idle >= 0.1:
            out.append(self._host_verdict(idle))
        elif idle is not None:
            out.append(f"GPU busy {1 - idle:.0%} of the step: not host-bound")
        elif self.outside_ops_fraction is not None and self.outside_ops_fraction >= 0.1:
            out.append(f"{self.outside_ops_fraction:.0%} of the step ran outside any operator (Python and framework "
                       "code): on a GPU that time would show as idle gaps")
        cmp = self.comparison
        if cmp is not None and math.isfinite(cmp.gemm_speedup):
            s, p, e2e = cmp.gemm_speedup, cmp.dense_p, cmp.end_to_end
            if self.sparse_gemms == 0:
                out.append(f"GEMMs {s:.2f}x against the baseline, but no 2:4 kernel ran: this compares dense with dense")
            elif s >= 1.0:
                out.append(f"sparse GEMMs {s:.2f}x faster but only {p:.0%} of step time is GEMM: Amdahl caps the step "
                           f"at {cmp.amdahl:.2f}x (at most {max_speedup(min(p, 1.0)):.2f}x with infinitely fast GEMMs)")
            else:
                out.append(f"sparse GEMMs are slower than dense ({s:.2f}x): at this size the 2:4 kernel loses "
                           "(padding of a few tokens, per-call set-up, tile shapes; chapter 4)")
            if math.isfinite(e2e) and math.isfinite(cmp.amdahl) and e2e < 0.9 * cmp.amdahl:
                di = "" if cmp.dense_idle_fraction is None or idle is None else (
                    f"; GPU idle {idle:.0%} against {cmp.dense_idle_fraction:.0%} dense")
                out.append(f"end to end {e2e:.2f}x, below the {cmp.amdahl:.2f}x the GEMMs alone explain: the rest is "
                           f"host time{di}")
            elif math.isfinite(e2e):
                out.append(f"end to end {e2e:.2f}x (dense {_ms(cmp.dense_wall_us)}, 2:4 {_ms(cmp.sparse_wall_us)} per step)")
            if cmp.baseline_sparse_gemms > 0 and self.sparse_gemms == 0:
                out.append("the baseline ran 2:4 kernels and this trace did not: are the two files swapped? "
                           "(FILE is the 2:4 run, --compare the dense one)")
        elif self.gemms:
            p = min(self.p, 1.0)
            at_ceiling = f"{speedup(p, self.ceiling):.2f}x at the {self.ceiling:.2f}x ceiling; " if self.ceiling < 2.0 else ""
            out.append(f"GEMMs are {p:.0%} of step time: 2x faster GEMMs give at most {speedup(p, 2.0):.2f}x end to end "
                       f"({at_ceiling}{max_speedup(p):.2f}x with infinitely fast GEMMs)")
        if self.unclassified:
            total = sum(self.unclassified.values()) / self.n
            out.append(f"{len(self.unclassified)} kernel name{'s' if len(self.unclassified) != 1 else ''} unclassified "
                       f"({_ms(total)} per step, counted as not eligible): listed below, never guessed")
        where = self.where_it_went()
        if where:
            out.append(where)
        return out

    def _host_verdict(self, idle: float) -> str:
        culprit, share = self.culprit, self.culprit_share
        if culprit is None:
            return f"GPU idle {idle:.0%} of the step"
        setup = self.setup_us.get(culprit, 0.0) >= 0.5 * self.culprits[culprit]
        head = f"GPU idle {idle:.0%} of the step"
        if share < 0.5:
            parts = sorted(self.culprits.items(), key=lambda kv: -kv[1])[:3]
            return head + ", spread over " + ", ".join(f"`{k}` {v / self.idle_us:.0%}" for k, v in parts) + \
                ": host-bound; capture a CUDA graph or put more tokens in each step"
        if culprit.startswith("profiler overhead"):
            return head + f", mostly during {culprit}: the profiler's own cost; read a later step"
        if _RUNTIME_RE.match(culprit) and "Synchronize" in culprit:
            return head + f", mostly while the CPU waited in `{culprit}`: the gaps are on the GPU side (launch latency)"
        if _RUNTIME_RE.match(culprit):
            return (f"{head}, mostly during `{culprit}` ({share:.0%} of the idle time): launch-bound, the kernels are "
                    "short next to their launch cost; capture a CUDA graph or fuse kernels")
        mostly = f"mostly during `{culprit}` set-up" if setup else f"mostly during `{culprit}`"
        if "cslt" in culprit.lower() or "cusparselt" in culprit.lower():
            advice = ("host-bound: each call sets up and tears down its cuSPARSELt descriptors and plan "
                      "(pytorch PR #177866); cache plans or capture a CUDA graph")
        elif culprit.startswith("no operator"):
            advice = "host-bound: Python between operators; capture a CUDA graph (torch.compile mode='reduce-overhead')"
        else:
            advice = "host-bound: the CPU cannot launch kernels fast enough; capture a CUDA graph or put more tokens in each step"
        return f"{head}, {mostly} ({share:.0%} of the idle time): {advice}"

    def where_it_went(self) -> str | None:
        """One sentence naming the funnel stage that lost the most."""
        stages = self.funnel()
        drops = [(stages[i].speedup / stages[i - 1].speedup, stages[i - 1], stages[i]) for i in range(1, len(stages))
                 if stages[i - 1].speedup > 0 and math.isfinite(stages[i].speedup)]
        if not drops:
            return None
        ratio, before, after = min(drops, key=lambda d: d[0])
        if ratio >= 0.98:
            return None
        reason = {
            "roofline_ceiling": "decode GEMMs are bytes-bound",
            "kernel": "the 2:4 kernel itself",
            "eligible_fraction": "the rest of the step is not GEMM (Amdahl)",
            "request": "host time and overheads outside the GEMMs",
        }[after.key]
        return (f"where the 2x went: the biggest loss is {before.label} {before.speedup:.2f}x -> {after.label} "
                f"{after.speedup:.2f}x ({after.how}): {reason}")


@dataclass
class TraceReport:
    """The report for one trace (and its baseline): one :class:`PhaseReport` per phase."""

    path: str
    trace: Trace
    phases: list
    baseline_path: str | None = None

    def phase(self, name: str) -> PhaseReport:
        for ph in self.phases:
            if ph.phase == name:
                return ph
        raise ValueError(f"phase must be one of {[p.phase for p in self.phases]}, got {name!r}")

    def __str__(self) -> str:
        return _text(self)

    def to_html(self) -> str:
        """A self-contained HTML page (no external requests) with the report and a timeline."""
        return _html(self)


# =================================================================================================
# Analysis


class _Index:
    """Structures shared by every step of one trace."""

    def __init__(self, tr: Trace):
        self.tr = tr
        kind, ts, dur = tr.kind, tr.ts, tr.dur
        # Indices are int32 and per-event extras small: on a 1 GB trace every byte per event counts.
        i32 = np.int32
        self.end = ts + dur
        gpu = np.flatnonzero(np.isin(kind, _GPU_KINDS)).astype(i32)
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
        self.overhead = np.flatnonzero(kind == OVERHEAD)
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


def _steps(ix: _Index):
    """(name, phase, cpu_start, cpu_end) of every step, in time order."""
    tr = ix.tr
    cand = np.flatnonzero((tr.kind == ANNOTATION) | (tr.kind == OP))
    names = tr.names
    phase_ids = {i for i, n in enumerate(names) if _PHASE_RE.search(n)}
    step_ids = {i for i, n in enumerate(names) if _STEP_RE.match(n)}
    kind = tr.kind
    picked = [int(i) for i in cand if tr.name[i] in phase_ids and kind[i] == ANNOTATION]
    if picked:
        picked.sort(key=lambda i: (tr.ts[i], -tr.dur[i]))
        # The innermost phase annotations are the steps: one is a leaf when the next one (in
        # start order) begins after it ends.
        leaves = [a for a, b in zip(picked, picked[1:] + [None]) if b is None or tr.ts[b] >= ix.end[a] - 1e-3]
        out = []
        for i in leaves:
            n = names[tr.name[i]]
            out.append((n, "prefill" if "prefill" in n.lower() else "decode", float(tr.ts[i]), float(ix.end[i])))
        return out
    picked = [int(i) for i in cand if tr.name[i] in step_ids]
    if picked:
        picked.sort(key=lambda i: tr.ts[i])
        return [(names[tr.name[i]], "step", float(tr.ts[i]), float(ix.end[i])) for i in picked]
    keep = np.flatnonzero(tr.kind != GPU_ANNOTATION)
    if not len(keep):
        return []
    return [("whole trace", "trace", float(tr.ts[keep].min()), float(ix.end[keep].max()))]


def _dtype_bits(names) -> int:
    low = " ".join(names).lower()
    return 8 if any(m in low for m in ("e4m3", "e5m2", "fp8", "_i8", "s8s8", "int8", "imma")) else 16


def analyze(trace, *, phase: str | None = None, baseline=None, progress: bool | None = None) -> TraceReport:
    """Measure a trace: per step, per phase, the funnel and the verdicts.

    Args:
        trace: a :class:`Trace` or a path for :func:`load`.
        phase: ``"prefill"`` or ``"decode"`` to report only the steps of that phase (their
            annotation names must say so); None reports every phase found.
        baseline: the dense run of the same workload (a :class:`Trace` or a path): adds the
            measured GEMM and end-to-end speedups and a measured funnel.
        progress: passed to :func:`load` for paths.

    Raises:
        TraceError: no events, no steps of the requested phase, nothing comparable.

    >>> r = analyze(recorded("dense-eager"))
    >>> ph = r.phase("decode")
    >>> ph.gemms, ph.sparse_gemms, round(ph.p, 2) < 0.6
    (42, 0, True)
    >>> print(ph.verdicts()[0])  # doctest: +ELLIPSIS
    2:4 kernels ran: 0 of 42 GEMMs: if this was meant to be the 2:4 run, dispatch failed ...
    """
    if phase is not None and phase not in ("prefill", "decode"):
        raise TraceError(f"phase must be 'prefill' or 'decode' (or None for every phase), got {phase!r}")
    tr = trace if isinstance(trace, Trace) else load(trace, progress=progress)
    phases, ix = _analyze(tr, phase)
    base_path = None
    if baseline is not None:
        btr = baseline if isinstance(baseline, Trace) else load(baseline, progress=progress)
        base_path = btr.path
        bphases = {p.phase: p for p in _analyze(btr, phase, what="the baseline")[0]}
        matched = False
        for ph in phases:
            b = bphases.get(ph.phase)
            if b is None:
                continue
            matched = True
            ph.comparison = Comparison(
                baseline_path=btr.path, dense_wall_us=b.wall_us, sparse_wall_us=ph.wall_us,
                dense_gemm_us=b.gemm_us, sparse_gemm_us=ph.gemm_us, dense_p=b.p,
                dense_idle_fraction=b.idle_fraction, baseline_sparse_gemms=b.sparse_gemms,
            )
        if not matched:
            raise TraceError(
                f"{btr.path}: no phase in common with {tr.path} (baseline has {sorted(bphases)}, "
                f"the trace has {[p.phase for p in phases]}); annotate both runs the same way"
            )
    report = TraceReport(path=tr.path, trace=tr, phases=phases, baseline_path=base_path)
    report._index = ix
    return report


def _analyze(tr: Trace, want: str | None, what: str = "the trace") -> tuple[list[PhaseReport], _Index]:
    if not len(tr) or not ((tr.kind == OP).any() or np.isin(tr.kind, _GPU_KINDS).any()):
        raise TraceError(
            f"{tr.path}: {what} holds no CPU operators or GPU kernels ({tr.n_read:,} events read); was the "
            "profiled code inside the `with torch.profiler.profile(...)` block, and the trace exported after it?"
        )
    ix = _Index(tr)
    steps = _steps(ix)
    found = sorted({p for _, p, _, _ in steps})
    if want is not None:
        steps = [s for s in steps if s[1] == want]
        if not steps:
            raise TraceError(
                f"{tr.path}: --phase {want}: no step annotation in {what} has {want!r} in its name (steps found: "
                f"{', '.join(found) or 'none'}); wrap each step in torch.profiler.record_function('{want}_step_i')"
            )
    device = "cuda" if len(ix.gpu) else "cpu"
    dtype_bits = _dtype_bits([tr.names[i] for i in np.unique(tr.name[ix.gpu])]) if device == "cuda" else 16
    # GPU event -> step, by its launch time inside the step's CPU window.
    starts = np.array([s[2] for s in steps])
    ends = np.array([s[3] for s in steps])
    order = np.argsort(starts, kind="stable")
    sorted_starts = starts[order]
    gstep = np.full(len(ix.gpu), -1, dtype=np.int64)
    if len(ix.gpu) and len(steps):
        k = np.searchsorted(sorted_starts, ix.launch_ts, side="right") - 1
        ok = k >= 0
        cand = np.where(ok, order[np.maximum(k, 0)], -1)
        ok &= ix.launch_ts <= ends[np.maximum(cand, 0)] + 1e-3
        gstep[ok] = cand[ok]
    by_step = defaultdict(list)
    for pos, s in enumerate(gstep.tolist()):
        if s >= 0:
            by_step[s].append(pos)
    op_order = ix.ops[np.lexsort((-tr.dur[ix.ops], tr.ts[ix.ops]))]
    op_ts = tr.ts[op_order]

    # Windows, in time order: from the CPU start (or the previous step's end) to the end of
    # the last GPU activity (or the CPU end).
    windows = {}
    prev_end = -math.inf
    for si in order.tolist():
        name, ph, cs, ce = steps[si]
        gpos = by_step.get(si, [])
        gend = float(ix.end[ix.gpu[gpos]].max()) if gpos else -math.inf
        a = max(cs, prev_end)
        b = max(ce, gend, a)
        windows[si] = (a, b)
        prev_end = b

    reports: dict[str, PhaseReport] = {}
    per_phase_steps = defaultdict(list)
    for si in order.tolist():
        per_phase_steps[steps[si][1]].append(si)
    for ph, sis in per_phase_steps.items():
        rep = PhaseReport(phase=ph, device=device, steps=[], summarized=[], dtype_bits=dtype_bits)
        summarized = list(range(1, len(sis))) if len(sis) >= 3 else list(range(len(sis)))
        rep.summarized = summarized
        summarized_set = set(summarized)
        backends = set()
        for j, si in enumerate(sis):
            name, _, cs, ce = steps[si]
            a, b = windows[si]
            st, gemms, sparse, cls_backends, kt, uncl = _step_stats(ix, tr, name, ph, si, a, b, cs, ce,
                                                                   by_step.get(si, []), op_order, op_ts)
            rep.steps.append(st)
            rep.all_gemms += gemms
            rep.all_sparse_gemms += sparse
            backends |= cls_backends
            if j in summarized_set:
                for key, (n, us) in kt.items():
                    cur = rep.kernel_table.setdefault(key, [0, 0.0])
                    cur[0] += n
                    cur[1] += us
                for nm, us in uncl.items():
                    rep.unclassified[nm] = rep.unclassified.get(nm, 0.0) + us
                if device == "cuda":
                    _gaps(ix, rep, name, a, b)
        rep.all_backends = tuple(_BACKEND[c] for c in (SPARSE_CUSPARSELT, SPARSE_CUTLASS) if c in backends)
        rep.largest_gaps.sort(key=lambda g: -g.dur_us)
        reports[ph] = rep
    rank = {"prefill": 0, "decode": 1, "step": 2, "trace": 3}
    return [reports[k] for k in sorted(reports, key=rank.get)], ix


def _step_stats(ix, tr, name, ph, si, a, b, cs, ce, gpos, op_order, op_ts):
    """StepStats for one step, plus GEMM counts, 2:4 classes seen, kernel table, unclassified."""
    lo, hi = np.searchsorted(op_ts, [cs - 1e-3, ce + 1e-3])
    ops = op_order[lo:hi]
    ops = ops[ix.end[ops] <= ce + 1e-3]
    local = {int(g): k for k, g in enumerate(ops.tolist())}
    names = tr.names
    recs = []
    for g in ops.tolist():
        p = int(ix.parent[g])
        recs.append(OpRecord(names[tr.name[g]], "cpu", float(ix.self_us[g]), local.get(p)))
    gidx = ix.gpu[gpos] if gpos else np.zeros(0, dtype=np.int64)
    for pos, g in zip(gpos, gidx.tolist()):
        lop = int(ix.launch_op[pos])
        recs.append(OpRecord(names[tr.name[g]], "cuda", float(tr.dur[g]), local.get(lop)))
    base = classify_records(recs)
    n_ops = len(ops)
    # Attention context flows from an operator to everything inside it and everything it launches.
    in_att = [False] * len(recs)
    for k in range(n_ops):
        p = recs[k].parent
        in_att[k] = (p is not None and in_att[p]) or _is_attention_op(recs[k].name)
    for k in range(n_ops, len(recs)):
        p = recs[k].parent
        in_att[k] = p is not None and in_att[p]
    device = "cuda" if len(gidx) or len(ix.gpu) else "cpu"
    classes = [trace_class(r.name, c, device=r.device, in_attention=att) for r, c, att in zip(recs, base, in_att)]
    time_us: dict[str, float] = defaultdict(float)
    kt: dict[tuple, list] = {}
    uncl: dict[str, float] = defaultdict(float)
    gemms = sparse = 0
    seen = set()
    counted_dev = "cuda" if device == "cuda" else "cpu"
    for k, (r, c) in enumerate(zip(recs, classes)):
        if r.device != counted_dev:
            continue
        time_us[c] += r.self_us
        cur = kt.setdefault((r.name, c), [0, 0.0])
        cur[0] += 1
        cur[1] += r.self_us
        if c == UNCLASSIFIED:
            uncl[r.name] += r.self_us
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
                if c in (SPARSE_CUSPARSELT, SPARSE_CUTLASS):
                    sparse += 1
                    seen.add(c)
    wall = b - a
    busy = outside = None
    if device == "cuda":
        busy = _busy(ix, a, b)
    else:
        # Time inside the step not covered by any operator (on any thread).
        iv = sorted((float(tr.ts[g]), float(ix.end[g])) for g in ops.tolist() if int(ix.parent[g]) < 0 or
                    int(ix.parent[g]) not in local)
        covered, cur_s, cur_e = 0.0, None, None
        for s, e in iv:
            if cur_e is None or s > cur_e:
                if cur_e is not None:
                    covered += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None:
            covered += cur_e - cur_s
        outside = max(0.0, wall - covered)
    st = StepStats(name=name, phase=ph, start_us=a, wall_us=wall, busy_us=busy, time_us=dict(time_us),
                   gemms=gemms, sparse_gemms=sparse, outside_ops_us=outside)
    return st, gemms, sparse, seen, kt, dict(uncl)


def _busy(ix, a, b) -> float:
    s, e = ix.busy_s, ix.busy_e
    lo = np.searchsorted(e, a, side="right")
    hi = np.searchsorted(s, b, side="left")
    if hi <= lo:
        return 0.0
    ss = np.maximum(s[lo:hi], a)
    ee = np.minimum(e[lo:hi], b)
    return float(np.clip(ee - ss, 0.0, None).sum())


_NO_OP = "no operator (Python or framework code between operators)"


def _culprit(ix, a, b):
    """(label, stack names, set-up operator index or -1) for the gap [a, b]."""
    tr = ix.tr
    half = 0.5 * (b - a)
    for i in ix.overhead.tolist():
        if min(ix.end[i], b) - max(tr.ts[i], a) >= half:
            return f"profiler overhead ({ix.name(i)})", (), -1
    stack = ix.stack_at(0.5 * (a + b))
    chosen = -1
    for i in reversed(stack):
        if min(ix.end[i], b) - max(tr.ts[i], a) >= half:
            chosen = i
            break
    if chosen < 0:
        if ix.launch_thread < 0:
            return "no CPU activity recorded", (), -1
        return _NO_OP, tuple(ix.name(i) for i in stack), -1
    names = tuple(ix.name(i) for i in stack[: stack.index(chosen) + 1])
    return ix.name(chosen), names, chosen


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
            lop = int(ix.launch_op[pos])
            if chosen >= 0 and lop >= 0:
                j = lop
                while j >= 0 and j != chosen:
                    j = int(ix.parent[j])
                setup = j == chosen
        rep.culprits[label] = rep.culprits.get(label, 0.0) + d
        if setup:
            rep.setup_us[label] = rep.setup_us.get(label, 0.0) + d
        if len(rep.largest_gaps) < keep or d > rep.largest_gaps[-1].dur_us:
            rep.largest_gaps.append(Gap(step=step, at_us=ga - a, dur_us=d, culprit=label, during=stack,
                                        setup=setup, next_kernel=nxt))
            rep.largest_gaps.sort(key=lambda g: -g.dur_us)
            del rep.largest_gaps[keep:]


# =================================================================================================
# Text and HTML


def _ms(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us < 10_000 else f"{us / 1000:.1f} ms"


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _header(r: TraceReport) -> list[str]:
    tr = r.trace
    if tr.has_gpu:
        what = (f"GPU trace, {tr.device_name or 'GPU not named'}: {tr.count('kernel'):,} kernels, "
                f"{tr.count('gpu_memcpy') + tr.count('gpu_memset'):,} memcpy/memset, {tr.count('cpu_op'):,} CPU operators")
    else:
        what = f"CPU trace (no GPU activity recorded): {tr.count('cpu_op'):,} CPU operators"
    lines = [f"twofour trace: {os.path.basename(r.path)}", f"  {what}"]
    if r.baseline_path:
        lines.append(f"  dense baseline: {os.path.basename(r.baseline_path)}")
    return lines


def _phase_text(ph: PhaseReport) -> list[str]:
    L = []
    n = len(ph.steps)
    summarized = set(ph.summarized)
    left = [ph.steps[i].name for i in range(n) if i not in summarized]
    head = f"{ph.phase}: {n} step{'s' if n != 1 else ''}"
    if left:
        head += f"; summary over {ph.step_names} ({', '.join(left)} left out: a first step carries warm-up)"
    L.append(head)
    gpu = ph.device == "cuda"
    col = "GPU busy" if gpu else "outside ops"
    L.append(f"  {'step':<22}{'wall':>11}{col:>13}{'GEMM p':>9}{'2:4 GEMMs':>12}")
    # A long trace: the first and last few steps, and the spread of the ones in between.
    shown = list(range(n)) if n <= 12 else [*range(4), *range(n - 4, n)]
    for i in shown:
        st = ph.steps[i]
        if n > 12 and i == n - 4:
            walls = sorted(ph.steps[j].wall_us for j in range(4, n - 4))
            L.append(f"   ... {n - 8} more steps: wall median {_ms(walls[len(walls) // 2])}, "
                     f"min {_ms(walls[0])}, max {_ms(walls[-1])}")
        mark = " " if i in summarized else "*"
        frac = (st.busy_us / st.wall_us if gpu else (st.outside_ops_us or 0) / st.wall_us) if st.wall_us > 0 else 0.0
        L.append(f" {mark}{_short(st.name, 21):<22}{_ms(st.wall_us):>11}{frac:>12.0%} {st.p:>8.0%}"
                 f"{f'{st.sparse_gemms}/{st.gemms}':>12}")
    L.append("")
    L.append(f"  time by class, per step (mean of {ph.n})")
    times = ph.time_us
    for c in TRACE_CLASSES:
        t = times.get(c, 0.0)
        if t > 0 or c in (DENSE, SPARSE_CUSPARSELT, ATTENTION, OTHER):
            L.append(f"    {LABELS[c]:<24}{_ms(t):>11}{t / ph.wall_us:>8.1%}")
    if gpu:
        idle = ph.wall_us - ph.busy_us
        L.append(f"    {'GPU idle':<24}{_ms(idle):>11}{idle / ph.wall_us:>8.1%}")
    else:
        out = ph.outside_ops_fraction * ph.wall_us
        L.append(f"    {'outside any operator':<24}{_ms(out):>11}{ph.outside_ops_fraction:>8.1%}")
    L.append(f"    {'step (wall)':<24}{_ms(ph.wall_us):>11}")
    L.append(f"  eligible share p = GEMM / step = {ph.p:.3f}")
    top = sorted(ph.kernel_table.items(), key=lambda kv: -kv[1][1])[:6]
    if top:
        L.append("")
        L.append(f"  top {'kernels' if gpu else 'operators (self time)'}, per step")
        for (nm, c), (cnt, us) in top:
            L.append(f"    {_short(nm, 58):<58} {LABELS[c]:<22}{cnt / ph.n:>6.0f} x{_ms(us / ph.n):>11}")
    if ph.unclassified:
        L.append("")
        L.append("  unclassified kernel names (not guessed; counted as not eligible), per step")
        for nm, us in sorted(ph.unclassified.items(), key=lambda kv: -kv[1])[:10]:
            L.append(f"    {_short(nm, 70):<70}{_ms(us / ph.n):>11}")
    if gpu and ph.largest_gaps:
        L.append("")
        L.append("  largest GPU idle gaps (CPU operators running during each)")
        for g in ph.largest_gaps:
            where = " > ".join(g.during[-3:]) if g.during else g.culprit
            setup = " (set-up of the next kernel)" if g.setup else ""
            nxt = f", before {_short(g.next_kernel, 40)}" if g.next_kernel else ""
            L.append(f"    {g.dur_us:8.1f} us  {g.step} +{_ms(g.at_us)}{nxt}")
            L.append(f"                CPU in: {where}{setup}")
        L.append("  idle time by what the CPU was doing")
        for lab, us in sorted(ph.culprits.items(), key=lambda kv: -kv[1])[:4]:
            su = ph.setup_us.get(lab, 0.0)
            extra = f" ({su / us:.0%} of it set-up of the next kernel)" if su > 0 else ""
            L.append(f"    {us / ph.idle_us:>5.0%}  {lab}{extra}")
    cmp = ph.comparison
    if cmp is not None:
        L.append("")
        L.append(f"  against the dense baseline ({ph.phase}, mean per summarized step)")
        L.append(f"    GEMM time   dense {_ms(cmp.dense_gemm_us):>10}   2:4 {_ms(cmp.sparse_gemm_us):>10}   "
                 f"GEMM speedup {cmp.gemm_speedup:.2f}x")
        L.append(f"    step time   dense {_ms(cmp.dense_wall_us):>10}   2:4 {_ms(cmp.sparse_wall_us):>10}   "
                 f"end to end   {cmp.end_to_end:.2f}x")
    L.append("")
    L.append(f"  funnel ({ph.phase})")
    for s in ph.funnel():
        L.append(f"    {s.label:<20}{s.speedup:>7.2f}x  {s.how:<10} {s.note}")
    p = min(ph.comparison.dense_p if ph.comparison else ph.p, 1.0)
    src = "the dense baseline" if ph.comparison else "this trace"
    at_ceiling = f"{speedup(p, ph.ceiling):.2f}x with {ph.ceiling:.2f}x GEMMs, " if ph.ceiling < 2.0 else ""
    L.append(f"  Amdahl from measured p = {p:.2f} ({src}): at most {at_ceiling}{speedup(p, 2.0):.2f}x with 2x GEMMs, "
             f"{max_speedup(p):.2f}x with infinitely fast GEMMs")
    L.append("")
    L.append("  verdicts")
    for v in ph.verdicts():
        L.append(f"    - {v}")
    return L


def _text(r: TraceReport) -> str:
    lines = _header(r)
    for ph in r.phases:
        lines.append("")
        lines += _phase_text(ph)
    return "\n".join(lines)


_COLORS = {  # the site's palette (twofour.course.plotting): dense blue, 2:4 orange
    SPARSE_CUSPARSELT: "#E69F00", SPARSE_CUTLASS: "#E69F00", SPARSE_GENERAL: "#D55E00", DENSE: "#0072B2",
    ATTENTION: "#009E73", OTHER: "#999999", UNCLASSIFIED: "#CC79A7",
}


def _timeline_svg(r: TraceReport, ph: PhaseReport, width: int = 900) -> str:
    """One summarized step as an SVG: GPU activity coloured by class, idle gaps blank."""
    if ph.device != "cuda" or not ph.summarized:
        return ""
    st = ph.steps[ph.summarized[0]]
    tr = r.trace
    ix = getattr(r, "_index", None) or _Index(tr)
    a, b = st.start_us, st.start_us + st.wall_us
    sel = ix.gpu[(tr.ts[ix.gpu] < b) & (ix.end[ix.gpu] > a)]
    scale = (width - 20) / max(b - a, 1e-9)
    rects = []
    for g in sel.tolist():
        nm = tr.names[tr.name[g]]
        c = trace_class(nm, _kernel_base(nm))
        x = 10 + (max(tr.ts[g], a) - a) * scale
        w = max((min(ix.end[g], b) - max(tr.ts[g], a)) * scale, 0.8)
        rects.append(f'<rect x="{x:.1f}" y="24" width="{w:.1f}" height="26" fill="{_COLORS[c]}">'
                     f"<title>{html.escape(nm[:200])} ({tr.dur[g]:.1f} us, {LABELS[c]})</title></rect>")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="70" role="img" '
        f'aria-label="GPU timeline of {html.escape(st.name)}">'
        f'<rect x="10" y="24" width="{width - 20}" height="26" fill="#f3f3f3" stroke="#ccc"/>'
        + "".join(rects)
        + f'<text x="10" y="16" font-size="12">{html.escape(st.name)}: {_ms(st.wall_us)}; '
        f"coloured = GPU busy, grey = GPU idle</text>"
        f'<text x="10" y="66" font-size="11">0</text><text x="{width - 10}" y="66" font-size="11" '
        f'text-anchor="end">{_ms(st.wall_us)}</text></svg>'
    )


def _kernel_base(name: str) -> str:
    from .kernels import classify

    return classify(name)


def _html(r: TraceReport) -> str:
    body = []
    for ph in r.phases:
        body.append(f"<h2>{html.escape(ph.phase)}</h2>")
        svg = _timeline_svg(r, ph)
        if svg:
            body.append(f"<figure>{svg}</figure>")
        body.append("<h3>verdicts</h3><ul>" + "".join(f"<li>{html.escape(v)}</li>" for v in ph.verdicts()) + "</ul>")
        body.append("<h3>funnel</h3><table><tr><th>stage</th><th>speedup</th><th>how</th><th>note</th></tr>")
        for s in ph.funnel():
            body.append(f"<tr><td>{html.escape(s.label)}</td><td>{s.speedup:.2f}x</td><td>{html.escape(s.how)}</td>"
                        f"<td>{html.escape(s.note)}</td></tr>")
        body.append("</table>")
        body.append("<h3>full report</h3><pre>" + html.escape("\n".join(_phase_text(ph))) + "</pre>")
    legend = " ".join(f'<span style="background:{_COLORS[c]};padding:0 6px;color:#000">{LABELS[c]}</span>'
                      for c in TRACE_CLASSES)
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>twofour trace: {html.escape(os.path.basename(r.path))}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#222;"
        "background:#fff}pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;font-size:.8rem}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}</style>"
        "</head><body>"
        f"<h1>twofour trace</h1><pre>{html.escape(chr(10).join(_header(r)))}</pre><p>{legend}</p>"
        + "".join(body) + "</body></html>\n"
    )
