"""What a device does for the decode measurements: pack, capture, compile, time, profile.

The measurement plan never calls CUDA itself; it asks one of these, so the same control flow runs
in three places:

``CudaOps``
    The real thing: cuSPARSELt 2:4 weights (the algorithm pinned at conversion), CUDA graphs,
    CUDA events (:func:`twofour.bench.gpu_timing.window_ms`).
``CpuOps``
    Dense float32 on the CPU; packing, graphs and the algorithm search raise :class:`NotSupported`.
``RehearsalOps``
    A fake CUDA device on the CPU, for rehearsing the GPU control flow (``make gpu-check
    GPU_CHECK_ARGS=--rehearse``, and the tests): "packing" keeps the dense pruned weight,
    "capture" and "compile" return the step itself; ``fail`` makes chosen operations raise.
    No number it produces is a GPU number.

Example:
    >>> ops = ops_for("cpu")
    >>> ops.name, ops.supports_2to4
    ('cpu', False)
    >>> ops.pack(torch.zeros(16, 16))
    Traceback (most recent call last):
    ...
    twofour.serve.ops.NotSupported: 2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0 ...
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from .._common.stderr import without_profiler_chatter
from .._common.text import one_line
from ..device import environment
from ..vocabulary import CUSPARSELT

__all__ = ["NotSupported", "Ops", "CpuOps", "CudaOps", "RehearsalOps", "ops_for", "NEEDS_GPU"]

NEEDS_GPU = ("2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0 (sparse tensor cores) "
             "and a torch with cuSPARSELt; this run has none, so only the dense model runs")


class NotSupported(RuntimeError):
    """This device cannot do that at all (not a failure of the attempt): recorded as *skipped*."""


class Ops:
    """The CPU's operations; the base of the others. See the module docstring."""

    name = "cpu"
    supports_2to4 = False
    supports_graphs = False
    rehearsal = False

    def __init__(self):
        self.device = torch.device("cpu")

    def compute_dtype(self, dtype: torch.dtype) -> torch.dtype:
        """The dtype tensors really get for a plan's ``dtype`` (a rehearsal computes in float32)."""
        return dtype

    def pack(self, W: torch.Tensor, alg_id: int | None = None) -> torch.Tensor:
        """``W`` (already 2:4) as the device's packed 2:4 tensor, with cuSPARSELt algorithm ``alg_id`` (None: 0)."""
        raise NotSupported(NEEDS_GPU)

    def search_algorithm(self, W: torch.Tensor, x: torch.Tensor) -> dict:
        """The fastest cuSPARSELt algorithm for ``F.linear(x, W packed)`` (``W`` dense, 2:4): ``{"alg_id", "method", ...}``."""
        raise NotSupported("the cuSPARSELt algorithm search needs a CUDA GPU with cuSPARSELt")

    def capture(self, fn: Callable[[], object]) -> Callable[[], None]:
        """``fn`` captured as a CUDA graph; returns the replay."""
        raise NotSupported("CUDA graphs need a CUDA GPU")

    def compile(self, fn: Callable[[], object], static_inputs=()) -> Callable[[], object]:
        """``torch.compile(fn, mode="reduce-overhead")`` (CUDA graphs inside, on a GPU).

        ``static_inputs`` (KV cache, token and position buffers) keep their addresses for the
        whole run: marked so, the compiled graph updates them in place instead of copying them.
        """
        for t in static_inputs:
            torch._dynamo.mark_static_address(t)
        return torch.compile(fn, mode="reduce-overhead", dynamic=False)

    def synchronize(self) -> None:
        pass

    def free(self) -> None:
        """Give cached device memory back between measurements."""

    def time_calls(self, fn: Callable[[], object], *, reset: Callable[[], object] | None = None,
                   calls: int = 1, warmup: int = 1, repeats: int = 5, info: dict | None = None) -> list[float]:
        """Milliseconds per call of ``fn``, one value per repeat of ``calls`` back-to-back calls.

        ``reset`` runs before the warm-up and every repeat, outside the timed window. ``info``
        receives ``timer``, ``calls_per_window`` and, on a GPU, ``host_ahead`` (the share of
        windows the host had queued in full before the device reached the start event).
        """
        reset = reset or (lambda: None)
        for _ in range(warmup):
            reset()
            fn()
        out, ahead = [], []
        for _ in range(repeats):
            reset()
            self.synchronize()
            ms, host_ahead = self._timed(fn, calls)
            out.append(ms / calls)
            if host_ahead is not None:
                ahead.append(host_ahead)
        if info is not None:
            info.update(timer=self.timer, calls_per_window=calls)
            if ahead:
                info["host_ahead"] = sum(ahead) / len(ahead)
        return out

    timer = "time.perf_counter around back-to-back calls"

    def _timed(self, fn, calls: int) -> tuple[float, bool | None]:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) * 1e3, None

    def profile(self, fn: Callable[[], object], *, calls: int = 3):
        """``(records, wall_ms, starts)`` of ``calls`` calls under ``torch.profiler``.

        ``records``: :class:`twofour.dispatch.kernels.OpRecord`; ``wall_ms``: wall time per call,
        profiler overhead included; ``starts[i]``: when record ``i`` started (µs).
        """
        from torch.profiler import ProfilerActivity, profile

        from ..dispatch.kernels import records_from_profiler

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
        self.synchronize()
        with without_profiler_chatter(), profile(activities=activities) as prof:
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            self.synchronize()
            wall_ms = (time.perf_counter() - t0) * 1e3 / calls
        # records_from_profiler keeps prof.events()' order, so index i is the same event in both
        return records_from_profiler(prof), wall_ms, [float(e.time_range.start) for e in prof.events()]


CpuOps = Ops  # dense float32 on the CPU: the base operations themselves (see the module docstring)


class CudaOps(Ops):
    """The GPU's operations (see the module docstring)."""

    name = "cuda"
    supports_graphs = True

    def __init__(self, device="cuda"):
        env = environment()
        if not env.cuda_available:
            raise NotSupported("CudaOps needs a CUDA GPU; torch sees none here")
        self.device = torch.device(device)
        self.env = env
        self.supports_2to4 = env.sparse_ok and CUSPARSELT.name in env.backends
        self.why_not_2to4 = None if self.supports_2to4 else env.reason

    def pack(self, W: torch.Tensor, alg_id: int | None = None) -> torch.Tensor:
        if not self.supports_2to4:
            raise NotSupported(f"2:4 cannot run here: {self.why_not_2to4}")
        from ..bench import sparse_weight

        # cuSPARSELt explicitly (the algorithm is a cuSPARSELt knob), the algorithm pinned at conversion
        return sparse_weight(W, CUSPARSELT.name, alg_id)

    def search_algorithm(self, W: torch.Tensor, x: torch.Tensor) -> dict:
        """Time ``F.linear(x, W packed with alg_id)`` for each candidate ``alg_id``; keep the fastest that matches.

        The candidates: every ID the library accepts for this shape, and what the deprecated
        ``torch._cslt_sparse_mm_search`` proposes; each timed as the GEMM benchmark's graph mode times a call.
        """
        from ..bench import gpu_timing
        from ..bench.algsweep import accepted_alg_ids

        linear = torch.nn.functional.linear
        found: dict = {"candidates": {}}
        packed = torch._cslt_compress(W)
        xp = torch.nn.functional.pad(x, (0, 0, 0, (-x.shape[0]) % 8)).t()  # rows padded to 8, as PyTorch pads them
        try:
            found["torch_search"] = int(torch._cslt_sparse_mm_search(packed, xp))
        except Exception as exc:  # absent, deprecated or failing: the timed search still runs
            found["torch_search"] = one_line(exc)
        ids, found["stopped"] = accepted_alg_ids(lambda alg: torch._cslt_sparse_mm(packed, xp, alg_id=alg))
        del packed
        candidates = sorted(set(ids) | {0}
                            | ({found["torch_search"]} if isinstance(found["torch_search"], int) else set()))
        ref = linear(x, W).float()
        scale = ref.abs().max().item() or 1.0
        n_copies = gpu_timing.copies_to_defeat_l2(W.numel() * W.element_size() // 2, gpu_timing.l2_bytes(self.device))
        for alg in candidates:
            try:
                copies = [self.pack(W, alg) for _ in range(n_copies)]
                err = (linear(x, copies[0]).float() - ref).abs().max().item() / scale
                if not err <= 1e-2:
                    found["candidates"][str(alg)] = {"error": f"result differs from dense (rel_err {err:.3g})"}
                    continue
                ms = gpu_timing.time_graph([lambda c=c: linear(x, c) for c in copies], device=self.device, warmup=1,
                                           repeats=3)
                found["candidates"][str(alg)] = {"ms": sorted(ms)[1]}
                del copies
            except Exception as exc:  # an id the library does not have for this shape
                found["candidates"][str(alg)] = {"error": one_line(exc)}
        timed = {int(a): c["ms"] for a, c in found["candidates"].items() if "ms" in c}
        if not timed:
            raise RuntimeError(f"no cuSPARSELt algorithm ran for this shape: {found['candidates']}")
        found["alg_id"] = min(timed, key=lambda a: (timed[a], a))
        found["method"] = (f"fastest median of 3 graph windows ({gpu_timing.METHODS['graph']['id']}, {n_copies} weight "
                           "copies in turn) among the candidates, result checked against dense")
        return found

    def capture(self, fn: Callable[[], object]) -> Callable[[], None]:
        # CUDA graphs want their first runs on a side stream (library handles, workspaces).
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return graph.replay

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def free(self) -> None:
        torch.cuda.empty_cache()

    timer = "CUDA events around back-to-back calls queued behind a device-side spin (no launch in the window)"

    def _timed(self, fn, calls: int) -> tuple[float, bool]:
        from ..bench.gpu_timing import window_ms

        def enqueue():
            for _ in range(calls):
                fn()

        return window_ms(enqueue)


class RehearsalOps(Ops):
    """A fake CUDA device on the CPU: the GPU control flow without a GPU (see the module docstring).

    ``fail``: ``{operation: message}``: those operations raise ``RuntimeError(message)``.

    Example:
        >>> ops = RehearsalOps(fail={"capture": "graph capture failed"})
        >>> ops.compute_dtype(torch.float16), ops.supports_2to4
        (torch.float32, True)
        >>> ops.capture(lambda: None)
        Traceback (most recent call last):
        ...
        RuntimeError: graph capture failed (rehearsed failure)
    """

    name = "rehearsal"
    supports_2to4 = True
    supports_graphs = True
    rehearsal = True
    _OPERATIONS = ("pack", "search_algorithm", "capture", "compile")

    def __init__(self, fail: dict[str, str] | None = None):
        super().__init__()
        self.fail = dict(fail or {})
        unknown = sorted(set(self.fail) - set(self._OPERATIONS))
        if unknown:
            raise ValueError(f"fail names unknown operations {unknown}; valid: {list(self._OPERATIONS)}")

    def _maybe_fail(self, operation: str) -> None:
        if operation in self.fail:
            raise RuntimeError(f"{self.fail[operation]} (rehearsed failure)")

    def compute_dtype(self, dtype: torch.dtype) -> torch.dtype:
        return torch.float32  # half precision on these CPUs is emulated and very slow

    def pack(self, W: torch.Tensor, alg_id: int | None = None) -> torch.Tensor:
        self._maybe_fail("pack")
        return W.clone()

    def search_algorithm(self, W: torch.Tensor, x: torch.Tensor) -> dict:
        self._maybe_fail("search_algorithm")
        return {"alg_id": 1, "method": "rehearsal: no cuSPARSELt here, algorithm 1 stands for the searched one",
                "candidates": {}}

    def capture(self, fn):
        self._maybe_fail("capture")
        return fn

    def compile(self, fn, static_inputs=()):
        self._maybe_fail("compile")
        return fn


def ops_for(device) -> Ops:
    """:class:`CudaOps` for ``"cuda"``, :class:`CpuOps` for ``"cpu"``, ``"rehearsal"`` for :class:`RehearsalOps`."""
    name = str(device)
    if name == "rehearsal":
        return RehearsalOps()
    kind = torch.device(name).type
    if kind == "cuda":
        return CudaOps(name)
    if kind == "cpu":
        return CpuOps()
    raise ValueError(f"device must be 'cuda', 'cpu' or 'rehearsal', got {device!r}")

