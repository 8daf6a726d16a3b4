"""The funnel figure of chapters 6 and 7: :func:`twofour.funnel.funnel`'s five steps as bars.

The numbers come from the toolkit (:mod:`twofour.funnel`); this module only draws them in the
house style, so the site's hero figure and the notebooks' funnels look the same.
"""

from __future__ import annotations

from ...funnel import FunnelStep
from ..plotting import ROLES, new_figure

__all__ = ["plot_funnel", "plot_sensitivity", "cited_per_call_costs"]


def plot_funnel(stages: list[FunnelStep], ax=None, *, title: str | None = None, kernel_role: str = "predicted"):
    """Draw the funnel as horizontal bars, widest (data sheet) on top, with the value on each bar.

    Colours follow the house roles (:mod:`twofour.course.plotting`): the data sheet is "published",
    the model's steps are "predicted", the kernel step is ``kernel_role`` (pass
    ``"measured"`` when the GEMM speedup came from your measurement), and the final,
    request-level bar is "2:4". Each bar is labelled with its step's title ("step 3: 2:4 GEMM
    speedup"). A grey dashed line marks 1x (no gain). Returns the axes.

    Example:
        >>> from twofour.funnel import funnel
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.request import Workload, estimate
        >>> ax = plot_funnel(funnel(estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")))
        >>> len(ax.patches)
        5
    """
    if not stages or not all(isinstance(s, FunnelStep) for s in stages):
        raise ValueError("stages must be a non-empty list of FunnelStep (the steps from twofour.funnel.funnel)")
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
    ax.set_yticks(range(n), [s.title if s.step else f"{i + 1}. {s.label}" for i, s in enumerate(stages)][::-1])
    ax.set_xlim(0, max(2.0, max(values)) * 1.18)
    ax.set_xlabel("speedup over dense (1x = no gain)")
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title)
    return ax


# Per-call costs of the 2:4 path that sources put a number on, for the sensitivity figure:
# (label, microseconds per call, where the number comes from).
def cited_per_call_costs() -> list[tuple[str, float, str]]:
    """The 2:4 per-call costs with a source: the fitted H200 values, and what others measured.

    "H200 cached": what one cuSPARSELt call costs beyond streaming its bytes and doing its math,
    replayed from a CUDA graph (the kernel's fixed latency, its workspace memset and the padding
    of ``x``, and the replay); "H200 eager": the host time of one back-to-back eager call (a
    cuSPARSELt plan built per call).

    Example:
        >>> [label for label, _, _ in cited_per_call_costs()][:2]
        ['H200 cached (fitted)', 'H200 eager (measured median)']
    """
    from ...roofline import default_params

    h200 = default_params("H200")
    cached = h200.cusparselt.latency_us + h200.cusparselt.helper_split_us + h200.pad_us + h200.graph_sparse_us
    return [
        ("H200 cached (fitted)", cached, "twofour calibrate on the twofour bench H200 run (kernel latency fitted; "
         "helper kernels and graph replay measured)"),
        ("H200 eager (measured median)", h200.host_sparse_us,
         "twofour bench back-to-back eager timings, make gpu-check 2026-11-30"),
        ("pytorch#177866 gap", 460.0, "pytorch/pytorch#177866: about 0.46 ms of host time between kernels"),
    ]


def plot_sensitivity(rows: list[dict], *, measured_ratio: float | None = None, costs=None, ax=None, title=None,
                     ylabel: str = "per-token speedup (TPOT)"):
    """Speedup against the 2:4 per-call cost, one line per kernel efficiency ratio.

    ``rows`` come from :func:`twofour.request.sensitivity`. Vertical lines mark the cited
    per-call costs (:func:`cited_per_call_costs`); the line at ``measured_ratio`` (the default 2:4
    kernel's bandwidth over cuBLAS's, :func:`twofour.request.kernel_bandwidth_ratio`) is drawn
    solid, the others dashed.
    """
    from ..plotting import color

    if not rows:
        raise ValueError("rows must hold the output of twofour.request.sensitivity")
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
    ratios = sorted({r["memory_ratio"] for r in rows})
    for ratio in ratios:
        line = sorted((r for r in rows if r["memory_ratio"] == ratio), key=lambda r: r["per_call_us"])
        measured = measured_ratio is not None and abs(ratio - measured_ratio) < 1e-9
        ax.plot([r["per_call_us"] for r in line], [r["speedup"] for r in line],
                color=color("measured") if measured else color("predicted"),
                linestyle="-" if measured else "--", marker="",
                label=f"2:4 kernel at {ratio:.0%} of dense bandwidth" + (" (the default kernel, modelled)" if measured else ""))
    for label, us, _source in (costs if costs is not None else cited_per_call_costs()):
        ax.axvline(us, color=color("published"), linewidth=0.9, linestyle=":")
        ax.annotate(label, (us, ax.get_ylim()[1]), textcoords="offset points", xytext=(3, -10), rotation=90,
                    va="top", fontsize=7, color=color("published"))
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel("cost of one 2:4 GEMM call beyond streaming its bytes (µs, device + host)")
    ax.set_ylabel(ylabel)
    ax.set_title(title or "How the verdict moves with per-call cost and kernel efficiency", fontsize=10)
    ax.legend(fontsize=7, loc="lower left")
    return fig, ax
