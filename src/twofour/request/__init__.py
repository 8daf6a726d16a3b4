"""Request-time model of a decoder-only transformer: which part of a request can 2:4 speed up?

A request is one prefill step (its end is the time to first token, TTFT) and ``output_len - 1``
decode steps; each step's kernels get a roofline time. 2:4 changes only the pruned linear
layers: the rest is the ``1 - p`` of Amdahl's law (:mod:`twofour.amdahl`).

>>> from twofour.models import LLAMA_3_8B
>>> est = estimate(Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=256), "H100")
>>> round(est.decode.p, 3)            # bs1 decode: streaming the pruned weights is most of the time
0.938
>>> fast = estimate(Workload(LLAMA_3_8B, 1, 512, 256), "H100", gemm_speedup=1.6)   # a measured GEMM speedup
>>> round(fast.speedup("tpot"), 3)     # Amdahl: 1 / ((1 - p) + p / 1.6)
1.543

One file per stage: :mod:`.workload` -> :mod:`.gemm` and :mod:`.measured` -> :mod:`.inputs` ->
:mod:`.evaluate` (the arithmetic, spelled out) -> :mod:`.sensitivity`; re-exported here.
"""

from .evaluate import PhaseTime, RequestEstimate, estimate, evaluate
from .inputs import RequestInputs, build_inputs, gemm_shapes
from .gemm import ideal_gemm_model, roofline_gemm_model
from .measured import measured_gemm_detail, measured_gemm_speedup, searched_gemm_speedup
from .sensitivity import kernel_bandwidth_ratio, sensitivity
from .workload import (
    BLOCK_LINEARS,
    COMPONENTS,
    DTYPE_BYTES,
    LINEAR_KINDS,
    OUT_BYTES,
    PHASES,
    WORKLOADS,
    Assumptions,
    GemmTime,
    Machine,
    Workload,
    decode_gemm_m,
    expert_gemm_m,
    tensor_parallel_shape,
)

__all__ = [
    "BLOCK_LINEARS",
    "LINEAR_KINDS",
    "COMPONENTS",
    "DTYPE_BYTES",
    "OUT_BYTES",
    "Machine",
    "Assumptions",
    "Workload",
    "GemmTime",
    "RequestInputs",
    "PhaseTime",
    "RequestEstimate",
    "PHASES",
    "gemm_shapes",
    "decode_gemm_m",
    "expert_gemm_m",
    "tensor_parallel_shape",
    "ideal_gemm_model",
    "roofline_gemm_model",
    "measured_gemm_detail",
    "measured_gemm_speedup",
    "searched_gemm_speedup",
    "sensitivity",
    "kernel_bandwidth_ratio",
    "build_inputs",
    "evaluate",
    "estimate",
    "WORKLOADS",
]
