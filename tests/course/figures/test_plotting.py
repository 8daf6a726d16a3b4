"""twofour.course.plotting: the house style is applied and roles are stable."""

from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("Agg")

from twofour.course import plotting  # noqa: E402


def test_roles_cover_the_site_vocabulary_with_distinct_colours():
    required = {"dense", "2:4", "measured", "predicted", "published", "neutral"}
    assert required <= set(plotting.ROLES)
    colours = [plotting.ROLES[r].color.lower() for r in required]
    assert len(set(colours)) == len(colours)


def test_color_lookup_and_error_names_valid_roles():
    assert plotting.color("dense") == plotting.ROLES["dense"].color
    with pytest.raises(ValueError, match="role must be one of"):
        plotting.color("sparse")


def test_new_figure_is_white_and_sized():
    fig, ax = plotting.new_figure()
    try:
        assert tuple(fig.get_facecolor()[:3]) == (1.0, 1.0, 1.0)
        assert tuple(fig.get_size_inches()) == pytest.approx(plotting.FIGSIZE)
        assert matplotlib.rcParams["savefig.facecolor"] == "white"
    finally:
        matplotlib.pyplot.close(fig)


def test_new_figure_grid_and_custom_size():
    fig, axes = plotting.new_figure(2, 2, width=5, height=4)
    try:
        assert axes.shape == (2, 2)
        assert tuple(fig.get_size_inches()) == pytest.approx((5, 4))
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(("kwargs", "name"), [({"nrows": 0}, "nrows"), ({"width": -1}, "width")])
def test_new_figure_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        plotting.new_figure(**kwargs)


def test_series_palette_is_distinct_and_colour_blind_safe():
    colours = [r.color.upper() for r in plotting.SERIES]
    markers = [r.marker for r in plotting.SERIES]
    assert len(set(colours)) == len(colours) >= 6 and len(set(markers)) == len(markers)
    okabe_ito = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442"}
    assert set(colours) <= okabe_ito
    assert plotting.series(len(plotting.SERIES)) == plotting.series(0)
    with pytest.raises(ValueError, match="non-negative int"):
        plotting.series(-1)


def test_speedup_vs_m_draws_each_gpu_in_its_own_colour():
    from twofour.course.figures.kernel_speed import plot_speedup_vs_M

    gpus = ("A100", "L4", "H100", "H200", "B200")
    fig, ax = plot_speedup_vs_M(4096, 4096, gpus=gpus, Ms=[1, 64, 4096])
    try:
        lines = [line for line in ax.get_lines() if "(predicted)" in line.get_label()]
        assert len(lines) == len(gpus)
        assert len({line.get_color() for line in lines}) == len(gpus)
        text = plotting.figure_text(fig)
        assert "H200" in text["alt"] and "M = 1" in text["alt"] and "ceiling" in text["caption"]
    finally:
        matplotlib.pyplot.close(fig)


def test_figure_text_is_derived_from_the_figure_when_not_given():
    fig, (left, right) = plotting.new_figure(1, 2)
    try:
        left.plot([1, 2], [1, 2], label="dense")
        left.plot([1, 2], [2, 3], label="2:4")
        left.set(title="Time", xlabel="M", ylabel="ms", xscale="log")
        left.legend()
        right.set(title="Speedup", xlabel="M", ylabel="x")
        text = plotting.figure_text(fig)
        assert text["title"] == "Time; Speedup" and text["caption"] == "Time; Speedup"
        assert "Panel 'Time': x axis M (log scale); y axis ms; series: dense, 2:4." in text["alt"]
        assert "Figure produced by the code above" not in text["alt"]
        plotting.describe(fig, caption="Two panels.")
        assert plotting.figure_text(fig)["caption"] == "Two panels." and plotting.figure_text(fig)["title"] == "Time; Speedup"
        with pytest.raises(ValueError, match="alt must be a non-empty string"):
            plotting.describe(fig, alt="  ")
    finally:
        matplotlib.pyplot.close(fig)


def test_figure_png_is_2x_and_carries_its_text():
    import base64
    import io

    from PIL import Image

    fig, ax = plotting.new_figure(alt="A rising line.", caption="Rising.")
    try:
        data, md = plotting.figure_png(fig)
        image = Image.open(io.BytesIO(base64.b64decode(data)))
        assert image.size[0] == 2 * md["width"] or image.size[0] == 2 * md["width"] + 1
        assert md["alt"] == "A rising line." and md["caption"] == "Rising."
        assert image.text.get("Description") == "A rising line."
    finally:
        matplotlib.pyplot.close(fig)


def test_notebook_display_survives_matplotlib_inline_resetting_formats():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats

    shell = InteractiveShell.instance()
    try:
        assert plotting.install_notebook_display(shell) is True
        select_figure_formats(shell, {"png"})  # what `%matplotlib inline` does
        fig, ax = plotting.new_figure(alt="Nothing yet.")
        try:
            data, md = shell.display_formatter.format(fig)
            assert "image/png" in data and md["image/png"]["alt"] == "Nothing yet."
        finally:
            matplotlib.pyplot.close(fig)
    finally:
        InteractiveShell.clear_instance()
