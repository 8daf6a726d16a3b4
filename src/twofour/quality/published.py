"""Published quality numbers for pruned LLMs, each with its source (see the site's Sources page).

These are *cited*, not measured here; chapter 5 plots them beside the toolkit's own
measurements in the "published" colour. Perplexities are WikiText-2, one-shot pruning with no
retraining, lower is better.

>>> WANDA_LLAMA2["LLaMA-2-7B"]["dense"], WANDA_LLAMA2["LLaMA-2-7B"]["2:4 magnitude"]
(5.12, 54.59)
>>> round(ratio("LLaMA-2-70B", "2:4 Wanda"), 2)
1.65
"""

from __future__ import annotations

__all__ = [
    "WANDA_SOURCE",
    "WANDA_LLAMA2",
    "MASKLLM_SOURCE",
    "MASKLLM_LLAMA2_7B",
    "SPARSE_LLAMA_SOURCE",
    "SPARSE_LLAMA_8B",
    "ratio",
]

WANDA_SOURCE = (
    "locuslab/wanda README (WikiText-2 perplexity, LLaMA-2, one-shot, no retraining); "
    "paper: 'A Simple and Effective Pruning Approach for Large Language Models', arXiv 2306.11695"
)

# model -> method -> WikiText-2 perplexity.
WANDA_LLAMA2: dict[str, dict[str, float]] = {
    "LLaMA-2-7B": {
        "dense": 5.12,
        "2:4 magnitude": 54.59, "2:4 SparseGPT": 10.17, "2:4 Wanda": 11.02,
        "4:8 magnitude": 16.48, "4:8 SparseGPT": 8.12, "4:8 Wanda": 7.97,
        "50% magnitude": 14.89, "50% SparseGPT": 6.51, "50% Wanda": 6.42,
    },
    "LLaMA-2-13B": {
        "dense": 4.57,
        "2:4 magnitude": 8.33, "2:4 SparseGPT": 8.32, "2:4 Wanda": 8.27,
        "4:8 magnitude": 6.76, "4:8 SparseGPT": 6.60, "4:8 Wanda": 6.55,
        "50% magnitude": 6.37, "50% SparseGPT": 5.63, "50% Wanda": 5.56,
    },
    "LLaMA-2-70B": {
        "dense": 3.12,
        "2:4 magnitude": 6.33, "2:4 SparseGPT": 5.40, "2:4 Wanda": 5.16,
        "4:8 magnitude": 5.58, "4:8 SparseGPT": 4.59, "4:8 Wanda": 4.47,
        "50% magnitude": 4.98, "50% SparseGPT": 3.98, "50% Wanda": 3.98,
    },
}

MASKLLM_SOURCE = (
    "'MaskLLM: Learnable Semi-Structured Sparsity for Large Language Models', NeurIPS 2024, "
    "arXiv 2409.17481 (abstract); learned 2:4 masks on frozen weights"
)
MASKLLM_LLAMA2_7B: dict[str, float] = {"dense": 5.12, "2:4 MaskLLM": 6.72}

SPARSE_LLAMA_SOURCE = (
    "Hugging Face model card neuralmagic/Sparse-Llama-3.1-8B-2of4 (SparseGPT 2:4 pruning, then "
    "13B tokens of knowledge-distillation training)"
)
# Benchmark averages (accuracy, higher is better) for the dense and 2:4 model.
SPARSE_LLAMA_8B: dict[str, dict[str, float]] = {
    "OpenLLM v1 average": {"dense": 63.19, "2:4": 62.16},
    "Mosaic Eval Gauntlet average": {"dense": 55.34, "2:4": 53.85},
    "MMLU": {"dense": 65.4, "2:4": 60.6},
}


def ratio(model: str, method: str) -> float:
    """Published perplexity of ``method`` divided by the dense perplexity (1.0 = no loss)."""
    try:
        row = WANDA_LLAMA2[model]
    except KeyError:
        raise ValueError(f"model must be one of {list(WANDA_LLAMA2)}, got {model!r}") from None
    if method not in row:
        raise ValueError(f"method must be one of {list(row)}, got {method!r}")
    return row[method] / row["dense"]
