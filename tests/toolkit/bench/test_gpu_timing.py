"""What the GPU timings put inside their timed window, on a simulated GPU (twofour.bench.simgpu).

The simulator keeps the host's and the device's clocks and an L2 cache with dirty lines, so a
timing that lets the host's launch, a cold start or another buffer's write-back into its window
reads more than the kernel's own time, by an amount the model knows. Each test states what a
serving step sees (the device busy, the weight cold, nothing left to write back) and checks the
timing returns that.
"""

from __future__ import annotations

import statistics

import pytest
import torch

from twofour.bench import gpu_timing, time_callable
from twofour.bench.gpu_timing import copies_to_defeat_l2, profile_kernels, split_calls, time_graph, time_stream
from twofour.bench.simgpu import GEMM_KERNEL, SPIN_KERNEL, simulated_gpu

L2 = 1 << 20


def linear(x, W):
    return torch.nn.functional.linear(x, W)  # looked up per call: the simulator replaces it


def _weights(n: int, K: int = 1024):
    gen = torch.Generator().manual_seed(0)
    W = torch.randn(n, K, generator=gen)
    return W, torch.randn(1, K, generator=gen)


def _calls(W, x, copies: int):
    ws = [W] + [W.clone() for _ in range(copies - 1)]
    return [lambda w=w: linear(x, w) for w in ws]


def _window_ops(sim, first_event: int):
    """Names of the device's operations between the first timed window's start and end events."""
    events = [i for i, e in enumerate(sim.log) if e["name"] == "event"]
    # each window records three events: before the spin, start, end
    start, end = events[first_event + 1], events[first_event + 2]
    return [e["name"] for e in sim.log[start + 1:end]]


def test_a_graph_replay_times_the_kernel_alone_no_launch_and_no_write_back():
    # a weight twice the L2 size is cold on every call, with or without copies; one callable, as before
    with simulated_gpu(l2_bytes=L2) as sim:
        W, x = _weights(512)
        ms = time_graph(lambda: linear(x, W), device="cuda", warmup=1, repeats=5)
        want_us = sim.kernel_us(W, x) + sim.gap_us
    assert statistics.median(ms) * 1e3 == pytest.approx(want_us, rel=0.01)


def test_a_graph_window_holds_the_replays_and_nothing_else_behind_a_busy_device():
    with simulated_gpu(l2_bytes=L2) as sim:
        W, x = _weights(128)  # 512 KiB: copies are needed for a cold weight
        fns = _calls(W, x, copies_to_defeat_l2(W.numel() * 4, L2))
        info = {}
        first = sum(e["name"] == "event" for e in sim.log)
        ms = time_graph(fns, device="cuda", warmup=1, repeats=3, calls=16, info=info)
        inside = _window_ops(sim, first)
        before_start = [e for e in sim.log if e["name"] != "event"]
        want_us = sim.kernel_us(W, x) + sim.gap_us
    assert info["copies"] == len(fns) == 5 and info["calls_per_window"] == 20  # ceil(16 / 5) replays of 5 calls
    assert inside == [GEMM_KERNEL] * 20
    assert info["host_ahead"] == 1.0
    assert all(t * 1e3 == pytest.approx(want_us, rel=0.01) for t in ms)
    assert not any("flush" in e["name"] for e in before_start)  # no flush at all: the copies make L2 cold


def test_a_host_slower_than_the_spin_is_recorded_not_hidden():
    with simulated_gpu(l2_bytes=L2, graph_launch_us=2000.0) as sim:
        W, x = _weights(512)
        info = {}
        time_graph(lambda: linear(x, W), device="cuda", warmup=1, repeats=2, info=info)
    assert info["host_ahead"] == 0.0


def test_stream_timing_keeps_the_launch_of_an_idle_device_out_of_a_device_bound_loop():
    with simulated_gpu(l2_bytes=L2) as sim:
        W, x = _weights(8192)  # 32 MiB: a kernel longer than the host's launch
        fns = _calls(W, x, 2)
        ms = time_stream(fns, device="cuda", warmup=1, repeats=10, rounds=3)
        want_us = sim.kernel_us(W, x)
    assert want_us > sim.launch_us
    assert all(t * 1e3 == pytest.approx(want_us, rel=0.005) for t in ms)


def test_stream_timing_shows_a_host_slower_than_the_kernels():
    with simulated_gpu(l2_bytes=L2, launch_us=40.0) as sim:
        W, x = _weights(512)
        ms = time_stream(_calls(W, x, 2), device="cuda", warmup=1, repeats=10, rounds=2)
    assert all(t * 1e3 == pytest.approx(40.0, rel=0.005) for t in ms)


def test_a_lone_call_is_flushed_by_reading_so_nothing_is_written_back_inside_it():
    with simulated_gpu(l2_bytes=L2) as sim:
        W, x = _weights(128)  # fits L2: only the flush makes it cold
        first = len(sim.log)
        ms = time_callable(lambda: linear(x, W), device="cuda", warmup=1, repeats=4)
        gemms = [e for e in sim.log[first:] if e["name"] == GEMM_KERNEL]
        want_us = sim.launch_us + sim.kernel_us(W, x, cold=True)  # the start event waits out the latency too
    # the lone call keeps its launch (that is what lone measures), and the weight comes from DRAM
    assert all(t * 1e3 == pytest.approx(want_us, rel=0.01) for t in ms)
    assert sum(g["writeback_bytes"] for g in gemms[-4:]) < 0.01 * L2


def test_kernel_timing_marks_each_call_with_a_spin_and_reads_cold_copies():
    with simulated_gpu(l2_bytes=L2) as sim:
        W, x = _weights(128)
        fns = _calls(W, x, copies_to_defeat_l2(W.numel() * 4, L2))
        prof = profile_kernels(fns, device="cuda", warmup=1, calls=4)
        want_us = sim.kernel_us(W, x)
    assert prof["kernels"] == {GEMM_KERNEL: 1.0}
    assert prof["sum_us"] == pytest.approx([want_us] * 4, rel=0.01)


def test_split_calls_needs_one_marker_per_call():
    mark = SPIN_KERNEL
    with pytest.raises(RuntimeError, match="2 marker kernels.*for 3 calls"):
        split_calls([(0, 1, mark), (1, 2, "gemm"), (3, 4, mark), (4, 5, "gemm")], 3)
    with pytest.raises(RuntimeError, match="launched no kernel"):
        split_calls([(0, 1, mark), (3, 4, mark), (4, 5, "gemm")], 2)


@pytest.mark.parametrize("call", [
    lambda: time_graph([], device="cuda"),
    lambda: time_graph(lambda: None, device="cuda", calls=0),
    lambda: time_stream([lambda: None], device="cuda", rounds=0),
    lambda: profile_kernels(lambda: None, device="cuda", calls=True),
])
def test_bad_counts_are_named(call):
    with simulated_gpu(), pytest.raises(ValueError, match="fns|calls|rounds"):
        call()


def test_the_methods_of_every_mode_are_described_and_the_old_ones_kept():
    from twofour.vocabulary import TIMING_MODES as MODES

    assert set(gpu_timing.METHODS) == set(gpu_timing.LEGACY_METHODS) == set(MODES)
    assert all(m["flush"] != "write" for m in gpu_timing.METHODS.values())
    assert {m["id"] for m in gpu_timing.METHODS.values()}.isdisjoint(m["id"] for m in gpu_timing.LEGACY_METHODS.values())


def test_a_sweep_on_the_simulated_gpu_records_how_each_point_was_timed(tmp_path):
    from twofour.bench import load_results, sweep
    from twofour.vocabulary import TIMING_MODES as MODES

    with simulated_gpu(l2_bytes=L2):
        res = sweep([("toy", 256, 1024)], Ms=[1, 4], dtypes=["float32"], device="cpu", modes=MODES, warmup=1,
                    repeats=3, progress=False, command="pytest")
    back = load_results(res.save(tmp_path / "r.json"))
    assert back.schema == "twofour-bench/5"
    assert back.settings["methods"] == {m: gpu_timing.METHODS[m] for m in MODES}
    for p in back.points:
        assert p["dense"]["method"] == "lone/2"
        graph, stream, kernel = (p["modes"][m]["dense"] for m in ("graph", "stream", "kernel"))
        assert graph["method"] == "graph/2" and graph["copies"] == 3 and graph["calls_per_window"] == 18
        assert graph["host_ahead"] == 1.0 and stream["lead_calls"] == 3 and kernel["kernels"] == {GEMM_KERNEL: 1.0}
    assert back.timing_method("graph")["id"] == "graph/2"
