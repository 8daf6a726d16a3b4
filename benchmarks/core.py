"""Benchmark of the toolkit core on a quiet and on a busy machine: ratios to a plain copy.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/core.py``). On a 4096 x 14336 float16
weight (a Llama-3-8B MLP shape) it times, side by side and interleaved (best of ``--repeats``):

* ``W.clone()``: allocate, read and write the weight once, the floor of a pass that returns a
  new tensor (the baseline of every ratio); each timed call starts from the same allocator
  state (see :func:`same_allocator_state`);
* ``buffer.copy_(W)`` into an existing tensor: the bare memory bandwidth, printed for reading;
* ``twofour.check(W)``, ``twofour.prune(W)``, ``twofour.unpack(p)``;
* ``twofour.to_cutlass(twofour.pack(W))``;
* PyTorch's ``sparse_semi_structured_from_dense_cutlass(W)`` on the same input;

under two conditions, in one run:

* **quiet**: nothing started by this script (a shared machine is never fully quiet);
* **busy**: this script starts one process that spins on a core (bounded: it exits by itself
  after ``--busy-seconds`` and is stopped when the condition ends, on errors too).

Absolute times mean little on a shared machine; the ratios, measured in the same condition
moments apart, are the result. For each condition it also times ``check`` and ``pack`` once
each the two ways the passes decided against (``twofour._passes.threads``): every operation on
torch's own threads, and every block in the calling thread. It exits non-zero if, in either
condition:

* check > 3x copy, pack + to_cutlass > 6x copy, or pack + to_cutlass < 2x faster than PyTorch;
* the result is not bit-identical to PyTorch's;

or if CPU time is not roughly linear in size (16x elements within 16x * 1.5 of the CPU time),
or check needs more than 0.25x the weight's size in extra memory.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import sys
import time

import torch

import twofour
from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass
from twofour._passes import threads as _threads

from _load import busy_core

CHECK_MAX, PACK_MAX, VS_TORCH_MIN = 3.0, 6.0, 2.0


def same_allocator_state() -> None:
    """Give freed memory back to the OS before a timed call, so every call allocates the same way.

    A 112 MiB ``clone`` normally gets fresh pages from the OS (and pays their page faults);
    after other large tensors were freed it can instead land in freed but still resident heap
    memory and run 4x faster (measured 37 ms and 9 ms, minutes apart). Without this the
    baseline depends on what ran before it. glibc only; elsewhere a no-op.
    """
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc has it, other C libraries may not
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def interleaved_best(steps: dict, repeats: int) -> dict:
    """Best wall time of each step over ``repeats`` rounds; each round runs every step once.

    Interleaving puts every step under the same changing background load; each call starts
    from the same allocator state (:func:`same_allocator_state`).
    """
    best = {name: float("inf") for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            same_allocator_state()
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def once(fn) -> float:
    same_allocator_state()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_extra_bytes(fn) -> int:
    """Peak bytes of tensor memory allocated (and not yet freed) while ``fn`` runs.

    Read from the PyTorch profiler's allocation events, in time order: this counts exactly the
    temporaries the toolkit creates, and nothing the rest of the process does.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    del result
    events = sorted(
        (e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=lambda e: e.start_ns()
    )
    current = peak = 0
    for event in events:
        current += event.nbytes()
        peak = max(peak, current)
    return peak


def sparse_weight(rows: int, cols: int) -> torch.Tensor:
    torch.manual_seed(0)
    W, _ = twofour.prune(torch.randn(rows, cols, dtype=torch.float16))
    return W


def identical_to_torch(W: torch.Tensor) -> bool:
    ours = twofour.to_cutlass(twofour.pack(W))
    ref = sparse_semi_structured_from_dense_cutlass(W)
    return torch.equal(ours[0].view(torch.int16), ref[0].view(torch.int16)) and torch.equal(ours[1], ref[1])


def measure(W: torch.Tensor, repeats: int) -> dict:
    packed = twofour.pack(W)
    buffer = torch.empty_like(W)
    steps = {
        "copy": lambda: W.clone(),
        "copy into a buffer": lambda: buffer.copy_(W),
        "check": lambda: twofour.check(W),
        "pack + to_cutlass": lambda: twofour.to_cutlass(twofour.pack(W)),
        "PyTorch conversion": lambda: sparse_semi_structured_from_dense_cutlass(W),
        "unpack": lambda: twofour.unpack(packed),
        "prune": lambda: twofour.prune(W),
    }
    best = interleaved_best(steps, repeats)
    # The alternatives the passes decided against, one call each: every operation on torch's
    # own threads (a fork-join per operation), and all blocks in the calling thread.
    for label, threads, workers in (("torch threads", None, 1), ("one thread", 1, 1)):
        _threads.PASS_THREADS, _threads.PASS_WORKERS = threads, workers
        try:
            best[f"check, {label}"] = once(steps["check"])
            best[f"pack + to_cutlass, {label}"] = once(steps["pack + to_cutlass"])
        finally:
            _threads.PASS_THREADS, _threads.PASS_WORKERS = 1, None
    return best


def report(condition: str, best: dict) -> list[str]:
    """Print one condition's table; return the targets it missed."""
    copy = best["copy"]
    notes = {
        "check": f"target <= {CHECK_MAX:g}x copy",
        "pack + to_cutlass": f"target <= {PACK_MAX:g}x copy",
        "copy into a buffer": "no allocation: the bandwidth floor (for reading, not a target)",
    }
    print(f"\n[{condition}] {'step':<34}{'best':>10}{'x copy':>9}  note")
    for name, t in best.items():
        kind = "one call" if "," in name else ""
        print(f"[{condition}] {name:<34}{t * 1e3:>7.1f} ms{t / copy:>9.2f}  {notes.get(name, kind)}")
    speedup = best["PyTorch conversion"] / best["pack + to_cutlass"]
    print(f"[{condition}] pack + to_cutlass is {speedup:.2f}x faster than PyTorch's conversion "
          f"(target >= {VS_TORCH_MIN:g}x)")
    missed = []
    if best["check"] / copy > CHECK_MAX:
        missed.append(f"{condition}: check {best['check'] / copy:.2f}x copy > {CHECK_MAX:g}x")
    if best["pack + to_cutlass"] / copy > PACK_MAX:
        missed.append(f"{condition}: pack + to_cutlass {best['pack + to_cutlass'] / copy:.2f}x copy > {PACK_MAX:g}x")
    if speedup < VS_TORCH_MIN:
        missed.append(f"{condition}: only {speedup:.2f}x faster than PyTorch")
    return missed


def best_cpu(steps: dict, repeats: int) -> dict:
    """Least process CPU time (every thread) of each step over ``repeats`` interleaved rounds."""
    best = {name: float("inf") for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            same_allocator_state()
            start = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - start)
    return best


def scaling(rows: int, cols: int, repeats: int) -> list[str]:
    """CPU time per element at 1x, 4x and 16x elements, all sizes interleaved in each round.

    CPU time, not wall time: this checks that the work grows linearly with the weight, and on a
    shared machine the wall time of a short call is more often lucky than that of a long one.
    """
    print("\nscaling (same aspect ratio; CPU time of all threads, so load does not skew it):")
    print(f"{'elements':>10}{'check ms':>11}{'pack ms':>10}{'check/elem':>12}{'pack/elem':>11}")
    sizes = {factor: sparse_weight(rows // divisor, cols // divisor) for factor, divisor in ((1, 4), (4, 2), (16, 1))}
    steps = {}
    for factor, Wf in sizes.items():
        steps[(factor, "check")] = lambda Wf=Wf: twofour.check(Wf)
        steps[(factor, "pack")] = lambda Wf=Wf: twofour.to_cutlass(twofour.pack(Wf))
    best = best_cpu(steps, repeats)
    base = None
    missed = []
    for factor, Wf in sizes.items():
        per = (best[(factor, "check")] / Wf.numel(), best[(factor, "pack")] / Wf.numel())
        base = base or per
        print(f"{factor:>9}x{best[(factor, 'check')] * 1e3:>11.1f}{best[(factor, 'pack')] * 1e3:>10.1f}"
              f"{per[0] / base[0]:>12.2f}{per[1] / base[1]:>11.2f}")
        if factor == 16 and (per[0] / base[0] > 1.5 or per[1] / base[1] > 1.5):
            missed.append("CPU time per element grows by more than 1.5x from 1x to 16x")
    return missed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=14336)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds per condition (default 5)")
    parser.add_argument("--busy-seconds", type=float, default=300.0,
                        help="the busy process exits by itself after this long (default 300)")
    args = parser.parse_args(argv)

    W = sparse_weight(args.rows, args.cols)
    w_bytes = W.numel() * W.element_size()
    print(f"weight: {args.rows} x {args.cols} float16 ({w_bytes / 2**20:.0f} MiB), torch {torch.__version__}, "
          f"torch threads {torch.get_num_threads()}; passes: {_threads.worker_count(1 << 20)} worker thread(s) "
          f"taking whole blocks, one thread per operation")
    missed = []
    identical = identical_to_torch(W)
    print(f"bit-identical to PyTorch's conversion: {identical}")
    if not identical:
        missed.append("not bit-identical to PyTorch")

    missed += report("quiet", measure(W, args.repeats))
    with busy_core(args.busy_seconds):
        missed += report("busy", measure(W, args.repeats))
    missed += scaling(args.rows, args.cols, args.repeats)

    extra_check = peak_extra_bytes(lambda: twofour.check(W))
    extra_pack = peak_extra_bytes(lambda: twofour.pack(W))
    packed_size = twofour.packed_bytes(tuple(W.shape), W.dtype)
    print(f"\npeak extra memory: check {extra_check / w_bytes:.3f}x the weight (target <= 0.25x); "
          f"pack {extra_pack / w_bytes:.3f}x, of which its output is {packed_size / w_bytes:.4f}x")
    if extra_check / w_bytes > 0.25:
        missed.append(f"check used {extra_check / w_bytes:.3f}x extra memory")

    if missed:
        print("\nMISSED: " + "; ".join(missed))
        return 1
    print("\nall targets met in both conditions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
