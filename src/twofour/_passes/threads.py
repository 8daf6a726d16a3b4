"""How the toolkit's passes use threads: whole blocks per thread, never a join per operation.

``check``, ``prune``, ``pack``, ``unpack``, ``to_cutlass`` and the audit's count are
memory-bound passes of many short element-wise operations on cache-sized blocks. Left to torch,
every operation is a fork-join that waits for its slowest thread: with one core of a 2-core
machine busy elsewhere, a pass measured 19-69x slower than a plain copy of the weight.

So each operation runs on one thread (:func:`one_thread`), and :func:`map_blocks` gives each
worker (the caller among them) the next whole block, joining once at the end, on one
process-wide pool (starting a thread on a busy machine took tens of milliseconds).
``benchmarks/core.py`` measures ``PASS_THREADS = None`` (torch's threading) and ``PASS_WORKERS = 1``.

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

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager

import torch

__all__ = ["one_thread", "map_blocks", "worker_count", "PASS_THREADS", "PASS_WORKERS"]

# Intra-op threads of every operation in a pass; None leaves torch's setting (to measure it).
PASS_THREADS: int | None = 1
# Worker threads of a pass on a CPU; None: the caller's torch thread count (at most MAX_WORKERS).
PASS_WORKERS: int | None = None
MAX_WORKERS = 8

@contextmanager
def one_thread():
    """Run the enclosed torch operations on ``PASS_THREADS`` intra-op threads (1), then restore
    (nested, the inner block finds the setting made and leaves it)."""
    before = torch.get_num_threads()
    change = PASS_THREADS is not None and before != PASS_THREADS
    if change:
        torch.set_num_threads(PASS_THREADS)
    try:
        yield
    finally:
        if change:
            torch.set_num_threads(before)


def worker_count(n_items: int, device=None) -> int:
    """Worker threads for a pass of ``n_items`` blocks: 1 off the CPU or for a pass of few blocks."""
    if device is not None and torch.device(device).type != "cpu":
        return 1
    wanted = PASS_WORKERS if PASS_WORKERS is not None else min(torch.get_num_threads(), MAX_WORKERS)
    return max(1, min(wanted, os.cpu_count() or 1, n_items // 2))


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _helpers() -> ThreadPoolExecutor:
    """The process's helper threads (each sets its own torch thread count to 1 once)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(MAX_WORKERS - 1, thread_name_prefix="twofour-pass",
                                           initializer=torch.set_num_threads, initargs=(1,))
        return _executor


def _forget_helpers() -> None:
    """In a forked child the helper threads do not exist: start over."""
    global _executor, _executor_lock
    _executor, _executor_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def map_blocks(fn, items, *, state, device=None) -> list:
    """``[fn(item, s) for item in items]``, the items shared out to worker threads one at a time; ``state()``
    makes a worker's scratch buffers. An error stops the workers; the earliest item's is raised here."""
    items = list(items)
    workers = worker_count(len(items), device)
    with one_thread():
        results: list = [None] * len(items)
        errors: list[tuple[int, BaseException]] = []
        claim, lock = iter(range(len(items))), threading.Lock()

        def drain() -> None:
            own, made = None, False
            while not errors:
                with lock:
                    i = next(claim, None)
                if i is None:
                    return
                try:
                    if not made:
                        own, made = state(), True
                    results[i] = fn(items[i], own)
                except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                    errors.append((i, exc))

        helpers = [_helpers().submit(drain) for _ in range(workers - 1)]
        try:
            drain()
        except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt between two items
            errors.append((-1, exc))
        finally:
            for f in helpers:
                f.cancel()  # one that has not started has nothing left to do
            wait(helpers)
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return results
