"""Read a profiler trace: file checks, the streaming JSON reader, and the events kept as columns.

Read streaming (:mod:`._jsonstream`), each kept event becomes a few numbers in compact arrays
(49 bytes an event). At peak, reading and analysing take about 150 bytes per kept event of the
process's own memory (the columns, their growth while read, the analysis's index), on top of the
interpreter and torch (about 150 MB); ``test_a_64_mb_trace_streams`` measures it and holds it
under 200.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..._common.text import printable, show_path as _shown
from . import shapes, validate
from .validate import TraceError
from ._jsonstream import ChromeTraceStream, StreamError

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
GPU_KINDS = (KERNEL, MEMCPY, MEMSET)
# Steps are annotations naming a phase; without any, ProfilerStep#N annotations (or operators).
_PHASE_RE = re.compile(r"prefill|decode", re.IGNORECASE)
_STEP_RE = re.compile(r"^ProfilerStep#\d+$")

_DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
RECORDED = {
    f"{weights}-{how}": f"h200-20261130-trace-{weights}-{how}.json.gz"
    for weights in ("dense", "sparse")
    for how in ("eager", "graph")
}


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


@dataclass
class Trace:
    """The events of one trace that the analysis needs, as compact columns.

    One row per kept event (CPU operators, annotations, GPU kernels, memcpy/memset, CUDA
    runtime calls, profiler overhead); ``names[name[i]]`` is its name, ``ts``/``dur`` are
    microseconds, ``thread[i]`` indexes ``threads`` (``(pid, tid)``), ``ext`` / ``corr`` are the
    profiler's "External id" and "correlation" (-1 when absent). Events that failed validation
    (:mod:`.validate`) are not in the columns but counted in ``invalid``.
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
    index: np.ndarray  # each row's position in traceEvents
    shape: np.ndarray  # each row's operand signature in `shapes`, -1 when none
    shapes: list = field(default_factory=list)  # the signatures (.shapes.signature), each kept once
    n_read: int = 0  # every element of traceEvents, kept or not
    invalid: dict = field(default_factory=dict)  # reason -> validate.Invalid: events left out, counted

    def __len__(self) -> int:
        return len(self.kind)

    def mark_invalid(self, invalid: dict, reason: str, row) -> None:
        """Count column row ``row`` in ``invalid`` under ``reason``, by its position in traceEvents."""
        validate.add(invalid, reason, int(self.index[row]), self.names[self.name[row]])

    def step_rows(self) -> tuple[np.ndarray, bool]:
        """The rows that may be steps, in row order, and whether they are phase annotations (``prefill`` or
        ``decode`` in the name) rather than ``ProfilerStep#N`` ones."""
        phase_ids = [i for i, n in enumerate(self.names) if _PHASE_RE.search(n)]
        rows = np.flatnonzero((self.kind == ANNOTATION) & np.isin(self.name, phase_ids))
        if len(rows):
            return rows, True
        step_ids = [i for i, n in enumerate(self.names) if _STEP_RE.match(n)]
        return np.flatnonzero(np.isin(self.kind, (ANNOTATION, OP)) & np.isin(self.name, step_ids)), False

    def count(self, kind: str) -> int:
        """How many events of one kind (``"kernel"``, ``"cpu_op"``, ...) were kept."""
        return int((self.kind == KIND_NAMES.index(kind)).sum())

    @property
    def has_shapes(self) -> bool:
        """True when operators carry their operand shapes (recorded with ``record_shapes=True``)."""
        return bool((self.shape >= 0).any())

    @property
    def has_gpu(self) -> bool:
        """True when GPU activity (kernels, memcpy, memset) was recorded."""
        return bool(np.isin(self.kind, GPU_KINDS).any())

    @property
    def device_name(self) -> str | None:
        """The GPU named in the trace's ``deviceProperties`` (None for a CPU trace)."""
        # load() checked that deviceProperties, when not null, is a list of objects
        names = sorted({printable(p["name"], limit=80) for p in self.meta.get("deviceProperties") or ()
                        if isinstance(p.get("name"), str) and p["name"].strip()})
        return ", ".join(names) or None

    def __repr__(self) -> str:
        what = f"GPU trace on {self.device_name or 'a GPU'}" if self.has_gpu else "CPU trace"
        return (f"Trace({os.path.basename(self.path)!r}: {what}, {self.count('kernel'):,} kernels, "
                f"{self.count('cpu_op'):,} CPU operators, {len(self):,} events kept of {self.n_read:,})")


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

    names: dict[str, int] = {}
    threads: dict[tuple, int] = {}
    kind, name_col, thread_col = array("b"), array("i"), array("i")
    ts_col, dur_col, ext_col, corr_col, index_col = array("d"), array("d"), array("q"), array("q"), array("I")
    shape_col, signatures = array("i"), {}
    signature = shapes.signature
    invalid: dict = {}
    stream = ChromeTraceStream(f, on_read=None if bar is None else lambda: bar.update(raw.tell() - bar.n))
    categories = _CATEGORIES
    kind_append, name_append, thread_append = kind.append, name_col.append, thread_col.append
    ts_append, dur_append, ext_append, corr_append = ts_col.append, dur_col.append, ext_col.append, corr_col.append
    index_append, shape_append = index_col.append, shape_col.append
    max_us, max_id = validate.MAX_US, validate.MAX_ID
    id_types = (int, str)
    try:
        with f:
            for ev in stream.events():
                if type(ev) is not dict:
                    raise TraceError(f"{_shown(path)}: event {stream.n_events - 1:,} of traceEvents is not an object: not a profiler trace")
                ph = ev.get("ph")
                if ph != "X":
                    if (ph == "B" or ph == "E") and type(ev.get("cat")) is str and ev["cat"].lower() in categories:
                        # a begin/end pair of a kind the analysis reads: counted, never dropped in silence
                        validate.add(invalid, "begin/end", stream.n_events - 1, ev.get("name"))
                    continue
                cat = ev.get("cat")
                k = categories.get(cat) if type(cat) is str else None
                if k is None:
                    k = categories.get(cat.lower()) if type(cat) is str else None
                    if k is None:
                        continue
                # Validated before it is kept: a NaN, an Infinity, a negative or absurd time, a name that is
                # not a string is counted as invalid (validate.py), never read as 0 or skipped in silence.
                ts, dur, nm = ev.get("ts"), ev.get("dur"), ev.get("name")
                pid, tid = ev.get("pid"), ev.get("tid")
                tts, tdur = type(ts), type(dur)
                if not ((tts is float or tts is int) and (tdur is float or tdur is int) and 0 <= ts <= max_us
                        and 0 <= dur <= max_us and type(nm) is str and type(pid) in id_types and type(tid) in id_types):
                    validate.add(invalid, validate.field_problem(ev), stream.n_events - 1, nm)
                    continue
                args = ev.get("args")
                if type(args) is dict:
                    e = args.get("External id", -1)
                    c = args.get("correlation", -1)
                    if not ((type(e) is int and -1 <= e < max_id) and (type(c) is int and -1 <= c < max_id)):
                        validate.add(invalid, "malformed", stream.n_events - 1, nm)
                        continue
                else:
                    e = c = -1
                s = -1
                # record_shapes=True: an operator's operand shapes and types, kept once per distinct signature
                if k == OP and type(args) is dict and ("Input Dims" in args or "Input type" in args):
                    try:
                        sig = signature(args.get("Input Dims"), args.get("Input type"))
                    except ValueError:
                        validate.add(invalid, "malformed shapes", stream.n_events - 1, nm)
                        continue
                    s = signatures.setdefault(sig, len(signatures))
                kind_append(k)
                name_append(names.setdefault(nm, len(names)))
                thread_append(threads.setdefault((pid, tid), len(threads)))
                ts_append(ts)
                dur_append(dur)
                ext_append(e)
                corr_append(c)
                index_append(stream.n_events - 1)
                shape_append(s)
    except StreamError as exc:
        raise TraceError(f"{_shown(path)}: {exc}") from None
    finally:
        if bar is not None:
            bar.close()
        raw.close()
    props = stream.meta.get("deviceProperties")
    if props is not None and not (type(props) is list and all(type(p) is dict for p in props)):
        raise TraceError(f"{_shown(path)}: \"deviceProperties\" must be a list of objects (one per GPU), got "
                         f"{printable(repr(props), 60)}: not a profiler trace")
    cols = _drop_invalid_rows(
        invalid, names,
        kind=_column(kind, np.int8), name=_column(name_col, np.int32), ts=_column(ts_col, np.float64),
        dur=_column(dur_col, np.float64), thread=_column(thread_col, np.int32), ext=_column(ext_col, np.int64),
        corr=_column(corr_col, np.int64), index=_column(index_col, np.uint32), shape=_column(shape_col, np.int32),
    )
    return Trace(
        # every name reaches a terminal or a page through the report: keep it escaped (a trace
        # file cannot write escape sequences or forge report lines)
        path=str(path), meta=stream.meta, names=[printable(n, limit=400) for n in names], threads=list(threads),
        n_read=stream.n_events, invalid=invalid, shapes=list(signatures), **cols,
    )


def _drop_invalid_rows(invalid: dict, names: dict, **cols) -> dict:
    """The columns without exact duplicates and stream overlaps, which are counted in ``invalid``."""
    bad = validate.duplicate_rows(cols["kind"], cols["name"], cols["thread"], cols["ts"], cols["dur"], cols["ext"],
                                  cols["corr"])
    by_name = list(names)
    for r in np.flatnonzero(bad)[:1].tolist():
        validate.add(invalid, "duplicate", int(cols["index"][r]), by_name[cols["name"][r]], int(bad.sum()))
    gpu = np.flatnonzero(np.isin(cols["kind"], GPU_KINDS) & ~bad)
    over = validate.stream_overlaps(gpu, cols["thread"], cols["ts"], cols["dur"])
    if len(over):
        first = over[np.argmin(cols["index"][over])]
        validate.add(invalid, "stream overlap", int(cols["index"][first]), by_name[cols["name"][first]], len(over))
        bad[over] = True
    if not bad.any():
        return cols
    keep = ~bad
    return {k: np.ascontiguousarray(v[keep]) for k, v in cols.items()}
