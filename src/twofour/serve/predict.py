"""What the request model (:mod:`twofour.request`) predicts for one measured step, to set beside it.

A measured decode step at batch ``B`` after ``C`` cached tokens is the request model's decode
phase with ``prompt_len = C`` and ``output_len = 2``; a measured prefill is its prefill phase.
GEMMs come from the fitted kernel model, everything else at the data sheet's peaks with no
per-step overhead: optimistic, and the gap to a measurement is the point.

Example:
    >>> from twofour.models import LLAMA_3_8B
    >>> p = predict(LLAMA_3_8B, phase="decode", dtype="float16", weights="2:4", mode="graph", batch=1,
    ...             prompt_len=512, gpu="H200")
    >>> p["scenario"], p["t_ms"] == p["sparse_ms"], 0.5 < p["p"] < 1
    ('cached', True, True)
"""

from __future__ import annotations

from ..bench import recorded_alg_search
from ..hardware import get_gpu
from ..models import TransformerConfig
from ..request import Workload, estimate, searched_gemm_speedup
from ..vocabulary import MEASURED_DTYPES, dtype_key

__all__ = ["predict"]


def predict(cfg: TransformerConfig, *, phase: str, dtype: str, weights: str, mode: str, batch: int,
            prompt_len: int, gpu) -> dict | None:
    """The predicted step for one measurement: ``{"t_ms", "dense_ms", "sparse_ms", "p", "speedup", ...}``.

    ``t_ms`` and ``p`` are of the measured weights (dense or 2:4); None for a dtype without 2:4
    tensor cores. ``eager`` pays a cuSPARSELt plan per call, other modes run with plans cached;
    ``graph-searched`` fp16 uses the recorded algorithm sweep where it covers the shapes.
    """
    key = dtype_key(dtype)
    if key not in MEASURED_DTYPES:
        return None
    spec = get_gpu(gpu)
    scenario = "eager" if mode == "eager" else "cached"
    workload = Workload(cfg, batch=batch, prompt_len=prompt_len, output_len=2, dtype=key)
    source = (f"twofour.request.estimate on {spec.name}, {scenario} GEMM scenario (fitted kernel model); "
              "attention, KV cache and element-wise passes at peak, no step overhead")
    gemm_speedup = None
    if mode == "graph-searched" and key == "fp16":
        searched = searched_gemm_speedup(recorded_alg_search(), workload)
        if searched[phase] is not None:
            gemm_speedup = searched
            source += "; 2:4 GEMMs at the recorded algorithm sweep's best algorithm"
    est = estimate(workload, spec.name, scenario=scenario, gemm_speedup=gemm_speedup)
    ph = est.decode if phase == "decode" else est.prefill
    sparse = weights == "2:4"
    return {
        "gpu": spec.name,
        "scenario": scenario,
        "t_ms": (ph.sparse_s if sparse else ph.dense_s) * 1e3,
        "dense_ms": ph.dense_s * 1e3,
        "sparse_ms": ph.sparse_s * 1e3,
        "p": (ph.eligible_sparse_s / ph.sparse_s) if sparse else ph.p,
        "speedup": ph.speedup,
        "source": source,
    }
