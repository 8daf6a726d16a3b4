"""Results files: the JSON schema, the provenance block, reading and checking them, and the files shipped in ``twofour/data``.

One record per point holds its raw timings, and the GPU's clocks around each timing mode where it
exposes them; :func:`load_results` reads the older schemas too.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .._common.atomic import check_output, write_text
from .._common.jsonfile import check_schema, read_json
from ..device import cpu_model, environment
from . import flags as flag_rules  # looked up on each call: a test may plant a flag rule
from .gpu_timing import LEGACY_METHODS
from ..vocabulary import TIMING_MODES

SCHEMA = "twofour-bench/5"
# /2 added "modes"; /3 per-point "clocks" and the top-level "flags" (recomputed on reading); /4 how
# each point was timed (settings' "methods", each timing's "method": older files were timed as
# gpu_timing.LEGACY_METHODS says); /5 renamed the lone-call mode "eager" to "lone" (renamed on reading).
READABLE_SCHEMAS = ("twofour-bench/1", "twofour-bench/2", "twofour-bench/3", "twofour-bench/4", SCHEMA)

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

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
                "sparse": {"type": "object"}, "modes": {"type": "object"}, "clocks": {"type": "object"},
            },
        }},
    },
}
ALG_SEARCH_SCHEMA = {
    "type": "object",
    "required": ["schema", "provenance", "cases"],
    "properties": {
        "schema": {"enum": ["twofour-cslt-algsearch/1", "twofour-cslt-algsearch/2", "twofour-cslt-algsearch/3"]},
        "provenance": {"type": "object"},
        "cases": {"type": "array", "items": {
            "type": "object",
            "required": ["shape", "M", "N", "K", "dense_ms", "default_ms", "best", "configs"],
            "properties": {
                "M": {"type": "integer", "minimum": 1}, "N": {"type": "integer", "minimum": 1},
                "K": {"type": "integer", "minimum": 1},
                "dense_ms": {"type": "number", "exclusiveMinimum": 0},
                "default_ms": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]},
                "best": {"type": "object"},
                "configs": {"type": "array"},
            },
        }},
    },
}
_DTYPES = {"float16": torch.float16, "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float32": torch.float32, "fp32": torch.float32}


def torch_dtype(dtype) -> torch.dtype:
    """The torch dtype a timing runs in, from its name in a results file or the dtype itself.

    >>> torch_dtype("float16"), torch_dtype(torch.bfloat16)
    (torch.float16, torch.bfloat16)
    """
    if isinstance(dtype, torch.dtype):
        if dtype in _DTYPES.values():
            return dtype
    elif str(dtype) in _DTYPES:
        return _DTYPES[str(dtype)]
    raise ValueError(f"dtype must be one of float16, bfloat16, float32 (or the torch dtype), got {dtype!r}")


def _driver_version() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.stdout.strip().splitlines()
    return first[0].strip() if out.returncode == 0 and first else None


def provenance(command: str | None = None, *, device=None) -> dict:
    """Where and with what a result was measured. Every key of REQUIRED_PROVENANCE is present.

    Example:
        >>> p = provenance("twofour bench --quick", device="cpu")
        >>> p["device"], p["command"], p["gpu_name"]
        ('cpu', 'twofour bench --quick', None)
    """
    from .. import __version__

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
        "cpu_model": cpu_model(),
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
        return {"schema": self.schema, "provenance": self.provenance, "settings": self.settings, "points": self.points,
                "flags": self.flags()}

    def flags(self) -> list[dict]:
        """Every rule of :mod:`twofour.bench.flags` that fires on this run's points, with its evidence.

        Example:
            >>> Results(provenance={}, points=[]).flags()
            []
        """
        return flag_rules.flag_points(self.points)

    def flagged(self) -> dict[tuple, list[str]]:
        """``{(shape, M, N, K, dtype, mode): [reasons]}`` of the suspect (point, mode) pairs."""
        return flag_rules.flagged_keys(self.points)

    def save(self, path) -> Path:
        """Write JSON to ``path`` (parent folders are created), atomically: a failed write keeps the old file."""
        path = Path(path)
        check_output(path)  # a FIFO or a device: refused before the folder is made
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    def timing_method(self, mode: str) -> dict | None:
        """How this run timed ``mode`` on a GPU (:data:`twofour.bench.gpu_timing.METHODS`), or None on a CPU.

        Files before schema ``/4`` get :data:`~twofour.bench.gpu_timing.LEGACY_METHODS`, how they were timed.

        Example:
            >>> [r.timing_method("graph")["id"] for r in recorded_results("gpu")][:1]
            ['graph/1']
        """
        if mode not in TIMING_MODES:
            raise ValueError(f"mode must be one of {TIMING_MODES}, got {mode!r}")
        if self.provenance.get("device") != "cuda" and not self.settings.get("methods"):
            return None
        if self.schema in READABLE_SCHEMAS[:3]:
            return LEGACY_METHODS[mode]
        return (self.settings.get("methods") or {}).get(mode)

    def gpu_points(self, mode: str = "lone") -> list[dict]:
        """Flat rows ``M, N, K, dtype, backend, gpu, dense_ms, sparse_ms, flagged, call_path`` for every sparse time.

        ``mode`` picks the timing (:data:`TIMING_MODES`); a backend that raised gives no row
        (:meth:`problems` lists it). ``flagged``: None, or the reasons (:mod:`twofour.bench.flags`)
        to distrust the row. ``call_path`` and ``dense_call_path`` (keys of
        :data:`twofour.bench.trusted.CALL_PATHS`) are derived: :func:`twofour.bench.measure_point`,
        which writes every results file, times ``F.linear``. ``method``: the timing method's id.
        """
        method = (self.timing_method(mode) or {}).get("id")  # refuses a mode not in TIMING_MODES
        suspect = self.flagged()
        rows = []
        for p in self.points:
            block = p if mode == "lone" else (p.get("modes") or {}).get(mode) or {}
            dense, sparse = block.get("dense") or {}, block.get("sparse") or {}
            if "median_ms" not in dense:
                continue
            for backend, entry in sparse.items():
                if "median_ms" not in entry:
                    continue
                lone_check = (p.get("sparse") or {}).get(backend, {}).get("check", {})
                rows.append({
                    "M": p["M"], "N": p["N"], "K": p["K"], "dtype": p["dtype"], "backend": backend,
                    "gpu": self.provenance.get("gpu_name"), "shape": p.get("shape"), "mode": mode,
                    "dense_ms": dense["median_ms"], "sparse_ms": entry["median_ms"],
                    "check_passed": lone_check.get("passed"),
                    "flagged": "; ".join(suspect.get(flag_rules.point_key(p, mode), [])) or None,
                    "call_path": "F.linear", "method": entry.get("method", method),
                    "dense_call_path": "cuBLAS" if self.provenance.get("device") == "cuda" else "F.linear",
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
    settings = dict(data.get("settings", {}))
    if data["schema"] != SCHEMA:  # the lone-call mode's old name (see SCHEMA)
        lone = {"eager": "lone"}
        if isinstance(settings.get("modes"), list):
            settings["modes"] = [lone.get(m, m) for m in settings["modes"]]
        if isinstance(settings.get("methods"), dict):
            settings["methods"] = {lone.get(m, m): v for m, v in settings["methods"].items()}
    return Results(data["provenance"], settings, data["points"], data["schema"], str(path))


def recorded_results(kind: str = "gpu", folder=None) -> list[Results]:
    """Results files shipped with the package (``twofour/data/bench-*.json``), GPU runs by default.

    Returns an empty list when none are recorded yet; callers must say so rather than plot
    nothing silently.
    """
    if kind not in ("gpu", "cpu", "all"):
        raise ValueError(f"kind must be 'gpu', 'cpu' or 'all', got {kind!r}")
    folder = Path(folder) if folder is not None else DATA_DIR
    device = {"gpu": "cuda", "cpu": "cpu"}.get(kind)
    results = [load_results(path) for path in sorted(folder.glob("bench-*.json"))]
    return [res for res in results if kind == "all" or res.provenance.get("device") == device]


def recorded_alg_search(folder=None, dtype: str = "float16") -> list[dict]:
    """cuSPARSELt algorithm sweeps in ``twofour/data/cslt-algsearch-*.json``, one dict per case of ``dtype``.

    Each case (``shape, M, N, K``) has ``dense_ms``, ``default_ms`` (algorithm 0, PyTorch's
    default), ``best`` (the fastest direct call whose result matched dense, with its ``alg_id``),
    ``best_by_path`` (``/1`` files timed the direct call only), every ``configs`` entry (one
    without a ``path`` was ``torch._cslt_sparse_mm`` on ``x`` padded to ``M_padded`` rows), the
    run's ``provenance``, ``call_path``, ``dense_call_path`` and ``searched_alg_ids_timed``
    (whether the library search's ID was timed). Written by ``scripts/gpu_measure.py alg-search``.

    Example:
        >>> cases = recorded_alg_search()
        >>> all(c["best"]["ms"] <= c["default_ms"] for c in cases)
        True
    """
    folder = Path(folder) if folder is not None else DATA_DIR
    out = []
    for path in sorted(folder.glob("cslt-algsearch-*.json")):
        data = read_json(path, "algorithm sweep file", schema=ALG_SEARCH_SCHEMA)
        for case in data["cases"]:
            if case.get("dtype", "float16") != dtype:
                continue
            configs = [dict(c, path=c.get("path", "_cslt_sparse_mm")) for c in case["configs"]]
            if data["schema"].endswith("/1"):
                best = dict(case["best"], path=case["best"].get("path", "_cslt_sparse_mm")) if case.get("best") else None
                case = dict(case, best_by_path={"_cslt_sparse_mm": best})
            else:  # /2, /3: a best per call path; "best" stays the direct call's, as readers of /1 expect
                best = case["best"].get("_cslt_sparse_mm")
                case = dict(case, best_by_path=case["best"])
            if best is None:
                continue  # no algorithm matched dense on the direct path: nothing to compare
            timed = {c["alg_id"] for c in configs if "ms" in c}
            out.append(dict(case, configs=configs, best=best, provenance=data["provenance"],
                            call_path=best["path"], dense_call_path="cuBLAS",
                            searched_alg_ids_timed=case.get("search_alg_id") in timed))
    return out


def cpu_roofline(results: Results) -> dict:
    """Achieved GFLOP/s and GB/s per point of a dense run, and the best of each (not data-sheet peaks).

    Example:
        >>> from twofour.bench import sweep
        >>> res = sweep([("toy", 64, 64)], Ms=[1, 64], dtypes=["float32"], device="cpu",
        ...             warmup=1, repeats=3, progress=False)
        >>> r = cpu_roofline(res)
        >>> sorted(r) == ["best_gbs", "best_gflops", "points"]
        True
    """
    rows = []
    for p in results.points:
        M, N, K = p["M"], p["N"], p["K"]
        b = torch.empty((), dtype=torch_dtype(p["dtype"])).element_size()
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
    slug = re.sub("-+", "-", "".join(c if c.isalnum() else "-" for c in who.lower())).strip("-")
    stamp = str(prov.get("date", ""))[:19].replace(":", "").replace("-", "")
    return Path(folder) / f"bench-{slug}-{stamp}.json"
