"""The house figure style: one size, one palette, white background.

Every plot on the site goes through :func:`new_figure` (or :func:`style` for a figure made
elsewhere), so that "dense" is the same blue and "2:4" the same orange on every page.

Why these choices:

* **Colours** come from the Okabe–Ito palette, which stays distinguishable for the common
  kinds of colour blindness. Each role also has its own marker and line style, so a plot
  still reads in greyscale.
* **White background**, even in the site's dark mode: a transparent PNG with black text
  would vanish on a dark page, a white card never does.
* **Fonts** are the system sans-serif that matplotlib ships (DejaVu Sans), so figures look
  the same in CI, Colab and on a laptop and never fetch anything.

Example:
    >>> from twofour.course.plotting import new_figure, ROLES
    >>> fig, ax = new_figure()
    >>> ax.plot([1, 2, 3], [1, 2, 2], **ROLES["measured"].kw(), label="measured")  # doctest: +ELLIPSIS
    [...]
    >>> fig.get_facecolor()[:3]
    (1.0, 1.0, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib

# Importing pyplot picks a backend; notebooks under CI run with MPLBACKEND=Agg already.
import matplotlib.pyplot as plt

__all__ = ["Role", "ROLES", "FIGSIZE", "color", "new_figure", "style"]

# Inches. 7 x 3.6 at 110 dpi is ~770 px wide: the width of Material's content column.
FIGSIZE: tuple[float, float] = (7.0, 3.6)
DPI = 110


@dataclass(frozen=True)
class Role:
    """How one kind of data is drawn: colour, marker and line style."""

    color: str
    marker: str
    linestyle: str

    def kw(self) -> dict[str, str]:
        """Keyword arguments for ``ax.plot``.

        Example:
            >>> ROLES["dense"].kw()["color"]
            '#0072B2'
        """
        return {"color": self.color, "marker": self.marker, "linestyle": self.linestyle}


# Okabe–Ito colours. dense/2:4 are the pair readers compare most, so they get the two most
# distinct hues (blue vs orange).
ROLES: dict[str, Role] = {
    "dense": Role("#0072B2", "s", "-"),  # blue
    "2:4": Role("#E69F00", "o", "-"),  # orange
    "measured": Role("#009E73", "o", "-"),  # bluish green, filled markers
    "predicted": Role("#CC79A7", "", "--"),  # reddish purple, dashed model line
    "published": Role("#D55E00", "D", ":"),  # vermillion, diamonds for cited numbers
    "neutral": Role("#6E6E6E", "", "-"),  # grey for guides and annotations
}


def color(role: str) -> str:
    """Return the hex colour of a role (``"dense"``, ``"2:4"``, ``"measured"``, ...).

    Example:
        >>> color("2:4")
        '#E69F00'
    """
    try:
        return ROLES[role].color
    except (KeyError, TypeError):
        raise ValueError(f"role must be one of {sorted(ROLES)}, got {role!r}") from None


_RC: dict[str, Any] = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.edgecolor": "#333333",
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(
        color=[ROLES[r].color for r in ("dense", "2:4", "measured", "predicted", "published")]
    ),
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
}


def style() -> None:
    """Apply the house style to matplotlib globally (idempotent).

    Call it once at the top of a notebook that builds figures with plain ``plt``;
    :func:`new_figure` calls it for you.

    Example:
        >>> style()
        >>> import matplotlib
        >>> matplotlib.rcParams["figure.facecolor"]
        'white'
    """
    matplotlib.rcParams.update(_RC)


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float | None = None, height: float | None = None, **subplots_kw: Any):
    """Create ``(fig, ax)`` in the house style.

    Args:
        nrows, ncols: subplot grid, as in ``plt.subplots``.
        width, height: inches; default :data:`FIGSIZE`. Height grows with ``nrows``.
        **subplots_kw: passed on to ``plt.subplots`` (e.g. ``sharey=True``).

    Example:
        >>> fig, (left, right) = new_figure(1, 2, sharey=True)
        >>> fig.get_size_inches().tolist()
        [7.0, 3.6]
    """
    for name, value in (("nrows", nrows), ("ncols", ncols)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    for name, value in (("width", width), ("height", height)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ValueError(f"{name} must be a positive number of inches or None, got {value!r}")
    style()
    size = (
        width if width is not None else FIGSIZE[0],
        height if height is not None else FIGSIZE[1] * (1 + 0.8 * (nrows - 1)),
    )
    subplots_kw.setdefault("layout", "constrained")
    return plt.subplots(nrows, ncols, figsize=size, **subplots_kw)
