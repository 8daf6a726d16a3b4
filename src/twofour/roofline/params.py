"""The model's free parameters (:class:`Efficiency`), and the fitted sets stored in ``twofour/data/kernel-fit.json``."""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields

from .._common.args import require_positive_int
from ..hardware import get_gpu
from .scenarios import _check_kind, check_scenario


@dataclass(frozen=True)
class Efficiency:
    """The model's free parameters, per kernel family (dense, 2:4).

    Attributes:
        dense_compute, sparse_compute: achieved fraction of the dense / 2:4 peak FLOP/s
            when every SM is busy (0 < x <= 1).
        dense_memory, sparse_memory: achieved fraction of peak DRAM bandwidth.
        dense_overhead_us, sparse_overhead_us: device cost per call (kernel launch and
            latency, extra kernels such as padding): paid in the ``cached`` and ``eager``
            scenarios.
        dense_host_us, sparse_host_us: host time per call (Python dispatch; cuSPARSELt
            descriptor and plan creation). In the ``eager`` scenario a call takes at least this
            long: ``max(kernel + overhead, host)``.
        tile_m, tile_n: output tile of one SM, for wave quantization.
        pad_to: override the backend's row multiple for the 2:4 path (None = the table).

    The 2:4 path does everything the dense one does and more, so a set where 2:4 is more
    efficient or cheaper per call than dense is refused: it would let a prediction pass the
    2x compute ceiling or the ``1 / packed_ratio`` bytes ceiling.

    The field defaults are the old assumptions (:data:`ASSUMED_EFFICIENCY`); the model's
    defaults are fitted (:data:`DEFAULT_EFFICIENCY`, :func:`default_params`).
    """

    dense_compute: float = 0.75
    sparse_compute: float = 0.55
    dense_memory: float = 0.80
    sparse_memory: float = 0.80
    dense_overhead_us: float = 5.0
    sparse_overhead_us: float = 15.0
    tile_m: int = 128
    tile_n: int = 128
    pad_to: int | None = None
    dense_host_us: float = 0.0
    sparse_host_us: float = 0.0

    def __post_init__(self):
        for name in ("dense_compute", "sparse_compute", "dense_memory", "sparse_memory"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {v!r}")
        for name in ("dense_overhead_us", "sparse_overhead_us", "dense_host_us", "sparse_host_us"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number of microseconds >= 0, got {v!r}")
        for name in ("tile_m", "tile_n"):
            require_positive_int(name, getattr(self, name))
        if self.pad_to is not None:
            require_positive_int("pad_to", self.pad_to)
        for name in ("compute", "memory"):
            if getattr(self, f"sparse_{name}") > getattr(self, f"dense_{name}"):
                raise ValueError(
                    f"sparse_{name}={getattr(self, f'sparse_{name}')!r} exceeds dense_{name}="
                    f"{getattr(self, f'dense_{name}')!r}: a 2:4 kernel more efficient than dense would "
                    "predict more than the 2x / 1/packed_ratio ceilings; use sparse_<x> <= dense_<x>")
        for name in ("overhead_us", "host_us"):
            if getattr(self, f"sparse_{name}") < getattr(self, f"dense_{name}"):
                raise ValueError(
                    f"sparse_{name}={getattr(self, f'sparse_{name}')!r} is below dense_{name}="
                    f"{getattr(self, f'dense_{name}')!r}: the 2:4 call does what the dense one does and "
                    "more, so its per-call cost cannot be smaller; use sparse_<x> >= dense_<x>")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Efficiency":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown Efficiency fields {sorted(unknown)}; valid: {sorted(known)}")
        return cls(**data)

    def device_us(self, kind: str, scenario: str) -> float:
        """The device per-call cost (µs) of ``kind`` (``"dense"``/``"sparse"``) in ``scenario``.

        Example:
            >>> e = Efficiency(dense_overhead_us=5, sparse_overhead_us=15)
            >>> e.device_us("sparse", "ideal"), e.device_us("sparse", "cached"), e.device_us("sparse", "eager")
            (0.0, 15, 15)
        """
        scenario = check_scenario(scenario)
        _check_kind(kind)
        return 0.0 if scenario == "ideal" else getattr(self, f"{kind}_overhead_us")

    def host_us(self, kind: str, scenario: str, backend: str | None = None) -> float:
        """The host time per call (µs) that bounds ``kind`` in ``scenario`` (0 unless ``eager``).

        PyTorch's CUTLASS 2:4 path builds no cuSPARSELt plan, so its host cost is taken to be
        the dense one's (an assumption: CUTLASS 2:4 does not run on the H200 the host cost was
        measured on).

        Example:
            >>> e = Efficiency(dense_host_us=20, sparse_host_us=500)
            >>> e.host_us("sparse", "eager"), e.host_us("sparse", "eager", "CUTLASS"), e.host_us("sparse", "cached")
            (500, 20, 0.0)
        """
        scenario = check_scenario(scenario)
        _check_kind(kind)
        if scenario != "eager":
            return 0.0
        if kind == "sparse" and backend is not None and backend.lower() == "cutlass":
            return self.dense_host_us
        return getattr(self, f"{kind}_host_us")


# The assumptions the model used before it was fitted: kept to show what the fit changed.
ASSUMED_EFFICIENCY = Efficiency()


@functools.lru_cache(maxsize=1)
def _stored_fit() -> dict | None:
    from ._fitfile import FIT_PATH, load_fit

    return load_fit(FIT_PATH) if FIT_PATH.exists() else None


def default_params(gpu=None, backend: str | None = None) -> Efficiency:
    """The fitted parameter set for ``gpu`` and ``backend`` (twofour/data/kernel-fit.json).

    Looked up as ``"GPU/backend"``, then ``"GPU"``, then the base set (the GPU measured here).

    Example:
        >>> default_params("H200") == DEFAULT_EFFICIENCY
        True
        >>> default_params("A100", "CUTLASS").sparse_compute <= default_params("A100").dense_compute
        True
    """
    fit = _stored_fit()
    if fit is None:
        return ASSUMED_EFFICIENCY
    return Efficiency.from_dict(_fit_entry(fit, gpu, backend)["params"])


def _fit_entry(fit: dict, gpu, backend: str | None) -> dict:
    """The stored entry for ``GPU/backend`` (backend in any case), else ``GPU``, else the base set."""
    name = get_gpu(gpu).name if gpu is not None else None
    per_gpu = fit["per_gpu"]
    if name and backend:
        for key, entry in per_gpu.items():
            if key.lower() == f"{name}/{backend}".lower():
                return entry
    return per_gpu.get(name) if name and name in per_gpu else fit["base"]


def fit_summary(gpu=None, backend: str | None = None) -> str:
    """One line a page can print under a prediction: what the parameters were fitted to, and the error.

    Example:
        >>> "held out" in fit_summary("H100")
        True
        >>> "CUTLASS" in fit_summary("A100", "cutlass")
        True
    """
    fit = _stored_fit()
    if fit is None:
        return "assumed parameters, not fitted (no twofour/data/kernel-fit.json)"
    name = get_gpu(gpu).name if gpu is not None else None
    entry = _fit_entry(fit, gpu, backend)
    if entry is fit["base"] and name not in fit["per_gpu"]:
        note = f"no usable measurement on this GPU, so the base set, measured on {fit['base']['source']}"
    else:
        note = entry.get("note") or fit["base"]["source"]
    err = fit["errors"]

    def regimes(table):
        rows = {r["regime"]: r for r in table}
        return ", ".join(f"{r} {rows[r]['median']:.0%} (n={rows[r]['n']})" for r in ("M<=16", "16<M<=256", "M>256") if r in rows)

    pub = err["published_leave_one_source_out"]
    return (f"fitted to {fit['provenance']['n_points']} measurements from {len(fit['provenance']['sources'])} sources; "
            f"{name or 'this GPU'}{'/' + backend if backend and entry is not fit['base'] and entry is not fit['per_gpu'].get(name) else ''}: "
            f"{note}. Median error of the predicted speedup, held out: points measured here, "
            f"each shape left out: {regimes(err['measured_leave_one_shape_out']['by_regime'])}; published points, "
            f"each source left out: {regimes(pub['by_regime'])} from {pub['n_sources']} sources (small M: no usable "
            f"published point)")


DEFAULT_EFFICIENCY = default_params()
