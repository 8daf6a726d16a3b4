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
a busy core, the pass runs at the speed of the cores it gets. The helper threads are made once
per process and reused: starting a thread means waiting for the scheduler to run it, which on
a busy machine took tens of milliseconds per pass. ``benchmarks/core.py`` measures
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

import os
import queue
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


class _Pass:
    """One pass's items, claimed one at a time by whichever worker is free.

    The calling thread works too and never waits for a helper that has not started: it waits
    only for items a helper has claimed and not finished (at most one per helper). So a
    helper descheduled for a while costs at most the block it holds.
    """

    def __init__(self, fn, items: list, state):
        self.fn, self.items, self.state = fn, items, state
        self.results: list = [None] * len(items)
        self.errors: list[tuple[int, BaseException]] = []
        self._next = 0
        self._helpers_busy = 0
        self._cond = threading.Condition()

    def _claim(self, helper: bool) -> int | None:
        with self._cond:
            if self.errors or self._next >= len(self.items):
                return None
            i = self._next
            self._next += 1
            self._helpers_busy += helper
            return i

    def _finish(self, i: int, helper: bool, result=None, error: BaseException | None = None) -> None:
        with self._cond:
            if error is None:
                self.results[i] = result
            else:
                self.errors.append((i, error))
            self._helpers_busy -= helper
            if not self._helpers_busy:
                self._cond.notify_all()

    def run(self, helper: bool) -> None:
        own = None
        while (i := self._claim(helper)) is not None:
            try:
                if own is None:
                    own = self.state()
                result = self.fn(self.items[i], own)
            except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
                self._finish(i, helper, error=exc)
                return
            self._finish(i, helper, result)

    def stop(self, error: BaseException) -> None:
        with self._cond:
            self.errors.append((-1, error))

    def wait_for_helpers(self) -> None:
        with self._cond:
            while self._helpers_busy:
                self._cond.wait()


class _Helper:
    """A daemon thread that serves passes; made once, its torch thread count set to 1 once."""

    def __init__(self):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.ready = threading.Event()
        threading.Thread(target=self._serve, name="twofour-pass-helper", daemon=True).start()

    def _serve(self) -> None:
        # Its own OpenMP setting (per thread). Made while the creating thread is inside
        # one_thread() (which waits for `ready`), so the process-wide default is 1 at this
        # moment anyway and the creator's exit from one_thread() restores it.
        torch.set_num_threads(1)
        self.ready.set()
        while True:
            self.queue.get().run(helper=True)


_pool: list[_Helper] = []
_pool_lock = threading.Lock()


def _helpers(count: int) -> list[_Helper]:
    """``count`` helper threads, made on first need (the only time a caller waits for a thread to start)."""
    with _pool_lock:
        made = [_Helper() for _ in range(count - len(_pool))]
        _pool.extend(made)
        helpers = _pool[:count]
    for h in made:
        h.ready.wait()
    return helpers


def _forget_helpers() -> None:
    """In a forked child the helper threads do not exist: start over."""
    global _pool_lock
    _pool.clear()
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def map_blocks(fn, items, *, state, device=None) -> list:
    """``[fn(item, s) for item in items]``, the items shared out to worker threads one at a time.

    ``state()`` makes a worker's private state (its scratch buffers) when it takes its first
    item. Results come back in the order of ``items``. An exception stops the other workers
    after their current item; the one from the earliest item is raised here. Every worker runs
    its operations on one intra-op thread; the helper threads are made once and reused.
    """
    items = list(items)
    workers = worker_count(len(items), device)
    with one_thread():
        if workers == 1:
            own = state()
            return [fn(item, own) for item in items]
        job = _Pass(fn, items, state)
        for helper in _helpers(workers - 1):
            helper.queue.put(job)
        try:
            job.run(helper=False)
        except BaseException as exc:  # noqa: BLE001 - e.g. KeyboardInterrupt between two items
            job.stop(exc)
        job.wait_for_helpers()
    if job.errors:
        raise min(job.errors, key=lambda e: e[0])[1]
    return job.results
