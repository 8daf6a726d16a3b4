"""twofour.request against numbers derived by hand, not by the model (mutation testing).

Each expected value below is worked out from first principles for one Llama-3-8B request on a
made-up machine with round numbers, so a wrong constant in the model (attention FLOPs, the causal
count, the MLP element count, the embedding bytes, the fp8 packed ratio) changes a number here.
The JavaScript calculators mirror the same formulas, so their parity tests cannot catch it.

Llama-3-8B: L = 32 layers, h = 4096, I = 14336, 32 query heads of d = 128, 8 KV heads, so
kv_dim = 8 * 128 = 1024; bf16 = 2 bytes per element.
"""

from __future__ import annotations

import pytest

from twofour.models import LLAMA_3_8B
from twofour.request import (
    Assumptions,
    GemmTime,
    Machine,
    Workload,
    build_inputs,
    decode_gemm_m,
    estimate,
    expert_gemm_m,
    gemm_shapes,
    ideal_gemm_model,
    tensor_parallel_shape,
)

# 1 PFLOP/s dense, 2 PFLOP/s 2:4, 1 TB/s: seconds are then FLOPs / 1e15 or bytes / 1e12.
ROUND = Machine("round", dense_flops=1e15, sparse_flops=2e15, bandwidth=1e12)
L, H, I, KV_DIM, B = 32, 4096, 14336, 1024, 2


def _fixed_gemm(M, N, K):
    # Every GEMM takes 1 us dense, 0.5 us 2:4: keeps the linear layers out of the hand sums.
    return GemmTime(1e-6, 0.5e-6)


def _estimate(batch=1, prompt_len=512, output_len=1, **assumptions):
    w = Workload(LLAMA_3_8B, batch=batch, prompt_len=prompt_len, output_len=output_len, dtype="bf16")
    return estimate(w, ROUND, gemm=_fixed_gemm, assumptions=Assumptions(**assumptions))


def _approx(x):
    return pytest.approx(x, rel=1e-12, abs=0.0)


def test_prefill_attention_is_four_h_flops_per_causal_pair():
    # Q K^T and P V each take 2*d FLOPs per (query, key) pair per head: 4*h per pair per layer.
    # Causal prefill of P = 512 tokens: token i attends to i keys, 1 + 2 + ... + 512 = 131,328 pairs.
    pairs = 512 * 513 // 2
    assert pairs == 131_328
    flops = 4 * H * L * pairs  # = 68,853,694,464
    est = _estimate()
    assert est.prefill.dense["attention"] == _approx(flops / 1e15)
    assert est.prefill.dense["attention"] == _approx(6.8853694464e-05)
    # Batch multiplies it; the sparse side never changes attention (both operands are activations).
    assert _estimate(batch=3).prefill.dense["attention"] == _approx(3 * flops / 1e15)
    assert est.prefill.sparse["attention"] == est.prefill.dense["attention"]


def test_attention_efficiency_divides_the_attention_time():
    full = _estimate().prefill.dense["attention"]
    assert _estimate(attention_efficiency=0.5).prefill.dense["attention"] == _approx(2 * full)


def test_decode_attention_sums_the_growing_context():
    # 3 decode steps after a 512-token prompt attend to 513, 514 and 515 keys: 1,542 pairs.
    est = _estimate(prompt_len=512, output_len=4)
    assert est.decode.steps == 3
    assert est.decode.dense["attention"] == _approx(4 * H * L * (513 + 514 + 515) / 1e15)
    # The KV cache read in those steps covers the same 1,542 positions: K and V, kv_dim each.
    assert est.decode.dense["kv_cache"] == _approx(2 * L * KV_DIM * 1542 * B / 1e12)


def test_prefill_kv_cache_writes_k_and_v_for_every_prompt_token():
    # 2 (K and V) * 32 layers * 1024 * 512 tokens * 2 bytes = 67,108,864 bytes.
    est = _estimate()
    assert est.prefill.dense["kv_cache"] == _approx(67_108_864 / 1e12)
    # An fp8 KV cache halves it.
    assert _estimate(kv_bytes_per_element=1).prefill.dense["kv_cache"] == _approx(33_554_432 / 1e12)


def test_embedding_reads_and_writes_one_row_per_token():
    # Gather: read h elements of the table and write h elements per token: 2 * 512 * 4096 * 2 bytes.
    est = _estimate()
    assert est.prefill.dense["embedding"] == _approx(8_388_608 / 1e12)
    # Decode: one token per sequence per step, batch 4, 2 steps.
    est = _estimate(batch=4, output_len=3)
    assert est.decode.dense["embedding"] == _approx(2 * (2 * 4 * H * B) / 1e12)


def test_elementwise_passes_count_the_mlp_three_times_its_width():
    # Per token per layer, unfused: two RMSNorms read+write h (4h), two residual adds read 2h and
    # write h (6h), RoPE reads and writes q (2h) and k (2*kv_dim), SwiGLU reads gate and up and
    # writes one (3*I): 12h + 2*kv_dim + 3I = 49,152 + 2,048 + 43,008 = 94,208 elements.
    inputs = build_inputs(Workload(LLAMA_3_8B, 1, 512, 1), ROUND, gemm=_fixed_gemm)
    assert inputs.other_elems_per_token_layer == 94_208
    # Plus the final norm (read + write h) once per token, all at 2 bytes, for 512 tokens.
    est = _estimate()
    assert est.prefill.dense["other"] == _approx(512 * (L * 94_208 + 2 * H) * B / 1e12)


def test_memory_efficiency_divides_every_memory_bound_part():
    full, half = _estimate().prefill.dense, _estimate(memory_efficiency=0.5).prefill.dense
    for part in ("kv_cache", "embedding", "other"):
        assert half[part] == _approx(2 * full[part]), part


def test_linear_layers_count_every_layer_and_the_lm_head_once():
    est = _estimate(output_len=3)
    # 7 block linears x 32 layers at 1 us dense, 0.5 us 2:4; the LM head (dense) once per step.
    assert est.prefill.dense["pruned_linear"] == _approx(7 * 32 * 1e-6)
    assert est.prefill.sparse["pruned_linear"] == _approx(7 * 32 * 0.5e-6)
    assert est.prefill.dense["lm_head"] == est.prefill.sparse["lm_head"] == _approx(1e-6)
    assert est.decode.dense["pruned_linear"] == _approx(2 * 7 * 32 * 1e-6)
    assert est.decode.dense["lm_head"] == _approx(2e-6)


def test_overheads_land_in_their_phases():
    est = _estimate(output_len=5, step_overhead_s=1e-3, request_overhead_s=0.25)
    assert est.prefill.dense["step_overhead"] == _approx(1e-3)
    assert est.decode.dense["step_overhead"] == _approx(4e-3)
    assert est.prefill.dense["request_overhead"] == 0.25
    assert est.decode.dense["request_overhead"] == 0.0
    assert est.prefill.overhead_s == _approx(0.251)


@pytest.mark.parametrize("dtype, ratio", [("fp16", 0.5625), ("bf16", 0.5625), ("fp8", 0.625), ("int8", 0.625)])
def test_packed_ratio_is_half_the_values_plus_two_bits_per_kept_value(dtype, ratio):
    # A group of 4 keeps 2 values and 2 two-bit positions (4 bits = 0.5 byte of metadata).
    # 16-bit: (2 * 2 + 0.5) / (4 * 2) = 0.5625; 8-bit: (2 * 1 + 0.5) / (4 * 1) = 0.625.
    size = {"fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}[dtype]
    assert ratio == (2 * size + 0.5) / (4 * size)
    inputs = build_inputs(Workload(LLAMA_3_8B, 1, 16, 1, dtype=dtype), ROUND, gemm=_fixed_gemm)
    assert inputs.packed_ratio == ratio
    assert inputs.bytes_per_element == size
    assert inputs.out_bytes_per_element == 2  # 8-bit GEMMs write 16-bit results


@pytest.mark.parametrize("dtype, in_b", [("fp16", 2), ("fp8", 1), ("int8", 1)])
def test_ideal_gemv_reads_the_packed_weight(dtype, in_b):
    # A 1-token GEMV is bytes-bound: dense reads N*K*b + K*b and writes N*2 bytes; 2:4 reads the
    # weight at the packed ratio. 4096 x 4096: N*K = 16,777,216.
    ratio = (2 * in_b + 0.5) / (4 * in_b)
    t = ideal_gemm_model(ROUND, dtype)(1, 4096, 4096)
    act = 4096 * in_b + 4096 * 2
    assert t.dense_s == _approx((16_777_216 * in_b + act) / 1e12)
    assert t.sparse_s == _approx((16_777_216 * in_b * ratio + act) / 1e12)


def test_ideal_big_gemm_is_compute_bound_at_twice_the_rate():
    # 16384^3: 2 * 16384^3 = 8,796,093,022,208 FLOPs (8.8 ms at 1 PFLOP/s); the bytes, at most
    # 3 * 16384^2 * 2 = 1.6 GB, take 1.6 ms at 1 TB/s: compute-bound on both sides.
    t = ideal_gemm_model(ROUND, "bf16")(16384, 16384, 16384)
    assert t.dense_s == _approx(8_796_093_022_208 / 1e15)
    assert t.sparse_s == _approx(8_796_093_022_208 / 2e15)


def test_eligible_fraction_and_ceiling_by_hand():
    # With the fixed GEMM times the eligible time is 7 linears x 32 layers x 1 us (0.5 us 2:4).
    est = _estimate()
    ph = est.prefill
    assert ph.eligible_dense_s == _approx(224e-6)
    assert ph.eligible_sparse_s == _approx(112e-6)
    assert ph.gemm_speedup == _approx(2.0)
    assert ph.p == _approx(224e-6 / ph.dense_s)
    assert ph.speedup == _approx(ph.dense_s / (ph.dense_s - 112e-6))


def test_one_token_request_reports_a_step_at_the_next_context():
    # output_len = 1: no decode step; TPOT is one step at context P + 1 = 513.
    est = _estimate(output_len=1)
    assert est.decode.steps == 0 and est.decode.dense_s == 0.0
    step_attention = 4 * H * L * 513 / 1e15
    step_kv = 2 * L * KV_DIM * 513 * B / 1e12
    step_embed = 2 * H * B / 1e12
    step_other = (L * 94_208 + 2 * H) * B / 1e12
    linears = 7 * 32 * 1e-6 + 1e-6
    assert est.tpot_dense_s == _approx(step_attention + step_kv + step_embed + step_other + linears)


def test_shapes_of_the_mixed_step_and_helpers():
    shapes = gemm_shapes(LLAMA_3_8B, "prefill", batch=2, prompt_len=100)
    assert shapes["q_proj"] == (200, 4096, 4096)
    assert shapes["k_proj"] == (200, 1024, 4096)
    assert shapes["gate_proj"] == (200, 14336, 4096)
    assert shapes["down_proj"] == (200, 4096, 14336)
    assert shapes["lm_head"] == (2, 128256, 4096)
    assert decode_gemm_m(8, prefill_chunk_tokens=256, speculative_tokens=3) == 8 * 4 + 256
    # top-2 of 8 experts: each expert sees 2/8 of the tokens on average.
    assert expert_gemm_m(64, 8, 2) == 16.0
    assert tensor_parallel_shape(16, 4096, 14336, 4, "column") == (16, 1024, 14336)
    assert tensor_parallel_shape(16, 4096, 14336, 4, "row") == (16, 4096, 3584)


def test_mixed_step_adds_the_chunk_to_attention_and_cache():
    w = Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=2, prefill_chunk_tokens=128)
    est = estimate(w, ROUND, gemm=_fixed_gemm)
    # One decode step: the decode token attends to 513 keys; 128 chunk tokens attend on average
    # to (512 + 1) / 2 keys each.
    assert est.decode.dense["attention"] == _approx(4 * H * L * (513 + 128 * 513 / 2) / 1e15)
    # Cache: the decode token's 513 positions, plus 128 written, plus (512 - 128) / 2 read.
    assert est.decode.dense["kv_cache"] == _approx(2 * L * KV_DIM * (513 + 128 + 192) * B / 1e12)
    # Embedding and element-wise passes run over 1 + 128 tokens.
    assert est.decode.dense["embedding"] == _approx(2 * 129 * H * B / 1e12)


def test_summary_and_dict_keys():
    est = _estimate(output_len=3)
    s = est.summary()
    assert s["ttft_sparse_s"] == est.ttft_sparse_s and s["total_sparse_s"] == est.total_sparse_s
    assert s["ttft_dense_s"] == est.ttft_dense_s and s["tpot_dense_s"] == est.tpot_dense_s
    assert list(est.to_dict()) == ["summary", "prefill", "decode"]
    assert est.to_dict()["summary"] == s
    assert est.to_dict()["decode"]["steps"] == 2
    # The keys are what the calculators display and the golden files hold.
    assert list(s) == ["ttft_dense_s", "ttft_sparse_s", "tpot_dense_s", "tpot_sparse_s", "total_dense_s",
                       "total_sparse_s", "speedup_ttft", "speedup_tpot", "speedup_request", "p_prefill",
                       "p_decode", "p_request", "gemm_speedup_prefill", "gemm_speedup_decode",
                       "gemm_speedup_request", "ceiling_speedup_prefill", "ceiling_speedup_decode",
                       "ceiling_speedup_request"]
    assert s["p_request"] == est.p_request and s["p_decode"] == est.decode.p


def test_helper_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^M must be an int in \[1, "):
        expert_gemm_m(0, 8, 2)
    with pytest.raises(ValueError, match=r"^N must be an int in \[1, "):
        tensor_parallel_shape(1, 0, 64, 2, "row")
    with pytest.raises(ValueError, match=r"top_k must be <= experts, got top_k=9, experts=8"):
        expert_gemm_m(64, 8, 9)
    with pytest.raises(ValueError, match=r"^batch must be an int in \[1, "):
        gemm_shapes(LLAMA_3_8B, "decode", batch=0)
    with pytest.raises(ValueError, match=r"^prompt_len must be an int in \[1, "):
        gemm_shapes(LLAMA_3_8B, "prefill", batch=1, prompt_len=0)


def test_sensitivity_uses_its_cost_and_ratio():
    from twofour.request import sensitivity
    from twofour.roofline import predict

    w = Workload(LLAMA_3_8B, 1, 128, 8)
    rows = sensitivity(w, "H100", per_call_us=[0, 200.0], memory_ratio=[1.0, 0.5])
    # The grid is cost-major, the values as given.
    assert [(r["per_call_us"], r["memory_ratio"]) for r in rows] == [(0.0, 1.0), (0.0, 0.5), (200.0, 1.0), (200.0, 0.5)]
    assert rows[0]["speedup"] > rows[1]["speedup"] > rows[3]["speedup"]
    assert rows[0]["speedup"] > rows[2]["speedup"]
    # At ratio 1 and no cost beyond the dense call's own, a memory-bound GEMM gains its byte ratio:
    # one decode GEMM, checked through the what-if kernel the function builds.
    one = Workload(LLAMA_3_8B, 1, 1, 2, pruned=("gate_proj",))
    p = predict(1, 14336, 4096, "bf16", "H100", scenario="cached")
    assert p.dense.bound == "memory"
    assert sensitivity(one, "H100", per_call_us=[0.0], memory_ratio=[1.0])[0]["speedup"] > \
        sensitivity(one, "H100", per_call_us=[0.0], memory_ratio=[0.9])[0]["speedup"]
    with pytest.raises(ValueError, match="per_call_us must be a finite number >= 0"):
        sensitivity(w, "H100", per_call_us=[-1], memory_ratio=[1.0])


def test_phase_dicts_carry_every_number():
    d = _estimate(output_len=3).to_dict()
    assert list(d["prefill"]) == ["steps", "dense", "sparse", "dense_s", "sparse_s", "eligible_dense_s",
                                  "eligible_sparse_s", "eligible_ideal_sparse_s", "p", "gemm_speedup",
                                  "ceiling_speedup", "speedup"]
    assert d["prefill"]["eligible_sparse_s"] == pytest.approx(112e-6, rel=1e-12)


def _sweep():
    """A made-up cuSPARSELt sweep over Llama-3-8B's decode GEMMs (batch 1), in ms."""
    return [
        {"M": 1, "N": 4096, "K": 4096, "dense_ms": 2.0, "default_ms": 4.0, "best": {"ms": 1.0}},  # q, o
        {"M": 1, "N": 1024, "K": 4096, "dense_ms": 1.0, "default_ms": 2.0, "best": {"ms": 0.5}},  # k, v
        {"M": 1, "N": 14336, "K": 4096, "dense_ms": 4.0, "default_ms": 8.0, "best": None},  # gate, up: no match
        {"M": 1, "N": 4096, "K": 14336, "dense_ms": 4.0, "default_ms": 4.0, "best": {"ms": 2.0}},  # down
    ]


def test_searched_speedup_sums_one_layer_by_hand():
    from twofour.request import searched_gemm_speedup

    w = Workload(LLAMA_3_8B, batch=1, prompt_len=64, output_len=8, dtype="fp16")
    # Dense: q 2 + k 1 + v 1 + o 2 + gate 4 + up 4 + down 4 = 18 ms. Best: 1 + 0.5 + 0.5 + 1, gate
    # and up fall back to algorithm 0 (no matching best) 8 + 8, down 2 = 21 ms. Algorithm 0: 32 ms.
    best = searched_gemm_speedup(_sweep(), w)
    assert best["decode"] == _approx(18 / 21)
    assert best["prefill"] is None  # no prefill shape (M = 64) in the sweep
    assert searched_gemm_speedup(_sweep(), w, pick="default")["decode"] == _approx(18 / 32)


def test_searched_speedup_refuses_what_the_sweep_did_not_measure():
    from twofour.request import searched_gemm_speedup

    bf16 = Workload(LLAMA_3_8B, batch=1, prompt_len=64, output_len=8, dtype="bf16")
    with pytest.raises(ValueError, match=r"^the recorded algorithm sweeps are fp16; workload.dtype is 'bf16'$"):
        searched_gemm_speedup(_sweep(), bf16)
    fp16 = Workload(LLAMA_3_8B, batch=1, prompt_len=64, output_len=8, dtype="fp16")
    with pytest.raises(ValueError, match=r"^pick must be 'best' or 'default', got 'fastest'$"):
        searched_gemm_speedup(_sweep(), fp16, pick="fastest")


def test_kernel_bandwidth_ratio_of_one_gemm_by_hand():
    # One pruned GEMM, gate_proj at decode (M = 1, N = 14336, K = 4096, bf16): each side's bytes
    # over its memory time. Dense streams the weight and the activations; 2:4 streams 0.5625 of
    # the weight, x padded to the kernel's M, and the same y.
    from twofour.request import kernel_bandwidth_ratio
    from twofour.roofline import predict

    M, N, K = 1, 14336, 4096
    p = predict(M, N, K, "bf16", "H200", scenario="kernel")
    act = (M * K + M * N) * B
    dense_bytes = N * K * B + act
    sparse_bytes = N * K * B * 0.5625 + (p.M_padded - M) * K * B + act
    want = (sparse_bytes / p.sparse.t_memory_us) / (dense_bytes / p.dense.t_memory_us)
    one = Workload(LLAMA_3_8B, 1, 512, 16, pruned=("gate_proj",))
    assert kernel_bandwidth_ratio(one, "H200") == pytest.approx(want, rel=1e-12)
    # Over every pruned GEMM it is still a ratio of two positive bandwidths, below 1 at decode.
    assert 0.0 < kernel_bandwidth_ratio(Workload(LLAMA_3_8B, 1, 512, 16), "H200") < 1.0


def test_measured_detail_reads_the_mixed_steps_rows_at_batch_plus_chunk():
    from twofour.course.answer import verdict_results
    from twofour.request.measured import measured_gemm_detail

    results = verdict_results()

    def decode(batch, chunk=0):
        w = Workload(LLAMA_3_8B, batch, 512, 256, dtype="fp16", prefill_chunk_tokens=chunk)
        return measured_gemm_detail(results, w)["decode"]["speedup"]

    # one decode token and 15 chunk tokens share a step: its GEMMs run at M = 16
    assert decode(1, chunk=15) == decode(16) != decode(1)


def test_measured_detail_of_an_unmeasured_phase_lists_each_pruned_gemm_as_missing():
    from twofour.course.answer import verdict_results
    from twofour.request.measured import measured_gemm_detail

    # The recorded runs have decode at batch 1 but no prefill of 500 tokens.
    w = Workload(LLAMA_3_8B, 1, 500, 256, dtype="fp16", pruned=("gate_proj", "up_proj", "down_proj"))
    detail = measured_gemm_detail(verdict_results(), w)
    assert detail["prefill"] == {"speedup": None, "rows": {"gate_proj": None, "up_proj": None, "down_proj": None},
                                 "replaced": []}
    decode = detail["decode"]
    assert decode["speedup"] > 0 and sorted(decode["rows"]) == ["down_proj", "gate_proj", "up_proj"]
    assert all(row["dense_ms"] > 0 and row["sparse_ms"] > 0 for row in decode["rows"].values())
