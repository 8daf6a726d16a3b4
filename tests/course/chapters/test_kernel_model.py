"""Chapter 4's reading of the fitted model: the error rows per dtype, the crossovers, the worst misses."""

from __future__ import annotations

from twofour.course import kernel_model


def test_chapter_4s_error_table_gives_bf16_held_out_and_each_dtype_in_sample():
    from twofour.course.figures.kernel_launch import error_rows
    from twofour.roofline.calibration import load_fit

    labels = [r["points"] for r in error_rows(load_fit())]
    assert any(lbl.startswith("held out: bf16") for lbl in labels)
    assert any("fp16" in lbl and lbl.startswith("in the fit") for lbl in labels)
    assert any("bf16" in lbl and lbl.startswith("in the fit") for lbl in labels)


def test_crossovers_name_the_measured_and_the_predicted_first_winning_m():
    rows = {r["layer"]: r for r in kernel_model.crossovers("fp16")}
    assert set(rows) == {"q_proj/o_proj", "k_proj/v_proj", "gate_proj/up_proj", "down_proj"}
    for r in rows.values():
        assert r["measured"] is None or r["measured"] >= 128
        assert r["predicted"] is None or r["predicted_at_recorded_m"] is None or r["predicted"] <= r["predicted_at_recorded_m"]
    # the default kernel's 256-token tile: no layer is predicted to win with fewer than 128 tokens
    assert all(r["predicted"] is None or r["predicted"] > 128 for r in rows.values())


def test_the_toolkit_fit_keeps_no_chapter_analysis():
    from twofour.roofline import calibration

    assert not hasattr(calibration, "misses") and not hasattr(calibration, "host_costs")
    m = kernel_model.misses(2)
    assert len(m["in_sample"]) == 2 and m["crossovers"]
