"""The model's free parameters, per kernel family (:class:`KernelFamily`, :class:`KernelParams`), and the fitted sets in ``twofour/data/kernel-fit.json``."""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields, replace

from .._common.args import require_positive_int
from ..hardware import get_gpu
from .tiles import check_tile_table
from ..vocabulary import CUTLASS

__all__ = ["KernelFamily", "KernelParams", "FAMILIES", "DEFAULT_TILE_TABLES", "ASSUMED_PARAMS", "DEFAULT_PARAMS",
           "default_params", "fit_summary", "family_for"]

# The kernel families the model knows: cuBLAS for dense; cuSPARSELt algorithm 0 (fp16, fp8, int8),
# its bf16 kernel (another kernel: the H200's tables name `..._bf16bf16_..._cgasize1x1x1` where
# fp16 runs `cgasize4x1x1`), or the fastest algorithm a search finds; PyTorch's CUTLASS kernels.
FAMILIES = ("cublas", "cusparselt", "cusparselt_bf16", "cusparselt_searched", "cutlass")

# Tile tables as recorded on the H200 (2026-11-30, torch 2.11, cuBLAS 13.1, cuSPARSELt 0.8.0); how
# each was read is in twofour.roofline.tiles' docstring ("cublas": the rows twofour calibrate writes).
DEFAULT_TILE_TABLES = {
    "cublas": (
        (8, 1024, 64, 8), (8, None, 128, 8), (16, 4096, 64, 16), (16, None, 128, 16), (32, 4096, 64, 32),
        (32, None, 128, 32), (64, 4096, 64, 32), (64, None, 128, 64), (128, 4096, 64, 64), (128, None, 112, 128),
        (256, 1024, 64, 64), (256, 4096, 128, 64), (256, None, 256, 128), (512, 1024, 64, 64), (512, 4096, 128, 128),
        (512, None, 256, 128), (1024, 1024, 128, 64), (1024, 4096, 256, 128), (1024, None, 176, 128),
        (2048, 1024, 128, 128), (2048, None, 256, 128), (8192, 4096, 256, 128), (8192, None, 320, 128),
        (None, 1024, 256, 128), (None, 4096, 320, 128), (None, None, 192, 192),
    ),
    "cusparselt": ((None, None, 128, 256),),
    "cusparselt_bf16": ((None, None, 128, 256),),
    "cusparselt_searched": ((None, None, 64, 256),),
    "cutlass": ((None, None, 128, 128),),
}


def _fraction(name, v, *, zero_ok=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= 1 if zero_ok else 0 < v <= 1):
        raise ValueError(f"{name} must be a fraction in {'[0, 1]' if zero_ok else '(0, 1]'}, got {v!r}")


def _known(cls, data: dict) -> dict:
    """``data`` if it names only fields of the dataclass ``cls``, else a ValueError listing the valid ones."""
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}; valid: {sorted(known)}")
    return data


def _nonneg(name, v, unit="microseconds"):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number of {unit} >= 0, got {v!r}")


@dataclass(frozen=True)
class KernelFamily:
    """One kernel family's tiles, split-K rule and fitted constants (see :mod:`twofour.roofline.model`).

    Attributes:
        tiles: tile table, rows ``(m_max, n_max, tile_n, tile_m)`` (:mod:`twofour.roofline.tiles`).
        cta_target, max_split, min_k_iters: the split-K rule (``cta_target`` 0 = the GPU's SMs).
        compute_eff: GPU-wide cap on the tensor-core rate with every SM busy (clocks, power).
        sm_compute_eff: fraction of one SM's share of the peak a CTA reaches when few SMs are busy.
        mem_eff: the kernel's saturated fraction of peak DRAM bandwidth.
        per_sm_gbs: bandwidth (GB/s) one busy SM pulls when few are busy, times
            ``1 + fill_gain * filled`` (``filled``: the real share of the tile's token columns).
        latency_us: fixed time of one GEMM kernel. helper_split_us: the helper kernel a split-K
            call adds (cuBLAS's reduce, cuSPARSELt's workspace memset).
    """

    tiles: tuple
    cta_target: int = 0
    max_split: int = 1
    min_k_iters: int = 16
    compute_eff: float = 0.8
    sm_compute_eff: float = 0.9
    mem_eff: float = 0.8
    per_sm_gbs: float = 40.0
    fill_gain: float = 0.0
    latency_us: float = 3.0
    helper_split_us: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "tiles", check_tile_table("tiles", self.tiles))
        if isinstance(self.cta_target, bool) or not isinstance(self.cta_target, int) or self.cta_target < 0:
            raise ValueError(f"cta_target must be an int >= 0 (0: the GPU's SM count), got {self.cta_target!r}")
        require_positive_int("max_split", self.max_split)
        require_positive_int("min_k_iters", self.min_k_iters)
        for name in ("compute_eff", "sm_compute_eff", "mem_eff"):
            _fraction(name, getattr(self, name))
        if isinstance(self.per_sm_gbs, bool) or not isinstance(self.per_sm_gbs, (int, float)) \
                or not math.isfinite(self.per_sm_gbs) or self.per_sm_gbs <= 0:
            raise ValueError(f"per_sm_gbs must be a finite number of GB/s > 0, got {self.per_sm_gbs!r}")
        _nonneg("fill_gain", self.fill_gain, "times")
        _nonneg("latency_us", self.latency_us)
        _nonneg("helper_split_us", self.helper_split_us)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["tiles"] = [list(r) for r in self.tiles]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "KernelFamily":
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class KernelParams:
    """Every free number of the model: one :class:`KernelFamily` per family, and the costs outside the GEMM kernel.

    Attributes:
        cublas, cusparselt, cusparselt_bf16, cusparselt_searched, cutlass: the families (:data:`FAMILIES`).
        pad_us: the 2:4 path's padding of ``x`` (a fill and a copy) when M is not a row multiple.
        graph_dense_us, graph_sparse_us: the idle time per GEMM inside a captured chain of calls:
            what the ``cached`` scenario adds per call.
        bench_replay_dense_us, bench_replay_sparse_us: the host's replay launch inside a legacy-method
            graph timing (:data:`twofour.bench.gpu_timing.LEGACY_METHODS`; medians of graph minus
            kernel time). Not a cost of serving: the fit adds it only to compare with such a timing.
        host_dense_us, host_sparse_us: host time per eager call, the ``eager`` scenario's floor
            (cuSPARSELt builds a plan per call; CUTLASS does not, so it pays the dense one).
        dram_eff, flush_dirty_mb, flush_dirty_frac: DRAM's achievable fraction, shared by a
            kernel's reads and the write-back of the dirty lines a *writing* L2 flush leaves
            (``min(n_bytes * frac, mb)``), as ``twofour bench`` flushes before every call.
        pad_to: the row multiple of the 2:4 path instead of PyTorch's rule (older releases
            padded fp16 to 32 rows, pytorch#111339); None = :func:`twofour.roofline.pad_multiple`.
    """

    cublas: KernelFamily
    cusparselt: KernelFamily
    cusparselt_bf16: KernelFamily
    cusparselt_searched: KernelFamily
    cutlass: KernelFamily
    pad_us: float = 2.0
    graph_dense_us: float = 0.3
    graph_sparse_us: float = 3.0
    bench_replay_dense_us: float = 7.0
    bench_replay_sparse_us: float = 8.0
    host_dense_us: float = 20.0
    host_sparse_us: float = 500.0
    dram_eff: float = 0.9
    flush_dirty_mb: float = 32.0
    flush_dirty_frac: float = 0.4
    pad_to: int | None = None

    def __post_init__(self):
        for name in FAMILIES:
            if not isinstance(getattr(self, name), KernelFamily):
                raise TypeError(f"{name} must be a KernelFamily, got {type(getattr(self, name)).__name__}")
        for name in ("pad_us", "graph_dense_us", "graph_sparse_us", "bench_replay_dense_us", "bench_replay_sparse_us",
                     "host_dense_us", "host_sparse_us"):
            _nonneg(name, getattr(self, name))
        _nonneg("flush_dirty_mb", self.flush_dirty_mb, "MB")
        _fraction("dram_eff", self.dram_eff)
        _fraction("flush_dirty_frac", self.flush_dirty_frac, zero_ok=True)
        if self.pad_to is not None:
            require_positive_int("pad_to", self.pad_to)

    def to_dict(self) -> dict:
        out = {name: getattr(self, name).to_dict() for name in FAMILIES}
        out.update({f.name: getattr(self, f.name) for f in fields(self) if f.name not in FAMILIES})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "KernelParams":
        values = dict(_known(cls, data))
        for name in FAMILIES:
            if name not in values:
                raise ValueError(f"KernelParams needs the family {name!r}; families: {FAMILIES}")
            if not isinstance(values[name], KernelFamily):
                values[name] = KernelFamily.from_dict(values[name])
        return cls(**values)

    def family(self, name: str) -> KernelFamily:
        """The family ``name`` (one of :data:`FAMILIES`)."""
        if name not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {name!r}")
        return getattr(self, name)

    def with_family(self, name: str, **changes) -> "KernelParams":
        """A copy with family ``name``'s fields changed.

        Example:
            >>> ASSUMED_PARAMS.with_family("cusparselt", latency_us=1.0).cusparselt.latency_us
            1.0
        """
        return replace(self, **{name: replace(self.family(name), **changes)})


def family_for(backend: str, algorithm: str, dtype: str = "fp16") -> str:
    """The 2:4 side's family: ``cutlass``, ``cusparselt``, ``cusparselt_bf16`` or ``cusparselt_searched``.

    Example:
        >>> family_for("cuSPARSELt", "searched"), family_for("CUTLASS", "default")
        ('cusparselt_searched', 'cutlass')
        >>> family_for("cuSPARSELt", "default", "bf16")     # bf16's algorithm 0 is its own kernel
        'cusparselt_bf16'
    """
    if backend == CUTLASS.name:
        return "cutlass"
    if algorithm != "default":
        return "cusparselt_searched"
    return "cusparselt_bf16" if dtype == "bf16" else "cusparselt"


# What the model assumes before any fit (round numbers, the H200's tables): the fit's starting point.
_ASSUMED_SPARSE = KernelFamily(DEFAULT_TILE_TABLES["cusparselt"], cta_target=120, max_split=4, min_k_iters=16,
                               compute_eff=0.5, sm_compute_eff=0.8, mem_eff=0.7, per_sm_gbs=40.0, fill_gain=1.0,
                               latency_us=10.0, helper_split_us=0.8)
ASSUMED_PARAMS = KernelParams(
    cublas=KernelFamily(DEFAULT_TILE_TABLES["cublas"], cta_target=0, max_split=16, min_k_iters=20, compute_eff=0.8,
                        sm_compute_eff=0.8, mem_eff=0.9, per_sm_gbs=1000.0, latency_us=3.0, helper_split_us=1.8),
    cusparselt=_ASSUMED_SPARSE,
    cusparselt_bf16=replace(_ASSUMED_SPARSE, tiles=DEFAULT_TILE_TABLES["cusparselt_bf16"]),  # the same numbers
    cusparselt_searched=KernelFamily(DEFAULT_TILE_TABLES["cusparselt_searched"], cta_target=120, max_split=4,
                                     min_k_iters=16, compute_eff=0.6, sm_compute_eff=0.8, mem_eff=0.9,
                                     per_sm_gbs=120.0, latency_us=5.0, helper_split_us=0.8),
    cutlass=KernelFamily(DEFAULT_TILE_TABLES["cutlass"], cta_target=0, max_split=1, min_k_iters=16, compute_eff=0.5,
                         sm_compute_eff=0.8, mem_eff=0.7, per_sm_gbs=40.0, fill_gain=1.0, latency_us=10.0),
)


@functools.lru_cache(maxsize=1)
def _stored_fit() -> dict | None:
    from ._fitfile import FIT_PATH, load_fit

    return load_fit(FIT_PATH) if FIT_PATH.exists() else None


@functools.lru_cache(maxsize=None)
def _params_of(key: str) -> KernelParams:
    fit = _stored_fit()
    return KernelParams.from_dict((fit["per_gpu"][key] if key else fit["base"])["params"])


def fit_key(gpu=None, backend: str | None = None) -> str | None:
    """The ``per_gpu`` key of the stored fit for ``gpu``/``backend`` (``"GPU/backend"``, then ``"GPU"``), or None (base set)."""
    fit = _stored_fit()
    if fit is None or gpu is None:
        return None
    name = get_gpu(gpu).name
    if backend:
        for key in fit["per_gpu"]:
            if key.lower() == f"{name}/{backend}".lower():
                return key
    return name if name in fit["per_gpu"] else None


def default_params(gpu=None, backend: str | None = None) -> KernelParams:
    """The fitted parameter set for ``gpu`` and ``backend`` (``twofour/data/kernel-fit.json``).

    Looked up as ``"GPU/backend"``, then ``"GPU"``, then the base set; no file: :data:`ASSUMED_PARAMS`.

    Example:
        >>> default_params("H200") == DEFAULT_PARAMS
        True
        >>> default_params("L4") == DEFAULT_PARAMS     # never measured: the H200's set
        True
    """
    return ASSUMED_PARAMS if _stored_fit() is None else _params_of(fit_key(gpu, backend) or "")


def _regimes(rows) -> str:
    by = {r["regime"]: r for r in rows}
    return ", ".join(f"{r} {by[r]['median']:.0%} (n={by[r]['n']})" for r in ("M<=16", "16<M<=256", "M>256") if r in by)


def fit_summary(gpu=None, backend: str | None = None) -> str:
    """One line a page can print under a prediction: what the parameters rest on, and the held-out error.

    Example:
        >>> s = fit_summary("H100")
        >>> "held out" in s and "each source left out" in s
        True
        >>> "no usable measurement" in fit_summary("L4")
        True
    """
    fit = _stored_fit()
    if fit is None:
        return "assumed parameters, not fitted (no twofour/data/kernel-fit.json)"
    key = fit_key(gpu, backend)
    name = get_gpu(gpu).name if gpu is not None else None
    note = (fit["per_gpu"][key]["note"] if key is not None
            else f"no usable measurement on this GPU, so the base set, fitted on {fit['base']['source']}")
    err = fit["errors"]
    held = err["held_out"]
    pub = err["published_leave_one_source_out"]
    return (f"{key or name or 'base set'}: {note}. Median error of the predicted speedup on points held out of "
            f"the fit: {held['label']}: kernel time {_regimes(held['by_mode']['kernel'])}; CUDA-graph replay "
            f"{_regimes(held['by_mode']['graph'])}; published A100/H100 points, each source left out: "
            f"{_regimes(pub['by_regime'])} from {pub['n_sources']} sources")


DEFAULT_PARAMS = default_params()
