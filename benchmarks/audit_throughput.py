"""How fast does ``twofour audit`` read a checkpoint, compared with reading the file, quiet and busy?

Goals (issues 5 and 17): the audit reads weights at >= 1/3 of this machine's file read
bandwidth, on the machine as it is and with another process keeping one core busy; and its
private (anonymous) memory stays a small fraction of the file, also when the file is one very
wide row (a single block of a pass must not be the whole row).

The script writes a ~1 GB safetensors file of float16 Llama-sized linear weights (half of them
pruned 2:4, half dense) and a ~0.5 GB file holding one row, then measures, each best of
``--repeats``, in each condition (quiet, busy):

* **file read**: reading the whole file sequentially in 16 MiB chunks, the bandwidth floor;
* **audit**: ``twofour.dispatch.audit`` on the opened checkpoint (memory-mapped, one tensor at a
  time, full 2:4 check of every weight, verdicts for a compute capability 9.0 GPU);

both **cold** (the file's pages evicted from the page cache with ``posix_fadvise(DONTNEED)``
first) and **warm**. Anonymous memory is sampled from ``/proc/self/status`` (``RssAnon``) every
few milliseconds while a fresh process audits each file; the peak above the level before that
audit (after a tiny warm-up audit) is reported. The files
are deleted at the end unless ``--keep`` is given. Not part of ``make test``: it takes a few
minutes and 1.5 GB of disk.

    .venv/bin/python benchmarks/audit_throughput.py [--gb 1] [--dir /tmp] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
from safetensors.torch import save_file

import twofour
from twofour.dispatch import audit, hypothetical_gpu, open_checkpoint

from _load import busy_core

CHUNK = 16 * 2**20
SHAPES = [(14336, 4096), (4096, 14336), (4096, 4096), (1024, 4096)]  # Llama-3-8B MLP and attention
ANON_MAX = 0.10  # peak private memory, as a fraction of the file


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


def write_wide_row(path: str, n_bytes: int) -> int:
    K = n_bytes // 2 // 4096 * 4096
    W, _ = twofour.prune(torch.randn(1, K, generator=torch.Generator().manual_seed(1)).half())
    save_file({"wide.weight": W}, path)
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


def rss_anon() -> int:
    """Private (anonymous) resident bytes of this process."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def run_audit(path: str):
    with open_checkpoint(path) as ckpt:
        return audit(ckpt, 4096, target=hypothetical_gpu((9, 0), name="H100"))


_MEMORY_PROBE = """
import sys, threading, time
sys.path.insert(0, {here!r})
import audit_throughput as bench
bench.run_audit({warmup!r})  # imports and first-use allocations happen before the baseline
base = bench.rss_anon()
peak = [base]
done = threading.Event()

def sample():
    while not done.is_set():
        peak[0] = max(peak[0], bench.rss_anon())
        time.sleep(0.002)

t = threading.Thread(target=sample, daemon=True)
t.start()
bench.run_audit({path!r})
done.set()
t.join()
print(max(peak[0], bench.rss_anon()) - base)
"""


def peak_anon(path: str, warmup: str) -> int:
    """Peak RssAnon of a fresh process auditing ``path``, above its level after a small warm-up audit.

    A fresh process, so memory that an earlier audit freed (and the allocator kept) cannot
    hide this audit's own.
    """
    code = _MEMORY_PROBE.format(here=os.path.dirname(os.path.abspath(__file__)), warmup=warmup, path=path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1])


def best(fn, path: str, repeats: int, cold: bool) -> float:
    times = []
    for _ in range(repeats):
        if cold:
            evict(path)
        t0 = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(condition: str, path: str, n_bytes: int, repeats: int) -> list[str]:
    missed = []
    for cold in (True, False):
        label = "cold" if cold else "warm"
        t_read = best(read_file, path, repeats, cold)
        t_audit = best(run_audit, path, repeats, cold)
        read_gbs, audit_gbs = n_bytes / t_read / 1e9, n_bytes / t_audit / 1e9
        ratio = audit_gbs / read_gbs
        print(f"[{condition}] {label}: file read {read_gbs:.2f} GB/s ({t_read:.2f} s), audit {audit_gbs:.2f} GB/s "
              f"({t_audit:.2f} s): audit / read = {ratio:.2f}")
        if cold and ratio < 1 / 3:
            missed.append(f"{condition}: cold audit / read = {ratio:.2f} < 1/3")
    return missed


def memory(condition: str, files: dict, warmup: str) -> list[str]:
    missed = []
    for label, (path, n_bytes) in files.items():
        anon = peak_anon(path, warmup)
        print(f"[{condition}] peak private memory auditing the {label}: {anon / 2**20:.1f} MiB = "
              f"{anon / n_bytes:.3f} of the file (target <= {ANON_MAX})")
        if anon / n_bytes > ANON_MAX:
            missed.append(f"{condition}: {label} used {anon / n_bytes:.3f} of the file in private memory")
    return missed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated checkpoint in GB (default 1)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where to write it (default: the temp dir)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the files afterwards")
    args = ap.parse_args(argv)
    path = os.path.join(args.dir, "twofour-audit-bench.safetensors")
    wide = os.path.join(args.dir, "twofour-audit-bench-wide.safetensors")
    small = os.path.join(args.dir, "twofour-audit-bench-small.safetensors")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    try:
        t0 = time.perf_counter()
        n_bytes = write_checkpoint(path, int(args.gb * 1e9))
        n_wide = write_wide_row(wide, int(args.gb * 0.5e9))
        print(f"wrote {path}: {n_bytes / 1e9:.2f} GB and {wide}: one row of {n_wide / 1e9:.2f} GB "
              f"in {time.perf_counter() - t0:.1f} s")
        save_file({"small.weight": torch.zeros(64, 64, dtype=torch.float16)}, small)
        print(run_audit(path).summary())  # also a warm-up
        files = {"checkpoint": (path, n_bytes), "single wide row": (wide, n_wide)}
        missed = measure("quiet", path, n_bytes, args.repeats) + memory("quiet", files, small)
        with busy_core(600):
            missed += measure("busy", path, n_bytes, args.repeats) + memory("busy", files, small)
        if missed:
            print("MISSED: " + "; ".join(missed))
            return 1
        print("goals met in both conditions: audit >= 1/3 of cold file read bandwidth, "
              f"private memory <= {ANON_MAX} of the file")
        return 0
    finally:
        for p in (path, wide, small):
            if not args.keep and os.path.exists(p):
                os.remove(p)
                print(f"deleted {p}")


if __name__ == "__main__":
    sys.exit(main())
