"""Write ``docs/js/calc/data.js``: every table the calculators take from Python, in one generated ES module.

The calculators are plain static ES modules (no build step: mkdocs and any file server deliver
them as they are), so the tables they share with the toolkit travel as one committed, generated
file rather than hand copies. ``tests/course/calculator/test_js_data.py`` fails while the committed
file differs from what this script writes now. Rerun it after a change to any source::

    .venv/bin/python scripts/js_data.py          # rewrite docs/js/calc/data.js
    .venv/bin/python scripts/js_data.py --check  # exit 1 (naming this command) if it is stale

What it holds, each from its one source:

``GPUS``         :data:`twofour.hardware.GPUS` (peaks, bandwidth, SMs, capability, backends, and the
                 fields whose source is unconfirmed, which the page labels)
``PRESETS``      :data:`twofour.models.PRESETS` (Meta's config.json shapes)
``WORKLOADS``    :data:`twofour.request.WORKLOADS` (chapter 6's three workloads)
``BLOCK_LINEARS`` :data:`twofour.request.BLOCK_LINEARS` (the linears pruned by default)
``FIT``          the part of ``src/twofour/data/kernel-fit.json`` the calculators use (the fitted
                 parameter sets, what each was fitted to, the held-out errors; per-point lists stay)
``ASSUMED``      :data:`twofour.roofline.ASSUMED_PARAMS` (the model before any fit)
``DTYPES``       :data:`twofour.vocabulary.DTYPES` (bytes per element, packed form and ratio)
``PACKED_FORMS`` :data:`twofour.vocabulary.PACKED_FORMS` (the n:m forms the packing calculator offers)
``VERDICT``      :func:`twofour.course.answer.calculator_opening` (what the request calculator opens on)
``VOCABULARY``   :mod:`twofour.vocabulary` (backend names, kernel classes, timing modes, the palette)
``MECHANISM``    :data:`twofour.roofline.mechanism.PADDED_TILE_WHY` (why a 2:4 kernel whose token tile is wider
                 than the GEMM's rows loses: the verdict's sentence, filled in with the tile)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_JS = "docs/js/calc/data.js"

# What the calculators need from kernel-fit.json (see FIT above).
_FIT_KEYS = {
    "provenance": ("date", "n_points", "sources", "held_out_model"),
    "base": ("params", "source"),
}
_ERROR_KEYS = {
    "held_out": ("label", "by_mode"),
    "published_leave_one_source_out": ("by_regime", "by_gpu", "n_sources"),
}


def fitted_subset(fit: dict | None = None) -> dict:
    """The part of ``kernel-fit.json`` the calculators use (``FIT`` in ``data.js``)."""
    from twofour.roofline._fitfile import FIT_PATH, load_fit

    fit = load_fit(FIT_PATH) if fit is None else fit
    out = {"schema": fit["schema"]}
    for key, names in _FIT_KEYS.items():
        out[key] = {n: fit[key][n] for n in names}
    out["per_gpu"] = {name: {"params": entry["params"], "note": entry["note"]} for name, entry in fit["per_gpu"].items()}
    out["errors"] = {key: {n: fit["errors"][key][n] for n in names} for key, names in _ERROR_KEYS.items()}
    return out


def dtype_table() -> dict:
    """The one dtype table (:data:`twofour.vocabulary.DTYPES`) as the calculators read it."""
    from twofour.vocabulary import DTYPES

    return {key: facts.to_dict() for key, facts in DTYPES.items()}


def packed_forms() -> dict:
    """Every n:m form of :data:`twofour.vocabulary.PACKED_FORMS` (the GEMM dtypes' and FP4's)."""
    from twofour.vocabulary import PACKED_FORMS

    return {key: form.to_dict() for key, form in PACKED_FORMS.items()}


def gpu_table() -> dict:
    """:data:`twofour.hardware.GPUS` as the calculators read it: the numbers, and which are unconfirmed."""
    from twofour import hardware

    unconfirmed = hardware.unconfirmed_fields()
    return {name: {"name": spec.name, "arch": spec.arch, "capability": list(spec.capability), "sms": spec.sms,
                   "mem_bw_gbs": spec.mem_bw_gbs, "backends": list(spec.backends),
                   "dense_tflops": {d: v for d, v in spec.dense_tflops.items() if v is not None},
                   "sparse_tflops": {d: v for d, v in spec.sparse_tflops.items() if v is not None},
                   "unconfirmed": [f for gpu, f in unconfirmed if gpu == name]}
            for name, spec in hardware.GPUS.items()}


def request_tables() -> dict:
    """PRESETS, WORKLOADS and BLOCK_LINEARS of the request model."""
    from twofour import models, request

    fields = ("name", "layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")
    return {
        "PRESETS": {name: {f: getattr(cfg, f) for f in fields} for name, cfg in models.PRESETS.items()},
        "WORKLOADS": {name: {"model": w.model.name, "batch": w.batch, "prompt_len": w.prompt_len,
                             "output_len": w.output_len, "dtype": w.dtype, "prefill_chunk_tokens": w.prefill_chunk_tokens}
                      for name, w in request.WORKLOADS.items()},
        "BLOCK_LINEARS": list(request.BLOCK_LINEARS),
    }


def tables() -> dict:
    """Every exported constant of ``data.js``, by name, in the order written."""
    from twofour import vocabulary
    from twofour.course.answer import calculator_opening
    from twofour.roofline import ASSUMED_PARAMS
    from twofour.roofline.mechanism import PADDED_TILE_WHY

    return {"GPUS": gpu_table(), **request_tables(), "FIT": fitted_subset(), "ASSUMED": ASSUMED_PARAMS.to_dict(),
            "DTYPES": dtype_table(), "PACKED_FORMS": packed_forms(), "VERDICT": calculator_opening(), "VOCABULARY": vocabulary.to_json(),
            "MECHANISM": {"padded_tile": PADDED_TILE_WHY}}


def data_js() -> str:
    """The text of ``docs/js/calc/data.js``."""
    head = (
        "// GENERATED by `python scripts/js_data.py`: every table the calculators share with the Python\n"
        "// toolkit, each from its one source (the script's docstring lists them). Do not edit: rerun the\n"
        "// script; tests/course/calculator/test_js_data.py fails while this file is stale.\n\n"
        "function deepFreeze(o) {\n"
        "  for (const v of Object.values(o)) if (v && typeof v === \"object\") deepFreeze(v);\n"
        "  return Object.freeze(o);\n"
        "}\n"
    )
    body = "".join(f"\nexport const {name} = deepFreeze({json.dumps(value, indent=1, ensure_ascii=False, allow_nan=False)});\n"
                   for name, value in tables().items())
    return head + body


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {DATA_JS} is not what this script writes")
    args = parser.parse_args(argv)
    path = ROOT / DATA_JS
    text = data_js()
    current = path.is_file() and path.read_text(encoding="utf-8") == text
    if args.check:
        print(f"{DATA_JS} is current" if current else f"{DATA_JS} is stale: run `python scripts/js_data.py`")
        return 0 if current else 1
    if not current:
        path.write_text(text, encoding="utf-8")
    print(f"{'wrote' if not current else 'unchanged:'} {DATA_JS} ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
