"""Timing one call: warm-up, L2 flush, repeats, and the summary of the raw times.

* **GPU** (CUDA events): the ``lone`` mode. Each timed call runs alone after an L2 flush by reading
  (:func:`.gpu_timing.read_flush`) and a synchronisation, so the time includes the host's launch
  and set-up (cuSPARSELt builds a plan per call): evidence of the host's share. The ways that time
  calls as a serving step runs them are in :mod:`.gpu_timing`.
* **CPU** (``time.perf_counter``): caches are *not* flushed (no portable way).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from . import gpu_timing
from .simgpu import active


def on_gpu(device) -> bool:
    """True when calls on ``device`` are timed with CUDA events: a CUDA device, or the simulated GPU of a rehearsal.

    >>> on_gpu("cpu"), on_gpu("cuda")
    (False, True)
    """
    return torch.device(device).type == "cuda" or active() is not None


def summarize(raw_ms: list[float]) -> dict:
    """Median, min, max and quartiles of raw times (all in ms), with the raw list kept.

    Example:
        >>> s = summarize([3.0, 1.0, 2.0, 4.0, 100.0])
        >>> s["median_ms"], s["min_ms"], s["max_ms"], s["n"]
        (3.0, 1.0, 100.0, 5)
    """
    if not raw_ms:
        raise ValueError("raw_ms must hold at least one timing")
    ordered = sorted(float(t) for t in raw_ms)
    q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else (ordered[0],) * 3
    return {
        "median_ms": statistics.median(ordered),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "q1_ms": q1,
        "q3_ms": q3,
        "n": len(ordered),
        "raw_ms": [float(t) for t in raw_ms],
    }


def time_callable(fn: Callable[[], object], *, device, warmup: int = 3, repeats: int = 10,
                  flush_l2: bool = True) -> list[float]:
    """Raw times in ms of ``repeats`` calls of ``fn`` after ``warmup`` calls (see module doc).

    Example:
        >>> ts = time_callable(lambda: sum(range(100)), device="cpu", warmup=1, repeats=4)
        >>> len(ts), all(t >= 0 for t in ts)
        (4, True)
    """
    device = torch.device(device)
    gpu_timing.check_counts(warmup=(warmup, 0), repeats=(repeats, 1))
    for _ in range(warmup):
        fn()
    times = []
    if on_gpu(device):
        flush = gpu_timing.flush_buffer(device) if flush_l2 else None
        torch.cuda.synchronize(device)
        for _ in range(repeats):
            if flush is not None:
                gpu_timing.read_flush(flush)
            torch.cuda.synchronize(device)  # start alone: host set-up of fn is inside the window
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times
