"""How the toolkit's passes use threads: whole blocks per thread, never a join per operation.

``check``, ``prune``, ``pack``, ``unpack``, ``to_cutlass`` and the audit's count are
memory-bound passes made of many short element-wise operations on cache-sized blocks. Left to
torch, every one of those operations is a fork-join: the OpenMP team waits for its slowest
member. When another process keeps one core of a 2-core machine busy, that member is
descheduled for a whole time slice at every join, and a pass measured 19-69x slower than a
plain copy of the weight.

So each operation runs on one thread (:func:`one_thread`), and the parallelism is one level up
(:func:`map_blocks`): worker threads each take the next whole block when they are free. No
worker ever waits for another except once, at the end; a descheduled worker only delays the
block it holds, and the others take the rest. On an idle machine this uses every core; with
a busy core, the pass runs at the speed of the cores it gets. ``benchmarks/core.py`` measures
this against one thread and against torch's own threading, quiet and with a busy core, every
time it runs.

torch's thread count is per calling thread (an OpenMP setting), so :func:`one_thread` saves
and restores it in the thread that calls it, on errors too, and nests; the caller's setting
is back when a pass returns. Two module settings exist for measuring the alternatives:
``PASS_THREADS = None`` leaves torch's threading on for every operation, and
``PASS_WORKERS = 1`` keeps the pass in the calling thread.

>>> import torch
>>> before = torch.get_num_threads()
>>> with one_thread():
...     torch.get_num_threads()
1
>>> torch.get_num_threads() == before
True
>>> map_blocks(lambda item, state: item * item, range(5), state=lambda: None)
[0, 1, 4, 9, 16]
"""

from __future__ import annotations

import itertools
import os
import threading
from contextlib import contextmanager

import torch

__all__ = ["one_thread", "map_blocks", "worker_count", "PASS_THREADS", "PASS_WORKERS"]

# Intra-op threads of every operation in a pass; None leaves torch's setting (to measure it).
PASS_THREADS: int | None = 1
# Worker threads of a pass on a CPU; None: the caller's torch thread count (at most MAX_WORKERS).
PASS_WORKERS: int | None = None
MAX_WORKERS = 8

_state = threading.local()


@contextmanager
def one_thread():
    """Run the enclosed torch operations on ``PASS_THREADS`` intra-op threads (1), then restore."""
    depth = getattr(_state, "depth", 0)
    want = PASS_THREADS
    if depth or want is None:
        _state.depth = depth + 1
        try:
            yield
        finally:
            _state.depth = depth
        return
    before = torch.get_num_threads()
    if before != want:
        torch.set_num_threads(want)
    _state.depth = 1
    try:
        yield
    finally:
        _state.depth = 0
        if before != want:
            torch.set_num_threads(before)


def worker_count(n_items: int, device=None) -> int:
    """Worker threads for a pass of ``n_items`` blocks: 1 off the CPU or for a pass of few blocks."""
    if device is not None and torch.device(device).type != "cpu":
        return 1
    wanted = PASS_WORKERS if PASS_WORKERS is not None else min(torch.get_num_threads(), MAX_WORKERS)
    return max(1, min(wanted, os.cpu_count() or 1, n_items // 2))


def map_blocks(fn, items, *, state, device=None) -> list:
    """``[fn(item, s) for item in items]``, the items shared out to worker threads one at a time.

    ``state()`` makes each worker's private state (its scratch buffers). Results come back in
    the order of ``items``. The first exception stops the other workers after their current
    item and is raised here. Every worker runs its operations on one intra-op thread.
    """
    items = list(items)
    workers = worker_count(len(items), device)
    if workers == 1:
        with one_thread():
            own = state()
            return [fn(item, own) for item in items]
    results: list = [None] * len(items)
    claim = itertools.count()  # next() on it is atomic under the GIL
    errors: list[BaseException] = []

    def work() -> None:
        own = state()
        while not errors:
            i = next(claim)
            if i >= len(items):
                return
            try:
                results[i] = fn(items[i], own)
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                errors.append(exc)
                return

    def helper() -> None:
        saved = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            work()
        finally:
            torch.set_num_threads(saved)

    helpers = [threading.Thread(target=helper, daemon=True) for _ in range(workers - 1)]
    with one_thread():
        for t in helpers:
            t.start()
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt between operations
            errors.append(exc)
        finally:
            for t in helpers:
                t.join()
    if errors:
        raise errors[0]
    return results
