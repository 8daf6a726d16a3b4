"""Figures of the structure and packing chapters: each draws data the chapter computed (and
asserted) and returns the matplotlib figure.

>>> import torch
>>> fig = nonzeros_heatmaps({"a": torch.tensor([[2, 3], [1, 4]], dtype=torch.uint8)})
>>> len(fig.axes)   # one panel and the colour bar
2
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from matplotlib.colors import BoundaryNorm, ListedColormap

from ..._common.args import require_positive_int
from ..plotting import ROLES, color, describe, join_and, new_figure

__all__ = ["nonzeros_heatmaps", "kept_bars", "meta_slots_figure"]

# Non-zeros per group of 4: 0-2 are fine (lighter to darker blue), 3-4 break 2:4 (vermillion
# shades). Blue/vermillion stay apart for the common colour-vision deficiencies.
_COUNT_COLOURS = ["#F2F2F2", "#9ECAE1", ROLES["dense"].color, "#F4A582", ROLES["published"].color]


def nonzeros_heatmaps(counts: Mapping[str, torch.Tensor], *, n: int = 2, title: str | None = None):
    """One heatmap per weight of its non-zeros per group (``twofour.nonzeros_per_group`` output); cells
    above ``n`` break the pattern."""
    if not counts:
        raise ValueError("counts must map at least one name to a [rows, groups] tensor of non-zero counts")
    fig, axes = new_figure(1, len(counts), width=7.0, height=3.2, squeeze=False)
    cmap = ListedColormap(_COUNT_COLOURS)
    norm = BoundaryNorm([-0.5, 0.5, 1.5, 2.5, 3.5, 4.5], cmap.N)
    image = None
    bads = {}
    for ax, (name, c) in zip(axes[0], counts.items()):
        c = c.to(torch.int64).cpu()
        image = ax.imshow(c.numpy(), cmap=cmap, norm=norm, interpolation="nearest", aspect="auto")
        bad = bads[name] = int((c > n).sum())
        ax.set_title(f"{name}\n{bad:,} of {c.numel():,} groups > {n}", fontsize=9)
        ax.set_xlabel("group along K")
        ax.grid(False)
    axes[0][0].set_ylabel("row of W (output)")
    fig.colorbar(image, ax=list(axes[0]), ticks=range(5), shrink=0.9).set_label("non-zeros in the group")
    if title:
        fig.suptitle(title)
    fine = [name for name, bad in bads.items() if bad == 0]
    broken = [f"{name} {bad:,}" for name, bad in bads.items() if bad]
    caption = (f"{'Only ' if broken and len(fine) == 1 else ''}{', '.join(fine) or 'No weight'} "
               f"{'has' if len(fine) <= 1 else 'have'} no group with more than {n} non-zeros")
    if broken:
        caption += f"; the warm (vermillion and salmon) cells are the groups that break {n}:4: " + ", ".join(broken)
    describe(fig, caption=caption + ".")
    return fig


def kept_bars(table: Mapping[str, Mapping[str, float]], *, ylabel: str, title: str | None = None):
    """Grouped bars: ``table[weight_name][method] = fraction kept``, one group per weight; the method
    named ``"2:4"`` gets the 2:4 colour, the others neutral greys."""
    if not table:
        raise ValueError("table must have at least one weight")
    methods = list(next(iter(table.values())).keys())
    greys = ["#6E6E6E", "#B0B0B0", "#D0D0D0"]
    hatches = ["", "//", "..", "xx"]  # each method also has its own fill pattern: bars stay apart in greyscale
    fig, ax = new_figure()
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        colour = color("2:4") if method == "2:4" else greys[j % len(greys)]
        xs = [i + (j - (len(methods) - 1) / 2) * width for i in range(len(table))]
        heights = [table[name][method] for name in table]
        bars = ax.bar(xs, heights, width=width * 0.95, color=colour, label=method, hatch=hatches[j % len(hatches)],
                      edgecolor="white")
        ax.bar_label(bars, labels=[f"{h:.1%}" for h in heights], fontsize=8, padding=2)
    ax.set_xticks(range(len(table)), list(table))
    ax.set(ylabel=ylabel, ylim=(0, 1.2), yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.legend(loc="upper left", ncols=len(methods))
    ax.grid(axis="x", visible=False)
    if title:
        ax.set_title(title)
    groups = [name.replace("\n", " ") for name in table]
    least = {min(methods, key=lambda m: table[name][m]) for name in table}
    most = {max(methods, key=lambda m: table[name][m]) for name in table}
    if len(least) == 1 and len(most) == 1:
        lo, hi = least.pop(), most.pop()
        caption = (f"{lo} keeps the least in every group ({', '.join(f'{table[n][lo]:.1%}' for n in table)}) and {hi} the most "
                   f"({', '.join(f'{table[n][hi]:.1%}' for n in table)}), in the order {', '.join(groups)}")
    else:
        caption = "Kept per group: " + "; ".join(
            f"{g}: " + ", ".join(f"{m} {table[n][m]:.1%}" for m in methods) for g, n in zip(groups, table))
    describe(fig, caption=caption[0].upper() + caption[1:] + ".")
    return fig


def meta_slots_figure(slots: torch.Tensor, *, words_per_load: int = 8, highlight: int = 4, title: str | None = None):
    """The logical metadata matrix (one column per weight row), each cell labelled with its position
    in memory after reordering (``slots``: :func:`twofour.course.meta_layout.cutlass_meta_slots`).

    Cells read by the same aligned load of ``words_per_load`` words share a colour; the first
    ``highlight`` loads are coloured, the rest grey.
    """
    if not isinstance(slots, torch.Tensor) or slots.dim() != 2:
        raise ValueError("slots must be the 2-D tensor returned by cutlass_meta_slots")
    for name, value in (("words_per_load", words_per_load), ("highlight", highlight)):
        require_positive_int(name, value)
    palette = [ROLES[r].color for r in ("2:4", "dense", "measured", "predicted", "published")]
    if highlight > len(palette):
        raise ValueError(f"highlight must be at most {len(palette)}, got {highlight}")
    rows, words = slots.shape
    load = (slots // words_per_load).T
    shade = torch.where(load < highlight, load, torch.full_like(load, highlight)).numpy()
    cmap = ListedColormap(palette[:highlight] + ["#EEEEEE"])
    fig, ax = new_figure(width=7.0, height=0.5 * words + 1.4)
    ax.imshow(shade, cmap=cmap, vmin=-0.5, vmax=highlight + 0.5, interpolation="nearest", aspect="auto")
    for w in range(words):
        for r in range(rows):
            ax.text(r, w, str(int(slots[r, w])), ha="center", va="center", fontsize=6.5, color="#111111")
    ax.set(xticks=range(0, rows, 4 if rows <= 64 else 8), yticks=range(words),
           yticklabels=[f"word {w}" for w in range(words)], xlabel="row of W")
    ax.grid(False)
    if title:
        ax.set_title(title)
    first = torch.nonzero(slots < words_per_load).tolist()
    first_rows = sorted({r for r, _ in first})
    first_words = sorted({w for _, w in first})
    gaps = {b - a for a, b in zip(first_rows, first_rows[1:])}
    caption = (f"The first {words_per_load * 2}-byte load (the cells numbered 0 to {words_per_load - 1}) holds words "
               f"{join_and(first_words)} of rows {join_and(first_rows)}")
    if len(gaps) == 1:
        caption += f": rows {gaps.pop()} apart sit side by side in memory"
    describe(fig, caption=caption + ".")
    return fig
