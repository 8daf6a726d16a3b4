"""The house figure style: one size, one palette, white background.

Every plot on the site goes through :func:`new_figure` (or :func:`style` for a figure made
elsewhere), so that "dense" is the same blue and "2:4" the same orange on every page. Why:

* **Colours** are Okabe–Ito, safe for the common colour blindnesses; each role and series also
  has its own marker and dash, so a plot still reads in greyscale.
* **White background**, even in dark mode: a transparent PNG with black text would vanish there.
* **Fonts** are matplotlib's own DejaVu Sans: the same in CI, Colab and on a laptop.
* **Legends are as large as the axis labels**; one too long goes under the plot, never shrinks.
  A plot of measured data names the GPU and the day (:func:`measured_on`).
* **Alt text and caption** travel with the figure into the 2x PNG of notebooks and the site.
"""

from __future__ import annotations

import base64
import contextlib
import io
import struct
import sys
from dataclasses import dataclass
from typing import Any

import matplotlib

# Importing pyplot picks a backend; notebooks under CI run with MPLBACKEND=Agg already.
import matplotlib.pyplot as plt

from .._common.args import require_positive_int
from ..vocabulary import PALETTE
from .measured_rows import measured_on  # re-exported: figures name their data with it

__all__ = [
    "Role", "ROLES", "SERIES", "FIGSIZE", "LABEL_SIZE", "LEGEND_SIZE", "color", "series", "new_figure", "style",
    "legend_below", "measured_on", "describe", "restates", "join_and", "figure_text", "figure_png",
    "install_notebook_display",
]

# Inches. 7 x 3.6 at 110 dpi is ~770 px wide: the width of Material's content column.
FIGSIZE: tuple[float, float] = (7.0, 3.6)
DPI = 110
# Points. Axis labels and tick labels share one size, and a legend is never smaller: a legend
# is read as closely as the axes it explains (10 pt is about 15 CSS pixels at this DPI).
LABEL_SIZE = 10
LEGEND_SIZE = LABEL_SIZE


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
# distinct hues (blue vs orange), and also differ in dash and marker (greyscale, colour blindness).
ROLES: dict[str, Role] = {
    "dense": Role(PALETTE["blue"], "s", "-"),  # blue, squares, solid
    "2:4": Role(PALETTE["orange"], "o", "--"),  # orange, circles, dashed
    "measured": Role(PALETTE["green"], "o", "-"),  # bluish green, filled markers
    "predicted": Role(PALETTE["purple"], "", "--"),  # reddish purple, dashed model line
    "published": Role(PALETTE["vermillion"], "D", ":"),  # vermillion, diamonds for cited numbers
    "neutral": Role(PALETTE["grey"], "", "-"),  # grey for guides and annotations
}


# Many series of one kind (one per GPU, per model size): the Okabe–Ito colours, neighbours
# differing most, each with its own marker and dash (yellow is left out: too pale on white).
SERIES: tuple[Role, ...] = (
    Role(PALETTE["blue"], "o", "-"),  # blue
    Role(PALETTE["orange"], "s", "--"),  # orange
    Role(PALETTE["green"], "^", "-."),  # bluish green
    Role(PALETTE["purple"], "D", ":"),  # reddish purple
    Role(PALETTE["vermillion"], "v", "-"),  # vermillion
    Role(PALETTE["sky"], "P", "--"),  # sky blue
    Role(PALETTE["black"], "X", "-."),  # black
)


def series(i: int) -> Role:
    """Style of the ``i``-th series of a plot with several of the same kind (wraps around).

    Example:
        >>> series(0).color, series(1).color, series(7) == series(0)
        ('#0072B2', '#E69F00', True)
    """
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise ValueError(f"i must be a non-negative int (the series' position), got {i!r}")
    return SERIES[i % len(SERIES)]


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
    "font.size": LABEL_SIZE,
    "axes.titlesize": 11,
    "axes.labelsize": LABEL_SIZE,
    "xtick.labelsize": LABEL_SIZE,
    "ytick.labelsize": LABEL_SIZE,
    "legend.fontsize": LEGEND_SIZE,
    "legend.title_fontsize": LEGEND_SIZE,
    "axes.edgecolor": "#333333",
    "axes.grid": True,
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=[role.color for role in SERIES]),
    "legend.frameon": False,
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
}


def style() -> None:
    """Apply the house style to matplotlib globally (idempotent), and in Jupyter or Colab the figure display.

    Example:
        >>> style()
        >>> import matplotlib
        >>> matplotlib.rcParams["figure.facecolor"]
        'white'
    """
    matplotlib.rcParams.update(_RC)
    install_notebook_display()


def new_figure(nrows: int = 1, ncols: int = 1, *, width: float | None = None, height: float | None = None,
               alt: str | None = None, caption: str | None = None, **subplots_kw: Any):
    """Create ``(fig, ax)`` in the house style, as ``plt.subplots`` does.

    ``width`` and ``height`` (inches) default to :data:`FIGSIZE`, the height growing with
    ``nrows``; ``alt`` and ``caption`` go to :func:`describe`.

    Example:
        >>> fig, (left, right) = new_figure(1, 2, sharey=True)
        >>> fig.get_size_inches().tolist()
        [7.0, 3.6]
    """
    require_positive_int("nrows", nrows)
    require_positive_int("ncols", ncols)
    for name, value in (("width", width), ("height", height)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
            raise ValueError(f"{name} must be a positive number of inches or None, got {value!r}")
    style()
    width = FIGSIZE[0] if width is None else width
    height = FIGSIZE[1] * (1 + 0.8 * (nrows - 1)) if height is None else height
    subplots_kw.setdefault("layout", "constrained")
    fig, ax = plt.subplots(nrows, ncols, figsize=(width, height), **subplots_kw)
    describe(fig, alt=alt, caption=caption)
    return fig, ax


def legend_below(fig, source=None, *, ncols: int = 2, title: str | None = None):
    """One legend for the whole figure, under its panels, in the house size; returns it.

    The entries are ``source``'s (an axes), or every panel's, each label once; the panels' own
    legends are removed. ``title`` defaults to the title of a removed legend.

    Example:
        >>> fig, (left, right) = new_figure(1, 2)
        >>> _ = left.plot([1, 2], [1, 2], label="dense"), right.plot([1, 2], [2, 1], label="dense")
        >>> _ = left.legend(title="H200, measured 2026-11-30")
        >>> leg = legend_below(fig)
        >>> [t.get_text() for t in leg.get_texts()], leg.get_title().get_text(), left.get_legend()
        (['dense'], 'H200, measured 2026-11-30', None)
        >>> plt.close(fig)
    """
    require_positive_int("ncols", ncols)
    panels = fig.get_axes()
    entries: dict = {}  # label -> the first handle drawn with it
    for ax in [source] if source is not None else panels:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if not entries:
        raise ValueError("legend_below found no labelled series (plot them with label=...) to put in the legend")
    for old in [ax.get_legend() for ax in panels if ax.get_legend() is not None]:
        if title is None and old.get_title().get_text():
            title = old.get_title().get_text()
        old.remove()
    handles, labels = list(entries.values()), list(entries)
    return fig.legend(handles, labels, loc="outside lower center", ncols=min(ncols, len(labels)), title=title)


# ---- alt text, captions and the notebook display ---------------------------------------------

_ATTR = "_twofour_text"  # where describe() keeps alt and caption on a Figure


def _checked_text(name: str, value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string (or None to keep the current one), got {value!r}")
    return " ".join(value.split())


def describe(fig, *, alt: str | None = None, caption: str | None = None):
    """Attach alt text (for a reader who cannot see it) and a caption (printed under it); returns the figure.

    Left out, :func:`figure_text` derives them.

    Example:
        >>> fig, ax = new_figure()
        >>> _ = ax.plot([1, 2], [1, 2])
        >>> _ = describe(fig, alt="A straight line from (1, 1) to (2, 2).", caption="A line.")
        >>> figure_text(fig)["caption"]
        'A line.'
        >>> plt.close(fig)
    """
    given = {"alt": _checked_text("alt", alt), "caption": _checked_text("caption", caption)}
    setattr(fig, _ATTR, {**getattr(fig, _ATTR, {}), **{k: v for k, v in given.items() if v is not None}})
    return fig


def _words(text) -> str:
    """Lower case, punctuation and spacing folded: what is left to compare two sentences by."""
    return " ".join("".join(ch if ch.isalnum() else " " for ch in str(text).lower()).split())


def restates(caption: str, title: str) -> bool:
    """Whether ``caption`` only says the ``title`` (or a ``;``-separated panel title) again: ignoring case,
    punctuation and spacing, it equals or is part of one, or is one plus fewer than 20 characters.

    Example:
        >>> restates("Time per call.", "Time per call")
        True
        >>> restates("2:4 loses below M = 512 and wins above it.", "Time per call")
        False
    """
    said = _words(caption)
    return not said or any(
        part and (said == part or said in part or (part in said and len(said) - len(part) < 20))
        for part in map(_words, [title, *str(title).split(";")])
    )


def join_and(values) -> str:
    """Values as a caption lists them.

    >>> join_and([1, 16, 256])
    '1, 16 and 256'
    """
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def _label(text) -> str:
    return " ".join(str(text).replace("$", "").split()) if text is not None else ""


def _axes_summary(ax) -> str:
    """'x axis ..., y axis ...; series a, b' for one panel (empty when it has no axes text)."""
    parts = []
    for name, label, scale in (("x", ax.get_xlabel(), ax.get_xscale()), ("y", ax.get_ylabel(), ax.get_yscale())):
        if _label(label):
            parts.append(f"{name} axis {_label(label)}" + (f" ({scale} scale)" if scale not in ("linear", "") else ""))
    names = [_label(lab) for lab in ax.get_legend_handles_labels()[1] if _label(lab) and not lab.startswith("_")]
    if names:
        shown = names if len(names) <= 8 else names[:8] + [f"and {len(names) - 8} more"]
        parts.append("series: " + ", ".join(shown))
    return "; ".join(parts)


def figure_text(fig) -> dict[str, str]:
    """The title, alt text and caption of a figure: set by :func:`describe`, or derived.

    Derived, the title is the figure's suptitle, else its panels' titles, else "y against x";
    the alt text names each panel's axes and series.

    Example:
        >>> fig, ax = new_figure()
        >>> _ = ax.plot([1, 2], [3, 4], label="dense")
        >>> _ = ax.set(title="Time per call", xlabel="M", ylabel="ms")
        >>> text = figure_text(fig)
        >>> text["title"], text["caption"]
        ('Time per call', 'Time per call')
        >>> text["alt"]
        'Chart: Time per call. X axis M; y axis ms; series: dense.'
        >>> plt.close(fig)
    """
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.axison]
    suptitle = _label(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) is not None else ""
    titles = [t for t in (_label(ax.get_title()) or _label(ax.get_title(loc="left")) for ax in axes) if t]
    title = suptitle or "; ".join(dict.fromkeys(titles))  # titles unique, in order
    first = next((ax for ax in axes if _label(ax.get_ylabel()) or _label(ax.get_xlabel())), None)
    if not title and first is not None:
        title = f"{_label(first.get_ylabel()) or 'value'} against {_label(first.get_xlabel()) or 'position'}"
    panels = [f"panel {name!r}: {summary}" if len(axes) > 1 and name else summary
              for name, summary in ((_label(ax.get_title()), _axes_summary(ax)) for ax in axes) if summary]
    kind = "Chart" if len(axes) <= 1 else f"Chart with {len(axes)} panels"
    alt = f"{kind}: {title or 'untitled'}." + (" " + ". ".join(p[:1].upper() + p[1:] for p in panels) + "." if panels else "")
    if len(alt) > 600:
        alt = alt[:597].rstrip() + "..."
    text = {"title": title, "alt": alt, "caption": title, **getattr(fig, _ATTR, {})}
    return {**text, "caption": text["caption"] or text["alt"]}


def _png_size(png: bytes) -> tuple[int, int]:
    return struct.unpack(">II", png[16:24])


def figure_png(fig, *, scale: int = 2) -> tuple[str, dict[str, Any]]:
    """``(base64 PNG, metadata)`` as IPython's PNG formatter returns them, at ``scale`` times the resolution.

    ``width`` and ``height`` are in CSS pixels (crisp on high-DPI screens); :func:`figure_text`'s
    ``alt``, ``title`` and ``caption`` are in the metadata and in the PNG's text chunks.

    Example:
        >>> fig, ax = new_figure(alt="Nothing but axes.")
        >>> data, md = figure_png(fig)
        >>> md["alt"], md["width"] < _png_size(base64.b64decode(data))[0]
        ('Nothing but axes.', True)
        >>> plt.close(fig)
    """
    require_positive_int("scale", scale)
    text = figure_text(fig)
    buf = io.BytesIO()
    fig.canvas.print_figure(
        buf, format="png", dpi=(fig.dpi or DPI) * scale, bbox_inches="tight", facecolor=fig.get_facecolor(),
        metadata={"Title": text["title"] or text["caption"], "Description": text["alt"]},
    )
    width, height = _png_size(buf.getvalue())
    metadata = {"width": width // scale, "height": height // scale, **text}
    return base64.b64encode(buf.getvalue()).decode("ascii"), metadata


def install_notebook_display(shell=None) -> bool:
    """Show matplotlib figures as 2x PNGs with their alt text and caption (Jupyter, Colab).

    Idempotent; False outside IPython. It changes only how a figure becomes a PNG, so
    ``%matplotlib inline`` (which resets the figure formats) does not undo it.

    Example:
        >>> install_notebook_display()  # a plain Python process: nothing to do
        False
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    png = getattr(shell, "display_formatter", None)
    png = png.formatters.get("image/png") if png is not None else None
    if png is None:
        return False
    if not getattr(type(png), "_twofour", False):
        from matplotlib.figure import Figure

        base = type(png)

        def __call__(self, obj):  # noqa: N807
            if isinstance(obj, Figure) and self.enabled:
                with contextlib.suppress(Exception):  # never lose a figure over its metadata
                    return figure_png(obj)
            return base.__call__(self, obj)

        png.__class__ = type(f"TwofourFigure{base.__name__}", (base,), {"__call__": __call__, "_twofour": True})
    return True
