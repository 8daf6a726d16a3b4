"""Chapter 5's figures: each takes a :class:`~twofour.quality.experiments.QualityTable` (live or the
stored sweep) or the cited tables of :mod:`twofour.quality.published`, and returns ``(fig, ax)``.

>>> from twofour.quality import QualityTable, stored_sweep_path
>>> table = QualityTable.load(stored_sweep_path())
>>> fig, ax = plot_criteria(table, size=table.sizes()[0])
>>> len(ax.lines) == 2 * len(table.criteria()) + 2
True
"""

from __future__ import annotations

import math

from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator, StrMethodFormatter

from ..plotting import ROLES, color, describe, new_figure
from ...quality.experiments import QualityTable
from ...quality.published import WANDA_LLAMA2

__all__ = ["CRITERION_STYLE", "plot_criteria", "plot_mass_vs_quality", "plot_size_sweep", "plot_published"]

# One Okabe-Ito colour and marker per criterion; magnitude 2:4 takes the "2:4" role's orange.
CRITERION_STYLE: dict[str, dict[str, str]] = {
    "random 2:4": {"color": color("neutral"), "marker": "x"},
    "magnitude 2:4": {"color": color("2:4"), "marker": "o"},
    "activation-aware 2:4": {"color": "#009E73", "marker": "^"},
    "magnitude 4:8": {"color": "#56B4E9", "marker": "s"},
    "unstructured 50%": {"color": "#CC79A7", "marker": "D"},
}

_DENSE_LINE = {"color": ROLES["dense"].color, "linestyle": ROLES["dense"].linestyle}


def _style(criterion: str) -> dict[str, str]:
    return CRITERION_STYLE.get(criterion, {"color": color("neutral"), "marker": "o"})


def _one_size(table: QualityTable, size: str | None) -> QualityTable:
    sizes = table.sizes()
    if not sizes:
        raise ValueError("the table has no rows to plot")
    size = sizes[0] if size is None else size
    if size not in sizes:
        raise ValueError(f"size must be one of {sizes}, got {size!r}")
    return table.where(size=size)


def _sensible(criterion: str) -> bool:
    return criterion != "random 2:4"


def plot_criteria(table: QualityTable, size: str | None = None, ax=None):
    """Perplexity per criterion: one-shot (hollow marker) and after masked fine-tuning (filled), joined by an arrow.

    Horizontal lines: the dense model, and the dense model given the same extra steps as recovery
    (the fair reference for the recovered models).
    """
    rows = _one_size(table, size).rows
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    for x, r in enumerate(rows):
        st = _style(r.criterion)
        ax.plot([x], [r.ppl_pruned], linestyle="none", marker=st["marker"], markersize=8,
                markerfacecolor="white", markeredgecolor=st["color"], markeredgewidth=1.8)
        ax.plot([x], [r.ppl_recovered], linestyle="none", marker=st["marker"], markersize=8, color=st["color"])
        ax.annotate("", xy=(x, r.ppl_recovered), xytext=(x, r.ppl_pruned),
                    arrowprops={"arrowstyle": "->", "color": st["color"], "shrinkA": 6, "shrinkB": 6})
    first = rows[0]
    ax.axhline(first.ppl_dense, **_DENSE_LINE, label=f"dense ({first.ppl_dense:.2f})")
    ax.axhline(first.ppl_dense_extra, color=color("dense"), linestyle=":",
               label=f"dense + the same {first.recover_steps} steps ({first.ppl_dense_extra:.2f})")
    ax.set_yscale("log")
    _plain_log_ticks(ax, [r.ppl_pruned for r in rows] + [first.ppl_dense_extra])
    ax.set_xticks(range(len(rows)), [r.criterion.replace(" ", "\n", 1) for r in rows])
    ax.set(xlim=(-0.5, len(rows) - 0.5), ylabel="validation perplexity per byte",
           title=f"{first.size} model ({first.n_params:,} parameters): hollow = one-shot, filled = recovered")
    ax.legend(loc="upper right")
    if own_figure:
        shot = sorted(rows, key=lambda r: r.gap_pruned)
        kept = [r for r in rows if _sensible(r.criterion)] or rows
        worst = max(r.ppl_recovered / first.ppl_dense_extra - 1 for r in kept)
        left_out = [r for r in rows if not _sensible(r.criterion)]
        describe(fig, caption=(
            f"One-shot, every criterion loses (hollow markers): from {shot[0].gap_pruned:.2f}x the dense perplexity "
            f"({shot[0].criterion}) to {shot[-1].gap_pruned:.2f}x ({shot[-1].criterion}). After masked fine-tuning "
            f"(filled), {'every criterion but ' + ', '.join(r.criterion for r in left_out) if left_out else 'every criterion'} "
            f"ends within {worst:.0%} of the dense model given the same steps (dotted line)."))
    return fig, ax


def _plain_log_ticks(ax, values) -> None:
    """Readable, evenly spread ticks with plain numbers on a log y axis spanning ``values``.

    matplotlib's log axis shows few or no labelled ticks over less than a decade, and
    scientific labels ("1.7 x 10^1") where it does; perplexities read better as plain numbers.
    """
    lo, hi = min(values), max(values)
    span = math.log(hi / lo) if hi > lo else 0.0
    candidates = [1, 1.2, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 40, 50, 60, 80, 100]
    ticks: list[float] = []
    for t in candidates:
        if lo / 1.1 <= t <= hi * 1.1 and (not ticks or math.log(t / ticks[-1]) >= span / 7):
            ticks.append(t)
    if len(ticks) < 3:  # a narrow range: fall back to nice linear steps inside it
        ticks = [t for t in MaxNLocator(nbins=5).tick_values(lo, hi) if lo / 1.1 <= t <= hi * 1.1 and t > 0]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def plot_mass_vs_quality(table: QualityTable, size: str | None = None, ax=None, *, exclude: tuple[str, ...] = ("random 2:4",)):
    """One-shot perplexity ratio (pruned / dense) against the share of ``|W|`` each criterion kept.

    ``exclude`` leaves criteria off the chart (random 2:4 by default: it would squash the others).
    """
    rows = [r for r in _one_size(table, size).rows if r.criterion not in exclude]
    if not rows:
        raise ValueError(f"nothing left to plot after excluding {exclude}")
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    for r in rows:
        ax.scatter(r.mass_kept * 100, r.gap_pruned, s=50, label=r.criterion, **_style(r.criterion))
    ax.axhline(1.0, **_DENSE_LINE, label="dense")
    ax.set_xlabel("weight mass kept: share of sum |W| in the pruned layers (%)")
    ax.set_ylabel("one-shot perplexity / dense")
    left_out = f" ({', '.join(exclude)} left out)" if exclude else ""
    ax.set_title(f"{rows[0].size} model: |W| kept vs one-shot quality{left_out}")
    ax.legend()
    if own_figure:
        by_mass = sorted(rows, key=lambda r: -r.mass_kept)
        most, least = by_mass[0], by_mass[-1]
        odd = [(a, b) for i, a in enumerate(by_mass) for b in by_mass[i + 1:] if b.gap_pruned < a.gap_pruned]
        caption = (f"{'Mostly, the' if odd else 'The'} more of sum |W| a criterion keeps, the less it loses one-shot: {most.criterion} keeps "
                   f"{most.mass_kept:.1%} and ends at {most.gap_pruned:.2f}x dense, {least.criterion} keeps "
                   f"{least.mass_kept:.1%} and ends at {least.gap_pruned:.2f}x")
        if odd:
            a, b = odd[0]
            caption += (f"; but mass is only a proxy: {b.criterion} keeps less than {a.criterion} "
                        f"({b.mass_kept:.1%} against {a.mass_kept:.1%}) yet loses less ({b.gap_pruned:.2f}x against "
                        f"{a.gap_pruned:.2f}x)")
        describe(fig, caption=caption + ".")
    return fig, ax


def plot_size_sweep(table: QualityTable, ax=None, *, recovered: bool = True, exclude: tuple[str, ...] = ("random 2:4",)):
    """Perplexity ratio to dense against model size, per criterion (solid: one-shot; dashed: recovered)."""
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    table = QualityTable([r for r in table if r.criterion not in exclude], table.settings, table.provenance)
    if not len(table):
        raise ValueError(f"nothing left to plot after excluding {exclude}")
    for crit in table.criteria():
        rows = sorted(table.where(criterion=crit).rows, key=lambda r: r.n_params)
        params = [r.n_params for r in rows]
        st = _style(crit)
        ax.plot(params, [r.gap_pruned for r in rows], color=st["color"], marker=st["marker"], label=crit)
        if recovered:
            ax.plot(params, [r.gap_recovered for r in rows], color=st["color"], marker=st["marker"], linestyle="--", alpha=0.7,
                    markerfacecolor="white")
    if recovered:  # what solid and dashed mean, in the legend rather than the title
        ax.plot([], [], color=color("neutral"), linestyle="-", marker="", label="one-shot (solid)")
        ax.plot([], [], color=color("neutral"), linestyle="--", marker="", label="recovered (dashed, hollow)")
    ax.axhline(1.0, **_DENSE_LINE)
    ax.set(xscale="log", yscale="log")
    _plain_log_ticks(ax, [r.gap_pruned for r in table] + [r.gap_recovered for r in table] + [1.0])
    labels = {r.n_params: f"{r.size}\n{r.n_params / 1e3:,.0f}k" for r in table}
    ax.set_xticks(sorted(labels), [labels[p] for p in sorted(labels)])
    ax.minorticks_off()
    ax.set(xlabel="model size: parameters (log scale)", ylabel="perplexity / dense (log scale)",
           title="Perplexity over dense, by model size")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if own_figure:
        sizes = table.sizes()
        crits = [c for c in table.criteria() if _sensible(c)] or table.criteria()

        def gap(c, s, attr):
            return getattr(table.where(size=s, criterion=c).rows[0], attr)

        def falls(c, attr):  # steadily, from each size to the next
            return all(gap(c, a, attr) > gap(c, b, attr) for a, b in zip(sizes, sizes[1:]))

        shrink = [c for c in crits if falls(c, "gap_pruned")]
        c0 = crits[0]
        caption = (f"From the {sizes[0]} to the {sizes[-1]} model the one-shot gap shrinks for "
                   f"{'every criterion shown' if len(shrink) == len(crits) else ', '.join(shrink) or 'no criterion'} "
                   f"({c0}: {gap(c0, sizes[0], 'gap_pruned'):.2f}x to {gap(c0, sizes[-1], 'gap_pruned'):.2f}x dense)")
        if recovered:
            sensible = [r for r in table if _sensible(r.criterion)] or list(table)
            worst = max(r.gap_recovered for r in sensible)
            caption += f"; after recovery (dashed) every gap is at most {worst:.2f}x"
            if not all(falls(c, "gap_recovered") for c in crits):
                caption += " and no longer falls steadily with size"
        describe(fig, caption=caption + ".")
    return fig, ax


def plot_published(ax=None, methods: tuple[str, ...] = ("2:4 magnitude", "2:4 SparseGPT", "2:4 Wanda", "4:8 Wanda", "50% Wanda")):
    """Cited LLaMA-2 WikiText-2 perplexity ratios (pruned / dense) against model size."""
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    models = list(WANDA_LLAMA2)
    sizes_b = [float(m.rsplit("-", 1)[1].rstrip("B")) for m in models]
    # Colour and marker = method (as in this chapter's own plots), line style = pattern: the three
    # 2:4 lines stay apart in greyscale too.
    method_styles = {"magnitude": CRITERION_STYLE["magnitude 2:4"], "SparseGPT": {"color": "#000000", "marker": "s"},
                     "Wanda": CRITERION_STYLE["activation-aware 2:4"]}
    pattern_styles = {"2:4": "-", "4:8": "--", "50%": ":"}
    all_ratios = []
    for method in methods:
        pattern, name = method.split(" ", 1)
        ratios = [WANDA_LLAMA2[m][method] / WANDA_LLAMA2[m]["dense"] for m in models]
        all_ratios += ratios
        st = method_styles.get(name, {"color": color("neutral"), "marker": ROLES["published"].marker})
        ax.plot(sizes_b, ratios, color=st["color"], marker=st["marker"], markersize=6,
                linestyle=pattern_styles.get(pattern, "-"), label=method)
    ax.axhline(1.0, **_DENSE_LINE)
    ax.set(xscale="log", yscale="log")
    ax.set_xticks(sizes_b, [m.replace("LLaMA-2-", "") for m in models])
    ax.minorticks_off()
    _plain_log_ticks(ax, all_ratios + [1.0])
    ax.set(xlabel="LLaMA-2 model size (published, one-shot, no retraining)", ylim=(0.95, None),
           ylabel="WikiText-2 perplexity / dense", title="Published: locuslab/wanda README")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if own_figure:
        two_four = [m for m in methods if m.startswith("2:4 ")]
        if two_four:
            best = [min(WANDA_LLAMA2[m][k] / WANDA_LLAMA2[m]["dense"] for k in two_four) for m in models]
            caption = (f"Bigger LLaMA-2 models lose less to one-shot 2:4: the best 2:4 method ends at {best[0]:.2f}x the "
                       f"dense perplexity at {models[0].replace('LLaMA-2-', '')} and {best[-1]:.2f}x at "
                       f"{models[-1].replace('LLaMA-2-', '')}")
            if "2:4 magnitude" in two_four:
                mag = [WANDA_LLAMA2[m]["2:4 magnitude"] / WANDA_LLAMA2[m]["dense"] for m in models]
                caption += f"; magnitude 2:4 loses most at {models[0].replace('LLaMA-2-', '')} ({mag[0]:.1f}x)"
            least = {min(methods, key=lambda k: WANDA_LLAMA2[m][k]) for m in models}
            if len(least) == 1:
                caption += f"; {least.pop()} loses least at every size"
            describe(fig, caption=caption + ".")
    return fig, ax
