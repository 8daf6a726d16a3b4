"""How fast does ``twofour audit`` read a checkpoint, compared with reading the file itself?

Goal (issue #5): the audit reads weights at >= 1/3 of this machine's file read bandwidth.

The script writes a ~2 GB safetensors file of float16 Llama-sized linear weights (half of
them pruned 2:4, half dense), then measures, each best of ``--repeats``:

* **file read**: reading the whole file sequentially in 16 MiB chunks, the bandwidth floor;
* **audit**: ``twofour.dispatch.audit`` on the opened checkpoint (memory-mapped, one tensor at a
  time, full 2:4 check of every weight, verdicts for a compute capability 9.0 GPU).

Both are measured **cold** (the file's pages evicted from the page cache with
``posix_fadvise(DONTNEED)`` first, so bytes come from the disk) and **warm** (file already in
the page cache, so "bandwidth" is memory copy speed). The file is deleted at the end unless
``--keep`` is given. Not part of ``make test``: it takes about a minute and 2 GB of disk.

    .venv/bin/python benchmarks/audit_throughput.py [--gb 2] [--dir /tmp] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

import torch
from safetensors.torch import save_file

import twofour
from twofour.dispatch import audit, hypothetical_gpu, open_checkpoint

CHUNK = 16 * 2**20
SHAPES = [(14336, 4096), (4096, 14336), (4096, 4096), (1024, 4096)]  # Llama-3-8B MLP and attention


def write_checkpoint(path: str, n_bytes_target: int) -> int:
    tensors, total, i = {}, 0, 0
    g = torch.Generator().manual_seed(0)
    while total < n_bytes_target:
        N, K = SHAPES[i % len(SHAPES)]
        W = torch.randn(N, K, generator=g, dtype=torch.float32).to(torch.float16)
        if i % 2 == 0:
            W, _ = twofour.prune(W)
        name = f"model.layers.{i // len(SHAPES)}.proj{i % len(SHAPES)}.weight"
        tensors[name] = W
        total += W.numel() * W.element_size()
        i += 1
    save_file(tensors, path)
    return os.path.getsize(path)


def evict(path: str) -> None:
    """Drop the file's pages from the page cache (no root needed for clean pages)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_file(path: str) -> int:
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            got = f.readinto(view)
            if not got:
                return n
            n += got


def run_audit(path: str):
    with open_checkpoint(path) as ckpt:
        return audit(ckpt, 4096, target=hypothetical_gpu((9, 0), name="H100"))


def best(fn, path: str, repeats: int, cold: bool) -> float:
    times = []
    for _ in range(repeats):
        if cold:
            evict(path)
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=2.0, help="size of the generated file in GB (default 2)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to write it (default: the temp dir)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the file afterwards")
    args = ap.parse_args(argv)
    path = os.path.join(args.dir, "twofour-audit-bench.safetensors")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    try:
        t0 = time.perf_counter()
        n_bytes = write_checkpoint(path, int(args.gb * 1e9))
        print(f"wrote {path}: {n_bytes / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s")
        report = run_audit(path)  # also a warm-up
        print(report.summary())
        results = {}
        for cold in (True, False):
            label = "cold" if cold else "warm"
            t_read = best(read_file, path, args.repeats, cold)
            t_audit = best(run_audit, path, args.repeats, cold)
            results[label] = (n_bytes / t_read / 1e9, n_bytes / t_audit / 1e9)
            read_gbs, audit_gbs = results[label]
            print(
                f"{label}: file read {read_gbs:.2f} GB/s ({t_read:.2f} s), audit {audit_gbs:.2f} GB/s "
                f"({t_audit:.2f} s): audit / read = {audit_gbs / read_gbs:.2f}"
            )
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        print(f"peak resident memory of this process: {peak_gb:.2f} GB (file {n_bytes / 1e9:.2f} GB)")
        ratio = results["cold"][1] / results["cold"][0]
        ok = ratio >= 1 / 3
        print(f"goal audit >= 1/3 of cold file read bandwidth: {'met' if ok else 'MISSED'} ({ratio:.2f})")
        return 0 if ok else 1
    finally:
        if not args.keep and os.path.exists(path):
            os.remove(path)
            print(f"deleted {path}")


if __name__ == "__main__":
    sys.exit(main())
