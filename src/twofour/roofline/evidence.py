"""What the kernel model is fitted to and checked against, read from this project's GPU run (``twofour/data``).

Everything here only reads recorded files (kernel tables, GEMM-chain traces, the results
files' kernel names). The timed points themselves are :func:`twofour.roofline.published.points`.

Example:
    >>> [(p.N, p.K, round(p.speedup, 2)) for p in trace_points()][:2]
    [(4096, 4096, 0.42), (1024, 4096, 0.31)]
"""

from __future__ import annotations

import functools
import gzip
import json
import statistics

from .tiles import kernel_role, parse_kernel_name
from ..vocabulary import CUSPARSELT

__all__ = ["trace_points", "trace_grids", "helper_costs", "chain_idle_us", "STEP_GAP_US", "tile_observations", "TRACE_M", "TRACE_ORDER"]

# The traces (twofour.dispatch.trace.read.recorded): 3 decode steps of the 7 linears of two
# Llama-3-8B blocks at M = 16, fp16, in this launch order.
TRACE_M = 16
TRACE_ORDER = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@functools.lru_cache(maxsize=None)
def _trace_events(tag: str) -> tuple:
    from ..dispatch.trace.read import recorded

    with gzip.open(recorded(tag)) as f:
        events = json.load(f)["traceEvents"]
    return tuple(sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")),
                        key=lambda e: e["ts"]))


def trace_shapes() -> dict[str, tuple[int, int]]:
    from ..models import LLAMA_3_8B, linear_shapes

    return {s.name: (s.out_features, s.in_features) for s in linear_shapes(LLAMA_3_8B, include_lm_head=False)}


def trace_grids(tag: str = "sparse-graph") -> list[dict]:
    """One dict per GEMM kernel of a trace: layer, N, K, tile, CTAs launched, tiles, split factor, µs.

    Example:
        >>> sorted({(g["N"], g["K"], g["ctas"], g["split"]) for g in trace_grids("sparse-graph")})
        [(1024, 4096, 32, 4), (4096, 4096, 96, 3), (4096, 14336, 96, 3), (14336, 4096, 112, 1)]
    """
    shapes = trace_shapes()
    out = []
    gemms = [e for e in _trace_events(tag) if e.get("cat") == "kernel" and parse_kernel_name(e["name"])]
    for i, e in enumerate(gemms):
        layer = TRACE_ORDER[i % len(TRACE_ORDER)]
        N, K = shapes[layer]
        kn = parse_kernel_name(e["name"])
        grid = e.get("args", {}).get("grid") or [0, 0, 0]
        ctas = grid[0] * grid[1] * grid[2]
        tiles = -(-N // kn.tile_n) * -(-TRACE_M // kn.tile_m)
        out.append({"layer": layer, "N": N, "K": K, "tile_n": kn.tile_n, "tile_m": kn.tile_m, "ctas": ctas,
                    "tiles": tiles, "split": ctas // tiles if ctas % tiles == 0 else None, "us": float(e["dur"])})
    return out


def per_layer_us(tag: str) -> dict[str, float]:
    """Median µs per layer of a trace: the GEMM plus its split-K reduce (after it) or memset (before it)."""
    total: list[float] = []
    pending = 0.0
    for e in _trace_events(tag):
        role = kernel_role(e["name"])
        if role == "gemm":
            total.append(float(e["dur"]) + pending)
            pending = 0.0
        elif role == "splitk_reduce" and total:
            total[-1] += float(e["dur"])
        else:
            pending += float(e["dur"])
    n = len(TRACE_ORDER)  # the GEMMs run in this order, step after step
    return {layer: statistics.median(total[i::n]) for i, layer in enumerate(TRACE_ORDER) if total[i::n]}


def trace_points(weight: float = 5.0) -> list:
    """The graph traces' GEMMs as dense vs 2:4 :class:`~twofour.roofline.published.Point`s, one per weight shape.

    Kernel time (layers of one shape averaged) back to back in a replayed decode step, no L2 flush
    (``extra["l2"] == "clean"``): next to the bench's flushed calls they pin down what the flush
    costs. ``extra["weight"]``: what one such point counts in the fit against one bench point.
    """
    from ..dispatch.trace.read import recorded
    from .published import Point

    dense, sparse = per_layer_us("dense-graph"), per_layer_us("sparse-graph")
    groups: dict[tuple[int, int], list[str]] = {}
    for layer, nk in trace_shapes().items():
        groups.setdefault(nk, []).append(layer)
    out = []
    for (N, K), layers in groups.items():
        d, s = statistics.mean(dense[x] for x in layers), statistics.mean(sparse[x] for x in layers)
        out.append(Point(id=f"trace:{'/'.join(layers)}:M{TRACE_M}", origin="measured", source="GEMM-chain traces, NVIDIA H200",
                         source_url=str(recorded("dense-graph").name), gpu="H200", gpu_as_reported="NVIDIA H200",
                         backend=CUSPARSELT.name, dtype="fp16", M=TRACE_M, N=N, K=K, speedup=d / s, dense_us=d, sparse_us=s,
                         scenario="kernel", reliability="high", caveats="kernels back to back in a CUDA-graph replay",
                         kind="gemm", extra={"shape": "Llama-3-8B " + "/".join(layers), "mode": "trace", "l2": "clean",
                                             "weight": weight, "held_out": False, "flagged": None}))
    return out


# A gap this long between two kernels of a trace is the end of one replayed chain and the start
# of the next (the host's launch of the next replay), not idle time inside a chain.
STEP_GAP_US = 10.0


def chain_idle_us(tag: str) -> float:
    """µs of idle device time per GEMM inside the captured chains of trace ``tag`` (``"dense-graph"``, ``"sparse-graph"``).

    The gaps between consecutive kernels (helpers included), those of :data:`STEP_GAP_US` or more
    (between chains) left out, summed over the number of GEMM kernels.

    Example:
        >>> round(chain_idle_us("dense-graph"), 2), round(chain_idle_us("sparse-graph"), 2)
        (0.33, 2.46)
    """
    events = _trace_events(tag)
    idle = sum(max(0.0, g) for g in (float(b["ts"]) - float(a["ts"]) - float(a["dur"])
                                     for a, b in zip(events, events[1:])) if g < STEP_GAP_US)
    return idle / sum(kernel_role(e["name"]) == "gemm" for e in events)


def helper_costs() -> dict[str, float]:
    """µs of the helper kernels of one call: split-K reduce and memset (traces), pad fill and copy (kernel tables).

    Example:
        >>> h = helper_costs()
        >>> 1.5 < h["pad_fill_us"] + h["pad_copy_us"] < 2.5
        True
    """
    from ..dispatch.kernels import recorded_reports

    def helper(tag, role):
        return statistics.median(float(e["dur"]) for e in _trace_events(tag) if kernel_role(e["name"]) == role)

    per_call = {"pad_fill": [], "pad_copy": []}
    for rec in recorded_reports():
        for row in rec.report.rows:
            if row.device == "cuda" and row.count and kernel_role(row.name) in per_call:
                per_call[kernel_role(row.name)].append(row.time_us / row.count)
    return {"splitk_reduce_us": helper("dense-graph", "splitk_reduce"), "memset_us": helper("sparse-graph", "memset"),
            **{f"{role}_us": statistics.median(us) for role, us in per_call.items()}}


def tile_observations(results=None, *, dtype: str = "float16", library: str = "cuBLAS", shape_prefix: str = "") -> list[tuple]:
    """``(M, N, K, tile_n, tile_m)`` of every kernel-mode GEMM name of ``library`` in the results files.

    ``shape_prefix`` keeps only shapes whose label starts with it (e.g. ``"Llama-3-8B"``).
    """
    from ..bench import recorded_results

    out = []
    for res in results if results is not None else recorded_results("gpu"):
        for p in res.points:
            if p["dtype"] != dtype or not str(p.get("shape") or "").startswith(shape_prefix):
                continue
            block = ((p.get("modes") or {}).get("kernel") or {})
            entries = [block.get("dense")] + list((block.get("sparse") or {}).values())
            for entry in entries:
                for name in (entry or {}).get("kernels") or {}:
                    k = parse_kernel_name(name)
                    if k is not None and k.library == library:
                        out.append((p["M"], p["N"], p["K"], k.tile_n, k.tile_m))
    return out
