"""Chapter 4's figures and tables of the kernel model: tiles, CTAs against SMs, bandwidth, error, flags.

Example:
    >>> rows = launch_rows([("k_proj/v_proj", 1024, 4096)], M=1)
    >>> rows[0]["2:4 CTAs"], rows[0]["dense CTAs"], rows[0]["SMs"]
    (32, 48, 132)
"""

from __future__ import annotations

import re
import statistics

import numpy as np

from ...hardware import get_gpu
from ...roofline import default_params, kernel_time, predict
from ..measured_rows import bandwidth_rows, decode_bandwidth_range, measured_on  # re-exported: the chapter's imports
from ..plotting import ROLES, color, describe, legend_below, new_figure
from .kernel_speed import predictable

__all__ = ["launch_rows", "plot_ctas_vs_sms", "bandwidth_rows", "decode_bandwidth_range", "plot_bandwidth_vs_N",
           "first_wins", "helper_cost_rows", "algorithm_rows", "error_rows", "plot_points_vs_model", "FAMILY_LABELS"]

FAMILY_LABELS = {"cublas": "dense (cuBLAS)", "cusparselt": "2:4, algorithm 0 (PyTorch's default)",
                 "cusparselt_searched": "2:4, searched algorithm", "cutlass": "2:4, CUTLASS"}
_FAMILY_COLORS = {"cublas": color("dense"), "cusparselt": color("2:4"), "cusparselt_searched": "#009E73",
                  "cutlass": "#CC79A7"}
# launch_rows' CTA column of each kernel family, in the order plot_ctas_vs_sms draws the bars
_CTA_KEYS = {"cublas": "dense CTAs", "cusparselt": "2:4 CTAs", "cusparselt_searched": "searched CTAs"}


def launch_rows(shapes, M: int = 1, dtype: str = "fp16", gpu: str = "H200") -> list[dict]:
    """Per shape ``(label, N, K)``: each side's tile, split-K and CTAs at ``M`` tokens (the model's launch)."""
    sms = get_gpu(gpu).sms
    out = []
    for label, N, K in shapes:
        d, s, q = (kernel_time(M, N, K, dtype, gpu, fam) for fam in _CTA_KEYS)
        out.append({"layer": label, "N": N, "K": K, "dense tile": f"{d.tile_n}x{d.tile_m}", "dense split": d.split,
                    "dense CTAs": d.ctas, "2:4 tile": f"{s.tile_n}x{s.tile_m}", "2:4 split": s.split, "2:4 CTAs": s.ctas,
                    "searched CTAs": q.ctas, "SMs": sms})
    return out


def plot_ctas_vs_sms(shapes, M: int = 1, dtype: str = "fp16", gpu: str = "H200", recorded=None, ax=None):
    """CTAs each kernel launches per layer at ``M`` tokens, against the GPU's SM count (the model's launch).

    ``recorded``: optional ``[(label, family, ctas)]`` launch grids read from a trace, drawn as
    black ticks over the bars they check.
    """
    rows = launch_rows(shapes, M, dtype, gpu)
    own_figure = ax is None
    fig, ax = new_figure(height=3.8) if ax is None else (ax.figure, ax)
    x = np.arange(len(rows))
    width = 0.27
    for i, (fam, key) in enumerate(_CTA_KEYS.items()):
        vals = [r[key] for r in rows]
        bars = ax.bar(x + (i - 1) * width, vals, width, color=_FAMILY_COLORS[fam], label=FAMILY_LABELS[fam],
                      hatch=("", "//", "..")[i], edgecolor="white")
        for b, v in zip(bars, vals):
            ax.annotate(str(v), (b.get_x() + b.get_width() / 2, v), textcoords="offset points", xytext=(0, 2),
                        ha="center", fontsize=7)
    sms = rows[0]["SMs"]
    ax.axhline(sms, color=color("neutral"), linestyle="--", linewidth=1)
    ax.text(len(rows) - 0.5, sms, f"{sms} SMs ({get_gpu(gpu).name})", ha="right", va="bottom", fontsize=8, color=color("neutral"))
    at = {r["layer"]: i for i, r in enumerate(rows)}
    for label, fam, ctas in recorded or []:
        offset = (list(_CTA_KEYS).index(fam) - 1) * width
        ax.plot([x[at[label]] + offset], [ctas], marker="_", markersize=14, markeredgewidth=2, color="#000000", linestyle="")
    name = get_gpu(gpu).name
    if recorded:
        ax.plot([], [], marker="_", markersize=10, markeredgewidth=2, color="#000000", linestyle="",
                label=f"recorded launch grid ({name} GEMM-chain trace)")
    ax.set(xticks=x, xticklabels=[f"{r['layer'].split(' ')[-1]}\n[{r['N']}, {r['K']}]" for r in rows],
           ylabel="CTAs launched")
    ax.set_title(f"CTAs per kernel at M = {M}, {dtype}, {name} (model)", fontsize=10)
    ax.legend(loc="upper left")
    if own_figure:  # a figure of its own: the legend under the plot, not over the data
        legend_below(fig, ax)
    idle = [r for r in rows if r["2:4 CTAs"] < sms]
    fewer = [r for r in rows if r["2:4 CTAs"] < r["dense CTAs"]]
    finding = (f"The default 2:4 kernel launches fewer CTAs than the {sms} SMs on {len(idle)} of {len(rows)} layers "
               f"(as few as {min(r['2:4 CTAs'] for r in rows)}), and fewer than cuBLAS on {len(fewer)}, so SMs sit idle "
               f"at M = {M}; the searched algorithm launches up to {max(r['searched CTAs'] for r in rows)}")
    if recorded:
        matches = all(c == rows[at[label]][_CTA_KEYS[fam]] for label, fam, c in recorded)
        finding += (". Black ticks, the launch grids recorded on the " + name
                    + (", sit exactly on the model's bars" if matches else ", differ from the model's bars where they sit apart"))
    describe(fig, alt=("Bar chart of the CTAs each kernel launches per Llama-3-8B layer at M = " + str(M) + ": " + "; ".join(
        f"{r['layer']}: dense {r['dense CTAs']} ({r['dense tile']}, split {r['dense split']}), 2:4 {r['2:4 CTAs']} "
        f"({r['2:4 tile']}, split {r['2:4 split']}), searched {r['searched CTAs']}" for r in rows)
        + f"; a dashed line marks the {sms} SMs."), caption=finding + ".")
    return fig, ax


def plot_bandwidth_vs_N(rows: list[dict], ax=None):
    """Achieved bandwidth at decode against N, dense and 2:4: measured (filled markers) and modelled (crosses).

    The legend's title names the GPU and the day of the measurement (the rows' ``measured on``).
    """
    if not rows:
        raise ValueError("rows must hold at least one row of bandwidth_rows (weight bytes over kernel time at M = 1)")
    own_figure = ax is None
    fig, ax = new_figure(height=4.4) if ax is None else (ax.figure, ax)
    Ns = [r["N"] for r in rows]
    for side, role, cross in (("dense", "dense", "x"), ("2:4", "2:4", "+")):
        ax.plot(Ns, [r[f"{side} measured"] for r in rows], marker=ROLES[role].marker, linestyle="", color=color(role),
                markersize=7, label=f"{side}, measured")
        ax.plot(Ns, [r[f"{side} model"] for r in rows], marker=cross, linestyle="", color=color(role), markersize=10,
                markeredgewidth=1.6, label=f"{side}, model (kernel-fit.json)")
    # One K label per (N, K) point, right of it; where two layers share an N, the lower one's
    # label goes to the left instead, so the two never overlap.
    labelled: set = set()
    for r in sorted(rows, key=lambda r: r["2:4 measured"]):
        if (r["N"], r["K"]) in labelled:
            continue
        left = any(rr["N"] == r["N"] and rr["K"] != r["K"] for rr in rows) and not any(N == r["N"] for N, _ in labelled)
        labelled.add((r["N"], r["K"]))
        ax.annotate(f"K={r['K']}", (r["N"], r["2:4 measured"]), textcoords="offset points", xytext=(-8, -4) if left else (7, -4),
                    ha="right" if left else "left", fontsize=9, color=color("neutral"))
    ax.set(xscale="log", xlabel="N (out_features)", ylabel="weight bytes / kernel time (TB/s)")
    ax.set_title("Decode (M = 1): bandwidth each kernel reaches, by layer", fontsize=10)
    sources = "; ".join(dict.fromkeys(r.get("measured on", "measured") for r in rows))
    ax.legend(loc="upper left", title=sources)
    if own_figure:  # a figure of its own: the legend under the plot, not over the data
        legend_below(fig, ax)
    ratio = [r["2:4 measured"] / r["dense measured"] for r in rows]
    err = sorted(abs(r[f"{side} model"] / r[f"{side} measured"] - 1) for r in rows for side in ("dense", "2:4"))
    describe(fig, alt="Scatter of achieved bandwidth at M = 1 against N: " + "; ".join(
        f"N={r['N']}, K={r['K']}: dense {r['dense measured']:.2f} TB/s measured, {r['dense model']:.2f} modelled; 2:4 "
        f"{r['2:4 measured']:.2f} measured, {r['2:4 model']:.2f} modelled" for r in rows),
        caption=(f"At one token the 2:4 kernel streams its packed weight at only {min(ratio):.0%} to {max(ratio):.0%} of "
                 f"the bandwidth cuBLAS reaches on the same layer ({min(r['2:4 measured'] for r in rows):.2f} to "
                 f"{max(r['2:4 measured'] for r in rows):.2f} TB/s), more as N grows and it launches more CTAs; the model's "
                 f"crosses are within a median {err[len(err) // 2]:.0%} of the measurements ({sources})."))
    return fig, ax


def first_wins(results_list, dtype: str = "float16", modes=("graph", "kernel")) -> list[dict]:
    """Per shape and mode: the first measured M where 2:4 beats dense (unflagged), and the speedup there."""
    out = []
    for res in results_list:
        for mode in modes:
            rows = [r for r in res.gpu_points(mode) if r["dtype"] == dtype and not r["flagged"]]
            for shape in dict.fromkeys(r["shape"] for r in rows):
                wins = [r for r in rows if r["shape"] == shape and r["dense_ms"] > r["sparse_ms"]]
                win = min(wins, key=lambda r: r["M"], default=None)
                out.append({"shape": shape, "mode": mode, "first M": None if win is None else win["M"],
                            "speedup there": None if win is None else win["dense_ms"] / win["sparse_ms"]})
    return out


def helper_cost_rows() -> list[dict]:
    """The helper kernels of one 2:4 ``F.linear`` call next to its GEMM kernel (µs), from the traces and kernel tables."""
    from ...dispatch.kernels import recorded_reports
    from ...roofline.evidence import helper_costs

    h = helper_costs()
    one_token = [r.report for r in recorded_reports()
                 if r.M == 1 and r.dtype == "float16" and r.weight == "to_sparse_semi_structured"]
    other = [rep.time_us.get("other", 0.0) / rep.calls for rep in one_token]
    gemm = [rep.time_us["sparse-cusparselt"] / rep.calls for rep in one_token]
    return [
        {"kernel": "padding x to 8 rows: fill", "µs per call": h["pad_fill_us"], "source": "kernel tables (median)"},
        {"kernel": "padding x to 8 rows: device copy", "µs per call": h["pad_copy_us"], "source": "kernel tables (median)"},
        {"kernel": "F.linear's device work besides the GEMM", "µs per call": statistics.median(other),
         "source": "kernel table, class 'other', M = 1"},
        {"kernel": "segment-K workspace memset", "µs per call": h["memset_us"], "source": "GEMM-chain trace (median)"},
        {"kernel": "the 2:4 GEMM kernel itself", "µs per call": statistics.median(gemm),
         "source": "kernel table, M = 1, N = 14336, K = 4096"},
    ]


def algorithm_rows(cases) -> list[dict]:
    """The algorithm sweep (graph replays, ``x`` pre-padded) next to the model, algorithm 0 and searched."""
    prm = default_params("H200")
    out = []
    for c in cases:
        row = {"layer": c["shape"], "M": c["M"], "measured alg 0": c["dense_ms"] / c["default_ms"],
               "measured best": c["dense_ms"] / c["best"]["ms"], "best alg_id": c["best"]["alg_id"]}
        d = kernel_time(c["M"], c["N"], c["K"], "fp16", "H200", "cublas", l2="flushed")  # the sweep flushed L2
        for fam, key in (("cusparselt", "model alg 0"), ("cusparselt_searched", "model searched")):
            s = kernel_time(c["M_padded"], c["N"], c["K"], "fp16", "H200", fam, l2="flushed")  # x pre-padded: no pad kernels
            row[key] = (d.kernel_us + prm.graph_dense_us) / (s.kernel_us + prm.graph_sparse_us)
        out.append(row)
    return out


def error_rows(fit: dict) -> list[dict]:
    """The stored fit's median error per M regime: held-out shapes (fp16 kernel and graph; bf16 graph, each
    weight shape left out), published (source left out), in-sample per dtype."""
    regimes = ("M<=16", "16<M<=256", "M>256", "all")

    def row(label, table):
        by = {r["regime"]: r for r in table}
        return {"points": label, **{reg: (f"{by[reg]['median']:.1%} (n={by[reg]['n']})" if reg in by else "none")
                                     for reg in regimes}}

    e = fit["errors"]
    held, bf16 = e["held_out"], e["held_out_bf16"]
    rows = [row(f"held out: {held['label']}, kernel time", held["by_mode"]["kernel"]),
            row(f"held out: {held['label']}, CUDA-graph replay", held["by_mode"]["graph"]),
            row(f"held out: {bf16['label']}, CUDA-graph replay", bf16["by_mode"]["graph"]),
            row("published A100/H100, each source left out", e["published_leave_one_source_out"]["by_regime"])]
    for dtype, by_mode in e["in_sample"]["by_dtype"].items():
        rows += [row(f"in the fit set (not held out), {dtype}, {name}", by_mode[mode])
                 for mode, name in (("kernel", "kernel time"), ("graph", "CUDA-graph replay")) if by_mode[mode]]
    return rows


def plot_points_vs_model(pts, ax=None, band: float = 0.2):
    """Every point the model can predict: measured speedup against predicted, log-log, with a ``±band``
    corridor around ``y = x``. Small markers: measured on the H200; large: published."""
    own_figure = ax is None
    fig, ax = new_figure(height=4.6) if ax is None else (ax.figure, ax)
    lo, hi = 1.0, 1.0
    groups: dict[str, list[tuple[float, float]]] = {}
    measured_where: dict[str, None] = {}  # dicts as ordered sets
    published_gpus: dict[str, None] = {}
    for p in (p for p in pts if predictable(p)):
        pred = predict(p.M, p.N, p.K, p.dtype, p.gpu, p.backend, scenario=p.scenario,
                       l2=p.extra.get("l2", "flushed") if p.origin == "measured" else "clean").speedup
        lo, hi = min(lo, pred, p.speedup), max(hi, pred, p.speedup)
        if p.origin == "published":
            key = "published, fitted per GPU" if p.fit_ok else "published, not fitted"
            published_gpus[p.gpu] = None
        else:
            day = re.search(r"\d{4}-\d{2}-\d{2}", p.source or "")
            measured_where[measured_on(p.gpu_as_reported or p.gpu, day.group(0) if day else None)] = None
            key = ("H200, flagged (kept out of the fit)" if p.extra.get("flagged")
                   else "H200, held-out shapes" if p.extra.get("held_out")
                   else "H200, in the fit" if p.fit_ok else "H200, not fitted (bf16; eager back to back)")
        groups.setdefault(key, []).append((pred, p.speedup))
    styles = {
        "H200, in the fit": dict(s=12, marker="o", facecolors=color("measured"), edgecolors=color("measured"), alpha=0.6),
        "H200, not fitted (bf16; eager back to back)": dict(s=12, marker="o", facecolors="none", edgecolors=color("measured"),
                                                            alpha=0.6),
        "H200, held-out shapes": dict(s=28, marker="D", facecolors=color("dense"), edgecolors=color("dense"), alpha=0.9),
        "H200, flagged (kept out of the fit)": dict(s=40, marker="x", color="#000000", linewidths=1.4),
        "published, fitted per GPU": dict(s=40, marker="s", facecolors=color("published"), edgecolors=color("published")),
        "published, not fitted": dict(s=40, marker="s", facecolors="none", edgecolors=color("published")),
    }
    for key, style in styles.items():
        if key in groups:
            xs, ys = zip(*groups[key])
            ax.scatter(xs, ys, label=f"{key} ({len(xs)})", zorder=3, **style)
    lo, hi = lo / 1.3, hi * 1.3
    xs = np.geomspace(lo, hi, 50)
    ax.plot(xs, xs, color=color("neutral"), linewidth=1, label="y = x")
    ax.fill_between(xs, xs * (1 - band), xs * (1 + band), color="#DDDDDD", alpha=0.5, linewidth=0, label=f"±{band:.0%}")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="predicted speedup (kernel model, the point's scenario)", ylabel="measured speedup")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(lambda v, _: f"{v:g}x")
    ax.set_title("Every measurement the model can predict", fontsize=10)
    title = "; ".join([*measured_where]
                      + ([f"published: {', '.join(sorted(published_gpus))}"] if published_gpus else []))
    ax.legend(loc="upper left", title=title or None)
    if own_figure:  # a figure of its own: the legend under the plot, not over the data
        legend_below(fig, ax)

    def inside(key):
        pairs = groups.get(key, [])
        return sum(abs(m / p - 1) <= band for p, m in pairs) / len(pairs) if pairs else None

    shares = [(what, inside(key)) for what, key in (("in the fit", "H200, in the fit"), ("held out", "H200, held-out shapes"),
                                                  ("published and fitted", "published, fitted per GPU"))]
    told = ", ".join(f"{share:.0%} of the points {what}" for what, share in shares if share is not None)
    flagged = groups.get("H200, flagged (kept out of the fit)", [])
    describe(fig, alt="Log-log scatter of measured against predicted 2:4 speedup; " + "; ".join(
        f"{k}: {len(v)} points" for k, v in groups.items()) + f"; a grey corridor marks ±{band:.0%} around y = x.",
        caption=(f"Inside the ±{band:.0%} corridor around y = x: {told}"
                 + (f"; the {len(flagged)} flagged points (black crosses) are kept out of the fit" if flagged else "")
                 + (f" ({title})." if title else ".")))
    return fig, ax
