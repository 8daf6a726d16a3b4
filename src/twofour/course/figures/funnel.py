"""The funnel figure of chapters 6 and 7 (:func:`twofour.funnel.funnel`'s five steps as bars), and the
per-call cost sensitivity plot; the site's hero figure and the notebooks' funnels look the same."""

from __future__ import annotations

from itertools import cycle

from ...funnel import FunnelStep
from ..plotting import ROLES, color, describe, legend_below, new_figure, series

__all__ = ["plot_funnel", "funnel_caption", "rises", "biggest_cut", "plot_sensitivity", "sensitivity_caption", "cited_per_call_costs"]


def plot_funnel(stages: list[FunnelStep], ax=None, *, title: str | None = None, kernel_role: str = "predicted"):
    """Draw the funnel as horizontal bars, data sheet on top, with the value on each bar; returns the axes.

    ``kernel_role`` colours the kernel step (``"measured"`` when its GEMM speedup is your measurement).

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
    own_figure = ax is None
    fig, ax = new_figure(height=2.8) if ax is None else (ax.figure, ax)
    n = len(stages)
    values = [s.speedup for s in stages]
    roles = {"datasheet": "published", "kernel": kernel_role}
    for i, stage in enumerate(stages):
        y = n - 1 - i
        role = "2:4" if i == n - 1 else roles.get(stage.key, "predicted")
        ax.barh(y, stage.speedup, color=ROLES[role].color, height=0.62)
        rise = f", up from {values[i - 1]:.2f}x" if i and stage.speedup > values[i - 1] else ""
        ax.text(stage.speedup, y, f" {stage.speedup:.2f}x{rise}", va="center", ha="left", fontsize=10)
    ax.axvline(1.0, color=ROLES["neutral"].color, linewidth=1.0, linestyle="--")
    ax.set_yticks(range(n), [s.title if s.step else f"{i + 1}. {s.label}" for i, s in enumerate(stages)][::-1])
    ax.set(xlim=(0, max(2.0, max(values)) * 1.18), xlabel="speedup over dense (1x = no gain)")
    ax.grid(axis="y", visible=False)
    if title:
        ax.set_title(title)
    if own_figure:
        describe(fig, caption=funnel_caption(stages))
    return ax


def funnel_caption(stages: list[FunnelStep]) -> str:
    """The finding of one funnel: where it starts, where it ends, and which step takes the most.

    Example:
        >>> from twofour.funnel import funnel
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.request import Workload, estimate
        >>> funnel_caption(funnel(estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")))
        "The data sheet's 2.00x ends at 0.38x, slower than dense; the biggest cut comes at step 3 (2:4 GEMM), from 1.78x to 0.36x. Step 4 is above step 3: the share 1 − p of the time that 2:4 does not touch runs at 1x, which pulls a loss toward 1x."
    """
    if not stages:
        raise ValueError("stages must be a non-empty list of FunnelStep (the steps from twofour.funnel.funnel)")
    text = f"The data sheet's {stages[0].speedup:.2f}x ends at {stages[-1].speedup:.2f}x"
    if stages[-1].speedup < 1:
        text += ", slower than dense"
    if len(stages) > 1:
        before, step = biggest_cut(stages)
        where = f"step {step.step} ({step.label})" if step.step else step.label
        text += f"; the biggest cut comes at {where}, from {before.speedup:.2f}x to {step.speedup:.2f}x"
    return text + "." + "".join(f" {why}" for why in rises(stages))


# Why a step can be above the one before it: the funnel narrows only while 2:4 gains.
_RISE = {
    "kernel": "the GEMM speedup used is above the ceiling the model draws for perfect kernels",
    "eligible_fraction": "the share 1 − p of the time that 2:4 does not touch runs at 1x, which pulls a loss toward 1x",
    "request": "costs that 2:4 does not change (fixed costs, and for a whole request the other phase) pull it toward 1x",
}


def rises(stages: list[FunnelStep]) -> list[str]:
    """A sentence for each step that is above the step before it, saying why (empty if none rises).

    Example:
        >>> from twofour.funnel import FunnelStep
        >>> steps = [FunnelStep("kernel", "2:4 GEMM", 0.60, ""), FunnelStep("eligible_fraction", "eligible fraction", 0.61, "")]
        >>> rises(steps)
        ['Step 4 is above step 3: the share 1 − p of the time that 2:4 does not touch runs at 1x, which pulls a loss toward 1x.']
    """
    return [f"{f'Step {step.step}' if step.step else step.label.capitalize()} is above "
            f"{f'step {before.step}' if before.step else before.label}: {_RISE[step.key]}."
            for before, step in zip(stages, stages[1:])
            if step.speedup > before.speedup and step.key in _RISE]


def biggest_cut(stages: list[FunnelStep]) -> tuple[FunnelStep, FunnelStep]:
    """The two neighbouring steps between which the funnel loses the largest factor: ``(before, after)``.

    Example:
        >>> from twofour.funnel import funnel
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.request import Workload, estimate
        >>> [s.key for s in biggest_cut(funnel(estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")))]
        ['roofline_ceiling', 'kernel']
    """
    if len(stages) < 2:
        raise ValueError(f"stages must hold at least two FunnelStep to compare, got {len(stages)}")
    i = max(range(len(stages) - 1), key=lambda i: stages[i].speedup / stages[i + 1].speedup)
    return stages[i], stages[i + 1]


def cited_per_call_costs() -> list[tuple[str, float, str]]:
    """``(label, µs per call, source)`` of the 2:4 per-call costs: the fitted H200 values, and what others measured.

    "H200 cached": what one graph-replayed cuSPARSELt call costs beyond its bytes and math (fixed
    latency, workspace memset, padding of ``x``, replay); "H200 eager": the host time of one
    back-to-back eager call.

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
    """Speedup against the 2:4 per-call cost (``rows`` of :func:`twofour.request.sensitivity`), one line per
    kernel efficiency ratio; vertical lines mark the cited costs (:func:`cited_per_call_costs`), and the
    line at ``measured_ratio`` (:func:`twofour.request.kernel_bandwidth_ratio`) is solid "measured" green.
    """
    if not rows:
        raise ValueError("rows must hold the output of twofour.request.sensitivity")
    own_figure = ax is None
    fig, ax = new_figure(height=4.4) if ax is None else (ax.figure, ax)
    ratios = sorted({r["memory_ratio"] for r in rows})
    # What-if ratios: the house series without the measured line's green or solid dash (no two lines alike).
    others = cycle([st for st in map(series, range(7)) if st.color != color("measured") and st.linestyle != "-"])
    for ratio in ratios:
        line = sorted((r for r in rows if r["memory_ratio"] == ratio), key=lambda r: r["per_call_us"])
        measured = measured_ratio is not None and abs(ratio - measured_ratio) < 1e-9
        style = ({"color": color("measured"), "linestyle": "-", "marker": "", "linewidth": 2.2} if measured
                 else {**next(others).kw(), "markersize": 5})
        ax.plot([r["per_call_us"] for r in line], [r["speedup"] for r in line], **style,
                label=f"2:4 kernel at {ratio:.0%} of dense bandwidth" + (" (the default kernel, modelled)" if measured else ""))
    costs = costs if costs is not None else cited_per_call_costs()
    for label, us, _source in costs:
        ax.axvline(us, color=color("published"), linewidth=0.9, linestyle=":")
        ax.annotate(label, (us, ax.get_ylim()[1]), textcoords="offset points", xytext=(3, -10), rotation=90,
                    va="top", fontsize=9, color=color("published"))
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.set(xscale="log", yscale="log", ylabel=ylabel,
           xlabel="cost of one 2:4 GEMM call beyond streaming its bytes (µs, device + host)")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}x")
    ax.set_title(title or "How the verdict moves with per-call cost and kernel efficiency", fontsize=10)
    ax.legend(loc="lower left")
    if own_figure:
        legend_below(fig, ax, ncols=1)
        describe(fig, caption=sensitivity_caption(rows, measured_ratio=measured_ratio, costs=costs))
    return fig, ax


def sensitivity_caption(rows: list[dict], *, measured_ratio: float | None = None, costs=()) -> str:
    """The finding of :func:`plot_sensitivity`: up to which per-call cost each kernel still beats dense.

    Example:
        >>> rows = [{"per_call_us": c, "memory_ratio": r, "speedup": s}
        ...         for c, r, s in ((0, 0.3, 0.7), (10, 0.3, 0.6), (0, 1.0, 1.3), (10, 1.0, 1.1), (20, 1.0, 0.9))]
        >>> sensitivity_caption(rows, measured_ratio=0.3, costs=[("cached", 15.0, "")])
        'The default 2:4 kernel (30% of dense bandwidth) is slower than dense at every per-call cost; a kernel at 100% beats dense only up to 10 µs per call (of the costs computed, 0 to 20 µs); cited costs: cached 15 µs.'
    """
    parts, partial = [], False
    for ratio in sorted({r["memory_ratio"] for r in rows}):
        line = [r for r in rows if r["memory_ratio"] == ratio]
        wins = [r["per_call_us"] for r in line if r["speedup"] > 1]
        measured = measured_ratio is not None and abs(ratio - measured_ratio) < 1e-9
        who = f"the default 2:4 kernel ({ratio:.0%} of dense bandwidth)" if measured else f"a kernel at {ratio:.0%}"
        if not wins:
            parts.append(f"{who} is slower than dense at every per-call cost")
        elif len(wins) == len(line):
            parts.append(f"{who} beats dense at every per-call cost")
        else:
            parts.append(f"{who} beats dense only up to {max(wins):g} µs per call")
            partial = True
    parts.sort(key=lambda p: not p.startswith("the default"))
    text = "; ".join(parts)
    text = text[0].upper() + text[1:]
    if partial:
        costs_computed = sorted({r["per_call_us"] for r in rows})
        text += f" (of the costs computed, {costs_computed[0]:g} to {costs_computed[-1]:g} µs)"
    if costs:
        text += "; cited costs: " + ", ".join(f"{label} {us:.0f} µs" for label, us, _ in costs)
    return text + "."
