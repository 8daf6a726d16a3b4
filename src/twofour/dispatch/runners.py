"""What can load and run a compressed-tensors 2:4 checkpoint today, with the steps.

The audit of a model folder ends with these lines; they depend on the stored forms and the
quantization the folder's ``config.json`` names. The sources, checked in December 2026:

* vLLM removed its Sparse24 path and kernels (vllm-project/vllm#36799, merged March 2026;
  loading raises ``NotImplementedError: Sparse24 models are no longer supported by vLLM``),
  released in v0.19.0; its 4-bit Sparse-Marlin kernels went in v0.16.0.
* compressed-tensors after 0.14.0 refuses them: ``ModelCompressor.from_compression_config``
  raises that the Sparse24 format is no longer supported as of ``compressed-tensors>0.14.0``
  (0.15.0.1 source, ``compressors/model_compressors/model_compressor.py``); 0.14.0 still
  decompresses ``sparse-24-bitmask`` (never ``marlin-24``: its compressor says "Decompression
  is not implemented").
* torchao (the project's Sources page): its int8 2:4 layout went in 0.17.0 (pytorch/ao#4148), and
  ``torchao.sparsity`` later (pytorch/ao#4728); fp8 2:4 survives as a packing format of
  ``Float8DynamicActivationFloat8WeightConfig`` (``SPARSE_2D_DATA_2D_METADATA``, CUTLASS, SM 9.0).
"""

from __future__ import annotations

import re
from dataclasses import replace

from .audit_report import AuditRow
from ..checkpoint.compressed import check_claim

__all__ = ["who_runs", "marlin_row", "packed_int_row", "judge_row", "kept_reason"]

# The output head a pruning recipe leaves dense (Sparse-Llama, the site's recipe): not a problem when not 2:4.
_KEPT_DENSE = re.compile(r"(^|\.)(lm_head|embed_out|output)\.weight$")

# What the layers a recipe leaves dense are, by name (LLM Compressor recipes ignore these).
_KINDS_KEPT = (
    (_KEPT_DENSE, "the output head"),
    (re.compile(r"(^|\.)(mlp\.gate|router|block_sparse_moe\.gate|shared_expert_gate)(\.|$)"), "a MoE router"),
    (re.compile(r"(vision_tower|vision_model|visual|vision_encoder|multi_modal_projector|mm_projector)"), "the vision tower"),
    (re.compile(r"(embed|wte|wpe)"), "an embedding"),
)

_VLLM = "vLLM >= 0.19: refuses (Sparse24 removed, vllm-project/vllm#36799: 'Sparse24 models are no longer supported by vLLM')"
_CT = ("compressed-tensors > 0.14.0: refuses ('the Sparse24 format is no longer supported as of compressed-tensors>0.14.0'); "
       "0.14.0 still decompresses sparse-24-bitmask")


def who_runs(ct, rows) -> list[str]:
    """Lines for the audit: each engine's answer, then the steps onto PyTorch's 2:4 path.

    >>> from twofour.checkpoint.compressed import parse_config
    >>> ct = parse_config({"quantization_config": {"quant_method": "compressed-tensors",
    ...     "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4", "targets": ["Linear"]}}})
    >>> who_runs(ct, [])[0].startswith("vLLM >= 0.19: refuses")
    True
    """
    forms = {r.stored for r in rows}
    dtypes = {r.dtype for r in rows if r.kind == "linear" and not r.kept_dense}
    lines = [_VLLM, _CT]
    if "marlin-24" in forms:
        lines.append("marlin-24 (int4 packed for the Marlin 2:4 kernel): only a Marlin kernel runs it (vLLM 0.15.1 or "
                     "older); compressed-tensors never decompressed it and twofour does not unpack it")
    if dtypes & {"float16", "bfloat16"}:
        lines.append("PyTorch (fp16/bf16): `twofour convert DIR OUT.safetensors` writes the dense 2:4 weights; load them, "
                     "then `torch.sparse.to_sparse_semi_structured(W)` for each 2:4 linear on a CUDA GPU (compute "
                     "capability 8.0+); or `twofour convert --layout packed` for twofour.pack's packed values + metadata")
    if dtypes & {"int8"}:
        lines.append("int8: `twofour convert` writes the int8 2:4 weights with weight_scale beside them; "
                     "`to_sparse_semi_structured` packs int8 on a CUDA GPU (cuSPARSELt); torchao's int8 2:4 layout "
                     "was removed in 0.17.0 (pytorch/ao#4148)")
    if any("float8" in d for d in dtypes):
        lines.append("fp8 e4m3: `twofour convert` writes the fp8 2:4 weights with weight_scale; PyTorch core runs fp8 "
                     "2:4 only through torch._scaled_mm; torchao's Float8DynamicActivationFloat8WeightConfig with "
                     "packing_format SPARSE_2D_DATA_2D_METADATA runs it on Hopper (SM 9.0), from a dequantized model")
    return lines


def marlin_row(name: str, kind: str, shape, stored):
    """An audit row for a marlin-24 weight: 2:4 by construction, checked for sizes only, run only by Marlin."""
    why = ("stored marlin-24: int4, 2:4 by construction and laid out for the Marlin kernel; its part sizes agree "
           "with the shape (the permuted metadata is not unpacked); only a Marlin kernel runs it")
    return AuditRow(name, kind, tuple(shape), "int4", None, True, "marlin-24", ("stored",), (why,),
                    shape[0] * shape[1] * 2, None, stored="marlin-24", stored_bytes=stored.stored_bytes)


def kept_reason(name: str, ct=None) -> str:
    """What a layer left dense on purpose is, from its name (and the recipe that left it so).

    >>> kept_reason("model.layers.3.mlp.gate.weight"), kept_reason("lm_head.weight")
    ('a MoE router', 'the output head')
    >>> kept_reason("model.vision_tower.blocks.0.attn.qkv.weight")
    'the vision tower'
    """
    default = "a layer the recipe leaves dense" if ct is not None else "a layer left dense"
    return next((what for pattern, what in _KINDS_KEPT if pattern.search(name)), default)


def packed_int_row(name: str, kind: str, shape, dtype: str, stored, counted):
    """An audit row for a pack-quantized (W4A16, W8A16) weight: 2:4 counted from its integers; PyTorch's 2:4 kernels
    do not take it (they take fp16/bf16/int8/fp8 values), so its verdict is dense, with why."""
    groups, bad = counted
    bits = dtype.split()[0]
    why = (f"stored pack-quantized ({bits}, weight-only): PyTorch's 2:4 kernels take fp16, bf16, int8 or fp8 values, "
           f"not {bits}; a Sparse-Marlin kernel (vLLM 0.15.1 or older) runs 2:4 {bits}")
    n, k = shape
    return AuditRow(name, kind, tuple(shape), bits, 1.0 - bad / groups, False, "dense", ("dtype",), (why,),
                    n * k * 2, None, n_groups=groups, n_bad_groups=bad, stored="pack-quantized",
                    stored_bytes=stored.stored_bytes)


def judge_row(row, ct, path: str):
    """Mark a layer left dense on purpose (with what it is); refuse a file whose config claims 2:4 for a weight that is not.

    A layer is kept dense when it is an embedding (a lookup), when the recipe's ``ignore`` names
    it or its ``targets`` do not cover it (in any spelling: exact, ``re:``, ``Linear``), or when
    it is the output head, and it is not 2:4.
    """
    layer = row.name[: -len(".weight")] if row.name.endswith(".weight") else row.name
    not_24 = row.fraction_valid is not None and row.fraction_valid < 1.0
    if not_24:
        check_claim(ct, row.name, row.kind, row.n_groups, row.n_bad_groups, path)
    if row.kind == "embedding":
        return replace(row, kept_dense="an embedding (a lookup)")
    if not not_24:
        return row
    if ct is not None and ct.sparsity_format and (ct.ignores(layer, row.kind) or not ct.covers(layer, row.kind)):
        why = "in the recipe's ignore list" if ct.ignores(layer, row.kind) else "not in the recipe's targets"
        return replace(row, kept_dense=f"{kept_reason(row.name, ct)}, {why}", verdict="dense", topics=(), reasons=())
    if _KEPT_DENSE.search(row.name):
        return replace(row, kept_dense=kept_reason(row.name), verdict="dense", topics=(), reasons=())
    return row
