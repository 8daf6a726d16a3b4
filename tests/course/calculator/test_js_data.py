"""The calculators' one generated data module (docs/js/calc/data.js) is what scripts/js_data.py writes now.

No browser: the committed text is compared with the script's output, so a change to the GPU
table, the presets, the scenarios, the fit, the dtype table, the verdict or the vocabulary fails
here until the module is regenerated. The JavaScript that reads these tables is checked in a
browser by tests/site/test_calculators.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from twofour import hardware, models, request
from twofour import vocabulary
from twofour.course.answer import calculator_opening

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import js_data  # noqa: E402

sys.path.pop(0)


def _exported(text: str) -> dict:
    """Each ``export const NAME = deepFreeze(JSON);`` of the module, parsed."""
    found = re.findall(r"^export const (\w+) = deepFreeze\((.*?)\);$", text, re.S | re.M)
    return {name: json.loads(body) for name, body in found}


def test_the_committed_module_is_what_the_script_writes():
    committed = (ROOT / js_data.DATA_JS).read_text(encoding="utf-8")
    assert committed == js_data.data_js(), f"{js_data.DATA_JS} is stale: run `.venv/bin/python scripts/js_data.py`"
    assert js_data.main(["--check"]) == 0


def test_the_module_holds_each_table_from_its_source():
    tables = _exported((ROOT / js_data.DATA_JS).read_text(encoding="utf-8"))
    assert set(tables) == {"GPUS", "PRESETS", "WORKLOADS", "BLOCK_LINEARS", "FIT", "ASSUMED", "DTYPES", "PACKED_FORMS", "VERDICT",
                           "VOCABULARY", "MECHANISM"}
    assert list(tables["GPUS"]) == list(hardware.GPUS)
    assert tables["GPUS"]["H100"]["sparse_tflops"]["fp16"] == hardware.GPUS["H100"].sparse_tflops["fp16"]
    assert sorted(tables["GPUS"]["A10G"]["unconfirmed"]) == sorted(f for g, f in hardware.unconfirmed_fields() if g == "A10G")
    assert tables["PRESETS"]["Llama-3-8B"]["hidden"] == models.LLAMA_3_8B.hidden
    assert set(tables["WORKLOADS"]) == set(request.WORKLOADS)
    assert tables["BLOCK_LINEARS"] == list(request.BLOCK_LINEARS)
    assert tables["VERDICT"] == calculator_opening()
    assert tables["VOCABULARY"]["timing_modes"] == list(vocabulary.TIMING_MODES)
    from twofour.roofline.mechanism import PADDED_TILE_WHY

    assert tables["MECHANISM"] == {"padded_tile": PADDED_TILE_WHY}


def test_the_fit_is_kernel_fit_json_less_its_per_point_lists():
    from twofour.roofline._fitfile import load_fit

    body, fit = _exported((ROOT / js_data.DATA_JS).read_text(encoding="utf-8"))["FIT"], load_fit()
    assert body == js_data.fitted_subset(fit)
    assert body["base"]["params"] == fit["base"]["params"] and set(body["per_gpu"]) == set(fit["per_gpu"])
    assert body["errors"]["held_out"]["by_mode"] == fit["errors"]["held_out"]["by_mode"]
    assert "fitted_on" not in body and all("points" not in v for v in body["errors"].values())


def test_check_names_the_command_when_stale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(js_data, "ROOT", tmp_path)
    (tmp_path / "docs/js/calc").mkdir(parents=True)
    (tmp_path / js_data.DATA_JS).write_text("// an old copy\n", encoding="utf-8")
    assert js_data.main(["--check"]) == 1
    assert "run `python scripts/js_data.py`" in capsys.readouterr().out
    assert js_data.main([]) == 0 and js_data.main(["--check"]) == 0  # rewritten: current again
