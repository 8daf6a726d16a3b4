"""twofour.roofline.formats: bits per weight, a decode step as bytes, the capacity win; checked on published runs."""

from __future__ import annotations

import pytest
import torch

from twofour import packing, roofline
from twofour.course.practice import published_speedup
from twofour.models import LLAMA_3_8B, LLAMA_3_70B
from twofour.request import Machine, ideal_gemm_model
from twofour.roofline.formats import (
    GPU_MEMORY_BYTES,
    break_even_bandwidth_ratio,
    TORCHAO_LLAMA3_8B_A100,
    WEIGHT_FORMATS,
    WeightFormat,
    bits_per_weight,
    capacity_at_tpot,
    decode_step_bytes,
    decode_tokens_per_s,
    kv_bytes_per_token,
    model_weight_bytes,
    weight_format,
)


def test_two_four_bits_match_packing_for_8_and_16_bit():
    assert bits_per_weight("bf16+2:4") / bits_per_weight("bf16") == packing.packed_ratio(torch.bfloat16)
    assert bits_per_weight("fp8+2:4") / bits_per_weight("fp8") == packing.packed_ratio(torch.int8)
    assert bits_per_weight("int8+2:4") == 5.0


def test_the_smaller_the_values_the_less_two_four_adds():
    gain = {v: bits_per_weight(v) / bits_per_weight(f"{v}+2:4") for v in ("bf16", "fp8")}
    # int4-g128 carries a bf16 scale and zero point, Sparse-Marlin an fp16 scale only; with the
    # same scales (16 bits per 128 weights) the int4 gain is 4.125 / 3.125
    same_scales = WeightFormat("int4-g128-scale-only", 4, scale_bits=16, group_size=128)
    gain["int4 same scales"] = same_scales.bits_per_weight / bits_per_weight("int4-g128+2:4")
    assert gain["bf16"] == pytest.approx(16 / 9) and gain["fp8"] == pytest.approx(1.6)
    assert gain["int4 same scales"] == pytest.approx(4.125 / 3.125)
    assert gain["bf16"] > gain["fp8"] > gain["int4 same scales"] > 1


def test_names_and_errors():
    assert weight_format("fp8") is WEIGHT_FORMATS["fp8"] and weight_format(WEIGHT_FORMATS["fp8"]) is WEIGHT_FORMATS["fp8"]
    with pytest.raises(ValueError, match="fmt must be one of"):
        weight_format("fp4")
    with pytest.raises(TypeError, match="TransformerConfig"):
        model_weight_bytes("llama", "bf16")
    with pytest.raises(ValueError, match="efficiency"):
        decode_tokens_per_s(1e9, "A100", efficiency=1.5)
    with pytest.raises(ValueError, match="batch"):
        decode_step_bytes(LLAMA_3_8B, "bf16", batch=-1, context=1)
    with pytest.raises(ValueError, match="memory_bytes"):
        capacity_at_tpot(LLAMA_3_8B, "B200", "bf16", context=8, tpot_target_s=0.1)
    with pytest.raises(ValueError, match="tpot_target_s"):
        capacity_at_tpot(LLAMA_3_8B, "H200", "bf16", context=8, tpot_target_s=0)
    assert kv_bytes_per_token(LLAMA_3_8B) == 128 * 1024


# --- validation against published runs -------------------------------------------------------


def test_model_sizes_match_torchao_llama3_table():
    """torchao's model size = weights read per token (embedding excluded): bf16 and int4wo-64."""
    pub = TORCHAO_LLAMA3_8B_A100
    bf16 = model_weight_bytes(LLAMA_3_8B, "bf16")["read_per_token"] / 1e9
    int4 = model_weight_bytes(LLAMA_3_8B, "int4-g64", lm_head="int4-g64")["read_per_token"] / 1e9
    assert bf16 == pytest.approx(pub["bf16"]["model_size_gb"], rel=0.002)
    assert int4 == pytest.approx(pub["int4wo-64"]["model_size_gb"], rel=0.002)
    # Sparse-Marlin on the block linears; how the run stored the LM head is not stated: int4-g64
    # (as the int4wo run) gives 3.02 GB, Sparse-Marlin too 2.93 GB; published 3.05 GB.
    marlin = model_weight_bytes(LLAMA_3_8B, "int4-g128+2:4", lm_head="int4-g64")["read_per_token"] / 1e9
    assert marlin == pytest.approx(pub["int4wo-64-sparse-marlin"]["model_size_gb"], rel=0.015)


def test_sparse_marlin_decode_is_below_its_bytes_ceiling_by_its_bandwidth_loss():
    pub = TORCHAO_LLAMA3_8B_A100
    measured = pub["int4wo-64-sparse-marlin"]["tokens_per_s"] / pub["int4wo-64"]["tokens_per_s"]
    assert measured == pytest.approx(published_speedup("ao-readme-llama3-8b-int4-sparse-marlin"), rel=1e-3)
    ceiling = pub["int4wo-64"]["model_size_gb"] / pub["int4wo-64-sparse-marlin"]["model_size_gb"]
    model_ceiling = (model_weight_bytes(LLAMA_3_8B, "int4-g64", lm_head="int4-g64")["read_per_token"]
                     / model_weight_bytes(LLAMA_3_8B, "int4-g128+2:4", lm_head="int4-g64")["read_per_token"])
    assert model_ceiling == pytest.approx(ceiling, rel=0.02)
    assert 1.0 < measured < ceiling
    # the gap is the sparse kernel's lower effective bandwidth: 689 vs 763 GB/s in the README
    assert measured / ceiling == pytest.approx(689.20 / 763.33, rel=0.01)


def test_int4_decode_reaches_far_less_than_its_bytes_ratio():
    pub = TORCHAO_LLAMA3_8B_A100
    measured = pub["int4wo-64"]["tokens_per_s"] / pub["bf16"]["tokens_per_s"]
    bytes_ratio = bits_per_weight("bf16") / bits_per_weight("int4-g64")
    assert 1.5 < measured < bytes_ratio  # a ceiling, not a prediction


@pytest.mark.parametrize("M, record", [(64, "ao2012-ffn-fp8-64"), (128, "ao2012-ffn-fp8-128")])
def test_fp8_two_four_vs_fp8_dense_is_below_the_bytes_ceiling(M, record):
    """pytorch/ao PR #2012: two 8192 x 8192 fp8 GEMMs at M tokens, Hopper; 1.39x at 64 tokens."""
    t = ideal_gemm_model(Machine.from_gpu("H100", "fp8"), "fp8")(M, 8192, 8192)
    ceiling = t.dense_s / t.sparse_s
    measured = published_speedup(record)
    assert ceiling < 1 / packing.packed_ratio(torch.int8)  # activations do not shrink
    assert 0.8 < measured / ceiling < 1.0


# --- the decode step and the capacity win ----------------------------------------------------


def test_decode_step_bytes_and_rate():
    kv = kv_bytes_per_token(LLAMA_3_8B)
    assert decode_step_bytes(LLAMA_3_8B, "bf16", batch=4, context=1000) == pytest.approx(
        model_weight_bytes(LLAMA_3_8B, "bf16")["read_per_token"] + 4 * 1000 * kv)
    assert decode_tokens_per_s(2e9, "H200", efficiency=0.5) == pytest.approx(4800e9 * 0.5 / 2e9)


def test_capacity_freed_weights_become_batch():
    kw = dict(context=4096, tpot_target_s=0.05)
    dense = capacity_at_tpot(LLAMA_3_70B, "H200", "fp8", **kw)
    sparse = capacity_at_tpot(LLAMA_3_70B, "H200", "fp8+2:4", **kw)
    assert dense.bound == sparse.bound == "memory"
    assert sparse.batch > dense.batch and sparse.tokens_per_s > dense.tokens_per_s
    freed_gb = dense.resident_gb - sparse.resident_gb
    kv_seq_gb = 4096 * kv_bytes_per_token(LLAMA_3_70B) / 1e9
    assert sparse.batch - dense.batch == pytest.approx(freed_gb / kv_seq_gb, abs=1)
    assert dense.tpot_s <= 0.05 and sparse.tpot_s <= 0.05
    # an 80 GB H100 reports 81,559 MiB: the fp8 70B leaves room for a few 4K caches, fp8 + 2:4 for several times as many
    h100 = [capacity_at_tpot(LLAMA_3_70B, "H100", f, **kw).batch for f in ("fp8", "fp8+2:4")]
    assert 0 < h100[0] and h100[1] >= 3 * h100[0]
    # the device's bytes, not the data sheet's decimal GB: 141e9 bytes would hold fewer sequences
    assert capacity_at_tpot(LLAMA_3_70B, "H200", "fp8", memory_bytes=141e9, **kw).batch < dense.batch
    assert GPU_MEMORY_BYTES["H200"] == 143_771 * 2**20


def test_break_even_bandwidth_ratio():
    kw = dict(context=4096, tpot_target_s=0.05)
    r = break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", **kw)
    dense = capacity_at_tpot(LLAMA_3_70B, "H200", "fp8", **kw).tokens_per_s
    above = capacity_at_tpot(LLAMA_3_70B, "H200", "fp8+2:4", sparse_bandwidth_ratio=min(1.0, r * 1.01), **kw).tokens_per_s
    below = capacity_at_tpot(LLAMA_3_70B, "H200", "fp8+2:4", sparse_bandwidth_ratio=r * 0.97, **kw).tokens_per_s
    assert below <= dense < above
    # a tighter target needs a faster kernel; a format that cannot win at all gives None
    assert break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", context=4096, tpot_target_s=0.03) > r
    assert break_even_bandwidth_ratio(LLAMA_3_8B, "H200", "bf16+2:4", "fp8", context=128, tpot_target_s=1.0) is None
    with pytest.raises(ValueError, match="fmt must be a 2:4 format"):
        break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8", "fp8", **kw)


def test_capacity_tpot_bound_and_a_slow_sparse_kernel():
    tight = capacity_at_tpot(LLAMA_3_8B, "L4", "bf16", context=4096, tpot_target_s=0.05)
    assert tight.batch == 0 and tight.bound == "tpot" and tight.tpot_s > 0.05  # weights alone miss it
    fast = capacity_at_tpot(LLAMA_3_8B, "H200", "bf16+2:4", context=4096, tpot_target_s=0.02)
    slow = capacity_at_tpot(LLAMA_3_8B, "H200", "bf16+2:4", context=4096, tpot_target_s=0.02, sparse_bandwidth_ratio=0.35)
    assert slow.batch_by_memory == fast.batch_by_memory  # memory does not care how fast the kernel is
    assert slow.batch_by_tpot < fast.batch_by_tpot
    for cap in (fast, slow):
        assert cap.batch == min(cap.batch_by_memory, cap.batch_by_tpot)
        assert cap.tokens_per_s == pytest.approx(cap.batch / cap.tpot_s)
    assert set(GPU_MEMORY_BYTES) >= {"L4", "A100", "H100", "H200"}


def test_re_exported_from_roofline():
    assert roofline.capacity_at_tpot is capacity_at_tpot and roofline.bits_per_weight is bits_per_weight
