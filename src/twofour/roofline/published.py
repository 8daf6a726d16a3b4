"""Dense vs 2:4 timings measured by others and by this project, as one list of points.

Two sources feed the kernel model: **published** (``twofour/data/published-gemm.json``, records
from public sources, each with its ``reliability``, ``caveats`` and ``source_url``; nothing in it
was measured here) and **measured** (the results files ``twofour bench`` wrote on a GPU).
:func:`points` returns both as :class:`Point` objects in one convention (``y = x @ W.T``, times
in µs) and says for each whether the model may be fitted to it (:attr:`Point.excluded`, by
:data:`FIT_RULES`). Contradictions between sources are shown side by side, never averaged away.

A timing's scenario (:data:`twofour.roofline.SCENARIOS`): ``eager`` for ``twofour bench``'s
``stream`` mode and published timings of ``F.linear`` / ``torch.mm`` on a sparse tensor;
``cached`` for its ``graph`` mode; ``kernel`` for its ``kernel`` mode, library examples,
profilers, single-GEMM timings and PyTorch with plans cached (pytorch#177866). Its ``lone`` mode
is kept as evidence, not fitted. A measured point's ``extra`` says how it was timed: ``method``,
``legacy_replay`` (a graph timing holding the host's replay launch,
:data:`twofour.bench.gpu_timing.LEGACY_METHODS`) and ``l2``.

Example:
    >>> pts = points()
    >>> pub = [p for p in pts if p.origin == "published"]
    >>> len(pub)
    89
    >>> usable = [p for p in pub if p.fit_ok]
    >>> sorted({p.gpu for p in usable})
    ['A100', 'H100']
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from .._common.jsonfile import read_json
from ..vocabulary import BACKEND_NAMES, MODE_SCENARIO, SPARSE_24_DTYPES, TIMING_MODES, dtype_key
from ..hardware import get_gpu, match_device_name

__all__ = ["Point", "FIT_RULES", "KNOWN_IMMATURE", "HELD_OUT_MODEL", "LONE", "points", "published_records", "PUBLISHED_PATH"]

PUBLISHED_PATH = Path(__file__).resolve().parent.parent / "data" / "published-gemm.json"


def _dtype_of(text) -> str | None:
    """The 2:4 dtype key of a results row's dtype (``"float16"`` -> ``"fp16"``), None for prose
    such as ``"fp8 (e4m3, rowwise ...)"`` or ``"unknown (16-bit)"``: such rows are not fitted."""
    try:
        key = dtype_key(text)
    except ValueError:
        return None
    return key if key in SPARSE_24_DTYPES else None

# Published kernels their own source calls immature: fitting to them would teach the model a
# software bug. Each entry says why, in the words of the caveat.
KNOWN_IMMATURE = {
    "cutlass1335-h100-768x4096x4096": "Ampere (sm80) CUTLASS sparse kernels run on Hopper; the reporter calls it a software-maturity effect",
    "cutlass408-a100-16384": "a 2021 CUTLASS sparse example; the maintainer replied that sparse needs CUDA >= 11.5 and quoted a faster kernel",
}

FIT_RULES = (
    "a single GEMM or linear layer, forward only (kind 'gemm', scope 'gemm_kernel' or 'linear_layer')",
    "the same dtype on both sides (fp16, bf16, fp8 or int8), stated or taken from context",
    "reliability 'high' or 'medium'",
    "a GPU that twofour.hardware describes (its peaks and bandwidth are needed to predict)",
    "a PyTorch backend (cuSPARSELt or CUTLASS), not a kernel its source calls immature (KNOWN_IMMATURE)",
    "a scenario the model has: kernel (kernel time, incl. library examples and single-GEMM timings), cached "
    "(CUDA-graph replay) or eager (PyTorch calls back to back)",
    "measured here: fp16 or bf16 (bf16's 2:4 kernel is its own family), timed as kernel time or CUDA-graph replay (a "
    "lone call is evidence; back-to-back calls set the host time per call), not flagged by twofour.bench.flags "
    "(clock, drift, graph outlier), and not a shape of the held-out model (Llama-3-70B: the test set)",
)
# The model whose shapes no fit sees: its measured points are the held-out test of the fit
# (twofour.roofline.calibration reports the error on them, per M regime).
HELD_OUT_MODEL = "Llama-3-70B"


@dataclass(frozen=True)
class Point:
    """One dense vs 2:4 timing, published or measured here.

    ``speedup`` is dense time / 2:4 time (above 1: 2:4 faster). ``dense_us`` / ``sparse_us``
    are None where the source printed a speedup only. ``excluded`` is the first fit rule the
    point breaks, or None when :func:`twofour.roofline.calibration.fit_all` may use it.
    """

    id: str
    origin: str  # "published" | "measured"
    source: str  # one label per source (leave-one-source-out groups by it)
    source_url: str
    gpu: str | None  # twofour.hardware name, None when not described there
    gpu_as_reported: str
    backend: str | None  # "cuSPARSELt" | "CUTLASS" | None
    dtype: str | None
    M: int | None
    N: int | None
    K: int | None
    speedup: float
    dense_us: float | None
    sparse_us: float | None
    scenario: str  # "eager" | "cached" | "kernel"; "lone" (measured evidence)
    reliability: str
    caveats: str
    kind: str
    excluded: str | None = None
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def fit_ok(self) -> bool:
        return self.excluded is None

    @property
    def regime(self) -> str:
        """``M<=16``, ``16<M<=256`` or ``M>256`` (``unknown`` without M)."""
        if self.M is None:
            return "unknown"
        return "M<=16" if self.M <= 16 else ("16<M<=256" if self.M <= 256 else "M>256")


_SIZE = {"type": ["integer", "null"], "minimum": 1}
_TEXT = {"type": ["string", "null"]}
# One record of published-gemm.json as this module reads it (all fields: published-gemm.md).
PUBLISHED_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "speedup", "gpu", "dtype", "backend", "reliability", "source_url", "caveats"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "speedup": {"type": "number", "exclusiveMinimum": 0},
            "M": _SIZE, "N": _SIZE, "K": _SIZE,
            "gpu": {"type": "string"}, "dtype": {"type": "string"}, "backend": {"type": "string"},
            "reliability": {"type": "string"}, "source_url": _TEXT, "caveats": _TEXT,
            "dense_time": {"type": ["number", "null"]}, "sparse_time": {"type": ["number", "null"]},
            "time_unit": _TEXT,
        },
    },
}


@functools.lru_cache(maxsize=None)
def published_records(path: str | None = None) -> tuple[dict, ...]:
    """The raw records of ``published-gemm.json`` (fields: see ``published-gemm.md``)."""
    file = Path(path) if path is not None else PUBLISHED_PATH
    return tuple(read_json(file, "published measurements file", schema=PUBLISHED_SCHEMA))


def _to_us(value, unit: str | None) -> float | None:
    if value is None:
        return None
    unit = (unit or "").lower()
    if unit.startswith("us"):
        return float(value)
    if unit.startswith("ms") or "imply milliseconds" in unit or "probably ms" in unit:
        return float(value) * 1e3
    return None  # a unit we cannot read: keep the speedup only


def _published_scenario(r: dict) -> str:
    """Kernel time: library examples, profilers, a single GEMM's timing, PyTorch with plans cached; else eager PyTorch."""
    text = f"{r.get('measurement') or ''} {r.get('backend_detail') or ''}".lower()
    if r["id"] == "pt177866-after" or r.get("scope") == "gemm_kernel" or any(
            w in text for w in ("library example", "cutlass profiler")):
        return "kernel"
    return "eager"


def _from_published(r: dict) -> Point:
    try:
        gpu = get_gpu(r.get("gpu")).name  # twofour.hardware's aliases hold the records' spellings
    except ValueError:
        gpu = None
    dtype = _dtype_of(r.get("dtype"))
    backend = r.get("backend") if r.get("backend") in BACKEND_NAMES else None
    point = dict(
        id=r["id"], origin="published", source=r.get("source_url") or r["id"], source_url=r.get("source_url") or "",
        gpu=gpu, gpu_as_reported=str(r.get("gpu")), backend=backend, dtype=dtype,
        M=r.get("M"), N=r.get("N"), K=r.get("K"), speedup=float(r["speedup"]),
        dense_us=_to_us(r.get("dense_time"), r.get("time_unit")), sparse_us=_to_us(r.get("sparse_time"), r.get("time_unit")),
        scenario=_published_scenario(r), reliability=r.get("reliability") or "low", caveats=r.get("caveats") or "",
        kind=r.get("kind") or "", extra={"source_title": r.get("source_title"), "source_locator": r.get("source_locator"),
                                         "source_date": r.get("source_date"), "scope": r.get("scope")},
    )
    if r.get("kind") != "gemm" or r.get("scope") not in ("gemm_kernel", "linear_layer"):
        why = f"not a single forward GEMM (kind {r.get('kind')!r}, scope {r.get('scope')!r})"
    elif not r.get("same_dtype_comparison", True) or dtype is None:
        why = f"dtype {r.get('dtype')!r} is not one dtype the model knows on both sides"
    elif r.get("reliability") not in ("high", "medium"):
        why = f"reliability {r.get('reliability')!r}"
    elif gpu is None:
        why = f"GPU {r.get('gpu')!r} is not described in twofour.hardware"
    elif backend is None:
        why = f"backend {r.get('backend')!r} is not a PyTorch 2:4 backend"
    elif r["id"] in KNOWN_IMMATURE:
        why = f"known immature kernel: {KNOWN_IMMATURE[r['id']]}"
    elif None in (r.get("M"), r.get("N"), r.get("K")):
        why = "shape not stated"
    else:
        why = None
    return Point(**point, excluded=why)


LONE = "lone"  # the timing mode that measures no scenario (module doc): evidence only


def _measured_excluded(mode: str, row: dict, held_out: bool, spec) -> str | None:
    """The first fit rule a measured row breaks (:data:`FIT_RULES`, the last one), or None."""
    if spec is None:
        return f"GPU {row.get('gpu')!r} is not described in twofour.hardware"
    if row.get("check_passed") is False:
        return "2:4 result failed its numerical check"
    if row.get("flagged"):
        return f"flagged by twofour.bench.flags: {row['flagged']}"
    if mode == "lone":
        return "timing mode 'lone' (one call after an idle device): kept as evidence, not fitted"
    if mode == "stream":
        return "timing mode 'stream': back-to-back calls set the host time per call (a median), not fitted point by point"
    if _dtype_of(row["dtype"]) not in ("fp16", "bf16"):
        return f"dtype {row['dtype']}: the fit uses the fp16 and bf16 kernels"
    if held_out:
        return f"held out: a {HELD_OUT_MODEL} shape, the fit's test set"
    return None


def _from_results(res, held_shapes: set) -> list[Point]:
    prov = res.provenance
    spec = match_device_name(prov.get("gpu_name"))
    label = f"twofour bench, {prov.get('gpu_name')}, torch {prov.get('torch')}, {str(prov.get('date'))[:10]}"
    out = []
    from ..bench.gpu_timing import LEGACY_METHODS

    for mode in TIMING_MODES:
        method = res.timing_method(mode) or {}
        flushed = method["flush"] == "write" if method.get("flush") else res.settings.get("flush_l2", True)
        l2 = "flushed" if flushed else "clean"
        legacy = mode == "graph" and method.get("id") == LEGACY_METHODS["graph"]["id"]
        scenario = MODE_SCENARIO.get(mode, LONE)
        for row in res.gpu_points(mode):
            held = (row["N"], row["K"]) in held_shapes
            why = _measured_excluded(mode, row, held, spec)
            out.append(Point(
                id=f"{Path(res.path or 'results').stem}:{row['shape']}:M{row['M']}:{row['dtype']}:{row['backend']}:{mode}",
                origin="measured", source=label, source_url=str(res.path or ""),
                gpu=spec.name if spec else None, gpu_as_reported=str(prov.get("gpu_name")), backend=row["backend"],
                dtype=_dtype_of(row["dtype"]), M=row["M"], N=row["N"], K=row["K"],
                speedup=row["dense_ms"] / row["sparse_ms"], dense_us=row["dense_ms"] * 1e3, sparse_us=row["sparse_ms"] * 1e3,
                scenario=scenario, reliability="high", caveats=f"timing mode {mode}; {res.settings.get('cache_note', '')}",
                kind="gemm", excluded=why, extra={"shape": row["shape"], "mode": mode, "command": prov.get("command"),
                                                  "held_out": held, "flagged": row.get("flagged"), "l2": l2,
                                                  "method": method.get("id"), "legacy_replay": legacy},
            ))
    return out


def points(*, published: bool = True, measured: bool = True, results=None) -> list[Point]:
    """Every published and measured point, each with its fit eligibility.

    Args:
        published, measured: which origins to include.
        results: measured results to use instead of the files shipped in ``twofour/data``
            (a list of :class:`twofour.bench.Results`).
    """
    out: list[Point] = []
    if published:
        out += [_from_published(r) for r in published_records()]
    if measured:
        if results is None:
            from ..bench import recorded_results

            results = recorded_results("gpu")
        held = {(p["N"], p["K"]) for res in results for p in res.points
                if str(p.get("shape") or "").startswith(HELD_OUT_MODEL)}
        for res in results:
            out += _from_results(res, held)
    return out
