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
