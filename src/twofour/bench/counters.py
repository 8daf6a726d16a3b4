"""Hardware counters of the decode GEMM, dense vs 2:4, from Nsight Compute (``ncu``) where it exists.

They test the mechanism inferred from timings (a 256-wide token tile doing padded math at M = 1
to 16): DRAM bytes (2:4 should read about 9/16 of dense's weight bytes), SM throughput and
tensor-pipe utilisation. ``scripts/gpu_measure.py counters`` runs, under ``ncu``, dense and 2:4
``F.linear`` (algorithm 0 and the best one) for one weight shape and each M of :data:`MS`, each
after a marker kernel; where ``ncu`` cannot read counters the file says so (:func:`not_available`).

Example:
    >>> text = '''==PROF== Connected
    ... "ID","Kernel Name","dram__bytes_read.sum"
    ... "","","byte"
    ... "0","at::cuda::spin_kernel(long)","0"
    ... "1","nvjet_hsh_gemm","117440512"
    ... '''
    >>> rows = parse_csv(text)
    >>> split_variants(rows, ["cuBLAS M=1"])["cuBLAS M=1"][0]["metrics"]["dram__bytes_read.sum"]
    117440512.0
"""

from __future__ import annotations

import csv
import io

from .gpu_timing import MARK_KERNEL

__all__ = ["MS", "CANDIDATES", "SCHEMA", "choose_metrics", "parse_csv", "split_variants", "not_available"]

SCHEMA = "twofour-counters/1"
MS = (1, 16, 256, 2048)
# What each candidate says; the first of a group that this ncu has is used.
CANDIDATES = {
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM throughput, % of peak",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe (wgmma) active, % of peak",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe (mma) active, % of peak",
    "sm__inst_executed_pipe_tensor_op_gmma.sum": "wgmma instructions executed",
    "gpu__time_duration.sum": "kernel duration (ns, under the profiler)",
    "launch__grid_size": "blocks launched",
}


def choose_metrics(query_output: str) -> list[str]:
    """The :data:`CANDIDATES` whose base name ``ncu --query-metrics`` lists (names differ by GPU and ncu).

    >>> choose_metrics("dram__bytes_read   Counter  # of bytes read from DRAM\\ngpu__time_duration  Counter  ...")
    ['dram__bytes_read.sum', 'gpu__time_duration.sum']
    """
    listed = {line.split()[0] for line in query_output.splitlines() if line.strip() and not line.startswith(" ")}
    return [m for m in CANDIDATES if m.split(".")[0] in listed]


def parse_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` output: ``{"id", "kernel", "metrics": {name: number or text}}``, in launch order.

    ncu's own log lines (``==PROF==``, ``==WARNING==``) and the units row are skipped.
    """
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        raise ValueError("ncu output holds no CSV table (no header row starting with \"ID\")")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = next(reader)
    rows = []
    for cells in reader:
        if len(cells) != len(header) or not cells[0].strip().isdigit():
            continue  # the units row, or a broken line
        row = dict(zip(header, cells))
        metrics = {}
        for name, value in row.items():
            if name in ("ID", "Kernel Name") or "__" not in name:
                continue
            try:
                metrics[name] = float(value.replace(",", ""))
            except ValueError:
                metrics[name] = value
        rows.append({"id": int(row["ID"]), "kernel": row.get("Kernel Name", ""), "metrics": metrics})
    return sorted(rows, key=lambda r: r["id"])


def split_variants(rows: list[dict], order: list[str]) -> dict[str, list[dict]]:
    """The kernels of each variant, cut at each marker kernel; ``order`` names the variants as the program ran them."""
    out: dict[str, list[dict]] = {}
    current = -1
    for row in rows:
        if MARK_KERNEL in row["kernel"]:
            current += 1
            if current >= len(order):
                raise ValueError(f"ncu showed more marker kernels than the {len(order)} variants run")
            out[order[current]] = []
        elif current >= 0:
            out[order[current]].append(row)
    missing = [v for v in order if v not in out]
    if missing:
        raise ValueError(f"ncu showed no kernels for {missing} (markers seen: {current + 1} of {len(order)})")
    return out


def not_available(reason: str, provenance: dict) -> dict:
    """The counters file when none could be read: says why, so that no reader mistakes it for zero."""
    return {"schema": SCHEMA, "provenance": provenance, "available": False, "reason": reason, "variants": {}}
