"""Predicted time of ``y = x @ W.T``, dense vs 2:4, from the kernel each side runs.

``x`` is ``[M, K]`` (M tokens), ``W`` is ``[N, K]`` (``nn.Linear`` weight), ``y`` is ``[M, N]``.
Dense runs cuBLAS; 2:4 runs cuSPARSELt algorithm 0 (PyTorch's default, ``algorithm="default"``),
the fastest algorithm a search finds (``algorithm="searched"``), or CUTLASS (``backend="CUTLASS"``).
Each family has its own :class:`~twofour.roofline.KernelFamily` in one
:class:`~twofour.roofline.KernelParams`, fitted by :mod:`twofour.roofline.calibration`.

One side's kernel time, in the order :func:`kernel_time` computes it (µs; plain arithmetic, so
``docs/js/calc/roofline.js`` repeats it operation for operation)::

    Mp        = ceil(M / mult) * mult on the 2:4 side (PyTorch pads x's rows), M for dense
    launch    = tile, tiles, split, ctas, waves, busy_sms        (tiles.launch on Mp)
    n_bytes   = weight + Mp * K * in_bytes + M * N * out_bytes + 2 * (ctas - tiles) * tile_n * tile_m * 4
                (weight: N * K * in_bytes dense, twofour.packing's packed bytes 2:4; the last term:
                 the fp32 partial tiles every split but the last writes and the last reads back)
    sat       = mem_bw_gbs * mem_eff
    per_sm    = per_sm_gbs * (1 + fill_gain * min(Mp, tile_m) / tile_m)
    bw_gbs    = sat * busy_sms / (busy_sms + sat / per_sm)       (grows with busy SMs, saturates)
    dirty     = min(n_bytes * flush_dirty_frac, flush_dirty_mb * 1e6)   if l2 == "flushed", else 0
    t_memory  = max(n_bytes / (bw_gbs * 1e3), (n_bytes + dirty) / (mem_bw_gbs * dram_eff * 1e3))
    cta_flops = 2 * tile_n * tile_m * ceil(K / split)             (the whole tile, padding columns too)
    cta_rate  = min(peak * 1e6 / sms * sm_compute_eff, peak * 1e6 * compute_eff / busy_sms)
    t_compute = waves * cta_flops / cta_rate                      (peak: the side's TFLOP/s)
    gemm_us   = latency_us + max(t_compute, t_memory)
    helpers   = helper_split_us if split > 1  +  pad_us if 2:4 and M % mult != 0
    kernel_us = gemm_us + helpers

Why each term: a kernel computes whole tiles, so its math is that of ``tile_m`` token columns
whatever M is. PyTorch's default 2:4 kernel (cuSPARSELt algorithm 0) has a 128 x 256 tile whose 256
columns are tokens: at one token it does the math of 256, and that padded math, not the weight's
bytes, sets its decode time. It also launches few CTAs (32 on 132 SMs for N = 1024), so the SMs it
keeps busy, not the data sheet, set its bandwidth (H200, M <= 16, fp16: 16.7% to 49.5% of the
bandwidth cuBLAS reaches on the same weight); split-K buys CTAs with whole fp32 partial tiles;
``twofour bench`` flushes L2 by *writing* a buffer, so a kernel measured after it also writes back
dirty lines, which costs the DRAM-bound dense kernels and not the latency-bound 2:4 one.

The scenario (:mod:`twofour.roofline.scenarios`) then adds what a call pays beyond its kernels.

**Ceiling guard.** A 2:4 GEMM can never beat dense by more than 2x (compute) or
``1 / packed_ratio`` (1.78x for fp16, where the dense kernel is memory-bound): the 2:4 time is
raised to ``dense / ceiling`` where the model would pass it (:attr:`Prediction.ceiling_guard`).
With the stored fit the guard binds in 238 of a grid of 134,640 predictions, 0.2%
(``checks.ceilings`` in ``kernel-fit.json``).

Assumptions, each a simplification a measurement can contradict:

* tiles, split rule and constants were read and fitted on one H200 with one software stack;
  other GPUs keep the tables and the H200's constants, with the 2:4 compute efficiency refitted
  per GPU where published points exist (:func:`fit_summary` says which);
* ``max(t_compute, t_memory)``: math and memory overlap perfectly inside a kernel;
* each byte crosses DRAM once (no re-reads of x or W across tiles; L2 reuse is not modelled);
* 8-bit GEMMs write bf16 (2 bytes per output element), as scaled matmuls usually do.

The error this leaves is measured: :func:`fit_summary` states it per M regime on held-out points.

Example:
    >>> from twofour.roofline import predict
    >>> p = predict(1, 1024, 4096, "fp16", "H200", scenario="kernel")   # k_proj at decode
    >>> (p.sparse.tile_n, p.sparse.tile_m, p.sparse.split, p.sparse.ctas), (p.dense.tile_n, p.dense.tile_m, p.dense.ctas)
    ((128, 256, 4, 32), (64, 8, 48))
    >>> p.speedup < 0.5          # 32 CTAs, each the math of a 128 x 256 tile for 1 real token column of 256
    True
    >>> predict(16, 14336, 4096, "fp16", "H200", algorithm="searched").speedup > 1   # gate/up, a narrower tile
    True
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import asdict, dataclass

import torch

from .._common.args import require_positive_int
from ..vocabulary import DTYPES, GEMM_DTYPES, dtype_key as _dtype_key
from ..hardware import GPUSpec, get_gpu
from ..packing import packed_bytes
from .params import KernelFamily, KernelParams, default_params, family_for
from .scenarios import DEFAULT_SCENARIO, check_scenario, scenario_us
from .tiles import Launch, launch

__all__ = ["KernelTime", "Prediction", "ALGORITHMS", "L2_STATES", "kernel_time", "predict", "gemm_speedup",
           "speedup_curve", "crossover_m", "ceilings", "arithmetic_intensity", "ridge_point", "pad_multiple"]

ALGORITHMS = ("default", "searched")
L2_STATES = ("flushed", "clean")

# Row multiple of the 2:4 path's dense operand, bytes per input and output element: all from the
# one dtype table, twofour.vocabulary (its docstring cites PyTorch's _DTYPE_SHAPE_CONSTRAINTS).
_PAD_MULTIPLE = {(backend, d): mult for d, f in DTYPES.items() for backend, mult in f.pad_multiple.items()}


def packed_weight_bytes(N: int, K: int, d: str) -> int:
    """Bytes of the packed ``[N, K]`` weight in dtype ``d`` (twofour.packing's count, the table's form)."""
    f = DTYPES[d]
    return packed_bytes((N, K), f.value_bits, f.n, f.m, meta_bits_per_value=f.meta_bits)


def _gemm_dtype(dtype) -> str:
    d = _dtype_key(dtype)
    if d == "fp32":
        raise ValueError(
            "dtype float32/fp32 runs on CUDA cores, which have no 2:4 mode; use 'tf32' for "
            f"float32 on tensor cores, or one of {GEMM_DTYPES}"
        )
    return d


@functools.lru_cache(maxsize=None)
def _live_pad_multiple(backend: str, d: str) -> int | None:
    """The installed torch's rule, read by :mod:`twofour.dispatch` (None if unavailable)."""
    try:
        from ..dispatch.rules import backend_rules

        rule = backend_rules(backend.lower()).shapes.get(getattr(torch, DTYPES[d].torch_name, None))
        return None if rule is None else int(rule.dense_min_rows)
    except (ImportError, AttributeError, KeyError, ValueError, TypeError):
        return None


def pad_multiple(backend: str, dtype) -> int:
    """Row multiple the 2:4 path pads ``x`` to (PyTorch ``_DTYPE_SHAPE_CONSTRAINTS``).

    Read from the installed torch through :mod:`twofour.dispatch` when it knows the
    (backend, dtype) pair, otherwise from the cited table (same values for torch 2.13).

    Example:
        >>> pad_multiple("cuSPARSELt", "fp16"), pad_multiple("CUTLASS", "int8")
        (8, 16)
    """
    d = _gemm_dtype(dtype)
    live = _live_pad_multiple(backend, d)
    if live is not None:
        return live
    try:
        return _PAD_MULTIPLE[(backend, d)]
    except KeyError:
        valid = sorted({b for b, _ in _PAD_MULTIPLE})
        raise ValueError(
            f"no 2:4 padding rule for backend={backend!r} with dtype={d!r}; backends: {valid} "
            f"(CUTLASS has no fp8 path)"
        ) from None


@dataclass(frozen=True)
class KernelTime(Launch):
    """One side's kernel as the model sees it: its :class:`Launch`, the bytes, rates and times (µs)."""

    family: str
    n_bytes: int
    bw_gbs: float
    t_compute_us: float
    t_memory_us: float
    gemm_us: float
    helpers_us: float
    kernel_us: float

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"memory"``: which of the kernel's two times is the larger."""
        return "compute" if self.t_compute_us >= self.t_memory_us else "memory"

    def to_dict(self) -> dict:
        """Every field (``family`` first) and ``bound``: the form ``docs/js/calc/roofline.js`` returns."""
        return {"family": self.family, **asdict(self), "bound": self.bound}


def launch_bytes(M: int, N: int, K: int, d: str, spec: GPUSpec, fam: KernelFamily, sparse: bool,
                 mult: int) -> tuple[int, Launch, int]:
    """``Mp``, the launch and ``n_bytes`` of one side's kernel: the module docstring's first three lines."""
    Mp = math.ceil(M / mult) * mult if sparse else M
    L = launch(Mp, N, K, fam.tiles, spec.sms, cta_target=fam.cta_target, max_split=fam.max_split,
               min_k_iters=fam.min_k_iters)
    in_b, out_b = DTYPES[d].in_bytes, DTYPES[d].out_bytes
    weight = packed_weight_bytes(N, K, d) if sparse else N * K * in_b
    return Mp, L, weight + Mp * K * in_b + M * N * out_b + 2 * (L.ctas - L.tiles) * L.tile_n * L.tile_m * 4


def _kernel_time(M: int, N: int, K: int, d: str, spec: GPUSpec, name: str, fam: KernelFamily, params: KernelParams,
                 mult: int, l2: str) -> KernelTime:
    """The model docstring's arithmetic, in its order. ``mult``: the 2:4 path's row multiple."""
    sparse = name != "cublas"
    Mp, L, n_bytes = launch_bytes(M, N, K, d, spec, fam, sparse, mult)
    sat = spec.mem_bw_gbs * fam.mem_eff
    per_sm = fam.per_sm_gbs * (1 + fam.fill_gain * min(Mp, L.tile_m) / L.tile_m)
    bw = sat * L.busy_sms / (L.busy_sms + sat / per_sm)
    dirty = min(n_bytes * params.flush_dirty_frac, params.flush_dirty_mb * 1e6) if l2 == "flushed" else 0.0
    t_memory = max(n_bytes / (bw * 1e3), (n_bytes + dirty) / (spec.mem_bw_gbs * params.dram_eff * 1e3))
    peak = spec.peak_tflops(d, sparse=sparse)
    cta_flops = 2 * L.tile_n * L.tile_m * math.ceil(K / L.split)
    cta_rate = min(peak * 1e6 / spec.sms * fam.sm_compute_eff, peak * 1e6 * fam.compute_eff / L.busy_sms)
    t_compute = L.waves * cta_flops / cta_rate
    gemm = fam.latency_us + max(t_compute, t_memory)
    helpers = (fam.helper_split_us if L.split > 1 else 0.0) + (params.pad_us if sparse and M % mult else 0.0)
    return KernelTime(**asdict(L), family=name, n_bytes=n_bytes, bw_gbs=bw, t_compute_us=t_compute,
                      t_memory_us=t_memory, gemm_us=gemm, helpers_us=helpers, kernel_us=gemm + helpers)


# A GEMM dimension beyond an int64 is no GEMM (a prefill M = batch x prompt can pass 2^31), and the
# bound keeps 2 * M * N * K a finite float.
MAX_DIM = 2**63 - 1
MAX_CROSSOVER_M = 1 << 16  # crossover_m's largest m_max: beyond it a GEMM is a batch of smaller ones


def _require_bool(name: str, v) -> None:
    """True or False only: ``sparse="no"`` or ``nan`` would count as sparse."""
    if not isinstance(v, bool):
        raise TypeError(f"{name} must be True or False, got {v!r}")


def _check_shape(M, N, K):
    for name, v in (("M", M), ("N", N), ("K", K)):
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_DIM:
            shown = f"{v:,}" if v < 10**30 else f"an int of {len(str(v)) if v < 10**4000 else 'over 4,000'} digits"
            raise ValueError(f"{name} must be an int from 1 to {MAX_DIM:,} (a GEMM dimension), got {shown}")
        require_positive_int(name, v)
    if K % 4:
        raise ValueError(f"K must be a multiple of 4 for a 2:4 weight (groups of 4 along K), got K={K}")


def _resolve(gpu, dtype, backend) -> tuple[GPUSpec, str, str]:
    spec = get_gpu(gpu)
    d = _gemm_dtype(dtype)
    if not spec.sparse_24:
        raise ValueError(
            f"gpu {spec.name} (compute capability {spec.capability[0]}.{spec.capability[1]}) has no "
            "sparse tensor cores; 2:4 needs 8.0 or newer (e.g. A100, L4, H100)"
        )
    if backend is None:
        backend = spec.backends[0]
    elif isinstance(backend, str) and backend.lower() in {b.lower(): b for b in spec.backends}:
        backend = {b.lower(): b for b in spec.backends}[backend.lower()]
    else:
        raise ValueError(f"backend {backend!r} is not available on {spec.name}; valid: {list(spec.backends)}")
    # Fail early with the table's message if the GPU lacks this dtype.
    spec.peak_tflops(d)
    spec.peak_tflops(d, sparse=True)
    return spec, d, backend


def _setup(M, N, K, gpu, dtype, backend, params, scenario, algorithm, l2):
    """Every argument checked, in one order; returns the GPU, dtype key, backend, parameters and row multiple."""
    _check_shape(M, N, K)
    spec, d, backend = _resolve(gpu, dtype, backend)
    check_scenario(scenario)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS} ('default': cuSPARSELt algorithm 0, what PyTorch "
                         f"passes unless told otherwise; 'searched': the fastest algorithm a search finds), got {algorithm!r}")
    if algorithm == "searched" and backend == "CUTLASS":
        raise ValueError("algorithm='searched' picks a cuSPARSELt algorithm; the CUTLASS backend has none to search, "
                         "use algorithm='default'")
    if l2 not in L2_STATES:
        raise ValueError(f"l2 must be one of {L2_STATES} ('flushed': after an L2 flush that writes, as twofour bench "
                         f"measures; 'clean': kernels back to back, as in a decode step), got {l2!r}")
    if params is None:
        params = default_params(spec.name, backend)
    elif not isinstance(params, KernelParams):
        raise TypeError(f"params must be a KernelParams or None, got {type(params).__name__}")
    return spec, d, backend, params, params.pad_to or pad_multiple(backend, d)


def kernel_time(M: int, N: int, K: int, dtype="fp16", gpu="H200", family: str = "cublas",
                params: KernelParams | None = None, *, l2: str = "clean") -> KernelTime:
    """One family's kernel for one GEMM (the module docstring's arithmetic).

    ``family`` is one of :data:`twofour.roofline.FAMILIES`; ``M`` is the GEMM's (the 2:4
    families pad it); ``params`` defaults to the fitted set of the GPU (and backend).

    Example:
        >>> k = kernel_time(16, 4096, 4096, "fp16", "H200", "cusparselt")     # q_proj, decode step of 16
        >>> (k.tile_n, k.tile_m, k.tiles, k.split, k.ctas, k.busy_sms, k.bound)
        (128, 256, 32, 3, 96, 96, 'memory')
    """
    backend = "CUTLASS" if family == "cutlass" else None
    spec, d, backend, params, mult = _setup(M, N, K, gpu, dtype, backend, params, "kernel", "default", l2)
    return _kernel_time(M, N, K, d, spec, family, params.family(family), params, mult, l2)


@dataclass(frozen=True)
class Prediction:
    """Predicted dense and 2:4 time of one GEMM in one scenario, with each side's kernel (:class:`KernelTime`).

    ``bound_dense`` / ``bound_sparse``: ``"compute"``, ``"memory"`` or ``"host"`` (eager, the
    host's time per call is the larger). ``ceiling_guard``: the 2:4 time was raised to keep the
    speedup under its ceiling (module doc).
    """

    M: int
    N: int
    K: int
    dtype: str
    gpu: str
    backend: str
    algorithm: str
    scenario: str
    l2: str
    M_padded: int
    dense: KernelTime
    sparse: KernelTime
    dense_us: float
    sparse_us: float
    bound_dense: str
    bound_sparse: str
    ceiling_guard: bool

    @property
    def speedup(self) -> float:
        """``dense_us / sparse_us``: above 1 means 2:4 wins."""
        return self.dense_us / self.sparse_us

    def to_dict(self) -> dict:
        """Every field, the two kernels as :meth:`KernelTime.to_dict`, and ``speedup``: what the JS mirror returns."""
        out = {f: getattr(self, f) for f in self.__dataclass_fields__}
        out.update(dense=self.dense.to_dict(), sparse=self.sparse.to_dict(), speedup=self.speedup)
        return out


def _predict(M, N, K, spec, d, backend, params, scenario, algorithm, l2, mult) -> Prediction:
    fam = family_for(backend, algorithm, d)
    kd = _kernel_time(M, N, K, d, spec, "cublas", params.cublas, params, mult, l2)
    ks = _kernel_time(M, N, K, d, spec, fam, params.family(fam), params, mult, l2)
    host_sparse = params.host_sparse_us if fam.startswith("cusparselt") else params.host_dense_us
    dense_us, host_d = scenario_us(kd.kernel_us, scenario, graph_us=params.graph_dense_us, host_us=params.host_dense_us)
    sparse_us, host_s = scenario_us(ks.kernel_us, scenario, graph_us=params.graph_sparse_us, host_us=host_sparse)
    cap = 2.0 if kd.bound == "compute" else 1 / DTYPES[d].packed_ratio
    guard = dense_us / sparse_us > cap
    if guard:
        sparse_us = dense_us / cap
    return Prediction(M, N, K, d, spec.name, backend, algorithm, scenario, l2, math.ceil(M / mult) * mult, kd, ks,
                      dense_us, sparse_us, "host" if host_d else kd.bound, "host" if host_s else ks.bound, guard)


def predict(M: int, N: int, K: int, dtype="fp16", gpu="H100", backend: str | None = None,
            params: KernelParams | None = None, *, scenario: str = DEFAULT_SCENARIO, algorithm: str = "default",
            l2: str = "clean") -> Prediction:
    """Predict dense and 2:4 time of ``y = x @ W.T`` with ``x: [M, K]``, ``W: [N, K]``.

    Args:
        M, N, K: GEMM shape (tokens, out_features, in_features). K must divide by 4.
        dtype: ``"fp16"``, ``"bf16"``, ``"fp8"``, ``"int8"``, ``"tf32"`` or a torch dtype.
        gpu: a name from :data:`twofour.hardware.GPUS` or a :class:`~twofour.hardware.GPUSpec`.
        backend: ``"cuSPARSELt"`` or ``"CUTLASS"`` (any case); default: the GPU's preferred one.
        params: :class:`KernelParams`; default :func:`default_params` of the GPU and backend (fitted).
        scenario: ``"eager"``, ``"cached"`` (default) or ``"kernel"`` (:mod:`.scenarios`).
        algorithm: ``"default"`` (cuSPARSELt algorithm 0) or ``"searched"`` (cuSPARSELt only).
        l2: ``"clean"`` (calls back to back, as in a decode step) or ``"flushed"`` (as ``twofour
            bench`` measured: pass it to compare with its results files).

    Example:
        >>> p = predict(4096, 4096, 4096, "bf16", "A100")
        >>> p.bound_dense, p.backend, p.M_padded, p.sparse.family
        ('compute', 'cuSPARSELt', 4096, 'cusparselt_bf16')
    """
    spec, d, backend, params, mult = _setup(M, N, K, gpu, dtype, backend, params, scenario, algorithm, l2)
    return _predict(M, N, K, spec, d, backend, params, scenario, algorithm, l2, mult)


def gemm_speedup(M: int, N: int, K: int, dtype="fp16", gpu="H100", backend: str | None = None,
                 params: KernelParams | None = None, *, scenario: str = DEFAULT_SCENARIO, algorithm: str = "default",
                 l2: str = "clean") -> float:
    """Predicted ``t_dense / t_2:4`` for one GEMM (what :mod:`twofour.amdahl` calls ``s``).

    Example:
        >>> gemm_speedup(1, 4096, 4096, "fp16", "H100", scenario="eager") < 0.2   # a plan per call
        True
        >>> 1 < gemm_speedup(16384, 4096, 4096, "fp16", "H100", scenario="kernel") < 2
        True
    """
    return predict(M, N, K, dtype, gpu, backend, params, scenario=scenario, algorithm=algorithm, l2=l2).speedup


def speedup_curve(Ms, N: int, K: int, dtype="fp16", gpu="H100", backend=None, params=None, *,
                  scenario: str = DEFAULT_SCENARIO, algorithm: str = "default", l2: str = "clean") -> list[Prediction]:
    """:func:`predict` for every M in ``Ms`` (for plots).

    Example:
        >>> [p.M for p in speedup_curve([1, 64], 4096, 4096, scenario="kernel")]
        [1, 64]
    """
    out = []
    for k, M in enumerate(Ms):  # ints and numpy ints, never a string, a float or a bool
        if isinstance(M, (bool, str)) or not hasattr(M, "__index__"):
            raise ValueError(f"Ms[{k}] must be an int >= 1 (a token count), got {M!r}")
        out.append(predict(operator.index(M), N, K, dtype, gpu, backend, params, scenario=scenario,
                           algorithm=algorithm, l2=l2))
    return out


def crossover_m(N: int, K: int, dtype="fp16", gpu="H100", backend=None, params=None,
                m_max: int = 16384, *, scenario: str = DEFAULT_SCENARIO, algorithm: str = "default",
                l2: str = "clean") -> int | None:
    """Smallest M in ``1..m_max`` at which 2:4 is predicted faster than dense (speedup > 1), or None.

    Tile choices and waves make the curve saw-toothed, so a win at this M does not promise a
    win at every larger M: plot :func:`speedup_curve`. ``m_max`` is at most :data:`MAX_CROSSOVER_M`.

    Example:
        >>> m = crossover_m(4096, 4096, "fp16", "H100")
        >>> gemm_speedup(m, 4096, 4096) > 1 >= gemm_speedup(m - 1, 4096, 4096)
        True
    """
    require_positive_int("m_max", m_max)
    if m_max > MAX_CROSSOVER_M:
        raise ValueError(f"m_max must be at most {MAX_CROSSOVER_M:,} (every M up to it is predicted: the curve is "
                         f"saw-toothed, so no bisection finds the smallest winning M), got {m_max:,}")
    spec, d, backend, params, mult = _setup(1, N, K, gpu, dtype, backend, params, scenario, algorithm, l2)
    for M in range(1, m_max + 1):
        if _predict(M, N, K, spec, d, backend, params, scenario, algorithm, l2, mult).speedup > 1:
            return M
    return None


def ceilings(dtype) -> dict[str, float]:
    """The two ceilings of any 2:4 GEMM: ``compute`` (2x) and ``memory`` (1 / packed ratio).

    Example:
        >>> ceilings("fp16")
        {'compute': 2.0, 'memory': 1.7777777777777777}
    """
    return {"compute": 2.0, "memory": 1 / DTYPES[_gemm_dtype(dtype)].packed_ratio}


def arithmetic_intensity(M: int, N: int, K: int, dtype="fp16", *, sparse: bool = False) -> float:
    """FLOPs per DRAM byte of the GEMM (dense FLOPs counted for both, as the useful work).

    Example:
        >>> round(arithmetic_intensity(1, 4096, 4096, "fp16"), 2)     # decode: ~1 FLOP/byte
        1.0
        >>> arithmetic_intensity(4096, 4096, 4096, "fp16") > 1000      # prefill
        True
    """
    _check_shape(M, N, K)
    _require_bool("sparse", sparse)
    d = _gemm_dtype(dtype)
    weight = packed_weight_bytes(N, K, d) if sparse else N * K * DTYPES[d].in_bytes
    n_bytes = weight + M * K * DTYPES[d].in_bytes + M * N * DTYPES[d].out_bytes
    return 2 * M * N * K / n_bytes


def ridge_point(gpu, dtype="fp16", *, sparse: bool = False) -> float:
    """FLOPs per byte at which the GPU's peak compute meets its peak bandwidth.

    Example:
        >>> round(ridge_point("H100", "fp16"))
        295
    """
    _require_bool("sparse", sparse)
    spec = get_gpu(gpu)
    return spec.peak_tflops(_gemm_dtype(dtype), sparse=sparse) * 1e12 / (spec.mem_bw_gbs * 1e9)
