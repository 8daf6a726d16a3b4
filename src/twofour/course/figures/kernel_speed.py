"""Figures, published data points and the notebook widget for chapter 4 ("How fast can the sparse GEMM be?").

The model lives in :mod:`twofour.roofline` and the measurements in :mod:`twofour.bench`; this
module only draws them, in the house style of :mod:`twofour.course.plotting`, and holds the published
GEMM measurements the chapter shows beside the model (each with its source, from the project's
reference notes, facts.md §4 and §6).

Example:
    >>> from twofour.course.figures.kernel_speed import PUBLISHED, plot_speedup_vs_M
    >>> all(p.source for p in PUBLISHED)
    True
    >>> fig, ax = plot_speedup_vs_M(4096, 4096, "fp16", ["H100"], Ms=[1, 64, 4096])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...hardware import get_gpu
from ..plotting import ROLES, color, new_figure
from ...roofline import Efficiency, arithmetic_intensity, ceilings, crossover_m, predict, wave_efficiency

__all__ = [
    "Published",
    "PUBLISHED",
    "log2_Ms",
    "plot_roofline",
    "plot_speedup_vs_M",
    "plot_waves",
    "plot_wave_efficiency",
    "plot_measured_vs_predicted",
    "crossover_table",
    "speedup_widget",
]

# Line styles that tell GPUs apart while every predicted line keeps the "predicted" colour.
_GPU_STYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1))]
_GPU_MARKERS = ["o", "s", "^", "v", "D", "P"]


@dataclass(frozen=True)
class Published:
    """One published dense vs 2:4 GEMM timing; ``speedup = dense / sparse`` as reported or derived."""

    label: str
    gpu: str | None  # None when the source does not say
    dtype: str
    M: int
    N: int
    K: int
    speedup: float
    source: str
    tag: str  # verified / derived / secondary, as in facts.md

    @property
    def citation(self) -> str:
        return f"{self.source} [{self.tag}]"


# facts.md §4 and §6. Shapes as M x N x K with W = [N, K]. Speedups are computed here from the
# reported milliseconds where the source gives milliseconds.
PUBLISHED: list[Published] = [
    Published("1 token, 4096x4096 weight", None, "fp16", 1, 4096, 4096, 0.022 / 0.196,
              "pytorch/pytorch#111339 (dense 0.022 vs sparse 0.196 ms)", "verified"),
    Published("64 rows, 3720x10240 weight", None, "fp16", 64, 3720, 10240, 0.38 / 0.64,
              "pytorch/ao#1460 (dense 0.38 vs sparse 0.64 ms)", "derived"),
    Published("1280 rows, 3720x10240 weight", None, "fp16", 1280, 3720, 10240, 4.60 / 3.41,
              "pytorch/ao#1460 (dense 4.60 vs sparse 3.41 ms)", "derived"),
    Published("768x4096x4096, CUTLASS Hopper", "H100", "bf16", 768, 4096, 4096, 0.046 / 0.074,
              "NVIDIA/cutlass#1335 (dense 0.046 vs sparse 0.074 ms)", "verified"),
    Published("4096^3, cuSPARSELt", "A100", "fp16", 4096, 4096, 4096, 0.608 / 0.546,
              "NVIDIA/CUDALibrarySamples#57 (dense 0.608 vs sparse 0.546 ms)", "verified"),
    Published("Linear 10240->3072, 3072 rows", "A100", "fp16", 3072, 3072, 10240, 0.870 / 0.630,
              "pytorch/tutorials semi_structured_sparse.py (dense 0.870 vs sparse 0.630 ms)", "verified"),
    Published("8192^3, cuSPARSELt", "H100", "fp16", 8192, 8192, 8192, 1.21,
              "NVIDIA/CUDALibrarySamples#203 (about 1.20-1.22x)", "verified"),
]


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
    roofs share one axis. No efficiency factors: these are the ceilings.
    """
    import numpy as np

    spec = get_gpu(gpu)
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
    bw = spec.mem_bw_gbs * 1e9
    intensity = np.geomspace(0.3, 3e4, 300)
    for kind, role in (("dense", "dense"), ("sparse", "2:4")):
        peak = spec.peak_tflops(dtype, sparse=kind == "sparse") * 1e12
        ax.plot(intensity, np.minimum(peak, bw * intensity) / 1e12, color=color(role), label=f"{role} roof ({spec.name} data sheet)")
    for M in Ms:
        for kind, role in (("dense", "dense"), ("sparse", "2:4")):
            ai = arithmetic_intensity(M, N, K, dtype, sparse=kind == "sparse")
            peak = spec.peak_tflops(dtype, sparse=kind == "sparse") * 1e12
            ax.plot([ai], [min(peak, bw * ai) / 1e12], marker=ROLES[role].marker, color=color(role), linestyle="")
        ai = arithmetic_intensity(M, N, K, dtype)
        ax.annotate(f"M={M}", (ai, min(spec.peak_tflops(dtype) * 1e12, bw * ai) / 1e12),
                    textcoords="offset points", xytext=(4, -12), fontsize=8, color=color("neutral"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("attainable TFLOP/s")
    ax.set_title(f"Roofline, {spec.name} {dtype}: W = [{N}, {K}]")
    ax.legend(loc="lower right")
    return fig, ax


def plot_speedup_vs_M(N: int, K: int, dtype="fp16", gpus=("A100", "L4", "H100", "H200", "B200"), Ms=None,
                      params: Efficiency | None = None, ax=None, title: str | None = None):
    """Predicted 2:4 speedup vs M for one weight shape on several GPUs, with the two ceilings."""
    Ms = Ms or log2_Ms()
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
    for i, gpu in enumerate(gpus):
        s = [predict(M, N, K, dtype, gpu, params=params).speedup for M in Ms]
        ax.plot(Ms, s, color=color("predicted"), linestyle=_GPU_STYLES[i % len(_GPU_STYLES)],
                marker=_GPU_MARKERS[i % len(_GPU_MARKERS)], markersize=4, label=f"{get_gpu(gpu).name} (predicted)")
    c = ceilings(dtype)
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.axhline(c["memory"], color=color("neutral"), linewidth=0.8, linestyle=":")
    ax.axhline(c["compute"], color=color("neutral"), linewidth=0.8, linestyle=":")
    ax.text(Ms[0], c["memory"], f" memory ceiling {c['memory']:.2f}x", va="bottom", fontsize=8, color=color("neutral"))
    ax.text(Ms[0], c["compute"], f" compute ceiling {c['compute']:.0f}x", va="bottom", fontsize=8, color=color("neutral"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (tokens in the GEMM)")
    ax.set_ylabel("speedup of 2:4 over dense")
    ax.set_ylim(0, 2.2)
    ax.set_title(title or f"Predicted speedup, W = [{N}, {K}], {dtype}")
    ax.legend(fontsize=8, loc="lower right")
    return fig, ax


def plot_waves(M: int, N: int, gpu="H100", tile_m: int = 128, tile_n: int = 128, ax=None, max_waves: int = 6):
    """Tiles over SMs: one row per wave, one cell per SM, filled when the SM has a tile."""
    import numpy as np
    from matplotlib.colors import ListedColormap

    spec = get_gpu(gpu)
    tiles = math.ceil(M / tile_m) * math.ceil(N / tile_n)
    waves = math.ceil(tiles / spec.sms)
    shown = min(waves, max_waves)
    grid = np.zeros((shown, spec.sms))
    for w in range(shown):
        # the last wave is shown last: with more waves than rows, the middle ones are elided
        wave_index = w if w < shown - 1 else waves - 1
        busy = min(spec.sms, tiles - wave_index * spec.sms)
        grid[w, :busy] = 1
    if ax is None:
        fig, ax = new_figure(height=0.6 + 0.35 * shown)
    else:
        fig = ax.figure
    ax.imshow(grid, aspect="auto", cmap=ListedColormap(["#EEEEEE", color("dense")]), vmin=0, vmax=1, interpolation="nearest")
    ax.set_yticks(range(shown))
    labels = [f"wave {w + 1}" for w in range(shown)]
    if waves > shown:
        labels[-1] = f"wave {waves}"
        labels[-2] = "…" if shown > 1 else labels[-2]
    ax.set_yticklabels(labels)
    ax.set_xlabel(f"SM (0..{spec.sms - 1})")
    ax.grid(False)
    eff = wave_efficiency(M, N, spec.sms, tile_m, tile_n)
    ax.set_title(f"{spec.name}: M={M}, N={N} -> {tiles} tiles of {tile_m}x{tile_n} on {spec.sms} SMs, "
                 f"{waves} wave(s), {eff:.0%} of SM slots busy", fontsize=9)
    return fig, ax


def plot_wave_efficiency(N: int, gpu="H100", Ms=None, tile_m: int = 128, tile_n: int = 128, ax=None):
    """Fraction of SM slots busy vs M (the saw-tooth of wave quantization)."""
    spec = get_gpu(gpu)
    Ms = Ms or list(range(tile_m, 128 * 80 + 1, tile_m))
    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
    ax.plot(Ms, [wave_efficiency(M, N, spec.sms, tile_m, tile_n) for M in Ms], color=color("predicted"), linestyle="-")
    ax.set_xlabel("M (tokens)")
    ax.set_ylabel("SM slots busy")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Wave quantization, {spec.name}, N={N}, {tile_m}x{tile_n} tiles")
    return fig, ax


def plot_measured_vs_predicted(results_list, dtype="float16", params: Efficiency | None = None, published=True, ax=None):
    """Measured speedup (from results files) over the prediction for the same GPU and shape.

    With no results, only the published points are drawn, each labelled with its source,
    and the title says that no GPU measurement is recorded yet.
    """
    from ...hardware import match_device_name

    if ax is None:
        fig, ax = new_figure()
    else:
        fig = ax.figure
    drawn = 0
    for res in results_list:
        spec = match_device_name(res.provenance.get("gpu_name"))
        by_shape: dict = {}
        for row in res.gpu_points():
            if row["dtype"] == dtype:
                by_shape.setdefault((row["shape"], row["N"], row["K"], row["backend"]), []).append(row)
        for (shape, N, K, backend), rows in by_shape.items():
            rows.sort(key=lambda r: r["M"])
            Ms = [r["M"] for r in rows]
            ax.plot(Ms, [r["dense_ms"] / r["sparse_ms"] for r in rows], **ROLES["measured"].kw(),
                    label=f"measured {shape} {backend} — {res.label}")
            if spec is not None:
                d = "fp16" if dtype == "float16" else "bf16"
                ax.plot(Ms, [predict(M, N, K, d, spec, backend=backend if backend in spec.backends else None,
                                     params=params).speedup for M in Ms],
                        **ROLES["predicted"].kw(), label=f"predicted {shape} ({spec.name})")
            drawn += 1
    if published:
        # Numbered markers; the notebook prints the numbered list with each source.
        for i, p in enumerate(PUBLISHED, start=1):
            ax.plot([p.M], [p.speedup], **{**ROLES["published"].kw(), "linestyle": ""})
            ax.annotate(str(i), (p.M, p.speedup), textcoords="offset points", xytext=(5, 3), fontsize=8,
                        color=color("published"))
        ax.plot([], [], **{**ROLES["published"].kw(), "linestyle": ""}, label="published, numbered (sources listed below)")
    ax.axhline(1.0, color=color("neutral"), linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (tokens in the GEMM)")
    ax.set_ylabel("speedup of 2:4 over dense")
    if drawn == 0:
        ax.set_title("No recorded GPU results yet: published measurements only", fontsize=10)
    else:
        ax.set_title("Measured (results files) vs predicted", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    return fig, ax


def crossover_table(shapes, gpus, dtype="fp16", params: Efficiency | None = None, m_max: int = 16384) -> list[dict]:
    """Rows ``{shape, N, K, <gpu>: crossover M or None}`` for a table.

    Example:
        >>> crossover_table([("q", 4096, 4096)], ["H100"])[0]["shape"]
        'q'
    """
    rows = []
    for label, N, K in shapes:
        row = {"shape": label, "N": N, "K": K}
        for gpu in gpus:
            row[get_gpu(gpu).name] = crossover_m(N, K, dtype, gpu, params=params, m_max=m_max)
        rows.append(row)
    return rows


def speedup_widget(shapes, gpus=("A100", "L4", "H100", "H200", "B200"), dtypes=("fp16", "bf16", "int8", "fp8")):
    """An ipywidgets control (shape, GPU, dtype) redrawing the predicted speedup vs M.

    Returns the widget box; display it in Jupyter or Colab. On the static site the cell that
    shows it is hidden (tag ``hide-on-site``).
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt

    shape_dd = w.Dropdown(options=[(label, (N, K)) for label, N, K in shapes], description="shape")
    gpu_dd = w.Dropdown(options=list(gpus), value=gpus[0], description="GPU")
    dtype_dd = w.Dropdown(options=list(dtypes), value=dtypes[0], description="dtype")
    out = w.Output()

    def redraw(*_):
        N, K = shape_dd.value
        with out:
            out.clear_output(wait=True)
            spec = get_gpu(gpu_dd.value)
            if spec.sparse_tflops.get(dtype_dd.value) is None:
                print(f"{spec.name} has no 2:4 tensor-core mode for {dtype_dd.value}.")
                return
            fig, ax = plot_speedup_vs_M(N, K, dtype_dd.value, [gpu_dd.value])
            m = crossover_m(N, K, dtype_dd.value, gpu_dd.value)
            if m is not None:
                ax.axvline(m, color=color("2:4"), linewidth=1)
            plt.show()
            print(f"predicted crossover: {'none up to M=16384' if m is None else f'M = {m}'}")

    for dd in (shape_dd, gpu_dd, dtype_dd):
        dd.observe(redraw, names="value")
    redraw()
    return w.VBox([w.HBox([shape_dd, gpu_dd, dtype_dd]), out])
