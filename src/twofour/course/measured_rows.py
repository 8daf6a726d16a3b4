"""Measured kernel data as rows of numbers, for chapter 4's bandwidth figure and the decode-loss
explanation, without importing matplotlib. :func:`measured_on` names where and when data was measured.

Example:
    >>> from twofour.bench import recorded_results
    >>> row = bandwidth_rows(recorded_results("gpu"))[0]
    >>> sorted(k for k in row if "measured" in k)
    ['2:4 measured', 'dense measured', 'measured on']
"""

from __future__ import annotations

from ..roofline import predict

__all__ = ["measured_on", "bandwidth_rows", "decode_bandwidth_range"]


def measured_on(gpu: str, date: str | None = None) -> str:
    """Where and when data was measured, as a plot names it.

    Example:
        >>> measured_on("NVIDIA H200", "2026-11-30T15:07:22+00:00")
        'H200, measured 2026-11-30'
    """
    if not isinstance(gpu, str) or not gpu.strip():
        raise ValueError(f"gpu must be the device name as recorded (e.g. 'NVIDIA H200'), got {gpu!r}")
    name = " ".join(gpu.split()).removeprefix("NVIDIA ")
    day = str(date or "")[:10]
    return f"{name}, measured {day}" if day else f"{name}, measured"


def bandwidth_rows(results_list, dtype: str = "float16", M: int = 1) -> list[dict]:
    """Weight bytes over kernel-mode time at ``M``, dense and 2:4 (packed bytes), measured and modelled (TB/s)."""
    from ..packing import packed_bytes
    from ..vocabulary import dtype_key

    d = dtype_key(dtype)
    out = []
    for res in results_list:
        for r in res.gpu_points("kernel"):
            if r["M"] != M or r["dtype"] != dtype:
                continue
            p = predict(M, r["N"], r["K"], d, "H200", scenario="kernel", l2="flushed")  # as the bench measured
            wd = r["N"] * r["K"] * 2
            ws = packed_bytes((r["N"], r["K"]), 16, 2, 4, meta_bits_per_value=2)
            out.append({"shape": r["shape"], "N": r["N"], "K": r["K"], "dense measured": wd / r["dense_ms"] / 1e9,
                        "measured on": measured_on(res.provenance.get("gpu_name") or "unknown GPU", res.provenance.get("date")),
                        "dense model": wd / p.dense_us / 1e6, "2:4 measured": ws / r["sparse_ms"] / 1e9,
                        "2:4 model": ws / p.sparse_us / 1e6, "2:4 CTAs": p.sparse.ctas, "dense CTAs": p.dense.ctas,
                        "flagged": r["flagged"]})
    return sorted(out, key=lambda r: (r["N"], r["K"]))


def decode_bandwidth_range(results_list, dtype: str = "float16", m_max: int = 16) -> tuple[float, float]:
    """Lowest and highest measured 2:4 / dense achieved bandwidth (weight bytes over kernel time), unflagged, M <= ``m_max``.

    Example:
        >>> from twofour.bench import recorded_results
        >>> lo, hi = decode_bandwidth_range(recorded_results("gpu"))
        >>> f"{lo:.1%} to {hi:.1%}"
        '16.7% to 49.5%'
    """
    from ..vocabulary import DTYPES, dtype_key

    packed = DTYPES[dtype_key(dtype)].packed_ratio
    ratios = [packed * r["dense_ms"] / r["sparse_ms"]  # (packed bytes / t_s) / (dense bytes / t_d)
              for res in results_list for r in res.gpu_points("kernel")
              if r["M"] <= m_max and r["dtype"] == dtype and not r["flagged"]]
    if not ratios:
        raise ValueError(f"no unflagged {dtype} kernel-mode points with M <= {m_max} in the results given")
    return min(ratios), max(ratios)
