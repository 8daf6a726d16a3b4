"""The worked deployment every verdict quotes: which GPU, which workload, which recorded files.

Apart from :mod:`twofour.course.answer`, so the modules its table uses read it without importing the table.

>>> GPU, CHAT.batch, CHAT.prompt_len, CHAT.output_len
('H200', 1, 512, 256)
"""

from __future__ import annotations

from pathlib import Path

from ..models import LLAMA_3_8B
from ..request import Workload

__all__ = ["GPU", "CHAT", "BENCH_FILE", "SWEEP_FILE", "verdict_results"]

GPU = "H200"
CHAT = Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=256, dtype="fp16")
# The recorded files the verdict's measured rows read (shipped in twofour/data).
BENCH_FILE = "bench-nvidia-h200-llama-3-8b-20261130.json"
SWEEP_FILE = "cslt-algsearch-nvidia-h200-20261130.json"


def verdict_results(name: str = BENCH_FILE):
    """The recorded results file the verdict's measured rows read: one, as another recorded file
    repeats some Llama-3-8B shapes and a verdict names one measurement."""
    from ..bench import recorded_results

    for res in recorded_results("gpu"):
        if res.path is not None and Path(res.path).name == name:
            return res
    raise FileNotFoundError(f"{name} is not among the recorded results in twofour/data")
