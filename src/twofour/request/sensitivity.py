"""What would change the verdict: the request's speedup as one assumption moves."""

from __future__ import annotations

from .evaluate import estimate
from .gemm import roofline_gemm_model
from .workload import Workload, _require_number


def sensitivity(workload: Workload, gpu, *, per_call_us, memory_ratio, scope: str = "tpot", params=None) -> list[dict]:
    """How the verdict moves with the 2:4 path's per-call cost and its kernel's efficiency.

    For every ``per_call_us`` (the 2:4 call's whole cost beyond its kernel time: device and
    host, in µs; never taken below the dense call's own) and every ``memory_ratio`` (the 2:4
    kernel's bandwidth efficiency relative to dense: 1.0 is as good as dense), the request model
    runs with the GPU's fitted parameters changed in exactly those two places, every GEMM in the
    ``cached`` scenario with that cost per call. Returns rows ``{per_call_us, memory_ratio,
    speedup}`` (``per_call_us`` as used) where ``speedup`` is :meth:`RequestEstimate.speedup` of
    ``scope`` (``"tpot"``, ``"ttft"`` or ``"request"``).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> rows = sensitivity(Workload(LLAMA_3_8B, 1, 512, 256), "H200", per_call_us=[0, 500], memory_ratio=[1.0])
        >>> rows[0]["speedup"] > 1 > rows[1]["speedup"]     # free calls win; a plan per call loses
        True
    """
    from dataclasses import replace

    from .. import roofline

    base = params if params is not None else roofline.default_params(gpu)
    rows = []
    for cost in per_call_us:
        for ratio in memory_ratio:
            # never cheaper per call than the dense path (the ceilings depend on it)
            cost_f = max(base.dense_overhead_us, _require_number("per_call_us", cost, low_open=False))
            ratio_f = _require_number("memory_ratio", ratio, high=1.0)
            q = replace(base, sparse_memory=base.dense_memory * ratio_f, sparse_host_us=base.dense_host_us,
                        sparse_overhead_us=cost_f)
            est = estimate(workload, gpu, gemm=roofline_gemm_model(gpu, workload.dtype, params=q, scenario="cached"))
            rows.append({"per_call_us": cost_f, "memory_ratio": ratio_f, "speedup": est.speedup(scope)})
    return rows
