"""Timing harness for ``y = x @ W.T``: dense vs every available 2:4 backend, with provenance.

How a point is timed
--------------------
* **GPU** (CUDA events). ``warmup`` untimed calls, then ``repeats`` timed calls. Before each
  timed call the L2 cache is flushed by writing a buffer twice the L2 size, and the device is
  synchronised, so every call starts cold and alone: the time includes any host-side set-up
  the call does before its kernel starts (cuSPARSELt builds descriptors and a plan per call),
  as a lone decode-step GEMM would see it.
* **CPU** (``time.perf_counter``). Same warm-up and repeats; caches are *not* flushed (there is
  no portable way), so small weights may run from cache. Only dense float32 is timed: 2:4
  sparse kernels exist only on NVIDIA GPUs with compute capability >= 8.0.

Every timed call keeps its raw time; the summary is median, min, max and quartiles.

Numerical check
---------------
Every 2:4 point is compared with the dense GEMM on the same pruned weight: the maximum
absolute difference divided by the largest ``|y|`` must stay below a per-dtype tolerance
(:data:`TOLERANCE`). A failed check is recorded with the point, never dropped.

Results files
-------------
:class:`Results` is written as JSON (``schema`` ``twofour-bench/1``) with a provenance block
(GPU name, compute capability, driver, CUDA, torch, cuSPARSELt, date, command, ...), the
settings, and one record per point with raw timings. :func:`load_results` reads it back and
checks it; :func:`recorded_results` lists the files shipped in ``twofour/data/``.

Example (CPU, tiny shape):
    >>> from twofour.bench import sweep
    >>> res = sweep([("toy", 64, 64)], Ms=[1, 8], dtypes=["float32"], device="cpu",
    ...             warmup=1, repeats=3, progress=False)
    >>> [p["M"] for p in res.points], res.points[0]["sparse_skipped"][:30]
    ([1, 8], '2:4 sparse kernels need an NVI')
    >>> len(res.points[0]["dense"]["raw_ms"])
    3
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch

from ._common.args import require_positive_int
from ._common.jsonfile import check_schema, read_json
from ._passes.tensors import dtype_name
from .device import environment
from .models import get_preset, linear_shapes
from .structure import prune

__all__ = [
    "SCHEMA",
    "TOLERANCE",
    "Results",
    "summarize",
    "time_callable",
    "measure_point",
    "sweep",
    "model_shapes",
    "parse_shape",
    "provenance",
    "load_results",
    "recorded_results",
    "cpu_roofline",
    "recorded_alg_search",
    "DATA_DIR",
    "MODES",
]

SCHEMA = "twofour-bench/2"
# Files written before the timing modes existed; /2 only adds the optional "modes" block.
READABLE_SCHEMAS = ("twofour-bench/1", SCHEMA)
# How a call is timed (GPU only beyond "eager"); each mode stands for one serving scenario:
# eager = lone eager call, host set-up included; graph = CUDA-graph replay (plans cached);
# stream = back-to-back eager calls (host overlaps device); kernel = profiler kernel time only.
MODES = ("eager", "graph", "stream", "kernel")
DATA_DIR = Path(__file__).parent / "data"
# Relative tolerance (max |sparse - dense| / max |dense|) for the 2:4 vs dense check. The two
# kernels accumulate in different orders; bf16 has 8 mantissa bits, fp16 11.
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}
REQUIRED_PROVENANCE = ("device", "gpu_name", "capability", "driver", "cuda", "torch", "cusparselt", "date", "command")
_TIMING = {"type": "object", "required": ["median_ms"], "properties": {"median_ms": {"type": "number", "exclusiveMinimum": 0}}}
# What a results file must hold for the readers below (the schema version is checked first, with its own message).
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["schema", "provenance", "points"],
    "properties": {
        "provenance": {"type": "object", "required": list(REQUIRED_PROVENANCE)},
        "settings": {"type": "object"},
        "points": {"type": "array", "items": {
            "type": "object",
            "required": ["M", "N", "K", "dtype", "dense"],
            "properties": {
                "M": {"type": "integer", "minimum": 1}, "N": {"type": "integer", "minimum": 1},
                "K": {"type": "integer", "minimum": 1}, "dtype": {"type": "string"},
                "dense": {"anyOf": [_TIMING, {"type": "object", "required": ["error"]}]},
                "sparse": {"type": "object"}, "modes": {"type": "object"},
            },
        }},
    },
}
ALG_SEARCH_SCHEMA = {
    "type": "object",
    "required": ["schema", "provenance", "cases"],
    "properties": {
        "schema": {"const": "twofour-cslt-algsearch/1"},
        "provenance": {"type": "object"},
        "cases": {"type": "array", "items": {
            "type": "object",
            "required": ["shape", "M", "N", "K", "dense_ms", "default_ms", "best", "configs"],
            "properties": {
                "M": {"type": "integer", "minimum": 1}, "N": {"type": "integer", "minimum": 1},
                "K": {"type": "integer", "minimum": 1},
                "dense_ms": {"type": "number", "exclusiveMinimum": 0},
                "default_ms": {"type": "number", "exclusiveMinimum": 0},
                "best": {"type": "object", "required": ["ms", "alg_id"]},
                "configs": {"type": "array"},
            },
        }},
    },
}
_DTYPES = {"float16": torch.float16, "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float32": torch.float32, "fp32": torch.float32}


# ------------------------------------------------------------------------------------------
# Timing


def summarize(raw_ms: list[float]) -> dict:
    """Median, min, max and quartiles of raw times (all in ms), with the raw list kept.

    Example:
        >>> s = summarize([3.0, 1.0, 2.0, 4.0, 100.0])
        >>> s["median_ms"], s["min_ms"], s["max_ms"], s["n"]
        (3.0, 1.0, 100.0, 5)
    """
    if not raw_ms:
        raise ValueError("raw_ms must hold at least one timing")
    ordered = sorted(float(t) for t in raw_ms)
    q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else (ordered[0],) * 3
    return {
        "median_ms": statistics.median(ordered),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "q1_ms": q1,
        "q3_ms": q3,
        "n": len(ordered),
        "raw_ms": [float(t) for t in raw_ms],
    }


def _l2_flush_buffer(device: torch.device) -> torch.Tensor | None:
    """A buffer twice the L2 size; writing it evicts the GEMM's operands from L2."""
    if device.type != "cuda":
        return None
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    return torch.empty(2 * l2, dtype=torch.uint8, device=device)


def time_callable(fn: Callable[[], object], *, device, warmup: int = 3, repeats: int = 10,
                  flush_l2: bool = True) -> list[float]:
    """Raw times in ms of ``repeats`` calls of ``fn`` after ``warmup`` calls (see module doc).

    Example:
        >>> ts = time_callable(lambda: sum(range(100)), device="cpu", warmup=1, repeats=4)
        >>> len(ts), all(t >= 0 for t in ts)
        (4, True)
    """
    device = torch.device(device)
    for name, value in (("warmup", warmup), ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "warmup" else 1):
            raise ValueError(f"{name} must be an int >= {0 if name == 'warmup' else 1}, got {value!r}")
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        flush = _l2_flush_buffer(device) if flush_l2 else None
        torch.cuda.synchronize(device)
        for _ in range(repeats):
            if flush is not None:
                flush.zero_()
            torch.cuda.synchronize(device)  # start alone: host set-up of fn is inside the window
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


# ------------------------------------------------------------------------------------------
# One point


def _dtype(dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        if dtype in TOLERANCE:
            return dtype
    elif str(dtype) in _DTYPES:
        return _DTYPES[str(dtype)]
    raise ValueError(f"dtype must be one of float16, bfloat16, float32 (or the torch dtype), got {dtype!r}")



def _sparse_linear(W24: torch.Tensor, backend: str):
    """Convert a 2:4 weight with the requested PyTorch backend; returns the sparse tensor."""
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured

    saved = SparseSemiStructuredTensor._FORCE_CUTLASS
    SparseSemiStructuredTensor._FORCE_CUTLASS = backend == "CUTLASS"
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*prototype.*", category=UserWarning)
            return to_sparse_semi_structured(W24)
    finally:
        SparseSemiStructuredTensor._FORCE_CUTLASS = saved


def _check(y: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> dict:
    diff = (y.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item() or 1.0
    rel = diff / scale
    return {"max_abs_err": diff, "rel_err": rel, "tol": TOLERANCE[dtype], "passed": bool(rel <= TOLERANCE[dtype])}


def _modes(modes, device: torch.device) -> tuple[str, ...]:
    modes = tuple(modes)
    bad = [m for m in modes if m not in MODES]
    if bad or not modes or modes[0] != "eager":
        raise ValueError(f"modes must start with 'eager' and use only {MODES}, got {modes!r}")
    if device.type != "cuda" and modes != ("eager",):
        raise ValueError(f"modes {modes[1:]} need a CUDA GPU (CUDA graphs, stream timing, the CUDA profiler); "
                         "on CPU use modes=('eager',)")
    return modes


def measure_point(M: int, N: int, K: int, dtype, *, device, backends: Iterable[str] = (),
                  warmup: int = 3, repeats: int = 10, flush_l2: bool = True, seed: int = 0,
                  W24: torch.Tensor | None = None, modes: Iterable[str] = ("eager",)) -> dict:
    """Time dense and each 2:4 backend for one (M, N, K, dtype); returns one result record.

    ``W24`` (an already pruned ``[N, K]`` weight on ``device``) can be passed to reuse it
    across M. On a device without 2:4 kernels pass ``backends=()``; the record then says why
    no sparse time exists instead of leaving it out silently.

    ``modes`` (GPU only beyond ``"eager"``) adds the other timings of :data:`MODES` under
    ``record["modes"][mode]``; see :mod:`twofour._gpu_timing`. A mode that fails for a
    backend records the error there and the other modes still run.
    """
    for name, v in (("M", M), ("N", N), ("K", K)):
        require_positive_int(name, v)
    dtype = _dtype(dtype)
    device = torch.device(device)
    modes = _modes(modes, device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if W24 is None:
        W = (torch.randn(N, K, generator=gen) / math.sqrt(K)).to(device=device, dtype=dtype)
        W24 = prune(W)[0]
    x = torch.randn(M, K, generator=gen).to(device=device, dtype=dtype)
    record = {"M": M, "N": N, "K": K, "dtype": dtype_name(dtype), "device": device.type}
    dense_fn = lambda: torch.nn.functional.linear(x, W24)  # noqa: E731
    record["dense"] = summarize(time_callable(dense_fn, device=device, warmup=warmup, repeats=repeats, flush_l2=flush_l2))
    backends = tuple(backends)
    if not backends:
        record["sparse_skipped"] = (
            "2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0; "
            f"this run is on {device.type}, so only the dense GEMM was timed"
        )
        return record
    ref = dense_fn()
    record["sparse"] = {}
    sparse_weights = {}
    for backend in backends:
        try:
            Ws = _sparse_linear(W24, backend)
            sparse_fn = lambda Ws=Ws: torch.nn.functional.linear(x, Ws)  # noqa: E731
            check = _check(sparse_fn(), ref, dtype)
            entry = summarize(time_callable(sparse_fn, device=device, warmup=warmup, repeats=repeats, flush_l2=flush_l2))
            entry["check"] = check
            sparse_weights[backend] = Ws
        except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
            entry = {"error": _one_line(exc)}
        record["sparse"][backend] = entry
    if len(modes) > 1:
        record["modes"] = _other_modes(modes[1:], x, W24, sparse_weights, device=device, warmup=warmup,
                                       repeats=repeats, flush_l2=flush_l2)
    return record


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _other_modes(modes, x, W24, sparse_weights: dict, *, device, warmup: int, repeats: int, flush_l2: bool) -> dict:
    """The graph / stream / kernel timings of one point (see :mod:`twofour._gpu_timing`)."""
    from . import _gpu_timing as gt

    linear = torch.nn.functional.linear
    weights = {"dense": W24, **sparse_weights}
    out: dict = {}
    for mode in modes:
        out[mode] = {"dense": None, "sparse": {}}
        for name, W in weights.items():
            try:
                if mode == "graph":
                    entry = summarize(gt.time_graph(lambda W=W: linear(x, W), device=device, warmup=warmup,
                                                    repeats=repeats, flush_l2=flush_l2))
                elif mode == "stream":
                    n_copies = gt.copies_to_defeat_l2(W24.numel() * W24.element_size(), gt._l2_bytes(device))
                    copies = [W] + [_copy_weight(W24, name) for _ in range(n_copies - 1)]
                    entry = summarize(gt.time_stream([lambda c=c: linear(x, c) for c in copies], device=device,
                                                     warmup=warmup, repeats=repeats))
                    entry["copies"] = n_copies
                    del copies
                else:  # kernel
                    prof = gt.profile_kernels(lambda W=W: linear(x, W), device=device, calls=min(repeats, 5))
                    entry = summarize([t / 1e3 for t in prof["sum_us"]])
                    entry["span_ms"] = [t / 1e3 for t in prof["span_us"]]
                    entry["kernels"] = prof["kernels"]
            except Exception as exc:  # record whatever the GPU stack raises; the other modes go on
                entry = {"error": _one_line(exc)}
            if name == "dense":
                out[mode]["dense"] = entry
            else:
                out[mode]["sparse"][name] = entry
    return out


def _copy_weight(W24: torch.Tensor, name: str):
    """A distinct copy of the weight in the form ``name`` uses (dense, or packed by a backend)."""
    W = W24.clone()
    return W if name == "dense" else _sparse_linear(W, name)


# ------------------------------------------------------------------------------------------
# Shapes and sweeps


def model_shapes(models: Iterable[str] = ("Llama-3-8B",), *, include_lm_head: bool = False) -> list[tuple[str, int, int]]:
    """Distinct ``(label, N, K)`` linear shapes of model presets (``twofour.models``).

    Layers with the same shape are merged into one label (``"Llama-3-8B q_proj/o_proj"``).

    Example:
        >>> [(n, k) for _, n, k in model_shapes(["Llama-3-8B"])]
        [(4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336)]
    """
    out: dict[tuple[int, int], list[str]] = {}
    order = []
    for name in models:
        cfg = get_preset(name)
        for s in linear_shapes(cfg, include_lm_head=include_lm_head):
            key = (cfg.name, s.out_features, s.in_features)
            if key not in out:
                out[key] = []
                order.append(key)
            out[key].append(s.name)
    return [(f"{model} {'/'.join(out[(model, n, k)])}", n, k) for model, n, k in order]


def parse_shape(text: str) -> list[tuple[str, int, int]]:
    """``"llama-3-8b"`` -> that model's shapes; ``"4096x14336"`` -> one ``(label, N, K)``.

    Example:
        >>> parse_shape("1024x4096")
        [('1024x4096', 1024, 4096)]
    """
    t = str(text).strip()
    if "x" in t.lower() and all(part.strip().isdigit() for part in t.lower().split("x")):
        parts = [int(p) for p in t.lower().split("x")]
        if len(parts) == 2 and all(p > 0 for p in parts):
            if parts[1] % 4:
                raise ValueError(f"shape {t!r}: K (the second number) must be a multiple of 4 for 2:4")
            return [(t, parts[0], parts[1])]
    try:
        return model_shapes([t])
    except ValueError:
        raise ValueError(
            f"shape {t!r} is neither NxK (e.g. 4096x14336, N=out_features, K=in_features) nor a "
            "model preset (Llama-3-8B, Llama-3-70B)"
        ) from None


DEFAULT_MS = [2**i for i in range(15)]  # 1 .. 16384


def sweep(shapes: Iterable[tuple[str, int, int]], Ms: Iterable[int] = DEFAULT_MS, dtypes=("float16", "bfloat16"),
          *, device=None, backends: Iterable[str] | None = None, warmup: int = 3, repeats: int = 10,
          flush_l2: bool = True, progress: bool = True, command: str | None = None, seed: int = 0,
          modes: Iterable[str] = ("eager",)) -> "Results":
    """Measure every (shape, M, dtype): dense and every available 2:4 backend.

    Args:
        shapes: ``(label, N, K)`` triples, e.g. from :func:`model_shapes` or :func:`parse_shape`.
        Ms: token counts. dtypes: ``float16``/``bfloat16`` on GPU; on CPU use ``float32``.
        device: ``"cuda"``, ``"cpu"`` or None (CUDA when available).
        backends: 2:4 backends to time; None means every backend :func:`twofour.device.environment`
            reports usable (none on CPU).
        progress: show a tqdm progress bar (stderr).
        modes: ``("eager",)`` or, on a GPU, any of :data:`MODES` starting with ``"eager"``.
    """
    env = environment()
    device = torch.device(device) if device is not None else env.device
    if device.type == "cuda" and not env.cuda_available:
        raise ValueError("device='cuda' was requested but torch sees no CUDA GPU; use device='cpu'")
    if backends is None:
        backends = env.backends if device.type == "cuda" else ()
    backends = tuple(backends)
    shapes = list(shapes)
    Ms = [int(m) for m in Ms]
    dtypes = [_dtype(d) for d in dtypes]
    modes = _modes(modes, device)
    if device.type == "cpu" and any(d != torch.float32 for d in dtypes):
        raise ValueError("on CPU only dtype float32 is timed: half-precision matmuls are emulated and "
                         "would measure the emulation, not the CPU's roofline")
    if not shapes or not Ms:
        raise ValueError("shapes and Ms must each hold at least one entry")
    total = len(shapes) * len(Ms) * len(dtypes)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="twofour bench", unit="point", file=sys.stderr)
    points = []
    try:
        for label, N, K in shapes:
            for dtype in dtypes:
                gen = torch.Generator(device="cpu").manual_seed(seed)
                W = (torch.randn(N, K, generator=gen) / math.sqrt(K)).to(device=device, dtype=dtype)
                W24 = prune(W)[0]
                del W
                for M in Ms:
                    rec = measure_point(M, N, K, dtype, device=device, backends=backends, warmup=warmup,
                                        repeats=repeats, flush_l2=flush_l2, seed=seed + M, W24=W24, modes=modes)
                    rec["shape"] = label
                    points.append(rec)
                    if bar is not None:
                        bar.update(1)
                del W24
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    finally:
        if bar is not None:
            bar.close()
    settings = {
        "warmup": warmup,
        "repeats": repeats,
        "flush_l2": bool(flush_l2 and device.type == "cuda"),
        "timer": "cuda events, device synchronised before each call" if device.type == "cuda" else "time.perf_counter",
        "backends": list(backends),
        "modes": list(modes),
        "cache_note": ("L2 flushed before every timed call" if device.type == "cuda" and flush_l2
                       else "caches not flushed between repeats"),
    }
    return Results(provenance=provenance(command, device=device), settings=settings, points=points)


# ------------------------------------------------------------------------------------------
# Provenance and results files


def _driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.stdout.strip().splitlines()
    return first[0].strip() if out.returncode == 0 and first else None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def provenance(command: str | None = None, *, device=None) -> dict:
    """Where and with what a result was measured. Every key of REQUIRED_PROVENANCE is present.

    Example:
        >>> p = provenance("twofour bench --quick", device="cpu")
        >>> p["device"], p["command"], p["gpu_name"]
        ('cpu', 'twofour bench --quick', None)
    """
    from . import __version__

    env = environment()
    device = torch.device(device) if device is not None else env.device
    on_gpu = device.type == "cuda"
    return {
        "device": device.type,
        "gpu_name": env.gpu_name if on_gpu else None,
        "capability": env.capability_str if on_gpu else None,
        "driver": _driver_version() if on_gpu else None,
        "cuda": env.cuda_version,
        "torch": env.torch_version,
        "cusparselt": env.cusparselt_version,
        "backends": list(env.backends) if on_gpu else [],
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command if command is not None else " ".join(shlex.quote(a) for a in sys.argv),
        "python": env.python_version,
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_threads": torch.get_num_threads(),
        "twofour": __version__,
    }


@dataclass
class Results:
    """A benchmark run: provenance, settings and one record per measured point."""

    provenance: dict
    settings: dict = field(default_factory=dict)
    points: list[dict] = field(default_factory=list)
    schema: str = SCHEMA
    path: str | None = None  # where it was read from, if anywhere

    @property
    def label(self) -> str:
        """Short provenance label for plot legends, e.g. ``"NVIDIA H200, torch 2.11.0, 2026-11-29"``."""
        p = self.provenance
        where = p.get("gpu_name") or f"CPU ({p.get('cpu_model', 'unknown')})"
        return f"{where}, torch {p.get('torch')}, {str(p.get('date', ''))[:10]}"

    def to_dict(self) -> dict:
        return {"schema": self.schema, "provenance": self.provenance, "settings": self.settings, "points": self.points}

    def save(self, path) -> Path:
        """Write JSON to ``path`` (parent folders are created)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    def gpu_points(self, mode: str = "eager") -> list[dict]:
        """Flat rows ``M, N, K, dtype, backend, gpu, dense_ms, sparse_ms`` for every sparse time.

        ``mode`` picks the timing (:data:`MODES`); points measured without it give no rows.
        Points whose check failed or whose backend raised are not timing rows; they are
        listed by :meth:`problems` instead.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        rows = []
        for p in self.points:
            if mode == "eager":
                dense, sparse = p.get("dense") or {}, p.get("sparse") or {}
            else:
                block = (p.get("modes") or {}).get(mode) or {}
                dense, sparse = block.get("dense") or {}, block.get("sparse") or {}
            if "median_ms" not in dense:
                continue
            for backend, entry in sparse.items():
                if "median_ms" not in entry:
                    continue
                eager_check = (p.get("sparse") or {}).get(backend, {}).get("check", {})
                rows.append({
                    "M": p["M"], "N": p["N"], "K": p["K"], "dtype": p["dtype"], "backend": backend,
                    "gpu": self.provenance.get("gpu_name"), "shape": p.get("shape"), "mode": mode,
                    "dense_ms": dense["median_ms"], "sparse_ms": entry["median_ms"],
                    "check_passed": eager_check.get("passed"),
                })
        return rows

    def problems(self) -> list[str]:
        """One line per backend error or failed numerical check."""
        out = []
        for p in self.points:
            for backend, entry in (p.get("sparse") or {}).items():
                where = f"{p.get('shape', '')} M={p['M']} {p['dtype']} {backend}"
                if "error" in entry:
                    out.append(f"{where}: {entry['error']}")
                elif not entry.get("check", {}).get("passed", False):
                    out.append(f"{where}: numerical check failed (rel_err {entry['check']['rel_err']:.3g} > {entry['check']['tol']})")
            for mode, block in (p.get("modes") or {}).items():
                for backend, entry in [("dense", block.get("dense") or {}), *(block.get("sparse") or {}).items()]:
                    if "error" in entry:
                        out.append(f"{p.get('shape', '')} M={p['M']} {p['dtype']} {backend} [{mode}]: {entry['error']}")
        return out


def load_results(path) -> Results:
    """Read a results file written by :meth:`Results.save`, checking schema and provenance."""
    path = Path(path)
    data = read_json(path, "results file")
    if not isinstance(data, dict) or data.get("schema") not in READABLE_SCHEMAS:
        raise ValueError(f"results file {str(path)!r} has schema {data.get('schema') if isinstance(data, dict) else None!r}; "
                         f"expected one of {READABLE_SCHEMAS}")
    check_schema(data, RESULTS_SCHEMA, f"results file {str(path)!r}")
    return Results(data["provenance"], data.get("settings", {}), data["points"], data["schema"], str(path))


def recorded_results(kind: str = "gpu", folder=None) -> list[Results]:
    """Results files shipped with the package (``twofour/data/bench-*.json``), GPU runs by default.

    Returns an empty list when none are recorded yet; callers must say so rather than plot
    nothing silently.
    """
    if kind not in ("gpu", "cpu", "all"):
        raise ValueError(f"kind must be 'gpu', 'cpu' or 'all', got {kind!r}")
    folder = Path(folder) if folder is not None else DATA_DIR
    out = []
    for path in sorted(folder.glob("bench-*.json")):
        res = load_results(path)
        dev = res.provenance.get("device")
        if kind == "all" or (kind == "gpu" and dev == "cuda") or (kind == "cpu" and dev == "cpu"):
            out.append(res)
    return out


def recorded_alg_search(folder=None) -> list[dict]:
    """cuSPARSELt algorithm sweeps shipped in ``twofour/data/cslt-algsearch-*.json``, one dict per case.

    Each case (``shape, M, N, K``) has ``dense_ms``, ``default_ms`` (algorithm 0, what PyTorch's
    ``F.linear`` path picks), ``best`` (the fastest configuration whose result matched dense,
    with its ``alg_id`` and ``split_k``), every ``configs`` entry and the run's ``provenance``.
    Written by ``scripts/gpu_measure.py alg-search``; empty when none is recorded.

    Example:
        >>> cases = recorded_alg_search()
        >>> all(c["best"]["ms"] <= c["default_ms"] for c in cases)
        True
    """
    folder = Path(folder) if folder is not None else DATA_DIR
    out = []
    for path in sorted(folder.glob("cslt-algsearch-*.json")):
        data = read_json(path, "algorithm sweep file", schema=ALG_SEARCH_SCHEMA)
        out += [dict(case, provenance=data["provenance"]) for case in data["cases"]]
    return out


def cpu_roofline(results: Results) -> dict:
    """Achieved GFLOP/s and GB/s per point of a dense run, and the best of each (the measured ceilings).

    The "ceilings" are the best this run achieved, not the CPU's data-sheet peaks.

    Example:
        >>> res = sweep([("toy", 64, 64)], Ms=[1, 64], dtypes=["float32"], device="cpu",
        ...             warmup=1, repeats=3, progress=False)
        >>> r = cpu_roofline(res)
        >>> sorted(r) == ["best_gbs", "best_gflops", "points"]
        True
    """
    rows = []
    for p in results.points:
        M, N, K = p["M"], p["N"], p["K"]
        b = torch.empty((), dtype=_dtype(p["dtype"])).element_size()
        t = p["dense"]["median_ms"] * 1e-3
        flops = 2 * M * N * K
        n_bytes = (N * K + M * K + M * N) * b
        rows.append({"M": M, "N": N, "K": K, "shape": p.get("shape"), "t_ms": t * 1e3,
                     "intensity": flops / n_bytes, "gflops": flops / t / 1e9, "gbs": n_bytes / t / 1e9})
    if not rows:
        raise ValueError("results hold no points")
    return {"points": rows, "best_gflops": max(r["gflops"] for r in rows), "best_gbs": max(r["gbs"] for r in rows)}


def default_out_path(prov: dict, folder=".") -> Path:
    """``bench-<gpu or cpu>-<UTC timestamp>.json`` in ``folder``."""
    who = prov.get("gpu_name") or "cpu"
    slug = "".join(c if c.isalnum() else "-" for c in who.lower()).strip("-")
    while "--" in slug:
        slug = slug.replace("--", "-")
    stamp = str(prov.get("date", ""))[:19].replace(":", "").replace("-", "")
    return Path(folder) / f"bench-{slug}-{stamp}.json"

