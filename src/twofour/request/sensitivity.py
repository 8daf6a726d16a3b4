"""What would change the verdict: the request's speedup as the 2:4 kernel's two weak points move."""

from __future__ import annotations

from .evaluate import estimate
from .workload import GemmTime, Workload, require_number


def _sides(pred, dtype: str):
    """Bytes each side must stream (no split-K partials), and each side's time beyond streaming and math (µs)."""
    from ..vocabulary import DTYPES
    from ..packing import packed_bytes

    f = DTYPES[dtype]
    act = pred.M * pred.K * f.in_bytes + pred.M * pred.N * f.out_bytes
    dense_bytes = pred.N * pred.K * f.in_bytes + act
    sparse_bytes = (packed_bytes((pred.N, pred.K), f.value_bits, f.n, f.m, meta_bits_per_value=f.meta_bits)
                    + (pred.M_padded - pred.M) * pred.K * f.in_bytes + act)
    d = pred.dense
    dense_fixed = pred.dense_us - max(d.t_compute_us, d.t_memory_us)
    return dense_bytes, sparse_bytes, dense_fixed


def kernel_bandwidth_ratio(workload: Workload, gpu, *, params=None) -> float:
    """The default 2:4 kernel's achieved bandwidth over cuBLAS's, on the workload's pruned decode GEMMs (model).

    Bytes over memory time, summed over the step's pruned GEMMs; far below 1 where the 2:4
    kernel keeps few SMs busy.

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> 0.2 < kernel_bandwidth_ratio(Workload(LLAMA_3_8B, 1, 512, 256, dtype="fp16"), "H200") < 0.7
        True
    """
    from .. import roofline
    from ..models import linear_shapes

    M = workload.batch + workload.prefill_chunk_tokens
    dense = sparse = dense_t = sparse_t = 0.0
    for s in [s for s in linear_shapes(workload.model, include_lm_head=True) if s.name in workload.pruned]:
        p = roofline.predict(M, s.out_features, s.in_features, workload.dtype, gpu, None, params, scenario="kernel")
        db, sb, _ = _sides(p, workload.dtype)
        dense, sparse = dense + db * s.count, sparse + sb * s.count
        dense_t, sparse_t = dense_t + p.dense.t_memory_us * s.count, sparse_t + p.sparse.t_memory_us * s.count
    return (sparse / sparse_t) / (dense / dense_t)


def sensitivity(workload: Workload, gpu, *, per_call_us, memory_ratio, scope: str = "tpot", params=None) -> list[dict]:
    """How the verdict moves with the 2:4 path's per-call cost and its kernel's bandwidth.

    Every GEMM runs in the ``cached`` scenario; the dense side is the fitted model's. The 2:4
    side is a what-if kernel: it streams its bytes (packed weight, padded ``x``, ``y``) at
    ``memory_ratio`` times cuBLAS's bandwidth on the same GEMM (:func:`kernel_bandwidth_ratio`
    is the default kernel's), does the math of its real rows only (a tile as narrow as the rows),
    and costs ``per_call_us`` per call beyond that (never below the dense call's own). Returns
    rows ``{per_call_us, memory_ratio, speedup}`` for ``scope`` (``"tpot"``, ``"ttft"`` or ``"request"``).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> rows = sensitivity(Workload(LLAMA_3_8B, 1, 512, 256), "H200", per_call_us=[0, 500], memory_ratio=[1.0])
        >>> rows[0]["speedup"] > 1 > rows[1]["speedup"]     # free calls win; a plan per call loses
        True
    """
    from .. import roofline

    rows = []
    for cost in per_call_us:
        cost_f = require_number("per_call_us", cost, low_open=False)
        for ratio in memory_ratio:
            ratio_f = require_number("memory_ratio", ratio, high=1.0)

            def gemm(M: int, N: int, K: int, cost_f=cost_f, ratio_f=ratio_f) -> GemmTime:
                p = roofline.predict(M, N, K, workload.dtype, gpu, None, params, scenario="cached")
                dense_bytes, sparse_bytes, dense_fixed = _sides(p, workload.dtype)
                bw = dense_bytes / p.dense.t_memory_us  # bytes per µs cuBLAS achieves here
                tile_m = p.sparse.tile_m
                useful = p.M_padded / (-(-p.M_padded // tile_m) * tile_m)  # real columns of the token tiles
                sparse_us = max(p.sparse.t_compute_us * useful, sparse_bytes / (ratio_f * bw)) + max(cost_f, dense_fixed)
                return GemmTime(p.dense_us * 1e-6, sparse_us * 1e-6)

            est = estimate(workload, gpu, gemm=gemm)
            rows.append({"per_call_us": cost_f, "memory_ratio": ratio_f, "speedup": est.speedup(scope)})
    return rows
