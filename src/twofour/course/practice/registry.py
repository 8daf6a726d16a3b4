"""What a bank expression may name: values, functions, namespaces and the result types it may read.

Everything is listed by name, nothing reached through a module object: a *namespace* maps the names
a bank uses from a part of the toolkit (``roofline.crossover_m`` exists, ``roofline.os`` does not),
and a returned value is read only through :data:`RESULT_TYPES` (``est.speedup('tpot')``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import torch

from ... import amdahl, hardware, models, packing, request, roofline
from ...dispatch import rules as dispatch_rules
from ...quality import published as quality_published
from ...roofline import formats
from .. import answer as course_answer
from ..call_paths import linear_path_cost
from ..decode_loss import decode_loss_explanation
from .helpers import (compute_bound_m, cost_per_token_ratio, first_torch_pinning, measured_bandwidth_ratio,
                      measured_crossover_m, measured_gemm, measured_phase_speedup, published_speedup, published_value,
                      recorded_launch, replaced_timings, searched_gemm, slo_goodput, speculative_speedup, transposable_patterns, wave_count)
from .planning import (kv_batch_limit, normal_quantile, one_shot_allreduce_us, ring_allreduce_us, runs_for_power,
                       runs_for_t_test_power, t_test_power, tp_degrees)

__all__ = ["Namespace", "Function", "NAMESPACE", "RESULT_TYPES", "STR_METHODS"]


@dataclass(frozen=True, slots=True, eq=False)
class Namespace:
    """A named, read-only mapping of what an expression may reach as ``name.attr``."""

    name: str
    members: MappingProxyType

    def __repr__(self) -> str:
        return f"<bank namespace {self.name}: {', '.join(sorted(self.members))}>"


@dataclass(frozen=True, slots=True, eq=False)
class Function:
    """A function registered for banks: it may be called, never passed around or inspected."""

    name: str
    fn: Callable

    def __repr__(self) -> str:
        return f"<bank function {self.name}>"


_COMB_MAX_N = 1024


def _comb(n, k):
    """``math.comb`` for the small counts a bank asks about (``n <= 1024``), so it cannot run for minutes."""
    for name, v in (("n", n), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _COMB_MAX_N:
            raise ValueError(f"math.comb: {name} must be an int in [0, {_COMB_MAX_N}], got {v!r}")
    return math.comb(n, k)


def _ns(name: str, **members) -> Namespace:
    return Namespace(name, MappingProxyType({k: Function(f"{name}.{k}", v) if callable(v) else v
                                             for k, v in members.items()}))


# The top-level names: exactly what the shipped bank uses (every `expr:` of
# twofour/course/data/practice.yaml; tests/course/practice/test_practice.py fails on a name no expression uses).
NAMESPACE: dict[str, object] = {
    "amdahl": _ns("amdahl", speedup=amdahl.speedup, max_speedup=amdahl.max_speedup,
                  combined_speedup=amdahl.combined_speedup, averaged_speedup_mistake=amdahl.averaged_speedup_mistake),
    "packing": _ns("packing", dense_bytes=packing.dense_bytes, packed_bytes=packing.packed_bytes,
                   packed_ratio=packing.packed_ratio, index_bits=packing.index_bits),
    "roofline": _ns("roofline", arithmetic_intensity=roofline.arithmetic_intensity, ridge_point=roofline.ridge_point,
                    ceilings=roofline.ceilings, crossover_m=roofline.crossover_m, wave_efficiency=roofline.wave_efficiency),
    "hardware": _ns("hardware", get_gpu=hardware.get_gpu),
    "models": _ns("models", parameter_counts=models.parameter_counts),
    "request": _ns("request", WORKLOADS=request.WORKLOADS,
                   Assumptions=request.Assumptions),
    "published": _ns("published", WANDA_LLAMA2=quality_published.WANDA_LLAMA2,
                     MASKLLM_LLAMA2_7B=quality_published.MASKLLM_LLAMA2_7B, SPARSE_LLAMA_8B=quality_published.SPARSE_LLAMA_8B,
                     ratio=quality_published.ratio),
    "math": _ns("math", ceil=math.ceil, comb=_comb),
    "formats": _ns("formats", GPU_MEMORY_BYTES=formats.GPU_MEMORY_BYTES,
                   TORCHAO_LLAMA3_8B_A100=formats.TORCHAO_LLAMA3_8B_A100,
                   break_even_bandwidth_ratio=formats.break_even_bandwidth_ratio,
                   bits_per_weight=formats.bits_per_weight, capacity_at_tpot=formats.capacity_at_tpot,
                   decode_step_bytes=formats.decode_step_bytes, kv_bytes_per_token=formats.kv_bytes_per_token,
                   model_weight_bytes=formats.model_weight_bytes),
    "rules": _ns("rules", TORCH_CUSPARSELT_PINS=dispatch_rules.TORCH_CUSPARSELT_PINS,
                 MIN_CUSPARSELT_FOR_BLACKWELL=dispatch_rules.MIN_CUSPARSELT_FOR_BLACKWELL,
                 MIN_CUSPARSELT_FOR_FP8_SM89=dispatch_rules.MIN_CUSPARSELT_FOR_FP8_SM89,
                 cusparselt_version_str=dispatch_rules.cusparselt_version_str),
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "int8": torch.int8,
    "fp8": torch.float8_e4m3fn,
    "LLAMA_3_8B": models.LLAMA_3_8B,
    "LLAMA_3_70B": models.LLAMA_3_70B,
    **{fn.__name__: Function(fn.__name__, fn) for fn in (
        request.Workload, request.estimate, request.decode_gemm_m, request.expert_gemm_m, request.tensor_parallel_shape,
        course_answer.verdict_table, course_answer.bf16_rows, decode_loss_explanation,
        wave_count, cost_per_token_ratio, published_speedup, published_value, measured_gemm, measured_crossover_m,
        measured_phase_speedup, replaced_timings, measured_bandwidth_ratio, recorded_launch, speculative_speedup,
        slo_goodput, searched_gemm, compute_bound_m, transposable_patterns, first_torch_pinning,
        runs_for_power, tp_degrees, normal_quantile, kv_batch_limit, ring_allreduce_us, one_shot_allreduce_us,
        runs_for_t_test_power, t_test_power,
        linear_path_cost,
        min, max,
    )},
}

# Values registered functions return, by exact type: (fields, methods) an expression may use.
# A type not listed can be held and passed back to a registered function, never looked into.
RESULT_TYPES: dict[type, tuple[frozenset, frozenset]] = {
    models.TransformerConfig: (frozenset({"hidden", "intermediate", "layers", "kv_dim", "heads", "kv_heads", "vocab"}), frozenset()),
    hardware.GPUSpec: (frozenset({"backends", "capability", "mem_bw_gbs", "sms"}), frozenset({"peak_tflops"})),
    request.RequestEstimate: (frozenset({"prefill", "decode", "ttft_dense_s", "ttft_sparse_s", "tpot_dense_s",
                                         "tpot_sparse_s", "total_dense_s", "total_sparse_s"}), frozenset({"speedup"})),
    request.PhaseTime: (frozenset({"p", "gemm_speedup"}), frozenset()),
    formats.Capacity: (frozenset({"batch", "bound", "resident_gb", "batch_by_memory", "tokens_per_s", "tpot_s"}), frozenset()),
    course_answer.VerdictTable: (frozenset({"low", "high", "measured_best", "software_line", "workload"}),
                                 frozenset({"row"})),
    course_answer.VerdictRow: (frozenset({"per_token", "request", "decode_gemm", "prefill_gemm", "estimate", "note"}),
                               frozenset()),
    request.Workload: (frozenset(), frozenset()),
    request.Assumptions: (frozenset(), frozenset()),
    torch.dtype: (frozenset(), frozenset()),
}
# Methods of a string an expression may call: ', '.join(names).
STR_METHODS = frozenset({"join"})
