"""twofour.request: the request-time model, its Amdahl bookkeeping, limits and bad input."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twofour.amdahl import speedup
from twofour.models import LLAMA_3_8B, LLAMA_3_70B, parameter_counts
from twofour.request import (
    BLOCK_LINEARS,
    COMPONENTS,
    Assumptions,
    GemmTime,
    Machine,
    RequestInputs,
    Workload,
    build_inputs,
    estimate,
    evaluate,
    gemm_shapes,
    ideal_gemm_model,
)

# Round made-up numbers: these tests check the model's bookkeeping, not any GPU.
TOY = Machine("toy", dense_flops=1e15, sparse_flops=2e15, bandwidth=2e12)
TINY = LLAMA_3_8B.with_(layers=2, hidden=256, intermediate=512, heads=4, kv_heads=2, vocab=1000)


def _close(a, b, rel=1e-12):
    return a == pytest.approx(b, rel=rel, abs=0.0)


# --- bookkeeping ----------------------------------------------------------------------------


_CHAT = Workload(LLAMA_3_8B, 1, 512, 256)
_BIG_FP8 = Workload(LLAMA_3_8B, 64, 8192, 512, dtype="fp8")
_ONE_TOKEN = Workload(LLAMA_3_70B, 4, 100, 1, dtype="fp16", pruned=("gate_proj", "up_proj", "down_proj", "lm_head"))


@pytest.mark.parametrize("gpu, workload", [
    ("H100", _CHAT), ("H100", _BIG_FP8), ("H100", _ONE_TOKEN),
    ("A100", _CHAT), ("A100", _ONE_TOKEN),  # the A100 has no fp8 tensor cores
    (TOY, _CHAT), (TOY, _BIG_FP8), (TOY, _ONE_TOKEN),
])
def test_phase_speedups_are_amdahl_of_p_and_gemm_speedup(gpu, workload):
    est = estimate(workload, gpu, assumptions=Assumptions(step_overhead_s=1e-4, request_overhead_s=0.01))
    for ph in (est.prefill, est.decode):
        assert _close(sum(ph.dense[c] for c in COMPONENTS), ph.dense_s)
        assert _close(sum(ph.sparse[c] for c in COMPONENTS), ph.sparse_s)
        if ph.steps:
            assert _close(speedup(ph.p, ph.gemm_speedup), ph.speedup)
    assert _close(est.total_dense_s, est.ttft_dense_s + est.decode.dense_s)
    s_req = est.gemm_speedup_request
    assert _close(speedup(est.p_request, s_req), est.speedup("request"))


def test_only_pruned_linears_change():
    est = estimate(Workload(LLAMA_3_8B, 8, 1024, 64), "H100")
    for ph in (est.prefill, est.decode):
        for c in COMPONENTS:
            if c != "pruned_linear":
                assert ph.dense[c] == ph.sparse[c], c
        assert ph.dense["dense_linear"] == 0.0  # every block linear is pruned by default


def test_custom_gemm_times_are_summed_per_layer_and_step():
    est = estimate(Workload(TINY, 2, 16, 5), TOY, gemm=lambda M, N, K: GemmTime(1e-3, 5e-4))
    assert _close(est.prefill.dense["pruned_linear"], 7 * TINY.layers * 1e-3)
    assert _close(est.decode.dense["pruned_linear"], 4 * 7 * TINY.layers * 1e-3)
    assert _close(est.decode.sparse["pruned_linear"], 4 * 7 * TINY.layers * 5e-4)
    assert _close(est.decode.dense["lm_head"], 4 * 1e-3)
    assert est.decode.gemm_speedup == pytest.approx(2.0)


def test_gemm_shapes_follow_the_config():
    shapes = gemm_shapes(LLAMA_3_8B, "prefill", batch=2, prompt_len=100)
    assert shapes["k_proj"] == (200, 1024, 4096)
    assert shapes["down_proj"] == (200, 4096, 14336)
    assert shapes["lm_head"] == (2, 128256, 4096)  # logits for the last prompt token only


# --- the physics the chapter relies on ------------------------------------------------------


def test_bs1_decode_streams_the_weights():
    """At batch 1 every weight byte is read once per token (torchao's sparsity README: 95.64 tok/s x 15.01 GB ~ the A100's 1,436 GB/s)."""
    w = Workload(LLAMA_3_8B, 1, 1, 2, dtype="bf16")
    est = estimate(w, TOY)  # ideal roofline, memory efficiency 1
    counts = parameter_counts(LLAMA_3_8B)
    weight_bytes_read = 2 * (counts["eligible"] + counts["lm_head"])  # the embedding is only gathered
    linear_s = est.decode.dense["pruned_linear"] + est.decode.dense["lm_head"]
    assert linear_s * TOY.bandwidth == pytest.approx(weight_bytes_read, rel=1e-3)  # + tiny activations
    assert est.decode.p == pytest.approx(counts["eligible"] / (counts["eligible"] + counts["lm_head"]), rel=5e-3)
    # and the eligible GEMMs are bytes-bound: the ceiling is 1 / 0.5625
    assert est.decode.ceiling_speedup == pytest.approx(1 / 0.5625, rel=1e-3)


def test_kv_traffic_matches_the_cited_formula():
    """graphcore-research/llm-inference-research's notebook: KV bytes per step = batch * layers * 2 * seq * hidden / kv_group * bytes."""
    batch, P, T = 4, 1000, 11
    est = estimate(Workload(LLAMA_3_8B, batch, P, T), TOY)
    group = LLAMA_3_8B.heads // LLAMA_3_8B.kv_heads
    expected = sum(batch * LLAMA_3_8B.layers * 2 * (P + j) * LLAMA_3_8B.hidden / group * 2 for j in range(1, T))
    assert est.decode.dense["kv_cache"] * TOY.bandwidth == pytest.approx(expected, rel=1e-12)


def test_compute_bound_prefill_ceiling_is_two():
    # Wide GEMMs stay compute-bound at half the FLOPs: 2x. The narrow k/v projections (N = 1024)
    # have so much activation traffic per FLOP that their 2:4 version becomes bytes-bound.
    wide = ("q_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    est = estimate(Workload(LLAMA_3_8B, 8, 4096, 2, pruned=wide), TOY)
    assert est.prefill.ceiling_speedup == pytest.approx(2.0, rel=1e-12)
    narrow = estimate(Workload(LLAMA_3_8B, 8, 4096, 2, pruned=("k_proj",)), TOY)
    assert 1.0 < narrow.prefill.ceiling_speedup < 2.0


@pytest.mark.parametrize("prompt_len", [10**6, 10**7])
def test_huge_contexts_push_p_decode_toward_zero(prompt_len):
    est = estimate(Workload(LLAMA_3_8B, 64, prompt_len, 4), "H100")
    values = est.summary().values()
    assert all(math.isfinite(v) and v > 0 for v in values)
    assert est.decode.p < 0.01
    assert est.speedup("tpot") < 1.01


def test_no_pruning_means_no_change():
    est = estimate(Workload(LLAMA_3_8B, 4, 256, 32, pruned=()), "H100")
    assert est.p_request == 0.0 and est.prefill.p == 0.0
    assert est.speedup("request") == 1.0
    assert est.gemm_speedup_request == 1.0
    assert est.ceiling_speedup_request == 1.0  # no eligible GEMM: not even a ceiling above 1
    assert est.prefill.ceiling_speedup == est.decode.ceiling_speedup == 1.0


def test_gemm_speedup_of_one_means_no_change():
    est = estimate(Workload(LLAMA_3_8B, 4, 256, 32), "H100", gemm_speedup=1.0)
    assert est.speedup("request") == pytest.approx(1.0, rel=1e-15)


def test_measured_speedup_replaces_prediction_per_phase():
    est = estimate(Workload(LLAMA_3_8B, 4, 256, 32), "H100", gemm_speedup={"prefill": 1.3, "decode": 1.6})
    assert est.prefill.gemm_speedup == pytest.approx(1.3)
    assert est.decode.gemm_speedup == pytest.approx(1.6)
    only_decode = estimate(Workload(LLAMA_3_8B, 4, 256, 32), "H100", gemm_speedup={"decode": 1.6})
    predicted = estimate(Workload(LLAMA_3_8B, 4, 256, 32), "H100")
    assert only_decode.prefill.gemm_speedup == predicted.prefill.gemm_speedup


def test_pruning_more_kinds_raises_p():
    mlp = ("gate_proj", "up_proj", "down_proj")
    ps = [
        estimate(Workload(LLAMA_3_8B, 1, 512, 64, pruned=pr), "H100").decode.p
        for pr in (mlp, BLOCK_LINEARS, BLOCK_LINEARS + ("lm_head",))
    ]
    assert ps[0] < ps[1] < ps[2]


def test_fixed_overheads_lower_p_and_speedup():
    w = Workload(LLAMA_3_8B, 1, 512, 64)
    base = estimate(w, "H100", gemm_speedup=1.6)
    slow = estimate(w, "H100", gemm_speedup=1.6, assumptions=Assumptions(step_overhead_s=2e-3, request_overhead_s=0.05))
    assert slow.decode.p < base.decode.p
    assert slow.speedup("tpot") < base.speedup("tpot")
    assert slow.ttft_dense_s - base.ttft_dense_s == pytest.approx(2e-3 + 0.05)


def test_single_output_token_has_no_decode_phase():
    est = estimate(Workload(LLAMA_3_8B, 2, 64, 1), "H100")
    assert est.decode.steps == 0 and est.decode.dense_s == 0.0
    assert est.total_dense_s == est.ttft_dense_s
    assert est.tpot_dense_s > 0 and math.isfinite(est.speedup("tpot"))


def test_fp8_kv_cache_halves_kv_time():
    w = Workload(LLAMA_3_8B, 16, 4096, 64)
    bf16 = estimate(w, "H100")
    fp8 = estimate(w, "H100", assumptions=Assumptions(kv_bytes_per_element=1))
    assert fp8.decode.dense["kv_cache"] == pytest.approx(bf16.decode.dense["kv_cache"] / 2)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 256), p1=st.integers(1, 200_000), p2=st.integers(1, 200_000), out=st.integers(2, 2000))
def test_p_decode_falls_as_context_grows(batch, p1, p2, out):
    lo, hi = sorted((p1, p2))
    a = estimate(Workload(LLAMA_3_8B, batch, lo, out), TOY).decode.p
    b = estimate(Workload(LLAMA_3_8B, batch, hi, out), TOY).decode.p
    assert b <= a * (1 + 1e-12)
    assert 0.0 < b <= 1.0


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 512), prompt=st.integers(1, 100_000), out=st.integers(1, 4000),
       s=st.floats(min_value=1.0, max_value=2.0))
def test_request_speedup_never_beats_the_gemm_speedup_or_amdahl_bound(batch, prompt, out, s):
    est = estimate(Workload(LLAMA_3_8B, batch, prompt, out), TOY, gemm_speedup=s)
    S = est.speedup("request")
    assert 1.0 <= S * (1 + 1e-12) and S <= s * (1 + 1e-12)
    assert S <= 1.0 / (1.0 - est.p_request) * (1 + 1e-12)


# --- inputs round trip ----------------------------------------------------------------------


def test_inputs_round_trip_through_a_dict():
    r = build_inputs(Workload(LLAMA_3_8B, 3, 77, 9, dtype="int8"), "H100")
    again = RequestInputs.from_dict(r.to_dict())
    assert evaluate(again).summary() == evaluate(r).summary()


def test_ideal_gemm_model_decode_ratio_is_the_packed_bytes_ceiling():
    gemm = ideal_gemm_model(Machine.from_gpu("H100", "int8"), "int8")
    t = gemm(1, 8192, 8192)
    assert t.dense_s / t.sparse_s == pytest.approx(1 / 0.625, rel=1e-3)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("field,value,exc,match", [
    ("batch", 0, ValueError, r"batch must be an int in \[1"),
    ("batch", 2.0, TypeError, r"^batch must be an int >= 1, got float 2\.0$"),
    ("batch", True, TypeError, "batch must be an int"),
    ("prompt_len", -5, ValueError, "prompt_len must be an int"),
    ("output_len", 0, ValueError, "output_len must be an int"),
    ("prompt_len", 2**31, ValueError, "prompt_len must be an int in"),
    ("dtype", "fp32", ValueError, "dtype must be one of"),
    ("pruned", ("q_proj", "attn"), ValueError, r"unknown linear kinds \['attn'\]"),
    ("pruned", "q_proj", TypeError, "pruned must be a collection"),
    ("model", "llama", TypeError, "model must be a twofour.models.TransformerConfig"),
])
def test_bad_workload(field, value, exc, match):
    kwargs = dict(model=LLAMA_3_8B, batch=1, prompt_len=8, output_len=8)
    kwargs[field] = value
    with pytest.raises(exc, match=match):
        Workload(**kwargs)


@pytest.mark.parametrize("kwargs,match", [
    ({"attention_efficiency": 0.0}, "attention_efficiency must be a finite number > 0"),
    ({"memory_efficiency": 1.5}, "memory_efficiency must be a finite number > 0 and <= 1"),
    ({"step_overhead_s": -1e-3}, "step_overhead_s must be a finite number >= 0"),
    ({"request_overhead_s": math.inf}, "request_overhead_s must be a finite number"),
    ({"kv_bytes_per_element": 0}, "kv_bytes_per_element must be"),
    ({"other_elems_per_token_layer": -1}, "other_elems_per_token_layer must be"),
])
def test_bad_assumptions(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Assumptions(**kwargs)


def test_a_number_of_another_type_is_refused_naming_the_field_and_the_type():
    with pytest.raises(TypeError, match=r"^memory_efficiency must be a number, got str '0\.8'$"):
        Assumptions(memory_efficiency="0.8")
    with pytest.raises(TypeError, match=r"^bandwidth must be a number, got NoneType None$"):
        Machine("x", 1e15, 2e15, None)


def test_bad_machine():
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0"):
        Machine("x", 1e15, 2e15, 0.0)


def test_bad_estimate_arguments():
    w = Workload(LLAMA_3_8B, 1, 8, 8)
    with pytest.raises(ValueError, match="gemm_speedup must be a positive finite speedup"):
        estimate(w, "H100", gemm_speedup=0.0)
    with pytest.raises(ValueError, match="gemm_speedup keys must be among"):
        estimate(w, "H100", gemm_speedup={"decoder": 1.5})
    with pytest.raises(TypeError, match="gemm must be a callable"):
        estimate(w, "H100", gemm=1.5)
    with pytest.raises(ValueError, match=r"gemm\(8, 4096, 4096\).dense_s must be a finite number > 0"):
        estimate(w, TOY, gemm=lambda M, N, K: GemmTime(-1.0, 1.0))
    with pytest.raises(TypeError, match="workload must be"):
        estimate("8b", "H100")
    with pytest.raises(TypeError, match="assumptions must be"):
        estimate(w, "H100", assumptions={"step_overhead_s": 1})
    with pytest.raises(ValueError, match="gpu must be one of"):
        estimate(w, "H900")
    with pytest.raises(ValueError, match="T4 .compute capability 7.5. has no sparse tensor cores"):
        estimate(w, "T4")
    with pytest.raises(ValueError, match="A100 has no dense tensor-core peak for dtype 'fp8'"):
        estimate(Workload(LLAMA_3_8B, 1, 8, 8, dtype="fp8"), "A100")
    with pytest.raises(TypeError, match="inputs must be a RequestInputs"):
        evaluate({"batch": 1})


def test_from_dict_names_missing_fields():
    d = build_inputs(Workload(LLAMA_3_8B, 1, 8, 8), "H100").to_dict()
    del d["bandwidth"]
    with pytest.raises(ValueError, match=r"missing \['bandwidth'\]"):
        RequestInputs.from_dict(d)


def test_gemm_shapes_rejects_bad_phase():
    with pytest.raises(ValueError, match="phase must be one of"):
        gemm_shapes(LLAMA_3_8B, "generate", batch=1)


def test_replace_is_how_to_explore():
    r = build_inputs(Workload(LLAMA_3_8B, 1, 512, 64), "H100")
    faster_memory = dataclasses.replace(r, bandwidth=r.bandwidth * 2)
    assert evaluate(faster_memory).tpot_dense_s < evaluate(r).tpot_dense_s


def test_doctests_of_the_amdahl_modules():
    import doctest

    import twofour.amdahl
    import twofour.course.widgets
    import twofour.funnel
    import twofour.request

    for module in (twofour.amdahl, twofour.request, twofour.funnel, twofour.course.widgets):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__


# --- the mixed step: decode tokens share GEMMs with a prefill chunk --------------------------


@pytest.mark.parametrize("gpu", ["H100", "A100", TOY])
def test_no_chunk_is_the_plain_decode_step_bit_for_bit(gpu):
    plain = build_inputs(_CHAT, gpu)
    zero = build_inputs(dataclasses.replace(_CHAT, prefill_chunk_tokens=0), gpu)
    assert plain == zero and "prefill_chunk_tokens" not in plain.to_dict()  # golden records unchanged
    assert evaluate(plain).to_dict() == evaluate(zero).to_dict()
    assert RequestInputs.from_dict(plain.to_dict()) == plain


def test_a_chunk_is_recorded_and_round_trips():
    r = build_inputs(Workload(LLAMA_3_8B, 8, 512, 64, prefill_chunk_tokens=256), "H100")
    d = r.to_dict()
    assert d["prefill_chunk_tokens"] == 256
    assert RequestInputs.from_dict(d) == r


def test_chunk_sets_decode_m_but_not_the_lm_head():
    shapes = gemm_shapes(LLAMA_3_8B, "decode", batch=8, prefill_chunk_tokens=256)
    assert shapes["q_proj"][0] == shapes["down_proj"][0] == 8 + 256
    assert shapes["lm_head"][0] == 8
    assert gemm_shapes(LLAMA_3_8B, "prefill", batch=2, prompt_len=100, prefill_chunk_tokens=256)["q_proj"][0] == 200
    r = build_inputs(Workload(TINY, 8, 64, 4, prefill_chunk_tokens=32), TOY)
    assert gemm_shapes(r, "decode")["up_proj"][0] == 40


def test_chunk_adds_its_attention_kv_and_element_wise_work():
    c, P = 128, 512
    w0, wc = Workload(TINY, 4, P, 9), Workload(TINY, 4, P, 9, prefill_chunk_tokens=c)
    e0, ec = estimate(w0, TOY), estimate(wc, TOY)
    L, h, n = TINY.layers, TINY.hidden, 8
    assert _close(ec.decode.dense["attention"] - e0.decode.dense["attention"],
                  4.0 * L * h * n * c * (P + 1) / 2 / TOY.dense_flops, rel=1e-9)
    kv_b = 2.0  # bf16
    assert _close(ec.decode.dense["kv_cache"] - e0.decode.dense["kv_cache"],
                  2.0 * L * TINY.kv_dim * n * (c + (P - c) / 2) * kv_b / TOY.bandwidth, rel=1e-9)
    assert _close(ec.decode.dense["other"] / e0.decode.dense["other"], (4 + c) / 4, rel=1e-9)
    assert ec.ttft_dense_s == e0.ttft_dense_s  # the request's own prompt is still one prefill step


@pytest.mark.parametrize("gpu", ["H200", "H100", TOY])
def test_mixed_step_keeps_amdahl_and_moves_the_gemm_toward_compute(gpu):
    chunks = [0, 64, 256, 1024, 4096]
    ests = [estimate(Workload(LLAMA_3_8B, 8, 2048, 64, prefill_chunk_tokens=c), gpu) for c in chunks]
    for e in ests:
        assert _close(speedup(e.decode.p, e.decode.gemm_speedup), e.speedup("tpot"), rel=1e-9)
        assert e.tpot_dense_s > 0
    tpots = [e.tpot_dense_s for e in ests]
    assert tpots == sorted(tpots)  # a bigger chunk makes the decode token wait longer
    ceilings = [e.decode.ceiling_speedup for e in ests]
    assert ceilings[-1] > ceilings[0]  # from bytes-bound (1/0.5625) toward the compute-bound 2x
    if gpu is TOY:
        assert ests[-1].decode.gemm_speedup > ests[0].decode.gemm_speedup


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (True, TypeError), (1.5, TypeError)])
def test_chunk_must_be_a_non_negative_int(bad, exc):
    with pytest.raises(exc, match="prefill_chunk_tokens"):
        Workload(LLAMA_3_8B, 1, 8, 8, prefill_chunk_tokens=bad)


def test_where_serving_puts_m():
    from twofour.request import decode_gemm_m, expert_gemm_m, tensor_parallel_shape

    assert decode_gemm_m(16) == 16
    assert decode_gemm_m(16, speculative_tokens=3) == 64  # k drafted tokens + 1 verified, per sequence
    assert decode_gemm_m(16, speculative_tokens=3, prefill_chunk_tokens=512) == 576
    assert expert_gemm_m(256, experts=64, top_k=2) == 8.0
    assert tensor_parallel_shape(32, 4096, 4096, 4, "column") == (32, 1024, 4096)
    assert tensor_parallel_shape(32, 4096, 14336, 4, "row") == (32, 4096, 3584)
    with pytest.raises(ValueError, match="split must be"):
        tensor_parallel_shape(1, 8, 8, 2, "diagonal")
    with pytest.raises(ValueError, match="divisible"):
        tensor_parallel_shape(1, 10, 8, 4, "column")
    with pytest.raises(ValueError, match="top_k must be <= experts"):
        expert_gemm_m(8, experts=4, top_k=8)
    with pytest.raises(ValueError, match="speculative_tokens"):
        decode_gemm_m(8, speculative_tokens=-1)
