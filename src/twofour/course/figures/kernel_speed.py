"""Figures and the notebook widget for chapter 4 ("How fast can the sparse GEMM be?").

It draws the model (:mod:`twofour.roofline`), this project's GPU runs (:mod:`twofour.bench`) and
everyone else's; the kernel model's own figures (tiles, CTAs, bandwidth) are in :mod:`.kernel_launch`.

Example:
    >>> from twofour.course.figures.kernel_speed import plot_speedup_vs_M
    >>> fig, ax = plot_speedup_vs_M(4096, 4096, "fp16", ["H100"], Ms=[1, 64, 4096])
"""

from __future__ import annotations

import math

import numpy as np

from ...vocabulary import PALETTE, dtype_key
from ...hardware import get_gpu, match_device_name
from ...roofline import DEFAULT_SCENARIO, SCENARIOS, KernelParams, arithmetic_intensity, ceilings, crossover_m, predict
from ..plotting import ROLES, Role, color, describe, join_and, legend_below, measured_on, new_figure, series

__all__ = [
    "log2_Ms",
    "plot_roofline",
    "plot_speedup_vs_M",
    "speedup_caption",
    "speedup_grid",
    "results_sources",
    "plot_modes_vs_M",
    "modes_caption",
    "modes_grid",
    "mode_table",
    "plot_measured_vs_predicted",
    "worst_misses",
    "crossover_table",
    "speedup_widget",
]

# twofour bench timing modes, in the order a reader meets them, with what each one is.
MODE_LABELS = {
    "lone": "eager, one lone call (host set-up + kernels)",
    "stream": "eager, back to back (as in a forward pass)",
    "graph": "CUDA graph replay (plans cached)",
    "kernel": "kernels only (profiler)",
}
# One style per timing mode (a test fails when a mode has none).
MODE_STYLE = {"lone": Role(PALETTE["grey"], "v", ":"), "stream": Role(PALETTE["vermillion"], "^", "-."),
              "graph": Role(PALETTE["blue"], "s", "--"), "kernel": Role(PALETTE["green"], "o", "-")}
# The model's scenario for each measured mode: thin, "predicted" colour, a dash of its own, no
# marker, so the model lines stay apart from each other and the measured lines in greyscale.
_MODEL_STYLE = {"eager": ("back to back", (0, (1, 1.5))), "cached": ("graph replay", (0, (5, 2))),
                "kernel": ("kernel time", (0, (8, 2, 1, 2)))}


def results_sources(results_list) -> str:
    """Where and when a list of results files was measured, each distinct run once ("H200, measured 2026-11-30").

    Example:
        >>> from twofour.bench import recorded_results
        >>> results_sources(recorded_results("gpu"))
        'H200, measured 2026-11-30'
    """
    return "; ".join(dict.fromkeys(
        measured_on(p.get("gpu_name") or f"CPU ({p.get('cpu_model', 'unknown')})", p.get("date"))
        for p in (res.provenance for res in results_list)))


def log2_Ms(m_max: int = 16384) -> list[int]:
    """1, 2, 4, ... up to ``m_max``.

    Example:
        >>> log2_Ms(16)
        [1, 2, 4, 8, 16]
    """
    return [2**i for i in range(int(math.log2(m_max)) + 1)]


def plot_roofline(gpu="H100", dtype="fp16", N: int = 4096, K: int = 4096, Ms=(1, 16, 256, 4096), ax=None):
    """Data-sheet roofline (attainable TFLOP/s vs FLOP/byte), dense and 2:4, with GEMMs of several M.

    The 2:4 roof counts *useful* (dense-equivalent) FLOPs against the packed bytes, so both
    roofs share one axis.
    """
    spec = get_gpu(gpu)
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    bw = spec.mem_bw_gbs * 1e9
    peak = {role: spec.peak_tflops(dtype, sparse=role == "2:4") * 1e12 for role in ("dense", "2:4")}
    intensity = np.geomspace(0.3, 3e4, 300)
    for role in peak:
        ax.plot(intensity, np.minimum(peak[role], bw * intensity) / 1e12, color=color(role),
                linestyle=ROLES[role].linestyle, label=f"{role} roof ({spec.name} data sheet)")
    bound = {}
    for M in Ms:
        for role in peak:
            ai = arithmetic_intensity(M, N, K, dtype, sparse=role == "2:4")
            ax.plot([ai], [min(peak[role], bw * ai) / 1e12], marker=ROLES[role].marker, color=color(role), linestyle="",
                    markersize=7, label=f"{role} GEMM at each M" if M == Ms[0] else None)
        ai = arithmetic_intensity(M, N, K, dtype)
        bound[M] = "memory" if bw * ai < peak["dense"] else "compute"
        ax.annotate(f"M={M}", (ai, min(peak["dense"], bw * ai) / 1e12),
                    textcoords="offset points", xytext=(4, -14), fontsize=9, color=color("neutral"))
    ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP per DRAM byte)",
           ylabel="attainable TFLOP/s", title=f"Roofline, {spec.name} {dtype}: W = [{N}, {K}]")
    ax.legend(loc="lower right")
    low = [M for M in Ms if bound[M] == "memory"]
    high = [M for M in Ms if bound[M] == "compute"]
    parts = []
    if low:
        parts.append(f"at M = {join_and(low)} the GEMM sits on the sloped bandwidth roof, where 2:4 can gain only what "
                     f"its fewer bytes give (at most {ceilings(dtype)['memory']:.2f}x)")
    if high:
        parts.append(f"at M = {join_and(high)} it reaches the flat compute roof, where the 2:4 roof is "
                     f"{ceilings(dtype)['compute']:.0f}x higher")
    if own_figure:
        describe(fig, caption=f"On the {spec.name} data sheet, " + "; ".join(parts) + ".")
    return fig, ax


def plot_speedup_vs_M(N: int, K: int, dtype="fp16", gpus=("A100", "L4", "H100", "H200", "B200"), Ms=None,
                      params: KernelParams | None = None, ax=None, title: str | None = None,
                      scenario: str = DEFAULT_SCENARIO, algorithm: str = "default"):
    """Predicted 2:4 speedup vs M for one weight shape, one house series per GPU, with the two ceilings."""
    Ms = Ms or log2_Ms()
    own_figure = ax is None
    fig, ax = new_figure() if ax is None else (ax.figure, ax)
    ends = []
    for i, gpu in enumerate(gpus):
        s = [predict(M, N, K, dtype, gpu, params=params, scenario=scenario, algorithm=algorithm).speedup for M in Ms]
        ax.plot(Ms, s, **series(i).kw(), markersize=4, label=f"{get_gpu(gpu).name} (predicted)")
        ends.append((get_gpu(gpu).name, s[0], s[-1], next((M for M, v in zip(Ms, s) if v > 1), None)))
    c = ceilings(dtype)
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    for kind, digits in (("memory", ".2f"), ("compute", ".0f")):
        ax.axhline(c[kind], color=color("neutral"), linewidth=0.8, linestyle=":")
        ax.text(Ms[0], c[kind], f" {kind} ceiling {c[kind]:{digits}}x", va="bottom", fontsize=8, color=color("neutral"))
    ax.set_xscale("log", base=2)
    ax.set(xlabel="M (tokens in the GEMM)", ylabel="speedup of 2:4 over dense", ylim=(0, 2.2),
           title=title or f"Predicted speedup ({scenario}, {algorithm} algorithm), W = [{N}, {K}], {dtype}")
    ax.legend(loc="lower right")
    if own_figure and ends:
        low = ", ".join(f"{name} {first:.2f}x" for name, first, _, _ in ends)
        high = ", ".join(f"{name} {last:.2f}x" for name, _, last, _ in ends)
        describe(
            fig,
            alt=(f"Line chart of the predicted speedup of 2:4 over dense against M (log scale, {Ms[0]} to {Ms[-1]} "
                 f"tokens) for W = [{N}, {K}] in {dtype}, one line per GPU, scenario {scenario}. "
                 f"At M = {Ms[0]}: {low}. At M = {Ms[-1]}: {high}. Dotted lines mark the memory ceiling "
                 f"({c['memory']:.2f}x) and the compute ceiling ({c['compute']:.0f}x)."),
            caption=speedup_caption(ends, Ms, scenario) + f" (W = [{N}, {K}], {dtype}; dotted: the memory and compute ceilings).",
        )
    return fig, ax


def speedup_caption(ends, Ms, scenario: str) -> str:
    """The finding of predicted speedup curves: where 2:4 first wins on each GPU, and that none reaches 2x.

    ``ends``: ``(gpu name, speedup at Ms[0], speedup at Ms[-1], first M that wins or None)`` per GPU.

    Example:
        >>> speedup_caption([("H100", 0.6, 1.5, 512), ("L4", 0.5, 0.9, None)], [1, 16384], "cached")
        '2:4 loses to dense at M = 1 on every GPU (predicted, cached); the first plotted M at which it wins is 512 on the H100, and none up to M = 16384 on the L4; no curve reaches the 2x compute ceiling'
    """
    by_m: dict[int, list[str]] = {}
    for name, _, _, m in ends:
        if m is not None:
            by_m.setdefault(m, []).append(name)
    wins = [f"{m} on the {join_and(names)}" for m, names in sorted(by_m.items())]
    never = [name for name, _, _, m in ends if m is None]
    start = (f"2:4 loses to dense at M = {Ms[0]} on every GPU" if all(first < 1 for _, first, _, _ in ends)
             else f"at M = {Ms[0]} 2:4 already wins on " + ", ".join(n for n, f, _, _ in ends if f >= 1))
    parts = [f"{start} (predicted, {scenario})"]
    if wins:
        parts.append("the first plotted M at which it wins is " + join_and(wins))
    if never and wins:
        parts[-1] += f", and none up to M = {Ms[-1]} on the " + ", ".join(never)
    elif never:
        parts.append(f"it never wins up to M = {Ms[-1]} on the " + ", ".join(never))
    if all(last < 2 for _, _, last, _ in ends):
        parts.append("no curve reaches the 2x compute ceiling")
    return "; ".join(parts)


def speedup_grid(shapes, gpus, dtype="fp16", *, scenario: str = DEFAULT_SCENARIO, Ms=None):
    """:func:`plot_speedup_vs_M` for up to four ``(label, N, K)`` layers on a 2 x 2 grid, one legend."""
    if not 1 <= len(shapes) <= 4:
        raise ValueError(f"shapes must hold 1 to 4 (label, N, K) layers for a 2 x 2 grid, got {len(shapes)}")
    Ms = Ms or log2_Ms()
    fig, axes = new_figure(2, 2, width=9, height=7.4, sharex=True, sharey=True)
    first_wins, lose_at_1 = [], True
    for ax, (label, N, K) in zip(axes.flat, shapes):
        plot_speedup_vs_M(N, K, dtype, gpus, ax=ax, title=f"{label}: W = [{N}, {K}]", scenario=scenario, Ms=Ms)
        for gpu in gpus:
            s = [predict(M, N, K, dtype, gpu, scenario=scenario).speedup for M in Ms]
            lose_at_1 &= s[0] < 1
            first_wins.append((next((M for M, v in zip(Ms, s) if v > 1), None), label.split(" ")[-1], get_gpu(gpu).name))
    for ax in list(axes.flat)[len(shapes):]:
        ax.set_visible(False)
    legend_below(fig, axes.flat[0], ncols=3)
    won = sorted((m, layer, gpu) for m, layer, gpu in first_wins if m is not None)
    never = [(layer, gpu) for m, layer, gpu in first_wins if m is None]
    parts = [f"at M = {Ms[0]} 2:4 loses on every layer and GPU"] if lose_at_1 else []
    if won:
        parts.append(f"the first plotted M at which 2:4 wins ranges from {won[0][0]} ({won[0][1]} on the {won[0][2]}) to "
                     f"{won[-1][0]} ({won[-1][1]} on the {won[-1][2]})")
    caption = f"Predicted ({scenario}, {dtype}): " + ("; ".join(parts) if parts else "2:4 never wins")
    if never:
        caption += f"; {len(never)} layer and GPU pair{'s' if len(never) > 1 else ''} never win up to M = {Ms[-1]}"
    describe(fig, caption=caption + "; no curve reaches the 2x compute ceiling (dotted).")
    return fig, axes


def _rows_by_mode(results_list, shape: str, dtype: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for res in results_list:
        for mode in MODE_LABELS:
            for row in res.gpu_points(mode):
                if row["shape"] == shape and row["dtype"] == dtype:
                    out.setdefault(mode, []).append(row)
    return {mode: sorted(rows, key=lambda r: r["M"]) for mode, rows in out.items()}


def plot_modes_vs_M(results_list, shape: str, dtype: str = "float16", *, model: bool = True, ax=None, title=None):
    """Measured 2:4 speedup vs M for one shape, one line per timing mode, with the model's scenarios.

    The thin lines are the fitted model in the scenario each mode measures (``eager``,
    ``cached``, ``kernel``); flagged points (:mod:`twofour.bench.flags`) are circled in black.
    """
    by_mode = _rows_by_mode(results_list, shape, dtype)
    if not by_mode:
        raise ValueError(f"no measured rows for shape {shape!r} and dtype {dtype!r} in the results given")
    own_figure = ax is None
    fig, ax = new_figure(height=4.6) if ax is None else (ax.figure, ax)
    flagged = []
    for mode, rows in by_mode.items():
        ax.plot([r["M"] for r in rows], [r["dense_ms"] / r["sparse_ms"] for r in rows],
                **MODE_STYLE[mode].kw(), label=f"measured: {MODE_LABELS[mode]}")
        flagged += [(r["M"], r["dense_ms"] / r["sparse_ms"]) for r in rows if r.get("flagged")]
    if flagged:
        ax.scatter(*zip(*flagged), s=80, facecolors="none", edgecolors="#000000", linewidths=1.2, zorder=4,
                   label="flagged (kept out of the fit)")
    any_rows = next(iter(by_mode.values()))
    spec = match_device_name(any_rows[0]["gpu"])
    if model and spec is not None:
        N, K = any_rows[0]["N"], any_rows[0]["K"]
        Ms = sorted({r["M"] for rows in by_mode.values() for r in rows})
        d = dtype_key(dtype)
        for scenario, (what, dash) in _MODEL_STYLE.items():
            ys = [predict(M, N, K, d, spec, scenario=scenario, l2="flushed").speedup for M in Ms]  # as the bench measured
            ax.plot(Ms, ys, color=color("predicted"), linestyle=dash, linewidth=1.3, marker="",
                    label=f"model: {scenario} ({what})")
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}x")
    ax.set(xlabel="M (tokens in the GEMM)", ylabel="speedup of 2:4 over dense (log)")
    ax.set_title(title or f"{shape}, {dtype}: measured four ways", fontsize=10)
    sources = results_sources([res for res in results_list if any(r["shape"] == shape for r in res.gpu_points())])
    ax.legend(loc="upper left", title=sources)
    if own_figure:
        legend_below(fig, ax)
        describe(fig, caption=modes_caption(results_list, [shape], dtype) + f" ({sources}).")
    return fig, ax


def modes_caption(results_list, shapes, dtype: str = "float16") -> str:
    """The finding of the timing-mode plots: where each mode's 2:4 first wins for good, per shape.

    Example:
        >>> from twofour.bench import recorded_results
        >>> modes_caption(recorded_results("gpu"), ["Llama-3-8B down_proj"])  # doctest: +ELLIPSIS
        'At decode (M = 1) 2:4 loses in every timing mode, ...; replayed from a CUDA graph it wins for good from M = ...'
    """
    rows = [r for r in mode_table(results_list, dtype, Ms=(1,)) if r["shape"] in shapes]
    if not rows:
        raise ValueError(f"no measured {dtype} rows for the shapes {list(shapes)} in the results given")
    if all(r[1] is not None and r[1] < 1 for r in rows):
        start = "At decode (M = 1) 2:4 loses in every timing mode"
    else:
        start = "At decode (M = 1) 2:4 wins only in " + ", ".join(sorted({r["mode"] for r in rows if (r[1] or 0) >= 1}))
    lone = [r[1] for r in rows if r["mode"] == "lone" and r[1] is not None]
    if lone:
        span = f"{min(lone):.2f}x" if f"{min(lone):.2f}" == f"{max(lone):.2f}" else f"{min(lone):.2f}x to {max(lone):.2f}x"
        start += f", and a lone eager call runs at {span} of dense (host set-up per call)"
    wins = []
    for mode, what in (("graph", "replayed from a CUDA graph"), ("kernel", "in kernel time alone")):
        froms = [r["crossover"] for r in rows if r["mode"] == mode]
        if froms and all(m is not None for m in froms):
            lo, hi = min(froms), max(froms)
            wins.append(f"{what} it wins for good from M = {lo}" + (f" to {hi}, depending on the layer" if hi != lo else ""))
        elif froms:
            wins.append(f"{what} it never wins for good on " + ", ".join(
                r["shape"] for r in rows if r["mode"] == mode and r["crossover"] is None))
    return start + ("; " + "; ".join(wins) if wins else "")


def modes_grid(results_list, shapes, dtype: str = "float16"):
    """:func:`plot_modes_vs_M` for up to four ``(label, N, K)`` shapes on a 2 x 2 grid, one legend."""
    if not 1 <= len(shapes) <= 4:
        raise ValueError(f"shapes must hold 1 to 4 (label, N, K) layers for a 2 x 2 grid, got {len(shapes)}")
    fig, axes = new_figure(2, 2, width=9.5, height=8.0, sharex=True, sharey=True)
    for ax, (label, N, K) in zip(axes.flat, shapes):
        plot_modes_vs_M(results_list, label, dtype, ax=ax, title=f"{label}: W = [{N}, {K}], {dtype.replace('float', 'fp')}")
    for ax in list(axes.flat)[len(shapes):]:
        ax.set_visible(False)
    legend_below(fig, axes.flat[0])
    sources = results_sources(results_list)
    describe(fig, caption=modes_caption(results_list, [label for label, _, _ in shapes], dtype) + f" ({sources}).")
    return fig, axes


def mode_table(results_list, dtype: str = "float16", Ms=(1, 16, 256, 4096, 16384)) -> list[dict]:
    """Rows ``{shape, mode, M -> speedup..., crossover, flagged}`` of the measured speedups.

    ``crossover``: the smallest measured M from which 2:4 stays faster at every larger measured M,
    or None; ``flagged``: the Ms whose speedup :mod:`twofour.bench.flags` distrusts.
    """
    shapes = dict.fromkeys(row["shape"] for res in results_list for row in res.gpu_points("lone")
                           if row["dtype"] == dtype)
    out = []
    for shape in shapes:
        for mode, rows in _rows_by_mode(results_list, shape, dtype).items():
            speedups = {r["M"]: r["dense_ms"] / r["sparse_ms"] for r in rows}
            ordered = sorted(speedups)
            crossover = next((m for i, m in enumerate(ordered) if all(speedups[k] > 1 for k in ordered[i:])), None)
            out.append({"shape": shape, "mode": mode, **{M: speedups.get(M) for M in Ms}, "crossover": crossover,
                        "flagged": [r["M"] for r in rows if r.get("flagged") and r["M"] in Ms]})
    return out


def plot_measured_vs_predicted(results_list, dtype="float16", *, scenario: str = DEFAULT_SCENARIO,
                               mode: str = "graph", ax=None):
    """Measured speedup (one timing ``mode`` of results files) over the prediction in ``scenario``.

    The defaults pair the timing mode with the scenario it measures (``graph`` times ``cached``);
    each results file and shape is one house series, filled when measured, hollow when predicted.
    """
    own_figure = ax is None
    fig, ax = new_figure(height=4.2) if ax is None else (ax.figure, ax)
    errors, wins = [], []
    for res in results_list:
        spec = match_device_name(res.provenance.get("gpu_name"))
        by_shape: dict = {}
        for row in res.gpu_points(mode):
            if row["dtype"] == dtype:
                by_shape.setdefault((row["shape"], row["N"], row["K"], row["backend"]), []).append(row)
        for (shape, N, K, backend), rows in by_shape.items():
            rows.sort(key=lambda r: r["M"])
            st = series(len(wins))
            Ms = [r["M"] for r in rows]
            measured = [r["dense_ms"] / r["sparse_ms"] for r in rows]
            ax.plot(Ms, measured, color=st.color, marker=st.marker, linestyle="-", label=f"measured: {shape} {backend} ({mode})")
            wins.append((shape, next((M for M, v in zip(Ms, measured) if v > 1), None)))
            if spec is not None:
                d = dtype_key(dtype)
                pred = [predict(M, N, K, d, spec, scenario=scenario, l2="flushed").speedup for M in Ms]
                ax.plot(Ms, pred, color=st.color, marker=st.marker, markerfacecolor="white", linestyle=":",
                        label=f"model: {shape} ({spec.name}, {scenario})")
                errors += [abs(p / m - 1) for p, m in zip(pred, measured)]
    if not wins:
        raise ValueError(f"no measured {dtype} rows in timing mode {mode!r} in the results given")
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="M (tokens in the GEMM)", ylabel="speedup of 2:4 over dense")
    ax.set_title(f"2:4 speedup, {mode} timing, against the model", fontsize=10)
    sources = results_sources(results_list)
    ax.legend(loc="upper left", title=sources)
    if own_figure:
        legend = legend_below(fig, ax, ncols=1)
        fig.set_size_inches(fig.get_size_inches()[0], 3.0 + 0.25 * (len(legend.get_texts()) + 1))  # room for the plot too
        first = "; ".join(f"from M = {m} for {shape}" if m else f"never for {shape}" for shape, m in wins)
        err = (f"; the model is off by a median {sorted(errors)[len(errors) // 2]:.0%} of the measured speedup"
               if errors else "")
        describe(fig, caption=f"Measured ({mode} timing), 2:4 first beats dense {first}{err} ({sources}).")
    return fig, ax


def predictable(p) -> bool:
    """A point the model can predict: a described GPU, a known dtype and shape, a backend that GPU has."""
    if p.gpu is None or p.dtype is None or None in (p.M, p.N, p.K) or p.scenario not in SCENARIOS:
        return False
    return p.backend is None or p.backend in get_gpu(p.gpu).backends


def worst_misses(pts, n: int = 5, origin: str = "published") -> list[dict]:
    """The ``n`` points of ``origin`` the fitted model misses most, with their caveats.

    Example:
        >>> from twofour.roofline.published import points
        >>> rows = worst_misses(points(measured=False), n=3)
        >>> len(rows), rows[0]["rel_err"] >= rows[-1]["rel_err"], "caveats" in rows[0]
        (3, True, True)
    """
    rows = []
    for p in (p for p in pts if predictable(p) and p.origin == origin):
        pred = predict(p.M, p.N, p.K, p.dtype, p.gpu, p.backend, scenario=p.scenario,
                       l2=p.extra.get("l2", "flushed") if p.origin == "measured" else "clean").speedup
        rows.append({"id": p.id, "gpu": p.gpu, "backend": p.backend, "shape": f"{p.M}x{p.N}x{p.K} {p.dtype}",
                     "scenario": p.scenario, "measured": p.speedup, "predicted": pred,
                     "rel_err": abs(pred / p.speedup - 1), "caveats": p.caveats, "excluded": p.excluded,
                     "source_url": p.source_url})
    return sorted(rows, key=lambda r: -r["rel_err"])[:n]


def crossover_table(shapes, gpus, dtype="fp16", params: KernelParams | None = None, m_max: int = 16384,
                    scenario: str = DEFAULT_SCENARIO, algorithm: str = "default") -> list[dict]:
    """Rows ``{shape, N, K, <gpu>: crossover M or None}`` for a table.

    Example:
        >>> crossover_table([("q", 4096, 4096)], ["H100"])[0]["shape"]
        'q'
    """
    return [{"shape": label, "N": N, "K": K, **{
        get_gpu(gpu).name: crossover_m(N, K, dtype, gpu, params=params, m_max=m_max, scenario=scenario,
                                       algorithm=algorithm) for gpu in gpus}} for label, N, K in shapes]


def speedup_widget(shapes, gpus=("A100", "L4", "H100", "H200", "B200"), dtypes=("fp16", "bf16", "int8", "fp8")):
    """An ipywidgets box (shape, GPU, dtype, cuSPARSELt algorithm) redrawing the predicted speedup vs M."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    shape_dd = w.Dropdown(options=[(label, (N, K)) for label, N, K in shapes], description="shape")
    gpu_dd = w.Dropdown(options=list(gpus), description="GPU")  # a Dropdown starts at its first option
    dtype_dd = w.Dropdown(options=list(dtypes), description="dtype")
    alg_dd = w.Dropdown(options=[("default (alg 0)", "default"), ("searched", "searched")],
                        description="algorithm")
    out = w.Output()

    def redraw(*_):
        N, K = shape_dd.value
        with out:
            out.clear_output(wait=True)
            spec = get_gpu(gpu_dd.value)
            if spec.sparse_tflops.get(dtype_dd.value) is None:
                print(f"{spec.name} has no 2:4 tensor-core mode for {dtype_dd.value}.")
                return
            fig, ax = plot_speedup_vs_M(N, K, dtype_dd.value, [gpu_dd.value], algorithm=alg_dd.value)
            m = crossover_m(N, K, dtype_dd.value, gpu_dd.value, algorithm=alg_dd.value)
            if m is not None:
                ax.axvline(m, color=color("2:4"), linewidth=1)
            plt.show()
            print(f"predicted crossover: {'none up to M=16384' if m is None else f'M = {m}'}")

    for dd in (shape_dd, gpu_dd, dtype_dd, alg_dd):
        dd.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([shape_dd, gpu_dd, dtype_dd, alg_dd]), out])
