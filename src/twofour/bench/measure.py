"""Measuring dense vs every available 2:4 backend for one shape, and sweeps over models' shapes.

Every 2:4 point is checked against the dense GEMM on the same pruned weight (:data:`TOLERANCE`);
a failed check is recorded with the point, never dropped. Only dense float32 is timed on a CPU:
2:4 kernels need an NVIDIA GPU of compute capability >= 8.0. On a GPU each timing mode is
bracketed by clock readings (:mod:`.clocks`).
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from typing import Iterable

import torch

from .._common.args import require_positive_int
from .._common.text import one_line
from .._passes.tensors import dtype_name
from ..models import get_preset, linear_shapes
from ..device import environment
from ..structure import prune
from . import gpu_timing
from .clocks import read_gpu_state
from .results import Results, provenance, torch_dtype
from ..vocabulary import CUSPARSELT, CUTLASS, TIMING_MODES
from .timing import on_gpu, summarize, time_callable

# Relative tolerance (max |sparse - dense| / max |dense|) for the 2:4 vs dense check. The two
# kernels accumulate in different orders; bf16 has 8 mantissa bits, fp16 11.
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}


def sparse_weight(W24: torch.Tensor, backend: str = CUSPARSELT.name, alg_id: int | None = None):
    """Convert a 2:4 weight with PyTorch's ``backend``, and for cuSPARSELt with algorithm ``alg_id``.

    Every ``F.linear(x, W)`` on the result runs that algorithm. The argument moved between
    releases: ``to_sparse_semi_structured(W, alg_id=...)`` where torch has it (2.13), else
    ``SparseSemiStructuredTensor._DEFAULT_ALG_ID`` set for this one conversion; the result's
    ``alg_id_cusparselt`` is checked. ``alg_id=None``: PyTorch's default (algorithm 0).
    """
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured

    if alg_id is not None:
        if isinstance(alg_id, bool) or not isinstance(alg_id, int) or alg_id < 0:
            raise ValueError(f"alg_id must be an int >= 0 (a cuSPARSELt algorithm number), got {alg_id!r}")
        if backend != CUSPARSELT.name:
            raise ValueError(f"alg_id picks a cuSPARSELt algorithm; backend {backend!r} has none (use backend='cuSPARSELt')")
    saved = SparseSemiStructuredTensor._FORCE_CUTLASS, SparseSemiStructuredTensor._DEFAULT_ALG_ID
    SparseSemiStructuredTensor._FORCE_CUTLASS = backend == CUTLASS.name
    kwargs = {}
    if alg_id is not None:
        if "alg_id" in inspect.signature(to_sparse_semi_structured).parameters:
            kwargs["alg_id"] = alg_id
        else:
            SparseSemiStructuredTensor._DEFAULT_ALG_ID = alg_id
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*prototype.*", category=UserWarning)
            Ws = to_sparse_semi_structured(W24, **kwargs)
    finally:
        SparseSemiStructuredTensor._FORCE_CUTLASS, SparseSemiStructuredTensor._DEFAULT_ALG_ID = saved
    if alg_id is not None and getattr(Ws, "alg_id_cusparselt", None) != alg_id:
        raise RuntimeError(f"this torch ({torch.__version__}) built the 2:4 tensor with alg_id_cusparselt="
                           f"{getattr(Ws, 'alg_id_cusparselt', None)!r}, not {alg_id}: it does not take the algorithm "
                           "through either known path")
    return Ws


def _pruned_weight(N: int, K: int, gen: torch.Generator, device, dtype) -> torch.Tensor:
    """A random ``[N, K]`` weight (scaled by ``1/sqrt(K)``) pruned to 2:4 on ``device``."""
    return prune((torch.randn(N, K, generator=gen) / math.sqrt(K)).to(device=device, dtype=dtype))[0]


def _check(y: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> dict:
    diff = (y.float() - ref.float()).abs().max().item()
    scale = ref.float().abs().max().item() or 1.0
    rel = diff / scale
    return {"max_abs_err": diff, "rel_err": rel, "tol": TOLERANCE[dtype], "passed": bool(rel <= TOLERANCE[dtype])}


def _modes(modes, device: torch.device) -> tuple[str, ...]:
    modes = tuple(modes)
    bad = [m for m in modes if m not in TIMING_MODES]
    if bad or not modes or modes[0] != "lone":
        raise ValueError(f"modes must start with 'lone' and use only {TIMING_MODES}, got {modes!r}")
    if not on_gpu(device) and modes != ("lone",):
        raise ValueError(f"modes {modes[1:]} need a CUDA GPU (CUDA graphs, stream timing, the CUDA profiler); "
                         "on CPU use modes=('lone',)")
    return modes


def _gpu_state(device: torch.device) -> dict | None:
    if device.type != "cuda":
        return None
    return read_gpu_state(device.index if device.index is not None else torch.cuda.current_device())


def measure_point(M: int, N: int, K: int, dtype, *, device, backends: Iterable[str] = (),
                  warmup: int = 3, repeats: int = 10, flush_l2: bool = True, seed: int = 0,
                  W24: torch.Tensor | None = None, modes: Iterable[str] = ("lone",),
                  alg_id: int | None = None) -> dict:
    """Time dense and each 2:4 backend for one (M, N, K, dtype); returns one result record.

    ``W24`` (an already pruned ``[N, K]`` weight on ``device``) can be passed to reuse it
    across M. With ``backends=()`` the record says why no sparse time exists. ``modes`` (GPU
    only beyond ``"lone"``) adds the other :data:`TIMING_MODES` under ``record["modes"][mode]``
    (:mod:`twofour.bench.gpu_timing`); a mode that fails for a backend records the error there.
    ``alg_id``: the cuSPARSELt algorithm (:func:`sparse_weight`), recorded with each 2:4 entry.
    On a GPU, ``record["clocks"][mode]`` holds the readings before and after that mode.
    """
    for name, v in (("M", M), ("N", N), ("K", K)):
        require_positive_int(name, v)
    dtype = torch_dtype(dtype)
    device = torch.device(device)
    modes = _modes(modes, device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    W24 = _pruned_weight(N, K, gen, device, dtype) if W24 is None else W24
    x = torch.randn(M, K, generator=gen).to(device=device, dtype=dtype)
    record = {"M": M, "N": N, "K": K, "dtype": dtype_name(dtype), "device": device.type}
    dense_fn = lambda: torch.nn.functional.linear(x, W24)  # noqa: E731
    clocks = {"lone": {"before": _gpu_state(device)}}
    record["dense"] = summarize(time_callable(dense_fn, device=device, warmup=warmup, repeats=repeats, flush_l2=flush_l2))
    if on_gpu(device):
        record["dense"]["method"] = gpu_timing.METHODS["lone"]["id"]
    backends = tuple(backends)
    if not backends:
        record["sparse_skipped"] = (
            "2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0; "
            f"this run is on {device.type}, so only the dense GEMM was timed"
        )
    if alg_id is not None:
        backends = tuple(b for b in backends if b == CUSPARSELT.name)
        if not backends:
            raise ValueError("alg_id picks a cuSPARSELt algorithm, but cuSPARSELt is not among the backends to time")
    ref = dense_fn()
    if backends:
        record["sparse"] = {}
    sparse_weights = {}
    for backend in backends:
        try:
            Ws = sparse_weight(W24, backend, alg_id)
            sparse_fn = lambda Ws=Ws: torch.nn.functional.linear(x, Ws)  # noqa: E731
            check = _check(sparse_fn(), ref, dtype)
            entry = summarize(time_callable(sparse_fn, device=device, warmup=warmup, repeats=repeats, flush_l2=flush_l2))
            entry["check"] = check
            entry["method"] = gpu_timing.METHODS["lone"]["id"]
            if alg_id is not None:
                entry["alg_id"] = Ws.alg_id_cusparselt
            sparse_weights[backend] = Ws
        except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
            entry = {"error": one_line(exc)}
        record["sparse"][backend] = entry
    clocks["lone"]["after"] = _gpu_state(device)
    if len(modes) > 1:
        record["modes"] = _other_modes(modes[1:], x, W24, sparse_weights, device=device, warmup=warmup,
                                       repeats=repeats, flush_l2=flush_l2, clocks=clocks, alg_id=alg_id)
    if any(v is not None for c in clocks.values() for v in c.values()):
        record["clocks"] = clocks
    return record


def _other_modes(modes, x, W24, sparse_weights: dict, *, device, warmup: int, repeats: int, flush_l2: bool,
                 clocks: dict, alg_id: int | None) -> dict:
    """The graph / stream / kernel timings of one point (see :mod:`twofour.bench.gpu_timing`).

    Each side gets enough copies of its weight that none is in L2 when its turn comes, made once
    for the three modes; each entry records its ``method`` and how many calls and copies it timed.
    ``flush_l2=False`` times one copy (the weight may then stay in L2, which the entry says).
    """
    linear = torch.nn.functional.linear
    weights = {"dense": W24, **sparse_weights}
    weight_bytes = W24.numel() * W24.element_size()
    n_copies = gpu_timing.copies_to_defeat_l2(weight_bytes, gpu_timing.l2_bytes(device)) if flush_l2 else 1
    copies: dict = {}
    for name, W in weights.items():
        try:
            copies[name] = [W] + [W24.clone() if name == "dense" else sparse_weight(W24.clone(), name, alg_id)
                                  for _ in range(n_copies - 1)]
        except Exception as exc:  # a copy the backend refuses: every mode of this side says so
            copies[name] = {"error": one_line(exc)}
    out: dict = {}
    for mode in modes:  # mode by mode, dense and 2:4 side by side in time
        clocks[mode] = {"before": _gpu_state(device)}
        entries = {}
        for name, side in copies.items():
            if isinstance(side, dict):
                entry = dict(side)
            else:
                try:
                    entry = _time_mode(mode, [lambda c=c: linear(x, c) for c in side], device=device,
                                       warmup=warmup, repeats=repeats)
                except Exception as exc:  # record whatever the GPU stack raises; the other modes go on
                    entry = {"error": one_line(exc)}
            entry["method"] = gpu_timing.METHODS[mode]["id"]
            if not flush_l2:
                entry["l2"] = "one weight copy: it may stay in L2 between calls (--no-flush)"
            entries[name] = entry
        out[mode] = {"dense": entries.pop("dense"), "sparse": entries}
        clocks[mode]["after"] = _gpu_state(device)
    return out


def _time_mode(mode: str, fns, *, device, warmup: int, repeats: int) -> dict:
    info: dict = {}
    if mode in ("graph", "stream"):
        timer = gpu_timing.time_graph if mode == "graph" else gpu_timing.time_stream
        entry = summarize(timer(fns, device=device, warmup=warmup, repeats=repeats, info=info))
    else:  # kernel
        prof = gpu_timing.profile_kernels(fns, device=device, calls=min(repeats, 5))
        entry = summarize([t / 1e3 for t in prof["sum_us"]])
        entry["span_ms"] = [t / 1e3 for t in prof["span_us"]]
        entry["kernels"] = prof["kernels"]
        info["copies"] = len(fns)
    entry.update(info)
    return entry


def model_shapes(models: Iterable[str] = ("Llama-3-8B",), *, include_lm_head: bool = False) -> list[tuple[str, int, int]]:
    """Distinct ``(label, N, K)`` linear shapes of model presets (``twofour.models``).

    Layers with the same shape are merged into one label (``"Llama-3-8B q_proj/o_proj"``).

    Example:
        >>> [(n, k) for _, n, k in model_shapes(["Llama-3-8B"])]
        [(4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336)]
    """
    out: dict[tuple[str, int, int], list[str]] = {}
    for name in models:
        cfg = get_preset(name)
        for s in linear_shapes(cfg, include_lm_head=include_lm_head):
            out.setdefault((cfg.name, s.out_features, s.in_features), []).append(s.name)
    return [(f"{model} {'/'.join(layers)}", n, k) for (model, n, k), layers in out.items()]


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
          modes: Iterable[str] = ("lone",), alg_id: int | None = None) -> "Results":
    """Measure every (shape, M, dtype): dense and every available 2:4 backend.

    Args:
        shapes: ``(label, N, K)`` triples, e.g. from :func:`model_shapes` or :func:`parse_shape`.
        Ms: token counts. dtypes: ``float16``/``bfloat16`` on GPU; on CPU use ``float32``.
        device: ``"cuda"``, ``"cpu"`` or None (CUDA when available).
        backends: 2:4 backends to time; None: every backend :func:`twofour.device.environment` reports.
        progress: show a tqdm progress bar (stderr).
        modes, alg_id: as :func:`measure_point` takes them.
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
    dtypes = [torch_dtype(d) for d in dtypes]
    modes = _modes(modes, device)
    if device.type == "cpu" and any(d != torch.float32 for d in dtypes):
        raise ValueError("on CPU only dtype float32 is timed: half-precision matmuls are emulated and "
                         "would measure the emulation, not the CPU's roofline")
    if not shapes or not Ms:
        raise ValueError("shapes and Ms must each hold at least one entry")
    if alg_id is not None and (device.type != "cuda" or CUSPARSELT.name not in backends):
        raise ValueError(f"alg_id={alg_id!r} picks a cuSPARSELt algorithm for the 2:4 kernel: that needs an NVIDIA GPU "
                         "with compute capability >= 8.0 and cuSPARSELt among the backends "
                         f"(device {device.type}, backends {list(backends)})")
    from tqdm import tqdm

    points = []
    with tqdm(total=len(shapes) * len(Ms) * len(dtypes), desc="twofour bench", unit="point", file=sys.stderr,
              disable=not progress) as bar:
        for label, N, K in shapes:
            for dtype in dtypes:
                W24 = _pruned_weight(N, K, torch.Generator(device="cpu").manual_seed(seed), device, dtype)
                for M in Ms:
                    rec = measure_point(M, N, K, dtype, device=device, backends=backends, warmup=warmup,
                                        repeats=repeats, flush_l2=flush_l2, seed=seed + M, W24=W24, modes=modes,
                                        alg_id=alg_id)
                    rec["shape"] = label
                    points.append(rec)
                    bar.update(1)
                del W24
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    timed_on_gpu = on_gpu(device)
    settings = {
        "warmup": warmup,
        "repeats": repeats,
        "flush_l2": bool(flush_l2 and timed_on_gpu),
        "timer": "cuda events (each mode's method in 'methods')" if timed_on_gpu else "time.perf_counter",
        "backends": list(backends),
        "modes": list(modes),
        "methods": {mode: gpu_timing.METHODS[mode] for mode in modes} if timed_on_gpu else {},
        "cache_note": ("L2 cold before every timed call: read, never written (lone), or weight copies in turn "
                       "(graph, stream, kernel)" if timed_on_gpu and flush_l2 else "caches not flushed between repeats"),
        "alg_id": alg_id,
        "alg_note": ("PyTorch's default cuSPARSELt algorithm (alg_id_cusparselt 0)" if alg_id is None
                     else f"cuSPARSELt algorithm {alg_id}, set through PyTorch's own path (twofour.bench.sparse_weight)"),
    }
    return Results(provenance=provenance(command, device=device), settings=settings, points=points)
