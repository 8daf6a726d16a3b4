"""Bank expressions: the names they may use and their evaluation."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping

import torch

from ... import amdahl, hardware, models, packing, request, roofline, structure
from ...dispatch import rules as dispatch_rules
from ...quality import published as quality_published
from ...roofline import formats
from .helpers import (compute_bound_m, cost_per_token_ratio, first_torch_pinning, funnel_step, measured_crossover_m,
                      measured_gemm, measured_phase_speedup, published_speedup, published_value, tokens_per_second,
                      transposable_patterns, wave_count)
from .terms import BankError

# The names an expression may use. Modules are exposed whole: their public functions are what
# the chapters teach, so a question computes with exactly the code the chapters run.
NAMESPACE: dict[str, object] = {
    "amdahl": amdahl,
    "packing": packing,
    "structure": structure,
    "roofline": roofline,
    "hardware": hardware,
    "models": models,
    "request": request,
    "published": quality_published,
    "math": math,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "int8": torch.int8,
    "fp32": torch.float32,
    "fp8": torch.float8_e4m3fn,
    "formats": formats,
    "rules": dispatch_rules,
    "LLAMA_3_8B": models.LLAMA_3_8B,
    "LLAMA_3_70B": models.LLAMA_3_70B,
    "Workload": request.Workload,
    "Assumptions": request.Assumptions,
    "estimate": request.estimate,
    "funnel_step": funnel_step,
    "wave_count": wave_count,
    "tokens_per_second": tokens_per_second,
    "cost_per_token_ratio": cost_per_token_ratio,
    "published_speedup": published_speedup,
    "published_value": published_value,
    "measured_gemm": measured_gemm,
    "measured_crossover_m": measured_crossover_m,
    "measured_phase_speedup": measured_phase_speedup,
    "compute_bound_m": compute_bound_m,
    "transposable_patterns": transposable_patterns,
    "first_torch_pinning": first_torch_pinning,
    "decode_gemm_m": request.decode_gemm_m,
    "expert_gemm_m": request.expert_gemm_m,
    "tensor_parallel_shape": request.tensor_parallel_shape,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sum": sum,
    "len": len,
}

_ALLOWED_NODES = (
    ast.Expression, ast.Call, ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.keyword,
    ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Tuple, ast.List, ast.Dict, ast.Subscript, ast.Compare, ast.Lt, ast.LtE,
    ast.Gt, ast.GtE, ast.Eq, ast.NotEq, ast.IfExp, ast.BoolOp, ast.And, ast.Or, ast.Not,
)


def evaluate_expression(expr: str, names: Mapping[str, object] | None = None):
    """Evaluate one bank expression in :data:`NAMESPACE` plus ``names`` (earlier numbers).

    Raises :class:`BankError` for syntax outside the small allowed subset, for private names
    (``_x``, ``__class__``) and for unknown names, so a typo names itself.

    >>> evaluate_expression("amdahl.speedup(0.5, 2.0)")
    1.3333333333333333
    >>> evaluate_expression("p * 2", {"p": 0.25})
    0.5
    """
    if not isinstance(expr, str) or not expr.strip():
        raise BankError(f"expr must be a non-empty string, got {expr!r}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise BankError(f"expr {expr!r} is not a Python expression: {err.msg}") from None
    scope = dict(NAMESPACE)
    scope.update(names or {})
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise BankError(f"expr {expr!r} uses {type(node).__name__}, which bank expressions may not use")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise BankError(f"expr {expr!r} reaches the private attribute {node.attr!r}")
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id not in scope):
            raise BankError(
                f"expr {expr!r} uses the unknown name {node.id!r}; known: earlier numbers of the question "
                f"and {sorted(NAMESPACE)}"
            )
    return eval(compile(tree, "<practice>", "eval"), {"__builtins__": {}}, scope)  # noqa: S307 - checked above


def format_value(value, fmt: str) -> str:
    """Format a computed value with a ``str.format`` template such as ``"{:.3f}x"`` or ``"{:.2%}"``.

    >>> format_value(1.61607, "{:.3f}x"), format_value(0.5625, "{:.2%}")
    ('1.616x', '56.25%')
    """
    try:
        return fmt.format(value)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise BankError(f"format {fmt!r} does not apply to value {value!r}: {err}") from None
