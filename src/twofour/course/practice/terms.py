"""The bank's vocabulary: levels, topics, what a quick check is graded against, the units it may ask in."""

from __future__ import annotations

import re

LEVELS: tuple[str, ...] = ("fundamentals", "applied", "deep")
# The five stages of the answer, the kernel's own speed, and the neighbouring topics.
TOPICS: dict[str, str] = {
    "structure": "Stage 1 · Structure",
    "representation": "Stage 2 · Representation",
    "dispatch": "Stage 3 · Dispatch",
    "kernel-speed": "Kernel speed",
    "quality": "Stage 4 · Quality",
    "amdahl": "Stage 5 · Amdahl",
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
}

DEFAULT_BANK = "practice.yaml"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
TEXT_FIELDS: tuple[str, ...] = ("prompt", "answer", "connects")
LIST_FIELDS: tuple[str, ...] = ("rubric", "mistakes", "follow_ups")


class BankError(ValueError):
    """A question in the bank is malformed; the message names the question and the field."""
