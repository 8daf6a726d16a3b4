"""Three more ways to time one GEMM call on a GPU, one per serving scenario.

:func:`twofour.bench.time_callable` times a call the way eager PyTorch runs a lone layer: the
device is idle when the call starts, so the host's set-up (Python dispatch, cuSPARSELt
descriptors and plan) sits inside the measured window. A serving engine does not run like
that, so :func:`twofour.bench.measure_point` can also time:

``graph``
    The call captured once in a CUDA graph and replayed (``torch.cuda.CUDAGraph``): no Python,
    no descriptor or plan creation per call, only the graph launch and the kernels. This is the
    *cached* scenario (plans cached, or the whole step captured, as serving engines do).
``stream``
    Calls issued back to back without synchronising, cycling through enough copies of the
    weight that none is still in L2 when it is used again; the time per call is the mean.
    When the host needs longer per call than the kernels, the GPU waits and this shows it:
    eager PyTorch inside a model's forward pass.
``kernel``
    The GPU time of the kernels one call launched, read from the profiler (CUPTI): the *ideal*
    scenario, kernel time only. Every call is preceded by an L2 flush whose kernel
    (``bitwise_not`` on a byte buffer) marks where one call ends and the next begins; the
    report keeps each call's summed kernel time, its span from first kernel start to last
    kernel end (gaps inside a call are host time), and the names of the kernels that ran.

All three need CUDA; they are exercised by ``make gpu-check`` and by GPU-marked tests.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable

import torch

__all__ = ["time_graph", "time_stream", "profile_kernels", "copies_to_defeat_l2", "FLUSH_KERNEL_MARK"]

# The flush kernel's name contains this; no GEMM path launches a bitwise_not on bytes.
FLUSH_KERNEL_MARK = "bitwise_not"


def _l2_bytes(device: torch.device) -> int:
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20)


def flush_buffer(device: torch.device) -> torch.Tensor:
    """A byte buffer twice the L2 size; ``bitwise_not_`` on it evicts everything else from L2."""
    return torch.zeros(2 * _l2_bytes(device), dtype=torch.uint8, device=device)


def copies_to_defeat_l2(weight_bytes: int, l2_bytes: int, *, cap: int = 32) -> int:
    """How many distinct weights a back-to-back loop must cycle through so none hits in L2.

    The copies together must exceed twice the L2 size (replacement is not perfectly LRU).

    Example:
        >>> copies_to_defeat_l2(117 * 2**20, 60 * 2**20)   # a 117 MiB MLP weight, 60 MiB L2
        3
        >>> copies_to_defeat_l2(8 * 2**20, 60 * 2**20)     # an 8 MiB k_proj weight
        16
        >>> copies_to_defeat_l2(1024, 60 * 2**20)          # tiny weights are capped
        32
    """
    if weight_bytes <= 0 or l2_bytes <= 0:
        raise ValueError(f"weight_bytes and l2_bytes must be positive, got {weight_bytes} and {l2_bytes}")
    return max(2, min(cap, math.ceil(2 * l2_bytes / weight_bytes) + 1))


def time_graph(fn: Callable[[], object], *, device, warmup: int = 3, repeats: int = 10,
               flush_l2: bool = True) -> list[float]:
    """Capture ``fn`` once in a CUDA graph; raw times (ms) of ``repeats`` cold replays.

    The warm-up runs on a side stream before capture, as CUDA graphs require; each timed
    replay starts with the device idle and (by default) L2 flushed, so it measures the graph
    launch plus the kernels and nothing of Python or library set-up.
    """
    device = torch.device(device)
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(max(1, warmup)):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    flush = flush_buffer(device) if flush_l2 else None
    graph.replay()  # first replay uploads the graph
    torch.cuda.synchronize(device)
    times = []
    for _ in range(repeats):
        if flush is not None:
            flush.bitwise_not_()
        torch.cuda.synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    del graph
    return times


def time_stream(fns: list[Callable[[], object]], *, device, warmup: int = 3, repeats: int = 10,
                rounds: int = 5) -> list[float]:
    """Mean ms per call of back-to-back calls cycling through ``fns``, once per round.

    ``fns`` are the same call on distinct copies of the weight (see :func:`copies_to_defeat_l2`).
    Each round issues ``max(repeats, 2 * len(fns))`` calls without synchronising between
    them and divides the elapsed time by the count.
    """
    if not fns:
        raise ValueError("fns must hold at least one callable")
    device = torch.device(device)
    n_calls = max(repeats, 2 * len(fns))
    for i in range(max(warmup, len(fns))):
        fns[i % len(fns)]()
    torch.cuda.synchronize(device)
    out = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(n_calls):
            fns[i % len(fns)]()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / n_calls)
    return out


def profile_kernels(fn: Callable[[], object], *, device, warmup: int = 2, calls: int = 5) -> dict:
    """GPU kernels of ``calls`` cold calls of ``fn``, from the profiler; see the module doc.

    Returns ``{"sum_us": [...], "span_us": [...], "kernels": {name: launches per call}}``;
    ``sum_us`` is the summed kernel time of each call, ``span_us`` first start to last end.
    """
    from torch.profiler import ProfilerActivity, profile

    device = torch.device(device)
    flush = flush_buffer(device)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.bitwise_not_()
            fn()
        torch.cuda.synchronize(device)
    kernels = sorted(
        ((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
         if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.end > e.time_range.start),
    )
    return split_calls(kernels, calls)


def split_calls(kernels: list[tuple[float, float, str]], calls: int) -> dict:
    """Cut a time-ordered kernel list at each flush kernel into per-call summaries.

    Example:
        >>> ks = [(0, 5, "bitwise_not_k"), (6, 16, "gemm"), (20, 25, "bitwise_not_k"), (26, 30, "pad"), (31, 41, "gemm")]
        >>> r = split_calls(ks, 2)
        >>> r["sum_us"], r["span_us"], r["kernels"]
        ([10.0, 14.0], [10.0, 15.0], {'gemm': 1.0, 'pad': 0.5})
    """
    segments: list[list[tuple[float, float, str]]] = []
    for start, end, name in kernels:
        if FLUSH_KERNEL_MARK in name:
            segments.append([])
        elif segments:
            segments[-1].append((start, end, name))
    if len(segments) != calls:
        raise RuntimeError(f"profiler showed {len(segments)} flush kernels for {calls} calls; "
                           "cannot split the trace into calls")
    if any(not seg for seg in segments):
        raise RuntimeError("a profiled call launched no kernel")
    names = Counter(name for seg in segments for _, _, name in seg)
    return {
        "sum_us": [float(sum(e - s for s, e, _ in seg)) for seg in segments],
        "span_us": [float(max(e for _, e, _ in seg) - min(s for s, _, _ in seg)) for seg in segments],
        "kernels": {name: n / calls for name, n in sorted(names.items(), key=lambda kv: -kv[1])},
    }
