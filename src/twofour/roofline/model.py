"""Predicted time of ``y = x @ W.T``, dense vs 2:4, for one shape on one GPU.

``x`` is ``[M, K]`` (M tokens), ``W`` is ``[N, K]`` (``nn.Linear`` weight, out x in), ``y`` is
``[M, N]``. The model is a roofline with four corrections that explain why measured 2:4 gains
sit far below the 2x on the data sheet:

1. **Compute ceiling.** ``2*M*N*K`` FLOPs at ``peak * compute_eff``; the 2:4 kernel uses the
   sparse peak (2x dense on every GPU in :mod:`twofour.hardware`), with its own efficiency.
2. **Memory ceiling.** Bytes moved once each: the weight (dense ``N*K*b``, or
   :func:`twofour.packing.packed_bytes` for 2:4 — 56.25% of dense for fp16/bf16, 62.5% for
   8-bit), the activations ``M*K*b`` and the output ``M*N*b_out``, at
   ``bandwidth * memory_eff``. When the weight dominates (small M), the best 2:4 can do is
   ``1 / packed_ratio`` (1.78x for fp16), not 2x.
3. **Padding.** PyTorch's 2:4 path zero-pads the dense operand's rows up to a multiple that
   depends on backend and dtype (8 for fp16/bf16, 16 for int8/fp8, 4 for tf32; from
   ``_DTYPE_SHAPE_CONSTRAINTS`` in ``torch/sparse/semi_structured.py``, facts.md §3), and
   computes on the padded rows. The dense GEMM is not padded.
4. **Per-call costs**, which depend on how the call is run (the *scenario*, :data:`SCENARIOS`):
   the device's cost per call (kernel launch and latency; the 2:4 path's extra memset and
   padding kernels), paid unless the scenario is ``ideal``; and the host's time per call
   (Python dispatch; cuSPARSELt builds descriptors and a plan on every call in PyTorch eager),
   which bounds a call from below in the ``eager`` scenario: ``max(kernel + device, host)``.
5. **Wave quantization.** The output is cut into ``tile_m x tile_n`` tiles, one tile per SM at
   a time. With ``tiles`` tiles and ``sms`` SMs the GPU runs ``ceil(tiles / sms)`` waves and
   the last one leaves SMs idle; the achieved fraction ``tiles / (waves * sms)`` divides
   the compute rate. Small M means few tiles, so most SMs sit idle.

Assumptions, stated once (each is a simplification a measurement can contradict):

* ``kernel = max(t_compute, t_memory)``: perfect overlap of math and memory.
* Each byte crosses DRAM once (no re-reads of x or W across tiles; L2 is not modelled).
* Idle SMs in the last wave are the only tile effect charged; dense and 2:4 kernels use the
  same tile shape (the fit picks it; 64 x 64 fits our H200 kernels best).
* Memory bandwidth is reached even when few SMs are busy (it is not: the H200 run shows the
  2:4 decode kernel at 29-40% of the bandwidth the dense one reaches; the fitted 2:4 memory
  efficiency absorbs that).
* Output bytes per element: same as the input dtype, except 8-bit GEMMs (int8, fp8), which
  are assumed to write bf16 (2 bytes), as scaled matmuls usually do.
* Efficiencies and per-call costs are constants per kernel family (dense, 2:4), not functions
  of shape. They are **fitted** (:mod:`twofour.roofline.calibration`, stored in
  ``twofour/data/kernel-fit.json``): to this project's own H200 measurements, and per GPU to
  published ones (:mod:`twofour.roofline.published`). :func:`fit_summary` says what each GPU's
  set was fitted to and the held-out error; :data:`ASSUMED_EFFICIENCY` keeps the guesses the
  model used before it was fitted.

Every formula is plain arithmetic (``ceil``, ``max``, ``*``, ``/``) so the static site's
JavaScript calculator can mirror it operation for operation; see :func:`gemm_time_s`.

2:4 next to quantization (bits per weight of bf16, fp8, int8 and int4 formats with and
without 2:4, a decode step as bytes, and the batch a GPU serves at a TPOT target) is in
:mod:`twofour.roofline.formats`; the parameters and their fitted sets are in
:mod:`twofour.roofline.params`, the scenarios in :mod:`twofour.roofline.scenarios`, fitting in
:mod:`twofour.roofline.fitting`. :mod:`twofour.roofline` re-exports the public names of all.

Example:
    >>> from twofour.roofline import predict, crossover_m
    >>> p = predict(1, 4096, 4096, "fp16", "H200")          # decode, plans cached
    >>> p.bound_dense, p.bound_sparse
    ('memory', 'memory')
    >>> p.speedup < 1 / 0.5625            # decode: below the bytes ceiling, here below 1
    True
    >>> predict(1, 4096, 4096, "fp16", "H200", scenario="eager").bound_sparse   # a plan per call
    'host'
    >>> big = predict(16384, 4096, 4096, "fp16", "H200", scenario="ideal")
    >>> round(big.speedup, 2)              # about 2 * sparse_compute / dense_compute
    1.34
    >>> crossover_m(4096, 4096, "fp16", "H200") > 1
    True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from .._common.args import require_positive_int
from .._common.dtypes import DTYPES, GEMM_DTYPES, dtype_key as _dtype_key
from ..hardware import GPUSpec, get_gpu
from ..packing import packed_bytes
from .params import Efficiency, default_params
from .scenarios import DEFAULT_SCENARIO, check_scenario

# Row multiple of the 2:4 path's dense operand, bytes per input and output element, and what
# twofour.packing counts for the packed weight: all from the one dtype table, twofour._common.dtypes
# (its docstring cites PyTorch's _DTYPE_SHAPE_CONSTRAINTS, facts.md §3). Older releases padded
# fp16 activations to 32 rows (pytorch#111339): pass Efficiency(pad_to=32) for them.
_PAD_MULTIPLE = {(backend, d): mult for d, f in DTYPES.items() for backend, mult in f.pad_multiple.items()}
_IN_BYTES = {d: f.in_bytes for d, f in DTYPES.items()}
_OUT_BYTES = {d: f.out_bytes for d, f in DTYPES.items()}


def _packed_weight_bytes(N: int, K: int, d: str) -> int:
    """Bytes of the packed ``[N, K]`` weight in dtype ``d`` (twofour.packing's count, the table's form)."""
    f = DTYPES[d]
    return packed_bytes((N, K), f.value_bits, f.n, f.m, meta_bits_per_value=f.meta_bits)


@dataclass(frozen=True)
class Prediction:
    """Predicted dense and 2:4 time of one GEMM, with what bounds each (``compute``/``memory``)."""

    M: int
    N: int
    K: int
    dtype: str
    gpu: str
    backend: str
    M_padded: int
    dense_us: float
    sparse_us: float
    bound_dense: str
    bound_sparse: str
    wave_eff_dense: float
    wave_eff_sparse: float
    scenario: str = DEFAULT_SCENARIO

    @property
    def speedup(self) -> float:
        """``dense_us / sparse_us``: above 1 means 2:4 wins."""
        return self.dense_us / self.sparse_us


def _gemm_dtype(dtype) -> str:
    d = _dtype_key(dtype)
    if d == "fp32":
        raise ValueError(
            "dtype float32/fp32 runs on CUDA cores, which have no 2:4 mode; use 'tf32' for "
            f"float32 on tensor cores, or one of {GEMM_DTYPES}"
        )
    return d


_TORCH_DTYPE = {d: getattr(torch, f.torch_name, None) for d, f in DTYPES.items()}


@functools.lru_cache(maxsize=None)
def _live_pad_multiple(backend: str, d: str) -> int | None:
    """The installed torch's rule, read by :mod:`twofour.dispatch` (None if unavailable)."""
    try:
        from ..dispatch.rules import backend_rules

        rule = backend_rules(backend.lower()).shapes.get(_TORCH_DTYPE[d])
        return None if rule is None else int(rule.dense_min_rows)
    except (ImportError, AttributeError, KeyError, ValueError, TypeError):
        return None


def pad_multiple(backend: str, dtype) -> int:
    """Row multiple the 2:4 path pads ``x`` to (PyTorch ``_DTYPE_SHAPE_CONSTRAINTS``).

    Read from the installed torch through :mod:`twofour.dispatch` when it knows the
    (backend, dtype) pair, otherwise from the cited table in this module (same values for
    torch 2.13).

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


def wave_efficiency(M: int, N: int, sms: int, tile_m: int = 128, tile_n: int = 128) -> float:
    """Fraction of SM-slots doing work: ``tiles / (ceil(tiles / sms) * sms)``.

    Example:
        >>> wave_efficiency(1, 4096, 132)        # 32 tiles on 132 SMs
        0.24242424242424243
        >>> wave_efficiency(128 * 33, 4096, 132) # 1056 tiles = exactly 8 waves
        1.0
    """
    for name, v in (("M", M), ("N", N), ("sms", sms), ("tile_m", tile_m), ("tile_n", tile_n)):
        _require_size(name, v)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"{name} must be a positive number (SMs and tile sizes: ints >= 1), got {v!r}")
    tiles = math.ceil(M / tile_m) * math.ceil(N / tile_n)
    waves = math.ceil(tiles / sms)
    return tiles / (waves * sms)


def gemm_time_s(
    M: int,
    N: int,
    K: int,
    *,
    peak_tflops: float,
    mem_bw_gbs: float,
    sms: int,
    weight_bytes: float,
    in_bytes: int,
    out_bytes: int,
    compute_eff: float,
    memory_eff: float,
    overhead_us: float,
    tile_m: int,
    tile_n: int,
    host_us: float = 0.0,
) -> tuple[float, str, float]:
    """Time of one GEMM in seconds, what bounds it, and its wave efficiency.

    This is the whole model; :func:`predict` only chooses the arguments. In order::

        flops     = 2 * M * N * K
        wave_eff  = tiles / (ceil(tiles / sms) * sms),  tiles = ceil(M/tile_m) * ceil(N/tile_n)
        t_compute = flops / (peak_tflops * 1e12 * compute_eff * wave_eff)
        n_bytes   = weight_bytes + M * K * in_bytes + M * N * out_bytes
        t_memory  = n_bytes / (mem_bw_gbs * 1e9 * memory_eff)
        t         = max(max(t_compute, t_memory) + overhead_us * 1e-6, host_us * 1e-6)

    The bound is ``"host"`` when the host's per-call time is the larger.

    Example:
        >>> t, bound, _ = gemm_time_s(1, 4096, 4096, peak_tflops=989.5, mem_bw_gbs=3350, sms=132,
        ...     weight_bytes=4096 * 4096 * 2, in_bytes=2, out_bytes=2, compute_eff=1, memory_eff=1,
        ...     overhead_us=0, tile_m=128, tile_n=128)
        >>> bound, round(t * 1e6, 2)      # 33.6 MB at 3.35 TB/s
        ('memory', 10.02)
    """
    flops = 2 * M * N * K
    wave_eff = wave_efficiency(M, N, sms, tile_m, tile_n)
    t_compute = flops / (peak_tflops * 1e12 * compute_eff * wave_eff)
    n_bytes = weight_bytes + M * K * in_bytes + M * N * out_bytes
    t_memory = n_bytes / (mem_bw_gbs * 1e9 * memory_eff)
    bound = "compute" if t_compute >= t_memory else "memory"
    t_device = max(t_compute, t_memory) + overhead_us * 1e-6
    if host_us * 1e-6 > t_device:
        return host_us * 1e-6, "host", wave_eff
    return t_device, bound, wave_eff


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


# A GEMM dimension beyond an int64 is no GEMM (a request's prefill M = batch x prompt can pass
# 2^31), and it keeps 2 * M * N * K a finite float: 10**400 rows overflowed into a traceback.
MAX_DIM = 2**63 - 1
# crossover_m predicts every M up to m_max (the curve is saw-toothed: no bisection finds the
# smallest winning M); beyond this a GEMM is a batch of smaller ones.
MAX_CROSSOVER_M = 1 << 16


def _require_size(name: str, v) -> None:
    """Refuse an int beyond :data:`MAX_DIM` by name (it would overflow a float into a traceback)."""
    if isinstance(v, int) and not isinstance(v, bool) and v > MAX_DIM:
        shown = f"{v:,}" if v < 10**30 else f"an int of {len(str(v)) if v < 10**4000 else 'over 4,000'} digits"
        raise ValueError(f"{name} must be an int from 1 to {MAX_DIM:,} (a GEMM dimension), got {shown}")


def _check_shape(M, N, K):
    for name, v in (("M", M), ("N", N), ("K", K)):
        _require_size(name, v)
        require_positive_int(name, v)
    if K % 4:
        raise ValueError(f"K must be a multiple of 4 for a 2:4 weight (groups of 4 along K), got K={K}")


def predict(M: int, N: int, K: int, dtype="fp16", gpu="H100", backend: str | None = None,
            params: Efficiency | None = None, *, scenario: str = DEFAULT_SCENARIO) -> Prediction:
    """Predict dense and 2:4 time of ``y = x @ W.T`` with ``x: [M, K]``, ``W: [N, K]``.

    Args:
        M, N, K: GEMM shape (tokens, out_features, in_features). K must divide by 4.
        dtype: ``"fp16"``, ``"bf16"``, ``"fp8"``, ``"int8"``, ``"tf32"`` or a torch dtype.
        gpu: a name from :data:`twofour.hardware.GPUS` or a :class:`~twofour.hardware.GPUSpec`.
        backend: ``"cuSPARSELt"`` or ``"CUTLASS"`` (any case); default: the GPU's preferred one.
        params: :class:`Efficiency`; default :func:`default_params` of the GPU (fitted).
        scenario: one of :data:`SCENARIOS`: ``"eager"``, ``"cached"`` (default) or ``"ideal"``;
            it decides which per-call costs count (:meth:`Efficiency.device_us`,
            :meth:`Efficiency.host_us`).

    Example:
        >>> p = predict(4096, 4096, 4096, "bf16", "A100")
        >>> p.bound_dense, p.backend, p.M_padded
        ('compute', 'cuSPARSELt', 4096)
    """
    _check_shape(M, N, K)
    spec, d, backend = _resolve(gpu, dtype, backend)
    scenario = check_scenario(scenario)
    e = params if params is not None else default_params(spec.name, backend)
    if not isinstance(e, Efficiency):
        raise TypeError(f"params must be an Efficiency or None, got {type(e).__name__}")
    mult = e.pad_to or pad_multiple(backend, d)
    M_padded = math.ceil(M / mult) * mult
    common = dict(mem_bw_gbs=spec.mem_bw_gbs, sms=spec.sms, in_bytes=_IN_BYTES[d],
                  out_bytes=_OUT_BYTES[d], tile_m=e.tile_m, tile_n=e.tile_n)
    t_dense, bound_dense, wave_dense = gemm_time_s(
        M, N, K, peak_tflops=spec.peak_tflops(d), weight_bytes=N * K * _IN_BYTES[d],
        compute_eff=e.dense_compute, memory_eff=e.dense_memory, overhead_us=e.device_us("dense", scenario),
        host_us=e.host_us("dense", scenario), **common)
    t_sparse, bound_sparse, wave_sparse = gemm_time_s(
        M_padded, N, K, peak_tflops=spec.peak_tflops(d, sparse=True),
        weight_bytes=_packed_weight_bytes(N, K, d),
        compute_eff=e.sparse_compute, memory_eff=e.sparse_memory, overhead_us=e.device_us("sparse", scenario),
        host_us=e.host_us("sparse", scenario, backend), **common)
    return Prediction(M, N, K, d, spec.name, backend, M_padded, t_dense * 1e6, t_sparse * 1e6,
                      bound_dense, bound_sparse, wave_dense, wave_sparse, scenario)


def gemm_speedup(M: int, N: int, K: int, dtype="fp16", gpu="H100", backend: str | None = None,
                 params: Efficiency | None = None, *, scenario: str = DEFAULT_SCENARIO) -> float:
    """Predicted ``t_dense / t_2:4`` for one GEMM (what :mod:`twofour.amdahl` calls ``s``).

    Example:
        >>> gemm_speedup(1, 4096, 4096, "fp16", "H100", scenario="eager") < 0.2   # a plan per call
        True
        >>> gemm_speedup(16384, 4096, 4096, "fp16", "H100", scenario="ideal") < 2
        True
    """
    return predict(M, N, K, dtype, gpu, backend, params, scenario=scenario).speedup


def speedup_curve(Ms, N: int, K: int, dtype="fp16", gpu="H100", backend=None, params=None, *,
                  scenario: str = DEFAULT_SCENARIO) -> list[Prediction]:
    """:func:`predict` for every M in ``Ms`` (for plots).

    Example:
        >>> [p.M for p in speedup_curve([1, 64], 4096, 4096, scenario="ideal")]
        [1, 64]
    """
    return [predict(int(M), N, K, dtype, gpu, backend, params, scenario=scenario) for M in Ms]


def crossover_m(N: int, K: int, dtype="fp16", gpu="H100", backend=None, params=None,
                m_max: int = 16384, *, scenario: str = DEFAULT_SCENARIO) -> int | None:
    """Smallest M in ``1..m_max`` at which 2:4 is predicted faster than dense, or None.

    ``m_max`` is at most :data:`MAX_CROSSOVER_M` (65,536): every M is predicted, in order.
    "Faster" means speedup > 1. Wave quantization can make the curve saw-toothed, so a
    win at this M does not promise a win at every larger M: plot :func:`speedup_curve`.

    Example:
        >>> m = crossover_m(4096, 4096, "fp16", "H100")
        >>> gemm_speedup(m, 4096, 4096) > 1 >= gemm_speedup(m - 1, 4096, 4096)
        True
    """
    require_positive_int("m_max", m_max)
    if m_max > MAX_CROSSOVER_M:
        raise ValueError(f"m_max must be at most {MAX_CROSSOVER_M:,} (every M up to it is predicted: the curve is "
                         f"saw-toothed, so no bisection finds the smallest winning M), got {m_max:,}")
    _check_shape(1, N, K)
    spec, _, backend = _resolve(gpu, dtype, backend)
    check_scenario(scenario)
    params = params if params is not None else default_params(spec.name, backend)  # once, not per M
    for M in range(1, m_max + 1):
        if predict(M, N, K, dtype, gpu, backend, params, scenario=scenario).speedup > 1:
            return M
    return None


def ceilings(dtype) -> dict[str, float]:
    """The two ceilings of any 2:4 GEMM: ``compute`` (2x) and ``memory`` (1 / packed ratio).

    Example:
        >>> ceilings("fp16")
        {'compute': 2.0, 'memory': 1.7777777777777777}
        >>> round(ceilings("int8")["memory"], 3)
        1.6
    """
    d = _gemm_dtype(dtype)
    return {"compute": 2.0, "memory": 1 / DTYPES[d].packed_ratio}


def arithmetic_intensity(M: int, N: int, K: int, dtype="fp16", *, sparse: bool = False) -> float:
    """FLOPs per DRAM byte of the GEMM (dense FLOPs counted for both, as the useful work).

    Example:
        >>> round(arithmetic_intensity(1, 4096, 4096, "fp16"), 2)     # decode: ~1 FLOP/byte
        1.0
        >>> arithmetic_intensity(4096, 4096, 4096, "fp16") > 1000      # prefill
        True
    """
    _check_shape(M, N, K)
    d = _gemm_dtype(dtype)
    weight = _packed_weight_bytes(N, K, d) if sparse else N * K * _IN_BYTES[d]
    n_bytes = weight + M * K * _IN_BYTES[d] + M * N * _OUT_BYTES[d]
    return 2 * M * N * K / n_bytes


def ridge_point(gpu, dtype="fp16", *, sparse: bool = False) -> float:
    """FLOPs per byte at which the GPU's peak compute meets its peak bandwidth.

    Example:
        >>> round(ridge_point("H100", "fp16"))
        295
    """
    spec = get_gpu(gpu)
    d = _gemm_dtype(dtype)
    return spec.peak_tflops(d, sparse=sparse) * 1e12 / (spec.mem_bw_gbs * 1e9)
