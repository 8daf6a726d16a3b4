"""The bank's vocabulary: levels, topics, what a quick check is graded against, the units it may ask in."""

from __future__ import annotations

import re

LEVELS: tuple[str, ...] = ("fundamentals", "applied", "deep")
# The six stages of the answer (stage N is chapter N), and the neighbouring topics.
TOPICS: dict[str, str] = {
    "structure": "Stage 1 · Structure",
    "representation": "Stage 2 · Representation",
    "dispatch": "Stage 3 · Dispatch",
    "kernel-speed": "Stage 4 · Kernel speed",
    "quality": "Stage 5 · Quality",
    "amdahl": "Stage 6 · Amdahl",
    "end-to-end": "The whole answer",
    "quantization": "2:4 next to quantization",
    "capacity": "Memory, batch and the latency target",
    "serving-m": "M in a serving engine",
    "benchmarking": "Benchmarking a GEMM or a step",
    "profiling": "Nsight: which bottleneck is it?",
    "gemm-partitioning": "GEMM partitioning and waves",
    "training": "Training with 2:4",
    "ecosystem": "2:4 in 2026",
    "latency": "Reasoning budgets and TTFT",
    "cost": "Routing, cascades or compression",
    "sparsity-kinds": "Other kinds of sparsity",
    "validation": "Validating at service level",
    "parallelism": "Sharding, disaggregation, MoE",
    "hardware": "Sparse tensor cores by generation",
    "kv-cache": "The KV cache and the scheduler",
    "attention-kernels": "Attention kernels",
    "communication": "Multi-GPU communication",
    "architecture": "If you could change the GPU",
    "serving-design": "Serving design from QPS and SLOs",
    "speculative": "Speculative decoding",
    "multi-lora": "Many LoRA adapters on one model",
    "long-context": "Long context",
}
# The neighbours of the 2:4 question an inference loop asks about on their own terms: together at
# least a quarter of the bank (a test holds it).
NEIGHBOUR_TOPICS: tuple[str, ...] = ("gemm-partitioning", "cost", "latency", "serving-design", "speculative", "multi-lora",
                                     "long-context")
# What kind of thinking a question asks for (KINDS_BY_LEVEL: the kinds each level asks).
KINDS: dict[str, str] = {
    "concept": "a concept, explained",
    "calculation": "one calculation",
    "multi-step": "several steps of reasoning with numbers",
    "diagnosis": "a diagnosis from evidence",
    "design": "an open-ended design or trade-off",
}
KINDS_BY_LEVEL: dict[str, tuple[str, ...]] = {
    "fundamentals": ("concept", "calculation"),
    "applied": ("concept", "calculation", "multi-step", "diagnosis", "design"),
    "deep": ("multi-step", "diagnosis", "design"),
}
# Formulas a question may drill (``drills``): no more than MAX_DRILLS questions drill one, so the
# bank does not become a third packed-byte ratios and Amdahl bookkeeping.
FORMULAS: dict[str, str] = {
    "packed-ratio": "packed bytes over dense bytes, and the bytes ceiling 1 / ratio",
    "format-bits": "bits per weight of a format: kept values, their metadata and the scales",
    "amdahl": "Amdahl time bookkeeping: new time = (1 - p) + p / s, speedup its inverse",
    "tiles-and-waves": "tiles, waves and busy SMs of a GEMM launch",
    "kv-bytes": "KV-cache bytes per token and per sequence",
    "bandwidth": "achieved bandwidth = bytes / time, as a share of the data sheet",
}
MAX_DRILLS = 3
GRADES: dict[str, str] = {
    "mid": "Mid-level engineer",
    "senior": "Senior engineer",
    "staff": "Staff engineer",
}
# What a quick check is graded against. A model's prediction is never the answer key.
BASES: dict[str, str] = {
    "first principles": "first-principles arithmetic",
    "published": "a published measurement",
    "measured": "the project's own H200 measurement",
}
# Units a quick check may ask in: the calculators' units, bytes in decimal or binary made explicit.
UNITS: dict[str, str] = {
    "": "",
    "x": "as a speedup, e.g. 1.23",
    "%": "in percent",
    "bits": "in bits",
    "KiB": "in KiB (1 KiB = 1,024 bytes)",
    "KB": "in KB (1 KB = 10^3 bytes)",
    "MB": "in MB (1 MB = 10^6 bytes)",
    "MiB": "in MiB (1 MiB = 2^20 bytes)",
    "GB": "in GB (1 GB = 10^9 bytes)",
    "GiB": "in GiB (1 GiB = 2^30 bytes)",
    "GB/s": "in GB/s (10^9 bytes per second)",
    "µs": "in µs",
    "ms": "in ms",
    "s": "in seconds",
    "tokens": "in tokens",
    "rows": "in rows",
    "groups": "in groups",
    "sequences": "in sequences",
    "patterns": "as a count of patterns",
    "tiles": "in tiles",
    "FLOP/byte": "in FLOP per byte",
    "runs": "in runs",
    "requests": "in requests",
    "experts": "in experts",
    "GPUs": "in GPUs",
    "GPU-hours": "in GPU-hours",
    "req/s": "in requests per second",
    "MHz": "in MHz",
}

# The calculator's URL keys (docs/js/calc/ui/request-calc.js URL_KEYS), in which a task opens it.
CALCULATOR_KEYS: tuple[str, ...] = (
    "gpu", "backend", "dtype", "model", "layers", "hidden", "intermediate", "heads", "kv_heads", "vocab", "batch",
    "prompt", "output", "chunk", "gemm", "s_prefill", "s_decode", "pruned", "step_ms", "request_ms", "attn_eff",
    "mem_eff", "scope", "scenario",
)
# A calculator task has one must-have opening with each of these.
CALCULATOR_MUSTS: tuple[str, ...] = ("What the result establishes:", "What still needs measurement:")

DEFAULT_BANK = "practice.yaml"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
NAME = re.compile(r"^[a-z][a-z0-9_]*$")
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # lower-case-with-dashes: a question's id, skill and setting
TEXT_FIELDS: tuple[str, ...] = ("prompt", "answer", "connects")
RUBRIC_FIELDS: tuple[str, ...] = ("must", "strong", "red_flags")


class BankError(ValueError):
    """A question in the bank is malformed; the message names the question and the field."""
