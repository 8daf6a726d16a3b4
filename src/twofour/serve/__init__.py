"""Whole decode steps, dense vs 2:4: a minimal Llama-3-style decoder and the plan that times it.

A user waits for whole steps, not one matmul: a decoder with a real model's shapes
(:class:`Decoder`), its block linears packed 2:4 (:func:`pack_blocks`), each step timed per mode
and profiled for its GEMM share ``p`` beside the request model's prediction (``twofour bench --decode``).

>>> from twofour.serve import TINY, make_plan, run_plan, ops_for
>>> plan = make_plan(TINY, dtypes=["float32"], batches=[2], context=8, prompt_lens=[16], modes=["eager"],
...                  weights=["dense"], warmup=0, repeats=1)
>>> res = run_plan(plan, ops_for("cpu"), log=None)
>>> [m["phase"] for m in res.measured()], res.settings["sparse_note"][:23]
(['decode', 'prefill'], '2:4 needs an NVIDIA GPU')
"""

from .measure import DECODE_STEPS, gemm_share, measure_decode, measure_prefill
from .model import BLOCK_LINEARS, ELIGIBLE_LABEL, TINY, Decoder, KVCache, apply_rope, rms_norm, rope_tables, weight_bytes
from .ops import NEEDS_GPU, CpuOps, CudaOps, NotSupported, Ops, RehearsalOps, ops_for
from .plan import Item, Plan, make_plan, run_plan
from .predict import predict
from .results import (DECODE_SCHEMA, WEIGHTS, DecodeResults, OutputRefused, load_decode_results, recorded_decode_results,
                      write_atomic)
from .sparse import (AGREEMENT_TOL, Agreement, algorithm_per_linear, check_agreement, pack_blocks, prune_blocks,
                     search_algorithms)

__all__ = [
    "Decoder", "KVCache", "TINY", "BLOCK_LINEARS", "ELIGIBLE_LABEL", "rms_norm", "rope_tables", "apply_rope",
    "weight_bytes",
    "prune_blocks", "pack_blocks", "search_algorithms", "algorithm_per_linear", "check_agreement", "Agreement",
    "AGREEMENT_TOL",
    "Ops", "CpuOps", "CudaOps", "RehearsalOps", "NotSupported", "ops_for", "NEEDS_GPU",
    "DECODE_STEPS", "measure_decode", "measure_prefill", "gemm_share",
    "Item", "Plan", "make_plan", "run_plan", "predict",
    "DecodeResults", "DECODE_SCHEMA", "WEIGHTS", "load_decode_results", "recorded_decode_results", "write_atomic",
    "OutputRefused",
]
