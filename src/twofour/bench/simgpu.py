"""A simulated CUDA device on the CPU, for rehearsing and testing the GPU timing code without a GPU.

:func:`simulated_gpu` replaces, for the length of a ``with`` block, what
:mod:`twofour.bench.gpu_timing` asks of ``torch.cuda`` with a model of one GPU stream, with the
host's and the device's clocks and an L2 cache, on which ``torch.nn.functional.linear`` (still
computed on the CPU) and the flush buffer's reads and writes are kernels:

* every launch costs the host ``launch_us``; the device starts an operation ``latency_us``
  after the host issued it, or when the one before it ends, whichever is later; a graph
  replay costs the host ``graph_launch_us`` once and runs its kernels ``gap_us`` apart;
* a kernel takes ``max(flops / peak, bytes from DRAM / bandwidth) + kernel_us``; a buffer it
  reads that is not in L2 comes from DRAM and enters L2 (least recently used out), and a dirty
  line pushed out is written back at the same bandwidth, *inside the kernel that pushed it*;
* events stamp the device clock when the stream reaches them.

So a timing that lets a host launch, a cold start or a write-back into its window gets a number
above the kernel's own time (:meth:`SimGPU.kernel_us`). No number this produces is a GPU number,
and rehearsals mark their files so.

Example (a lone call from an idle device: the window holds the launch too):
    >>> import torch
    >>> with simulated_gpu(l2_bytes=1 << 20) as sim:
    ...     W, x = torch.randn(128, 1024), torch.randn(1, 1024)  # 512 KiB: fits the 1 MiB L2
    ...     _ = torch.nn.functional.linear(x, W)                # x and W now in L2
    ...     torch.cuda.synchronize()
    ...     start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ...     start.record(); y = torch.nn.functional.linear(x, W); end.record(); end.synchronize()
    ...     window_us = start.elapsed_time(end) * 1e3
    >>> round(window_us - sim.kernel_us(W, x, cold=False), 3)    # the host's launch, and the latency
    6.0
"""

from __future__ import annotations

import contextlib
import itertools
import types
from collections import OrderedDict
from dataclasses import dataclass
from unittest import mock

import torch

__all__ = ["SimGPU", "simulated_gpu", "active", "SPIN_KERNEL", "GEMM_KERNEL"]

SPIN_KERNEL = "at::cuda::spin_kernel(long)"  # the kernel torch.cuda._sleep launches (aten/src/ATen/cuda/Sleep.cu)
GEMM_KERNEL = "sim_gemm"
_ACTIVE: list["SimGPU"] = []


def active() -> "SimGPU | None":
    """The simulated GPU of the innermost :func:`simulated_gpu` block, or None."""
    return _ACTIVE[-1] if _ACTIVE else None


@dataclass
class _Op:
    name: str
    reads: tuple = ()  # (key, bytes)
    writes: tuple = ()
    flops: float = 0.0
    fixed_us: float | None = None  # a spin: its own duration, no memory traffic
    event: "_Event | None" = None


class _Event:
    def __init__(self, sim: "SimGPU"):
        self.sim, self.t_us = sim, None

    def record(self, stream=None):
        self.sim._issue(_Op("event", event=self), host_cost=self.sim.record_us)

    def synchronize(self):
        if self.t_us is None:
            raise RuntimeError("simulated GPU: synchronize on an event never recorded")
        self.sim.host_us = max(self.sim.host_us, self.t_us)

    def elapsed_time(self, other: "_Event") -> float:
        if self.t_us is None or other.t_us is None:
            raise RuntimeError("simulated GPU: elapsed_time needs two recorded events")
        return (other.t_us - self.t_us) / 1e3


class SimGPU:
    """One simulated GPU stream; see the module docstring. Times in µs, sizes in bytes."""

    def __init__(self, *, l2_bytes: int = 1 << 20, dram_gbs: float = 4000.0, peak_tflops: float = 500.0,
                 launch_us: float = 6.0, latency_us: float = 2.0, record_us: float = 0.5, graph_launch_us: float = 3.0,
                 gap_us: float = 0.5, kernel_us: float = 2.0, spin_ghz: float = 2.0):
        self.l2_bytes, self.dram_gbs, self.peak_tflops = l2_bytes, dram_gbs, peak_tflops
        self.launch_us, self.latency_us, self.record_us = launch_us, latency_us, record_us
        self.graph_launch_us, self.gap_us, self.fixed_kernel_us, self.spin_ghz = graph_launch_us, gap_us, kernel_us, spin_ghz
        self.host_us = 0.0
        self.device_free_us = 0.0
        self.l2: OrderedDict = OrderedDict()  # key -> [bytes, dirty]
        self.capturing: list | None = None  # the operations of the CUDA graph being captured
        self.log: list[dict] = []  # every operation the device ran: name, start_us, end_us, writeback_bytes
        self.buffers: dict[int, str] = {}  # data_ptr of a flush buffer -> its name
        self._ids = itertools.count()

    # -- the model ------------------------------------------------------------------------------

    def _dram_us(self, n_bytes: float) -> float:
        return n_bytes / (self.dram_gbs * 1e3)

    def _touch(self, key, n_bytes: int, dirty: bool) -> tuple[float, float]:
        """Bring ``key`` into L2; returns (bytes read from DRAM, dirty bytes written back to make room)."""
        if key in self.l2:
            self.l2.move_to_end(key)
            self.l2[key][1] = self.l2[key][1] or dirty
            return 0.0, 0.0
        written = 0.0
        # A buffer as large as L2 streams through it: everything else goes, and it is not kept either.
        room = self.l2_bytes - (n_bytes if n_bytes < self.l2_bytes else 0)
        while self.l2 and sum(b for b, _ in self.l2.values()) > room:
            _, (b, was_dirty) = self.l2.popitem(last=False)
            written += b if was_dirty else 0.0
        if n_bytes < self.l2_bytes:
            self.l2[key] = [n_bytes, dirty]
        elif dirty:
            written += n_bytes - self.l2_bytes  # what does not fit is written back as it goes
        return (0.0 if dirty else float(n_bytes)), written

    def _duration(self, op: _Op) -> tuple[float, float]:
        if op.fixed_us is not None:
            return op.fixed_us, 0.0
        dram = writeback = 0.0
        for key, n, dirty in [(k, n, False) for k, n in op.reads] + [(k, n, True) for k, n in op.writes]:
            r, w = self._touch(key, n, dirty=dirty)
            dram, writeback = dram + r, writeback + w
        compute = op.flops / (self.peak_tflops * 1e6)
        return max(compute, self._dram_us(dram + writeback)) + self.fixed_kernel_us, writeback

    def _run(self, op: _Op, ready_us: float) -> None:
        start = max(self.device_free_us, ready_us)
        if op.event is not None:
            op.event.t_us = start
            self.log.append({"name": "event", "start_us": start, "end_us": start, "writeback_bytes": 0.0})
            return
        us, writeback = self._duration(op)
        self.device_free_us = start + us
        self.log.append({"name": op.name, "start_us": start, "end_us": start + us, "writeback_bytes": writeback})

    def _issue(self, op: _Op, *, host_cost: float | None = None) -> None:
        if self.capturing is not None and op.event is None:
            self.capturing.append(op)
            return
        self.host_us += self.launch_us if host_cost is None else host_cost
        self._run(op, self.host_us + self.latency_us)

    def kernel_us(self, W: torch.Tensor, x: torch.Tensor, *, cold: bool = True) -> float:
        """What the model gives one ``F.linear(x, W)`` kernel as a step runs it: ``x`` in L2 (just written by
        the op before), the weight cold (or not), nothing dirty to write back."""
        n_bytes = W.numel() * W.element_size() if cold else 0
        flops = 2.0 * x.shape[0] * W.shape[0] * W.shape[1]
        return max(flops / (self.peak_tflops * 1e6), self._dram_us(n_bytes)) + self.fixed_kernel_us

    # -- what the timing code calls ---------------------------------------------------------------

    def linear_kernel(self, x: torch.Tensor, W: torch.Tensor, y: torch.Tensor) -> None:
        self._issue(_Op(GEMM_KERNEL, reads=((("t", W.data_ptr()), W.numel() * W.element_size()),
                                            (("t", x.data_ptr()), x.numel() * x.element_size())),
                        writes=((("t", y.data_ptr(), next(self._ids) if self.capturing is None else 0),
                                 y.numel() * y.element_size()),),
                        flops=2.0 * x.shape[0] * W.shape[0] * W.shape[1]))

    def buffer_op(self, t: torch.Tensor, *, write: bool) -> None:
        name = self.buffers[t.data_ptr()]
        whole = ((("buf", t.data_ptr(), i), self.l2_bytes // 4) for i in range(t.numel() // max(1, self.l2_bytes // 4)))
        self._issue(_Op(f"{name} {'write' if write else 'read'}", **{"writes" if write else "reads": tuple(whole)}))

    def sleep(self, cycles: int) -> None:
        self._issue(_Op(SPIN_KERNEL, fixed_us=int(cycles) / (self.spin_ghz * 1e3)))

    def synchronize(self, device=None) -> None:
        self.host_us = max(self.host_us, self.device_free_us)

    def replay(self, ops: list) -> None:
        self.host_us += self.graph_launch_us
        ready = self.host_us + self.latency_us
        for op in ops:  # the graph's kernels run gap_us apart, also from the work queued before them
            self.device_free_us += self.gap_us
            self._run(op, ready)


@contextlib.contextmanager
def simulated_gpu(**params):
    """Run the block with ``torch.cuda``'s timing calls answered by a :class:`SimGPU` (see the module doc).

    Yields the simulator. ``params`` are :class:`SimGPU`'s. Restores everything it replaced on exit.
    """
    sim = SimGPU(**params)
    cuda = torch.cuda
    real_linear = torch.nn.functional.linear

    def linear(x, W, bias=None):
        y = real_linear(x, W, bias)
        sim.linear_kernel(x, W, y)
        return y

    @contextlib.contextmanager
    def capture(graph, **kw):
        sim.capturing = graph._sim
        try:
            yield graph
        finally:
            sim.capturing = None

    class CUDAGraph:
        def __init__(self, *a, **kw):
            self._sim = []

        def replay(self):
            sim.replay(self._sim)

    stream = types.SimpleNamespace(wait_stream=lambda other: None, synchronize=lambda: sim.synchronize())
    replaced = {
        "Event": lambda enable_timing=False, **kw: _Event(sim),
        "Stream": lambda *a, **kw: stream,
        "stream": lambda s: contextlib.nullcontext(),
        "current_stream": lambda *a, **kw: stream,
        "synchronize": sim.synchronize,
        "CUDAGraph": CUDAGraph,
        "graph": capture,
        "_sleep": sim.sleep,
        "get_device_properties": lambda *a, **kw: types.SimpleNamespace(name="simulated GPU", L2_cache_size=sim.l2_bytes),
    }

    def wrap(method: str, write: bool):
        real = getattr(torch.Tensor, method)

        def call(self, *a, **kw):
            out = real(self, *a, **kw)
            if self.data_ptr() in sim.buffers:
                sim.buffer_op(self, write=write)
            return out
        return call

    writes = {"zero_": True, "bitwise_not_": True, "fill_": True, "sum": False}
    tensor_methods = {method: wrap(method, write) for method, write in writes.items()}
    # The flush buffer (``gpu_timing.flush_buffer``): made on the CPU whatever device is asked
    # for, and known to the model by its address.
    from . import gpu_timing

    def flush_buffer(device=None):
        buf = torch.zeros(2 * sim.l2_bytes, dtype=torch.uint8)
        sim.buffers[buf.data_ptr()] = "flush buffer"
        return buf

    def device_kernels(run):  # what the profiler would report: the kernels the device ran meanwhile
        first = len(sim.log)
        run()
        sim.synchronize()
        return [(e["start_us"], e["end_us"], e["name"]) for e in sim.log[first:] if e["name"] != "event"]

    patches = [*((cuda, name, value) for name, value in replaced.items()),
               *((torch.Tensor, name, value) for name, value in tensor_methods.items()),
               (torch.nn.functional, "linear", linear), (gpu_timing, "flush_buffer", flush_buffer),
               (gpu_timing, "_now_ms", lambda: sim.host_us / 1e3), (gpu_timing, "_device_kernels", device_kernels)]
    with contextlib.ExitStack() as stack:  # each patch undone on exit, in reverse order
        for target, name, value in patches:
            stack.enter_context(mock.patch.object(target, name, value))
        _ACTIVE.append(sim)
        stack.callback(_ACTIVE.remove, sim)
        yield sim
