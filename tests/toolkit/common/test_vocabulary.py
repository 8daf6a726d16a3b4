"""One source per fact: every module's view of a dtype agrees with the table in twofour.vocabulary.

The table's own numbers are checked against hand-derived values in tests/toolkit/request/test_oracles.py; here
the point is that nobody keeps a private copy that can drift.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from twofour import packing, request, roofline
from twofour.vocabulary import DTYPE_KEYS, DTYPES, PACKED_FORMS, SPARSE_24_DTYPES, dtype_key, nm_ratio
from twofour.roofline import formats

REPO = Path(__file__).resolve().parents[3]


def _torch_dtype(facts):
    return getattr(torch, facts.torch_name)


@pytest.mark.parametrize("key", list(DTYPES))
def test_packing_agrees_with_the_table(key):
    f = DTYPES[key]
    dt = _torch_dtype(f)
    assert packing.packed_ratio(dt, f.n, f.m) == f.packed_ratio
    assert packing.dense_bytes((64, 128), dt) == 64 * 128 * f.in_bytes
    # packed bytes: n/m of the values at value_bits plus meta_bits per kept value
    kept = 64 * 128 * f.n // f.m
    assert packing.packed_bytes((64, 128), dt, f.n, f.m) == kept * (f.value_bits + f.meta_bits) // 8


@pytest.mark.parametrize("key", list(DTYPES))
def test_roofline_agrees_with_the_table(key):
    f = DTYPES[key]
    assert roofline.ceilings(key) == {"compute": 2.0, "memory": 1 / f.packed_ratio}
    for backend, mult in f.pad_multiple.items():
        assert roofline.model._PAD_MULTIPLE[(backend, key)] == mult
        assert roofline.pad_multiple(backend, key) == mult  # the installed torch's live rule too
    # the dense intensity of a square GEMM counts in_bytes for W and x and out_bytes for y
    M = N = K = 256
    expected = 2 * M * N * K / (N * K * f.in_bytes + M * K * f.in_bytes + M * N * f.out_bytes)
    assert roofline.arithmetic_intensity(M, N, K, key) == pytest.approx(expected, rel=1e-15)


def test_roofline_pad_table_has_no_pairs_outside_the_dtype_table():
    assert set(roofline.model._PAD_MULTIPLE) == {(b, d) for d, f in DTYPES.items() for b in f.pad_multiple}
    assert set(roofline.model.GEMM_DTYPES) == set(DTYPES)


def test_request_agrees_with_the_table():
    assert set(request.DTYPE_BYTES) == set(SPARSE_24_DTYPES) == {"fp16", "bf16", "fp8", "int8"}
    for key in SPARSE_24_DTYPES:
        f = DTYPES[key]
        assert request.DTYPE_BYTES[key] == f.in_bytes
        assert request.OUT_BYTES[key] == f.out_bytes
        assert request.workload.PACKED_RATIO[key] == f.packed_ratio


def test_weight_formats_agree_with_the_table():
    for key, fmt in (("bf16", "bf16+2:4"), ("fp8", "fp8+2:4"), ("int8", "int8+2:4")):
        dense = formats.bits_per_weight(key)
        assert formats.bits_per_weight(fmt) / dense == DTYPES[key].packed_ratio


def test_dtype_names_have_one_normaliser():
    for key, f in DTYPES.items():
        # tf32's torch dtype is float32, which names CUDA-core fp32
        assert dtype_key(_torch_dtype(f)) == (key if key != "tf32" else "fp32")
        assert dtype_key(key) == key
        assert request.workload.require_dtype(_torch_dtype(f)) == key if key in SPARSE_24_DTYPES else True
    with pytest.raises(ValueError, match="dtype must be one of"):
        dtype_key("fp4")


def test_the_calculators_read_the_table_from_the_generated_data_module():
    text = (REPO / "docs/js/calc/data.js").read_text(encoding="utf-8")
    body = re.search(r"^export const DTYPES = deepFreeze\((.*?)\);$", text, re.S | re.M)
    assert body, "docs/js/calc/data.js has no DTYPES table: rerun `python scripts/js_data.py`"
    assert json.loads(body.group(1)) == {k: f.to_dict() for k, f in DTYPES.items()}
    forms = re.search(r"^export const PACKED_FORMS = deepFreeze\((.*?)\);$", text, re.S | re.M)
    assert forms and json.loads(forms.group(1)) == {k: f.to_dict() for k, f in PACKED_FORMS.items()}
    # and no calculator keeps a private copy of the byte tables, or its own spelling of a dtype key
    for name, table in (("request.js", "DTYPES"), ("roofline.js", "DTYPES"), ("packing.js", "PACKED_FORMS")):
        js = (REPO / "docs/js/calc" / name).read_text(encoding="utf-8")
        assert "0.5625" not in js and "fp8: 1," not in js and "fp16: 2," not in js, name
        assert not re.search(r'\b(fp16|bf16|tf32|fp32): *["{]', js), name
        assert re.search(r'import \{[^}]*\b' + table + r'\b[^}]*\} from "\./data\.js"', js), name


def test_every_packed_form_is_what_twofour_packing_counts():
    """The packing calculator's forms: the GEMM dtypes' own (same keys) plus FP4's, each ratio as packing computes it."""
    assert list(PACKED_FORMS)[:len(DTYPES)] == list(DTYPES)
    for key, form in PACKED_FORMS.items():
        want = packing.packed_ratio(form.value_bits, form.n, form.m, meta_bits_per_value=form.meta_bits)
        assert nm_ratio(form.value_bits, form.n, form.m, form.meta_bits) == want, key
        if key in DTYPES:
            assert want == DTYPES[key].packed_ratio and form.label == DTYPES[key].label, key
    assert (PACKED_FORMS["fp4_paired"].n, PACKED_FORMS["fp4_paired"].m, PACKED_FORMS["fp4_paired"].meta_bits) == (4, 8, 1)


# Names that only twofour.vocabulary may bind at module level (roofline.SCENARIOS are the call
# scenarios, request.WORKLOADS the presets: each word one sense).
_VOCABULARY_NAMES = {"BACKENDS", "BACKEND_NAMES", "DTYPES", "DTYPE_KEYS", "MODES", "TIMING_MODES", "DECODE_MODES",
                     "PHASES", "MODE_SCENARIO", "SCENARIOS", "DEFAULT_SCENARIO"}


def _module_level_names(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_only_the_vocabulary_defines_backends_dtypes_modes_and_phases():
    src = REPO / "src" / "twofour"
    second = {str(p.relative_to(src)): sorted(_module_level_names(p) & _VOCABULARY_NAMES)
              for p in src.rglob("*.py") if p.name != "vocabulary.py"}
    assert {k: v for k, v in second.items() if v} == {}


def test_the_only_check_catches_a_second_table(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('MODES = ("eager",)\nPHASES: tuple = ("decode", "prefill")\nOTHER = 1\n')
    assert _module_level_names(p) & _VOCABULARY_NAMES == {"MODES", "PHASES"}


def test_every_backend_name_comes_from_the_vocabulary():
    from twofour.dispatch.rules import backend_rules
    from twofour.vocabulary import BACKENDS

    for key, backend in BACKENDS.items():
        assert backend_rules(key).label == backend.name
        assert hasattr(torch.sparse, backend.torch_class)
