"""Benchmark of the toolkit core: check, pack + to_cutlass, against a plain copy and PyTorch.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/core.py``). On a 4096 x 14336 float16
weight (a Llama-3-8B MLP shape) it times, best of 3:

* ``W.clone()``: one read and one write of the weight, the memory-bandwidth floor of a pass;
* ``twofour.check(W)``;
* ``twofour.to_cutlass(twofour.pack(W))``;
* PyTorch's ``sparse_semi_structured_from_dense_cutlass(W)`` on the same input;

and reports ratios (this machine is shared and noisy, so absolute times mean little), the
scaling with size (1x, 4x, 16x elements), and the peak extra resident memory of ``check`` and
``pack`` relative to the weight's size. It exits non-zero if a target is missed:

* check <= 3x copy, pack + to_cutlass <= 6x copy and >= 2x faster than PyTorch, bit-identical;
* time roughly linear in size (16x elements within 16x * 1.5 of the time);
* check needs at most 0.25x the weight's size in extra memory.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import twofour
from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass


def best_of(fn, repeats: int = 3) -> float:
    """Best wall time in seconds of ``repeats`` calls (the least disturbed by other processes)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=14336)
    args = parser.parse_args(argv)
    failures = []

    W = sparse_weight(args.rows, args.cols)
    w_bytes = W.numel() * W.element_size()
    print(f"weight: {args.rows} x {args.cols} float16 ({w_bytes / 2**20:.0f} MiB), torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads")

    t_copy = best_of(lambda: W.clone())
    t_check = best_of(lambda: twofour.check(W))
    t_pack = best_of(lambda: twofour.to_cutlass(twofour.pack(W)))
    t_torch = best_of(lambda: sparse_semi_structured_from_dense_cutlass(W))
    ours = twofour.to_cutlass(twofour.pack(W))
    ref = sparse_semi_structured_from_dense_cutlass(W)
    identical = torch.equal(ours[0].view(torch.int16), ref[0].view(torch.int16)) and torch.equal(ours[1], ref[1])

    rows = [
        ("copy (W.clone)", t_copy, 1.0, ""),
        ("check", t_check, t_check / t_copy, "target <= 3x copy"),
        ("pack + to_cutlass", t_pack, t_pack / t_copy, "target <= 6x copy"),
        ("PyTorch CUTLASS conversion", t_torch, t_torch / t_copy, ""),
    ]
    print(f"\n{'step':<30}{'best of 3':>12}{'x copy':>10}  note")
    for name, t, ratio, note in rows:
        print(f"{name:<30}{t * 1e3:>9.1f} ms{ratio:>10.2f}  {note}")
    speedup = t_torch / t_pack
    print(f"\npack + to_cutlass is {speedup:.2f}x faster than PyTorch's conversion (target >= 2x); "
          f"bit-identical: {identical}")
    if t_check / t_copy > 3:
        failures.append(f"check {t_check / t_copy:.2f}x copy > 3x")
    if t_pack / t_copy > 6:
        failures.append(f"pack + to_cutlass {t_pack / t_copy:.2f}x copy > 6x")
    if speedup < 2:
        failures.append(f"only {speedup:.2f}x faster than PyTorch")
    if not identical:
        failures.append("not bit-identical to PyTorch")

    print("\nscaling (same aspect ratio):")
    print(f"{'elements':>10}{'check ms':>11}{'pack ms':>10}{'check/elem':>12}{'pack/elem':>11}")
    base = None
    for factor, divisor in ((1, 4), (4, 2), (16, 1)):  # both dims / 4, / 2, / 1
        r, c = args.rows // divisor, args.cols // divisor
        Wf = sparse_weight(r, c)
        tc = best_of(lambda: twofour.check(Wf))
        tp = best_of(lambda: twofour.to_cutlass(twofour.pack(Wf)))
        per = (tc / Wf.numel(), tp / Wf.numel())
        base = base or per
        print(f"{factor:>9}x{tc * 1e3:>11.1f}{tp * 1e3:>10.1f}{per[0] / base[0]:>12.2f}{per[1] / base[1]:>11.2f}")
        if factor == 16 and (per[0] / base[0] > 1.5 or per[1] / base[1] > 1.5):
            failures.append("time per element grows by more than 1.5x from 1x to 16x")
        del Wf

    extra_check = peak_extra_bytes(lambda: twofour.check(W))
    extra_pack = peak_extra_bytes(lambda: twofour.pack(W))
    packed_size = twofour.packed_bytes(W.shape, W.dtype)
    print(f"\npeak extra memory: check {extra_check / w_bytes:.3f}x the weight (target <= 0.25x); "
          f"pack {extra_pack / w_bytes:.3f}x, of which its output is {packed_size / w_bytes:.4f}x")
    if extra_check / w_bytes > 0.25:
        failures.append(f"check used {extra_check / w_bytes:.3f}x extra memory")

    if failures:
        print("\nMISSED: " + "; ".join(failures))
        return 1
    print("\nall targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
