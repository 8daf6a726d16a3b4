"""Where the fitted kernel-model parameters live, and how they are read (no model imports here,
so the model can read its defaults while it is being imported)."""

from __future__ import annotations

from pathlib import Path

from .._common.jsonfile import check_schema, read_json

FIT_PATH = Path(__file__).resolve().parent.parent / "data" / "kernel-fit.json"
FIT_SCHEMA = "twofour-kernel-fit/3"  # /3: full token-tile math, a bf16 family, chain idle for `cached`; the tile model's parameters (KernelParams); a file of any other schema is refused
# The parts of the file the model and the calibration report read.
FIT_FILE_SCHEMA = {
    "type": "object",
    "required": ["base", "per_gpu", "provenance", "errors"],
    "properties": {
        "base": {"type": "object", "required": ["params"], "properties": {"params": {"type": "object"}}},
        "per_gpu": {"type": "object", "additionalProperties": {"type": "object"}},
        "provenance": {"type": "object"},
        "errors": {"type": "object", "required": ["held_out", "published_leave_one_source_out"]},
        "checks": {"type": "object"},
        "fitted_on": {"type": "array"},
    },
}


def load_fit(path=None) -> dict:
    """The stored fit (schema :data:`FIT_SCHEMA`), checked."""
    path = Path(path) if path is not None else FIT_PATH
    data = read_json(path, "kernel fit file", "; write it with `twofour calibrate --out`")
    if not isinstance(data, dict) or data.get("schema") != FIT_SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else None
        raise ValueError(f"kernel fit file {str(path)!r} has schema {got!r}; expected {FIT_SCHEMA!r}")
    check_schema(data, FIT_FILE_SCHEMA, f"kernel fit file {str(path)!r}")
    return data
