"""twofour.course.widgets: the notebook calculators build, recompute on change and survive bad input, headless."""

from __future__ import annotations

import pytest

from twofour.amdahl import speedup
from twofour.request import Workload, estimate
from twofour.models import LLAMA_3_8B
from twofour.course.widgets import amdahl_calculator, request_calculator


def test_amdahl_calculator_updates_on_change():
    calc = amdahl_calculator(p=0.5, s=2.0)
    assert calc.result["speedup"] == speedup(0.5, 2.0)
    assert "1.333x" in calc.output.value
    calc.controls["p"].value = 1.0
    assert calc.result["speedup"] == pytest.approx(2.0)
    assert "no limit" in calc.output.value
    assert calc.result["averaged_mistake"] >= calc.result["speedup"]


def test_request_calculator_matches_the_model_and_follows_inputs():
    calc = request_calculator(batch=1, prompt_len=512, output_len=64, draw=False)
    expected = estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")  # default: every block linear is 2:4
    assert calc.result.summary() == expected.summary()
    before = calc.result.decode.p
    calc.controls["prompt_len"].value = 100_000
    calc.controls["batch"].value = 64
    assert calc.result.inputs.batch == 64
    assert calc.result.decode.p < before
    assert f"{calc.result.speedup('request'):.3f}x" in calc.output.value


def test_request_calculator_measured_speedup_and_pruning():
    calc = request_calculator(draw=False)
    calc.controls["gemm_source"].value = "measured"
    calc.controls["measured_speedup"].value = 1.6
    assert calc.result.decode.gemm_speedup == pytest.approx(1.6)
    calc.controls["pruned"].value = ()
    assert calc.result.speedup("request") == 1.0


def test_request_calculator_draws_the_funnel_png():
    calc = request_calculator()
    assert calc.figure.value[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input_keeps_last_result_and_says_why():
    calc = request_calculator(gpu="A100", draw=False)
    good = calc.result
    calc.controls["dtype"].value = "fp8"  # the A100 has no fp8 tensor cores
    assert "A100 has no dense tensor-core peak for dtype 'fp8'" in calc.error
    assert "Input problem" in calc.message.value
    assert calc.result is good
    calc.controls["dtype"].value = "bf16"
    assert calc.error == "" and calc.message.value == ""


def test_custom_model_shows_its_fields_and_validates_them():
    calc = request_calculator(draw=False)
    assert calc.custom_box.layout.display == "none"
    calc.controls["model"].value = "custom"
    assert calc.custom_box.layout.display == ""
    calc.controls["heads"].value = 31  # 4096 is not a multiple of 31
    assert "must be a multiple of heads" in calc.error
    calc.controls["heads"].value = 32
    calc.controls["layers"].value = 2
    assert calc.error == "" and calc.result.inputs.layers == 2


def test_widget_has_a_notebook_representation():
    calc = amdahl_calculator()
    bundle = calc._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
