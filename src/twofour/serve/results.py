"""Whole-step results files (``schema`` ``twofour-decode/1``): write, read, check, compare dense with 2:4.

One file holds one run of :func:`twofour.serve.run_plan`: the provenance
(:func:`twofour.bench.provenance`), the settings, one record per planned measurement (a timing
``t_ms``, an ``error`` or ``skipped``), and the dense vs 2:4 agreement of each dtype; the JSON
Schema is :data:`DECODE_SCHEMA`. Writing never destroys (:func:`write_atomic`).

Example:
    >>> import tempfile, pathlib
    >>> from twofour.bench import provenance
    >>> settings = {"model": "tiny", "layers": 2, "model_layers": 2, "decode_steps": 16, "warmup": 1,
    ...             "repeats": 2, "weights_note": "random weights"}
    >>> res = DecodeResults(provenance=provenance("doctest", device="cpu"), settings=settings,
    ...                     measurements=[{"phase": "decode", "dtype": "float32", "weights": "dense", "mode": "eager",
    ...                                    "batch": 1, "prompt_len": 8, "skipped": "example"}])
    >>> path = res.save(pathlib.Path(tempfile.mkdtemp()) / "decode.json")
    >>> load_decode_results(path).measurements[0]["skipped"]
    'example'
    >>> res.save(path, inputs=[path])
    Traceback (most recent call last):
    ...
    twofour.serve.results.OutputRefused: ...decode.json is an input of this command (the same file); ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .._common.atomic import OutputError, write_text
from .._common.jsonfile import check_schema, read_json
from ..bench import DATA_DIR, REQUIRED_PROVENANCE
from ..vocabulary import DECODE_MODES, PHASES

__all__ = ["SCHEMA", "DECODE_SCHEMA", "WEIGHTS", "DecodeResults", "load_decode_results", "recorded_decode_results",
           "write_atomic", "OutputRefused"]

SCHEMA = "twofour-decode/1"
WEIGHTS = ("dense", "2:4")
_TIMING = {"type": "object", "required": ["median_ms", "raw_ms"],
           "properties": {"median_ms": {"type": "number", "exclusiveMinimum": 0},
                          "raw_ms": {"type": "array", "minItems": 1, "items": {"type": "number", "minimum": 0}}}}
_MEASUREMENT = {
    "type": "object",
    "required": ["phase", "dtype", "weights", "mode", "batch", "prompt_len"],
    "properties": {
        "phase": {"enum": list(PHASES)}, "dtype": {"type": "string"}, "weights": {"enum": list(WEIGHTS)},
        "mode": {"enum": list(DECODE_MODES)}, "batch": {"type": "integer", "minimum": 1},
        "prompt_len": {"type": "integer", "minimum": 1},
        "t_ms": _TIMING, "tokens_per_s": {"type": "number", "exclusiveMinimum": 0},
        "profile": {"type": ["object", "null"]}, "prediction": {"type": ["object", "null"]},
        "algorithms": {"type": "object"}, "error": {"type": "string"}, "skipped": {"type": "string"},
    },
    # exactly one outcome: measured, failed, or not attempted
    "oneOf": [{"required": ["t_ms"]}, {"required": ["error"]}, {"required": ["skipped"]}],
}
DECODE_SCHEMA = {
    "type": "object",
    "required": ["schema", "provenance", "settings", "measurements", "agreement"],
    "properties": {
        "schema": {"const": SCHEMA},
        "provenance": {"type": "object", "required": list(REQUIRED_PROVENANCE)},
        "settings": {"type": "object", "required": ["model", "layers", "model_layers", "decode_steps", "warmup",
                                                    "repeats", "weights_note"]},
        "measurements": {"type": "array", "items": _MEASUREMENT},
        "agreement": {"type": "array", "items": {"type": "object", "required": ["dtype"], "oneOf": [
            {"required": ["rel_err", "top1_match", "tol", "passed"]}, {"required": ["error"]}]}},
    },
}


class OutputRefused(ValueError):
    """The output path is one of the run's inputs, or exists and is not a regular file."""


@dataclass
class DecodeResults:
    """A run of a measurement plan: provenance, settings, measurements, agreement (see the module doc)."""

    provenance: dict
    settings: dict
    measurements: list[dict] = field(default_factory=list)
    agreement: list[dict] = field(default_factory=list)
    schema: str = SCHEMA
    path: str | None = None  # where it was read from, if anywhere

    def to_dict(self) -> dict:
        return {"schema": self.schema, "provenance": self.provenance, "settings": self.settings,
                "measurements": self.measurements, "agreement": self.agreement}

    def save(self, path, *, inputs=()) -> Path:
        """Check against :data:`DECODE_SCHEMA`, then write ``path`` atomically (see :func:`write_atomic`)."""
        data = self.to_dict()
        check_schema(data, DECODE_SCHEMA, "decode results")
        return write_atomic(path, json.dumps(data, indent=1) + "\n", inputs=inputs)

    def measured(self) -> list[dict]:
        """The records that hold a timing."""
        return [m for m in self.measurements if "t_ms" in m]

    def speedups(self) -> list[dict]:
        """Dense / 2:4 time for every case measured both ways, beside the model's ``predicted_speedup``.

        Example:
            >>> rec = lambda w, ms: {"phase": "decode", "dtype": "float16", "weights": w, "mode": "graph",
            ...                      "batch": 1, "prompt_len": 512, "t_ms": {"median_ms": ms}}
            >>> DecodeResults({}, {}, [rec("dense", 9.0), rec("2:4", 7.5)]).speedups()[0]["speedup"]
            1.2
        """
        key = lambda m: (m["phase"], m["dtype"], m["mode"], m["batch"], m["prompt_len"])  # noqa: E731
        dense = {key(m): m for m in self.measured() if m["weights"] == "dense"}
        rows = []
        for m in [m for m in self.measured() if m["weights"] == "2:4"]:
            # graph-searched exists only for 2:4: its dense partner is the plain graph
            k = key(m) if m["mode"] != "graph-searched" else (*key(m)[:2], "graph", *key(m)[3:])
            if k in dense:
                d = dense[k]["t_ms"]["median_ms"]
                rows.append({"phase": m["phase"], "dtype": m["dtype"], "mode": m["mode"], "batch": m["batch"],
                             "prompt_len": m["prompt_len"], "dense_ms": d, "sparse_ms": m["t_ms"]["median_ms"],
                             "speedup": d / m["t_ms"]["median_ms"],
                             "predicted_speedup": (m.get("prediction") or {}).get("speedup")})
        return rows

    def problems(self) -> list[str]:
        """One line per failed measurement or failed dense vs 2:4 agreement."""
        out = [f"{record_label(m)}: {m['error']}" for m in self.measurements if "error" in m]
        for a in self.agreement:
            if "error" in a:
                out.append(f"agreement {a['dtype']}: {a['error']}")
            elif not a["passed"]:
                out.append(f"agreement {a['dtype']}: 2:4 logits differ from dense by {a['rel_err']:.3g} (tolerance {a['tol']})")
        return out


def record_label(m: dict) -> str:
    """A measurement's one-line name, e.g. ``"decode float16 2:4 graph batch 8 context 512"``."""
    where = f"context {m['prompt_len']}" if m["phase"] == "decode" else f"prompt {m['prompt_len']}"
    return f"{m['phase']} {m['dtype']} {m['weights']} {m['mode']} batch {m['batch']} {where}"


def write_atomic(path, text: str, *, inputs=()) -> Path:
    """Write ``text`` to ``path`` through a temporary file renamed on success (:mod:`twofour._common.atomic`).

    Refuses (:class:`OutputRefused`) a ``path`` that is one of ``inputs`` or is not a regular file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return write_text(path, text, inputs)
    except OutputError as exc:  # refused before writing, or the target changed while the run went on
        raise OutputRefused(str(exc)) from None


def load_decode_results(path) -> DecodeResults:
    """Read a file written by :meth:`DecodeResults.save`, checked against :data:`DECODE_SCHEMA`."""
    where = f"decode results file {str(path)!r}"
    data = read_json(path, "decode results file")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise ValueError(f"{where} has schema {found!r}; expected {SCHEMA!r}")
    check_schema(data, DECODE_SCHEMA, where)
    return DecodeResults(data["provenance"], data["settings"], data["measurements"], data["agreement"], data["schema"],
                         str(path))


def recorded_decode_results(folder=None) -> list[DecodeResults]:
    """Whole-step runs shipped in ``twofour/data/decode-*.json``; empty until a GPU run is recorded.

    Example:
        >>> all(r.provenance["device"] == "cuda" for r in recorded_decode_results())
        True
    """
    folder = Path(folder) if folder is not None else DATA_DIR
    return [load_decode_results(p) for p in sorted(folder.glob("decode-*.json"))]
