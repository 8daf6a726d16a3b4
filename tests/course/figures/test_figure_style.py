"""Every figure the course's plotting functions draw, held to the house style.

* no two series of a panel share a style, in colour and in greyscale (dash, marker, fill);
* a legend's text is at least as large as the axis labels and tick labels it sits beside;
* a plot of measured data names the GPU and the day it was measured, on the figure itself;
* the caption says what to see, not the panel title again.

Each figure is built once, with the inputs the chapters give it (the recorded H200 results and
the stored quality sweep), and every check runs over all of them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from twofour.course import plotting  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _recorded():
    from twofour.bench import recorded_results

    return recorded_results("gpu")


def _sweep_8b():
    return [r for r in _recorded() if any("Llama-3-8B" in (p.get("shape") or "") for p in r.points)]


def _shapes():
    from twofour.bench import model_shapes

    return model_shapes(["Llama-3-8B"])


def _ctas():
    from twofour.course.figures.kernel_launch import plot_ctas_vs_sms
    from twofour.roofline.evidence import TRACE_M, trace_grids

    label = {(N, K): lab for lab, N, K in _shapes()}
    recorded = [(label[(g["N"], g["K"])], family, g["ctas"])
                for tag, family in (("dense-graph", "cublas"), ("sparse-graph", "cusparselt"))
                for g in {(x["N"], x["K"]): x for x in trace_grids(tag)}.values()]
    return plot_ctas_vs_sms(_shapes(), M=TRACE_M, recorded=recorded)[0]


def _quality():
    from twofour.quality import QualityTable, stored_sweep_path

    return QualityTable.load(stored_sweep_path())


def _sensitivity():
    from twofour.course.figures.funnel import plot_sensitivity
    from twofour.request import WORKLOADS, kernel_bandwidth_ratio, sensitivity

    chat = WORKLOADS["chat decode, batch 1"]
    ratio = kernel_bandwidth_ratio(chat, "H200")
    rows = sensitivity(chat, "H200", per_call_us=[0, 8, 18, 40, 100, 600], memory_ratio=[ratio, 0.8, 1.0])
    return plot_sensitivity(rows, measured_ratio=ratio)[0]


def _funnel():
    from twofour.course.figures.funnel import plot_funnel
    from twofour.funnel import funnel
    from twofour.request import WORKLOADS, estimate

    return plot_funnel(funnel(estimate(WORKLOADS["chat decode, batch 1"], "H100"), "decode")).figure


def _layouts():
    import torch

    from twofour.course.figures import layouts
    from twofour.course.meta_layout import cutlass_meta_slots

    counts = {"2:4": torch.tensor([[2, 2], [1, 2]]), "unstructured": torch.tensor([[4, 0], [3, 1]])}
    shares = {"trained\nshare of sum|W|": {"2:4": 0.70, "4:8": 0.74, "unstructured 50%": 0.80},
              "random\nshare of sum|W|": {"2:4": 0.60, "4:8": 0.64, "unstructured 50%": 0.71}}
    return {"nonzeros_heatmaps": layouts.nonzeros_heatmaps(counts, title="Non-zeros per group of 4"),
            "kept_bars": layouts.kept_bars(shares, ylabel="kept", title="What half the weights cost"),
            "meta_slots_figure": layouts.meta_slots_figure(cutlass_meta_slots(32, 64), title="Metadata words")}


def _build() -> dict:
    from twofour.course.figures import kernel_launch as kl
    from twofour.course.figures import kernel_speed as ks
    from twofour.course.figures import quality as q
    from twofour.roofline.published import points

    table = _quality()
    Ms = [1, 16, 256, 1024, 4096, 16384]
    figs = {
        "plot_roofline": ks.plot_roofline("H100", "fp16", 4096, 4096, Ms=(1, 16, 256, 4096))[0],
        "plot_speedup_vs_M": ks.plot_speedup_vs_M(4096, 4096, "fp16", ["A100", "L4", "H100", "H200", "B200"], Ms=Ms)[0],
        "speedup_grid": ks.speedup_grid(_shapes(), ["A100", "H100", "H200"], "fp16", scenario="cached", Ms=Ms)[0],
        "plot_modes_vs_M": ks.plot_modes_vs_M(_sweep_8b(), _shapes()[0][0])[0],
        "modes_grid": ks.modes_grid(_sweep_8b(), _shapes())[0],
        "plot_measured_vs_predicted": ks.plot_measured_vs_predicted(_sweep_8b(), mode="kernel", scenario="kernel")[0],
        "plot_ctas_vs_sms": _ctas(),
        "plot_bandwidth_vs_N": kl.plot_bandwidth_vs_N(kl.bandwidth_rows(_recorded()))[0],
        "plot_points_vs_model": kl.plot_points_vs_model(points())[0],
        "plot_criteria": q.plot_criteria(table, size="small")[0],
        "plot_mass_vs_quality": q.plot_mass_vs_quality(table, size="small")[0],
        "plot_size_sweep": q.plot_size_sweep(table)[0],
        "plot_published": q.plot_published()[0],
        "plot_sensitivity": _sensitivity(),
        "plot_funnel": _funnel(),
        **_layouts(),
    }
    return figs


# Figures of measured GPU data: each must name the GPU and the day on the figure.
MEASURED = ("plot_modes_vs_M", "modes_grid", "plot_measured_vs_predicted", "plot_bandwidth_vs_N", "plot_points_vs_model")
# Figures whose GPU numbers come partly from a recording (the trace's launch grids): the GPU at least.
NAMES_GPU = MEASURED + ("plot_ctas_vs_sms",)
NAMES = ["plot_roofline", "plot_speedup_vs_M", "speedup_grid", "plot_modes_vs_M", "modes_grid", "plot_measured_vs_predicted",
         "plot_ctas_vs_sms", "plot_bandwidth_vs_N", "plot_points_vs_model", "plot_criteria", "plot_mass_vs_quality",
         "plot_size_sweep", "plot_published", "plot_sensitivity", "plot_funnel", "nonzeros_heatmaps", "kept_bars",
         "meta_slots_figure"]


@pytest.fixture(scope="module")
def figures():
    figs = _build()
    assert sorted(figs) == sorted(NAMES), "a plotting function was added: list it in NAMES"
    yield figs
    for fig in figs.values():
        plt.close(fig)


# ---- series styles -------------------------------------------------------------------------------


def _dash(line) -> tuple:
    """The dash pattern a line is drawn with ("-" and a custom (0, (5, 2)) differ; so do "--" and (0, (8, 2)))."""
    if line.get_linestyle() in ("None", " ", ""):
        return ("none",)
    offset, seq = line._unscaled_dash_pattern  # the pattern matplotlib resolved from any linestyle spelling
    return (round(offset, 2), tuple(round(x, 2) for x in seq) if seq else None)


def _marker(line) -> str:
    m = line.get_marker()
    return "" if m in (None, "None", " ", "", "none") else str(m)


def _hollow(line) -> bool:
    face = line.get_markerfacecolor()
    return isinstance(face, str) and face.lower() == "none" or to_hex(face) == "#ffffff"


def _series(ax) -> list[tuple[str, tuple, tuple]]:
    """(label, full style, greyscale style) of every labelled line of a panel."""
    out = []
    for line in ax.get_lines():
        label = line.get_label()
        if not label or label.startswith("_"):
            continue
        grey = (_dash(line), _marker(line), _hollow(line) if _marker(line) else None)
        out.append((label, (to_hex(line.get_color()),) + grey, grey))
    return out


def _luminance(colour) -> float:
    r, g, b = to_rgb(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("name", NAMES)
def test_no_two_series_share_a_style_in_colour_or_in_greyscale(figures, name):
    for ax in figures[name].get_axes():
        series = _series(ax)
        for kind, i in (("colour", 1), ("greyscale (dash, marker, fill)", 2)):
            seen: dict = {}
            for label, *keys in series:
                key = keys[i - 1]
                assert key not in seen, f"{name}: {label!r} and {seen[key]!r} share one {kind} style {key}"
                seen[key] = label
        bars = [(c.get_label(), c.patches[0]) for c in ax.containers
                if isinstance(c, BarContainer) and c.patches and not c.get_label().startswith("_")]
        for i, (label_a, a) in enumerate(bars):
            for label_b, b in bars[i + 1:]:
                apart = a.get_hatch() != b.get_hatch() or abs(_luminance(a.get_facecolor()) - _luminance(b.get_facecolor())) > 0.15
                assert apart, f"{name}: bars {label_a!r} and {label_b!r} differ in hue only (same hatch, same lightness)"


def test_the_style_check_catches_the_reported_bug():
    """Chapter 7's figure 2 drew its 80% and 100% lines in one colour and one dash: the check must fail on that."""
    fig, ax = plotting.new_figure()
    try:
        for ratio in (0.8, 1.0):
            ax.plot([1, 2], [ratio, ratio], color=plotting.color("predicted"), linestyle="--", label=f"{ratio:.0%}")
        keys = [k for _, k, _ in _series(ax)]
        assert keys[0] == keys[1]
    finally:
        plt.close(fig)


# ---- legend size ---------------------------------------------------------------------------------


def _axis_text_size(fig) -> float:
    sizes = []
    for ax in fig.get_axes():
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if axis.label.get_text():
                sizes.append(axis.label.get_fontsize())
            sizes += [t.get_fontsize() for t in axis.get_ticklabels() if t.get_text()]
    return max(sizes)


def _legends(fig) -> list:
    return [ax.get_legend() for ax in fig.get_axes() if ax.get_legend() is not None] + list(fig.legends)


@pytest.mark.parametrize("name", NAMES)
def test_legends_are_as_large_as_the_axis_labels(figures, name):
    fig = figures[name]
    fig.canvas.draw()  # tick labels get their text when drawn
    floor = _axis_text_size(fig)
    assert floor >= plotting.LABEL_SIZE - 0.01
    for legend in _legends(fig):
        texts = [t for t in legend.get_texts() if t.get_text()] + ([legend.get_title()] if legend.get_title().get_text() else [])
        smallest = min(t.get_fontsize() for t in texts)
        assert smallest >= floor - 0.01, f"{name}: legend text {smallest} pt is smaller than the axis labels' {floor} pt"


# ---- measured data names the GPU and the day -------------------------------------------------------


def _visible_text(fig) -> str:
    return " | ".join(t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text())


@pytest.mark.parametrize("name", NAMES_GPU)
def test_measured_plots_name_the_gpu_and_the_day(figures, name):
    from twofour.course.figures.kernel_speed import results_sources

    shown = _visible_text(figures[name])
    assert "H200" in shown, f"{name}: the GPU is not named on the figure"
    if name in MEASURED:
        where = results_sources(_recorded())  # "H200, measured 2026-11-30", from the results files
        assert re.fullmatch(r"H200, measured \d{4}-\d{2}-\d{2}", where)
        assert where in shown, f"{name}: {where!r} is not on the figure (title, legend or annotation)"


# ---- captions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_caption_says_what_to_see_not_the_title_again(figures, name):
    text = plotting.figure_text(figures[name])
    assert not plotting.restates(text["caption"], text["title"]), f"{name}: caption {text['caption']!r} repeats the title"
    assert re.search(r"\d", text["caption"]), f"{name}: a finding has numbers; got {text['caption']!r}"


def test_restates_catches_a_caption_that_only_repeats_the_title():
    assert plotting.restates("Time per call", "Time per call")
    assert plotting.restates("time per call.", "Time  per call")
    assert plotting.restates("Roofline", "Roofline, H100 fp16: W = [4096, 4096]")
    assert plotting.restates("decode step", "decode step; prefill")
    assert plotting.restates("Roofline, H100 fp16 (model).", "Roofline, H100 fp16")
    assert plotting.restates("", "anything")
    assert not plotting.restates("2:4 loses below M = 512 and wins above it.", "Time per call")


# ---- the chapters' own figure code -------------------------------------------------------------------


def test_no_notebook_shrinks_a_legend_below_the_axis_labels():
    small = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "labs").rglob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            for call in re.finditer(r"legend\((?:[^()]|\([^()]*\))*\)", source):
                size = re.search(r"fontsize\s*=\s*([\d.]+)", call.group(0))
                if size and float(size.group(1)) < plotting.LEGEND_SIZE:
                    small.append(f"{path.relative_to(ROOT)} cell {cell.get('id')}: {call.group(0)[:80]}")
    assert not small, "legends smaller than the axis labels:\n" + "\n".join(small)


def test_every_timing_mode_has_its_style_in_the_kernel_speed_figure():
    """A mode added to the vocabulary fails here, not as a KeyError while a chapter builds."""
    from twofour.vocabulary import TIMING_MODES
    from twofour.course.figures.kernel_speed import MODE_STYLE

    assert set(MODE_STYLE) == set(TIMING_MODES)


def test_measured_vs_predicted_by_default_compares_the_mode_that_times_the_default_scenario():
    from twofour.course.figures import kernel_speed as ks
    from twofour.vocabulary import DEFAULT_SCENARIO, MODE_SCENARIO

    fig, ax = ks.plot_measured_vs_predicted(_sweep_8b())
    labels = [line.get_label() for line in ax.get_lines()]
    assert MODE_SCENARIO["graph"] == DEFAULT_SCENARIO
    assert any(label.endswith("(graph)") for label in labels) and any(f", {DEFAULT_SCENARIO})" in x for x in labels)
    plt.close(fig)
