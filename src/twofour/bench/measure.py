"""Measuring dense vs every available 2:4 backend for one shape, and sweeps over models' shapes.

Every 2:4 point is compared with the dense GEMM on the same pruned weight: the maximum
absolute difference divided by the largest ``|y|`` must stay below a per-dtype tolerance
(:data:`TOLERANCE`). A failed check is recorded with the point, never dropped. Only dense
float32 is timed on a CPU: 2:4 sparse kernels exist only on NVIDIA GPUs with compute
capability >= 8.0.
"""

from __future__ import annotations

import math
import sys
import warnings
from typing import Iterable

import torch

from .._common.args import require_positive_int
from .._passes.tensors import dtype_name
from ..models import get_preset, linear_shapes
from ..device import environment
from ..structure import prune
from .results import Results, _dtype, provenance
from .timing import MODES, summarize, time_callable

# Relative tolerance (max |sparse - dense| / max |dense|) for the 2:4 vs dense check. The two
# kernels accumulate in different orders; bf16 has 8 mantissa bits, fp16 11.
TOLERANCE = {torch.float16: 1e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4}


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
    ``record["modes"][mode]``; see :mod:`twofour.bench.gpu_timing`. A mode that fails for a
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
    """The graph / stream / kernel timings of one point (see :mod:`twofour.bench.gpu_timing`)."""
    from . import gpu_timing as gt

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
