"""Timing GEMM calls on a GPU the way a serving step runs them, and saying for each point how.

A decode step runs one layer's GEMM right after the previous one's: the device is busy, the
weight cold (other layers' weights went through L2 since), nothing dirty waiting to be written
back. The timings here reproduce that:

* **Nothing is written between timed calls.** L2 is made cold by rotating weight copies
  (:func:`copies_to_defeat_l2`) or, for a lone call, by *reading* a buffer twice the L2 size
  (:func:`read_flush`): a written buffer's write-back would run inside the next kernel.
* **The device is busy before the start event** (a device-side spin), so the host's launch
  latency is not in the window (``host_ahead`` checks it).

:data:`METHODS` describes each mode's method and goes into the results file (:data:`LEGACY_METHODS`:
how older files were timed). All need CUDA (or the simulated GPU of :mod:`twofour.bench.simgpu`).

Example (on the simulated GPU: the window holds the kernels and nothing else):
    >>> import torch
    >>> from twofour.bench.simgpu import simulated_gpu
    >>> with simulated_gpu(l2_bytes=1 << 20) as sim:
    ...     W, x = torch.randn(512, 1024), torch.randn(1, 1024)
    ...     copies = [W.clone() for _ in range(copies_to_defeat_l2(W.numel() * 4, sim.l2_bytes))]
    ...     info = {}
    ...     ms = time_graph([lambda c=c: torch.nn.functional.linear(x, c) for c in copies], device="cuda",
    ...                     repeats=3, info=info)
    ...     alone = sim.kernel_us(W, x) + sim.gap_us      # cold weight, x in L2, one gap between kernels
    >>> all(abs(t * 1e3 - alone) < 0.01 for t in ms), info["host_ahead"], info["calls_per_window"]
    (True, 1.0, 16)
"""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import Callable, Sequence

import torch

__all__ = ["time_graph", "time_stream", "profile_kernels", "copies_to_defeat_l2", "window_ms", "read_flush",
           "flush_buffer", "split_calls", "l2_bytes", "METHODS", "LEGACY_METHODS", "SPIN_CYCLES", "MARK_CYCLES", "CALLS",
           "MARK_KERNEL"]

# Device cycles spun before each start event: about 1 ms at 2 GHz, longer than the host needs to
# queue a window's replays (each window checks it: host_ahead).
SPIN_CYCLES = 2_000_000
# The short spin before each profiled call: its kernel marks where the call begins.
MARK_CYCLES = 20_000
MARK_KERNEL = "spin_kernel"  # torch.cuda._sleep's kernel: at::cuda::(anonymous namespace)::spin_kernel(long)
CALLS = 16  # calls per event pair (graph replays x copies)

METHODS = {
    "lone": {"id": "lone/2", "window": "one call, device idle at the start event: the host's launch and "
              "set-up (cuSPARSELt descriptors and plan) are inside the window, by design",
              "l2": "cold: a buffer twice the L2 size read (not written) before the call", "flush": "read"},
    "graph": {"id": "graph/2", "window": f"{CALLS} calls per event pair: one CUDA graph holding one call per weight copy, "
              "replayed back to back, queued behind a device-side spin so no launch is inside the window",
              "l2": "cold by rotating weight copies (each call's weight last read several calls earlier)", "flush": "none"},
    "stream": {"id": "stream/2", "window": "eager calls back to back, the queue filled by untimed calls before the "
               "start event; host time shows where the host is slower than the kernels",
               "l2": "cold by rotating weight copies", "flush": "none"},
    "kernel": {"id": "kernel/2", "window": "the profiler's kernel durations of each call (no event window); each call "
               "after a short device-side spin that marks it", "l2": "cold by rotating weight copies", "flush": "none"},
}
# How the 2026-11-30 files (schemas twofour-bench/1-3) timed each mode: the method this module replaced.
LEGACY_METHODS = {
    "lone": {"id": "lone/1", "window": "one call, device idle at the start event (host launch and set-up inside)",
              "l2": "a buffer twice the L2 size written (zero_) before the call: dirty lines written back inside it",
              "flush": "write"},
    "graph": {"id": "graph/1", "window": "one replay of a one-call graph per event pair, device idle at the start "
              "event: the host's graph launch (~7-8 µs on the H200) inside the window",
              "l2": "a buffer twice the L2 size written (bitwise_not_) before each replay: dirty lines written back "
              "inside the timed kernel", "flush": "write"},
    "stream": {"id": "stream/1", "window": "eager calls back to back from an idle device (one launch latency in the "
               "window, spread over the calls)", "l2": "cold by rotating weight copies", "flush": "none"},
    "kernel": {"id": "kernel/1", "window": "the profiler's kernel durations of each call",
               "l2": "a buffer twice the L2 size written (bitwise_not_) before each call; its kernel marked the call",
               "flush": "write"},
}


def l2_bytes(device) -> int:
    """The L2 cache size of ``device`` in bytes (64 MiB where the driver does not say)."""
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20)


def flush_buffer(device) -> torch.Tensor:
    """A byte buffer twice the L2 size, for :func:`read_flush`."""
    return torch.zeros(2 * l2_bytes(device), dtype=torch.uint8, device=device)


def read_flush(buf: torch.Tensor) -> None:
    """Evict L2 by reading ``buf`` (a sum: every byte read, one number written); no dirty line is left behind."""
    buf.sum()


def _now_ms() -> float:
    return time.perf_counter() * 1e3


def copies_to_defeat_l2(weight_bytes: int, l2_bytes: int, *, cap: int = 32) -> int:
    """How many distinct weights a back-to-back loop must cycle through so none hits in L2.

    The copies together must exceed twice the L2 size (replacement is not perfectly LRU).

    Example:
        >>> copies_to_defeat_l2(117 * 2**20, 60 * 2**20)   # a 117 MiB MLP weight, 60 MiB L2
        3
        >>> copies_to_defeat_l2(1024, 60 * 2**20)          # tiny weights are capped
        32
    """
    if weight_bytes <= 0 or l2_bytes <= 0:
        raise ValueError(f"weight_bytes and l2_bytes must be positive, got {weight_bytes} and {l2_bytes}")
    return max(2, min(cap, math.ceil(2 * l2_bytes / weight_bytes) + 1))


def window_ms(enqueue: Callable[[], object], *, spin_cycles: int = SPIN_CYCLES) -> tuple[float, bool]:
    """Milliseconds between two events around ``enqueue()``'s work, and whether the host kept ahead.

    On an idle device: a spin of ``spin_cycles``, the start event, ``enqueue()``'s work, the end
    event. ``host_ahead``: the host finished queueing before the spin ended (no launch in the window).
    """
    before, start, end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    t0 = _now_ms()
    before.record()
    torch.cuda._sleep(spin_cycles)
    start.record()
    enqueue()
    end.record()
    host_ms = _now_ms() - t0
    end.synchronize()
    return start.elapsed_time(end), host_ms < before.elapsed_time(start)


def _as_list(fns, **counts) -> list[Callable[[], object]]:
    fns = [fns] if callable(fns) else list(fns)
    if not fns or not all(callable(f) for f in fns):
        raise ValueError("fns must be a callable or a non-empty list of callables (one per weight copy)")
    check_counts(**counts)
    return fns


def check_counts(**counts) -> None:
    """Each ``name=(value, low)``: an int >= low, else a ValueError naming it."""
    for name, (value, low) in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def time_graph(fns: Callable[[], object] | Sequence[Callable[[], object]], *, device, warmup: int = 3,
               repeats: int = 10, calls: int = CALLS, spin_cycles: int = SPIN_CYCLES,
               info: dict | None = None) -> list[float]:
    """Milliseconds per call of ``fns`` captured in one CUDA graph, ``repeats`` windows (see the module doc).

    ``fns`` is one callable or one per weight copy. The warm-up runs on a side stream before capture,
    as CUDA graphs require. ``info`` (a dict), if given, receives ``calls_per_window``, ``copies``
    and ``host_ahead`` (the share of windows in which the host kept ahead).
    """
    fns = _as_list(fns, warmup=(warmup, 0), repeats=(repeats, 1), calls=(calls, 1))
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(max(1, warmup)):
            for fn in fns:
                fn()
    torch.cuda.current_stream(device).wait_stream(side)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for fn in fns:
            fn()
    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize(device)
    replays = math.ceil(calls / len(fns))

    def enqueue():
        for _ in range(replays):
            graph.replay()

    windows = [window_ms(enqueue, spin_cycles=spin_cycles) for _ in range(repeats)]
    del graph
    if info is not None:
        info.update(calls_per_window=replays * len(fns), copies=len(fns),
                    host_ahead=sum(ahead for _, ahead in windows) / repeats)
    return [ms / (replays * len(fns)) for ms, _ in windows]


def time_stream(fns: Callable[[], object] | Sequence[Callable[[], object]], *, device, warmup: int = 3,
                repeats: int = 10, rounds: int = 5, info: dict | None = None) -> list[float]:
    """Mean ms per call of eager calls back to back cycling through ``fns``, one value per round.

    Each round issues ``len(fns)`` untimed calls to fill the queue, the start event,
    ``max(repeats, 2 * len(fns))`` calls and the end event, with no synchronisation in between.
    """
    fns = _as_list(fns, warmup=(warmup, 0), repeats=(repeats, 1), rounds=(rounds, 1))
    n_calls = max(repeats, 2 * len(fns))
    for i in range(max(warmup, len(fns))):
        fns[i % len(fns)]()
    torch.cuda.synchronize(device)
    out = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for fn in fns:  # the lead: the device is busy with these when the start event is reached
            fn()
        start.record()
        for i in range(n_calls):
            fns[i % len(fns)]()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) / n_calls)
    if info is not None:
        info.update(calls_per_window=n_calls, copies=len(fns), lead_calls=len(fns))
    return out


def _device_kernels(run: Callable[[], object]) -> list[tuple[float, float, str]]:
    """``(start_us, end_us, name)`` of every GPU kernel ``run()`` launched, in time order (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    from .._common.stderr import without_profiler_chatter

    with without_profiler_chatter(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                  if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.end > e.time_range.start)


def profile_kernels(fns: Callable[[], object] | Sequence[Callable[[], object]], *, device, warmup: int = 2,
                    calls: int = 5) -> dict:
    """GPU kernels of ``calls`` calls cycling through ``fns``, from the profiler, each call after a short spin
    (:data:`MARK_KERNEL`) that marks where it begins.

    Returns :func:`split_calls`' summary: per call ``sum_us`` (summed kernel time), ``span_us`` (first
    start to last end) and ``per_call`` (``{name: launches}``), and ``kernels`` (launches per call).
    """
    fns = _as_list(fns, warmup=(warmup, 0), calls=(calls, 1))
    for i in range(max(warmup, len(fns))):
        fns[i % len(fns)]()
    torch.cuda.synchronize(device)

    def run():
        for i in range(calls):
            torch.cuda._sleep(MARK_CYCLES)
            fns[i % len(fns)]()

    return split_calls(_device_kernels(run), calls)


def split_calls(kernels: list[tuple[float, float, str]], calls: int) -> dict:
    """Cut a time-ordered kernel list at each marker (spin) kernel into per-call summaries.

    Example:
        >>> ks = [(0, 5, "spin_kernel(long)"), (6, 16, "gemm"), (20, 25, "spin_kernel(long)"), (26, 30, "pad"), (31, 41, "gemm")]
        >>> r = split_calls(ks, 2)
        >>> r["sum_us"], r["span_us"], r["kernels"]
        ([10.0, 14.0], [10.0, 15.0], {'gemm': 1.0, 'pad': 0.5})
    """
    segments: list[list[tuple[float, float, str]]] = []
    for start, end, name in kernels:
        if MARK_KERNEL in name:
            segments.append([])
        elif segments:
            segments[-1].append((start, end, name))
    if len(segments) != calls:
        seen = sorted({name for _, _, name in kernels})[:8]
        raise RuntimeError(f"profiler showed {len(segments)} marker kernels ({MARK_KERNEL}) for {calls} calls; "
                           f"cannot split the trace into calls (kernels seen: {seen})")
    if any(not seg for seg in segments):
        raise RuntimeError("a profiled call launched no kernel")
    names = Counter(name for seg in segments for _, _, name in seg)
    return {
        "sum_us": [float(sum(e - s for s, e, _ in seg)) for seg in segments],
        "span_us": [float(max(e for _, e, _ in seg) - min(s for s, _, _ in seg)) for seg in segments],
        "kernels": {name: n / calls for name, n in sorted(names.items(), key=lambda kv: -kv[1])},
        "per_call": [{name: float(n) for name, n in Counter(name for _, _, name in seg).items()} for seg in segments],
    }
