"""The funnel figure of chapters 6 and 7: :func:`twofour.funnel.funnel`'s stages as bars.

The numbers come from the toolkit (:mod:`twofour.funnel`); this module only draws them in the
house style, so the site's hero figure and the notebooks' funnels look the same.
"""

from __future__ import annotations

from ...funnel import FunnelStage
from ..plotting import ROLES, new_figure

__all__ = ["plot_funnel"]


def plot_funnel(stages: list[FunnelStage], ax=None, *, title: str | None = None, kernel_role: str = "predicted"):
    """Draw the funnel as horizontal bars, widest (data sheet) on top, with the value on each bar.

    Colours follow the house roles (:mod:`twofour.course.plotting`): the data sheet is "published",
    the model's stages are "predicted", the kernel stage is ``kernel_role`` (pass
    ``"measured"`` when the GEMM speedup came from your measurement), and the final,
    request-level bar is "2:4". A grey dashed line marks 1x (no gain). Returns the axes.

    Example:
        >>> from twofour.funnel import funnel
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.request import Workload, estimate
        >>> ax = plot_funnel(funnel(estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")))
        >>> len(ax.patches)
        5
    """
    if not stages or not all(isinstance(s, FunnelStage) for s in stages):
        raise ValueError("stages must be a non-empty list of FunnelStage (from twofour.funnel.funnel)")
    if kernel_role not in ROLES:
        raise ValueError(f"kernel_role must be one of {sorted(ROLES)}, got {kernel_role!r}")
    if ax is None:
        _, ax = new_figure(height=2.8)
    n = len(stages)
    values = [s.speedup for s in stages]
    for i, stage in enumerate(stages):
        y = n - 1 - i
        if i == n - 1:
            role = "2:4"
        elif stage.key == "datasheet":
            role = "published"
        elif stage.key == "kernel":
            role = kernel_role
        else:
            role = "predicted"
        ax.barh(y, stage.speedup, color=ROLES[role].color, height=0.62)
        ax.text(stage.speedup, y, f" {stage.speedup:.2f}x", va="center", ha="left", fontsize=10)
    ax.axvline(1.0, color=ROLES["neutral"].color, linewidth=1.0, linestyle="--")
    ax.set_yticks(range(n), [f"{i + 1}. {s.label}" for i, s in enumerate(stages)][::-1])
    ax.set_xlim(0, max(2.0, max(values)) * 1.18)
    ax.set_xlabel("speedup over dense (1x = no gain)")
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title)
    return ax
