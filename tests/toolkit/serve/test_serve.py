"""twofour.serve: the decoder, its 2:4 version, the measurement plan and ``twofour bench --decode``.

Everything here runs on the CPU in seconds on the tiny config; the GPU-marked tests at the end
(packing, CUDA graphs, the cuSPARSELt algorithm search) run in ``make gpu-check``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
from pathlib import Path

import jsonschema
import pytest
import torch

from twofour.cli import main
from twofour.dispatch.kernels import OpRecord
from twofour.models import LLAMA_3_8B, linear_shapes
from twofour.serve import (
    DECODE_SCHEMA, ELIGIBLE_LABEL, NEEDS_GPU, TINY, Decoder, NotSupported, RehearsalOps, apply_rope, check_agreement,
    gemm_share, load_decode_results, make_plan, measure_decode, ops_for, pack_blocks, predict, prune_blocks,
    rms_norm, rope_tables, run_plan, weight_bytes, write_atomic,
)
from twofour.serve.results import OutputRefused

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny matmuls on one thread: on a busy 2-core machine a second thread only waits (tens of ms per op)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def tiny():
    return Decoder.random(TINY, seed=3)


def _tokens(batch, T, seed=0):
    return torch.randint(0, TINY.vocab, (batch, T), generator=torch.Generator().manual_seed(seed))


def _tiny_plan(**changes):
    kw = dict(dtypes=["float32"], batches=[1, 3], context=8, prompt_lens=[16], modes=["eager"], weights=["dense"],
              warmup=0, repeats=1, decode_steps=2, profiled_calls=1)
    kw.update(changes)
    return make_plan(TINY, **kw)


# --- the decoder --------------------------------------------------------------------------------


def test_weights_have_the_configs_shapes_and_are_2to4():
    from twofour import check

    model = Decoder.random(TINY)
    want = {s.name: (s.out_features, s.in_features) for s in linear_shapes(TINY, include_lm_head=False)}
    for block in model.blocks:
        assert {n: tuple(W.shape) for n, W in block.linears.items()} == want
        assert all(check(W).valid for W in block.linears.values())
    assert model.lm_head.shape == (TINY.vocab, TINY.hidden) and not check(model.lm_head).valid  # the head stays dense
    assert model.embedding.shape == (TINY.vocab, TINY.hidden) and model.dtype == torch.float32


def test_weights_are_deterministic_and_independent_of_the_layer_count():
    a, b = Decoder.random(TINY, seed=1), Decoder.random(TINY, seed=1, n_layers=1)
    assert torch.equal(a.blocks[0].linears["q_proj"], b.blocks[0].linears["q_proj"])
    assert torch.equal(a.lm_head, b.lm_head)
    assert not torch.equal(a.blocks[0].linears["q_proj"], Decoder.random(TINY, seed=2).blocks[0].linears["q_proj"])
    assert b.cfg.layers == 1 and b.full_layers == 2 and b.cfg.name == "tiny (1 of 2 layers)"


def test_pruned_model_is_prune_blocks_of_the_unpruned_one():
    pruned, dense = Decoder.random(TINY, seed=1), Decoder.random(TINY, seed=1, pruned=False)
    again = prune_blocks(dense)
    for p, q in zip(pruned.blocks, again.blocks):
        assert all(torch.equal(p.linears[n], q.linears[n]) for n in p.linears)


def test_output_shapes(tiny):
    cache = tiny.new_cache(batch=3, max_seq_len=12)
    assert tiny.prefill(_tokens(3, 5), cache).shape == (3, 1, TINY.vocab)
    assert tiny.prefill(_tokens(3, 5), cache, all_logits=True).shape == (3, 5, TINY.vocab)
    assert tiny.decode(_tokens(3, 1), torch.tensor([5]), cache).shape == (3, 1, TINY.vocab)
    assert cache.k[0].shape == (3, TINY.kv_heads, 12, TINY.head_dim) and len(cache.v) == TINY.layers


def test_kv_cache_step_by_step_equals_the_full_sequence(tiny):
    tokens = _tokens(2, 10, seed=5)
    full = tiny.prefill(tokens, tiny.new_cache(2, 10), all_logits=True)
    cache = tiny.new_cache(2, 10)
    steps = [tiny.prefill(tokens[:, :4], cache, all_logits=True)]
    for p in range(4, 10):
        steps.append(tiny.decode(tokens[:, p:p + 1], torch.tensor([p]), cache))
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


def test_decode_ignores_cache_positions_after_its_own(tiny):
    """The static cache is attended under a mask: stale entries beyond the position change nothing."""
    tokens = _tokens(1, 6)
    clean = tiny.new_cache(1, 16)
    tiny.prefill(tokens[:, :5], clean)
    dirty = tiny.new_cache(1, 16)
    tiny.prefill(tokens[:, :5], dirty)
    for k in dirty.k + dirty.v:
        k[:, :, 6:] = 1e3
    pos = torch.tensor([5])
    torch.testing.assert_close(tiny.decode(tokens[:, 5:], pos, dirty), tiny.decode(tokens[:, 5:], pos, clean))


def test_gqa_equals_multi_head_attention_with_repeated_kv_heads(tiny):
    """Each K/V head serves heads/kv_heads query heads: repeating its rows gives plain multi-head attention."""
    group, d = TINY.heads // TINY.kv_heads, TINY.head_dim
    mha_cfg = dataclasses.replace(TINY, kv_heads=TINY.heads)

    def repeat_heads(W):  # [kv_heads * d, K] -> [heads * d, K], each head's rows repeated `group` times
        return W.view(TINY.kv_heads, d, -1).repeat_interleave(group, dim=0).reshape(TINY.heads * d, -1)

    linears = [dict(b.linears, k_proj=repeat_heads(b.linears["k_proj"]), v_proj=repeat_heads(b.linears["v_proj"]))
               for b in tiny.blocks]
    mha = dataclasses.replace(tiny.with_linears(linears), cfg=mha_cfg)
    tokens = _tokens(2, 8)
    caches = mha.new_cache(2, 8), tiny.new_cache(2, 8)
    torch.testing.assert_close(mha.prefill(tokens[:, :7], caches[0], all_logits=True),
                               tiny.prefill(tokens[:, :7], caches[1], all_logits=True), rtol=1e-5, atol=1e-5)
    pos = torch.tensor([7])  # decode folds each group's query heads into one KV head's queries: same result
    torch.testing.assert_close(mha.decode(tokens[:, 7:], pos, caches[0]), tiny.decode(tokens[:, 7:], pos, caches[1]),
                               rtol=1e-5, atol=1e-5)


def test_rope_rotates_by_relative_position_only():
    cos, sin = rope_tables(8, max_positions=16)
    q, k = torch.randn(8, generator=torch.Generator().manual_seed(0)), torch.randn(8, generator=torch.Generator().manual_seed(1))

    def score(m, n):
        qm = apply_rope(q.view(1, 1, 1, 8), cos[m:m + 1], sin[m:m + 1])
        kn = apply_rope(k.view(1, 1, 1, 8), cos[n:n + 1], sin[n:n + 1])
        return (qm * kn).sum()

    torch.testing.assert_close(score(5, 2), score(12, 9))
    assert not torch.allclose(score(5, 2), score(5, 3))
    rotated = apply_rope(q.view(1, 1, 1, 8), cos[7:8], sin[7:8])
    torch.testing.assert_close(rotated.norm(), q.norm())  # a rotation keeps the length


def test_rope_table_matches_the_formula():
    cos, sin = rope_tables(4, max_positions=8, theta=10_000.0)
    angle = 3 * 10_000.0 ** (-2 / 4)  # position 3, second frequency
    assert cos[3, 1].item() == pytest.approx(torch.tensor(angle).cos().item(), abs=1e-6)
    assert sin[3, 3].item() == pytest.approx(torch.tensor(angle).sin().item(), abs=1e-6)


def test_rms_norm():
    x = torch.tensor([[1.0, -2.0, 2.0, 0.0]])
    torch.testing.assert_close(rms_norm(x, torch.full((4,), 2.0), eps=0.0), torch.tensor([[4 / 3, -8 / 3, 8 / 3, 0.0]]))


def test_weight_bytes_of_llama_3_8b():
    assert weight_bytes(LLAMA_3_8B, torch.float16) == 2 * 8_030_261_248
    dense, packed = weight_bytes(LLAMA_3_8B, torch.float16), weight_bytes(LLAMA_3_8B, torch.float16, packed=True)
    assert 0.6 < packed / dense < 0.65  # 9/16 for the blocks, the embedding and head stay dense


@pytest.mark.parametrize("call, message", [
    (lambda m: Decoder.random(TINY, n_layers=3), r"n_layers must be an int from 1 to 2 \(the layers of tiny\), got 3"),
    (lambda m: m.new_cache(0, 8), r"batch must be a positive int, got 0"),
    (lambda m: m.new_cache(1, 10**6), r"max_seq_len must be at most 8192"),
    (lambda m: m.prefill(_tokens(2, 4), m.new_cache(3, 8)), r"tokens has batch 2 but the cache was made for batch 3"),
    (lambda m: m.prefill(_tokens(1, 9), m.new_cache(1, 8)), r"tokens holds 9 positions but the cache only 8"),
    (lambda m: m.prefill(torch.zeros(1, 4), m.new_cache(1, 8)), r"tokens must be a \[batch, T\] torch.long tensor"),
    (lambda m: m.decode(_tokens(1, 2), torch.tensor([3]), m.new_cache(1, 8)), r"decode takes one token per sequence"),
    (lambda m: m.decode(_tokens(1, 1), torch.tensor([3.0]), m.new_cache(1, 8)), r"pos must be a 1-element torch.long"),
])
def test_bad_arguments_are_named(tiny, call, message):
    with pytest.raises(ValueError, match=message):
        call(tiny)


# --- dense vs 2:4 ---------------------------------------------------------------------------------


def _masked_reference(model: Decoder) -> Decoder:
    """Every block linear times its own 2:4 mask, found here without twofour.prune: top-2 |w| per group."""
    def masked(W):
        groups = W.view(W.shape[0], -1, 4)
        keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, groups.abs().topk(2, dim=-1).indices, True)
        return (groups * keep).view_as(W)

    return model.with_linears([{n: masked(W) for n, W in b.linears.items()} for b in model.blocks])


def test_pruned_model_agrees_exactly_with_the_masked_reference():
    dense = Decoder.random(TINY, seed=7, pruned=False)
    pruned, reference = prune_blocks(dense), _masked_reference(dense)
    agreement = check_agreement(pruned, reference)
    assert agreement.rel_err == 0.0 and agreement.top1_match == 1.0 and agreement.passed
    moved = check_agreement(pruned, dense)  # pruning changes the model: the check sees it
    assert moved.rel_err > 0.05 and not moved.passed
    assert pruned.lm_head is dense.lm_head and pruned.embedding is dense.embedding


def test_packing_needs_a_gpu_and_says_so(tiny):
    with pytest.raises(NotSupported, match=r"compute capability >= 8.0"):
        pack_blocks(tiny, ops_for("cpu"))
    assert "compute capability >= 8.0" in NEEDS_GPU


def test_packing_refuses_a_weight_that_is_not_2to4():
    unpruned = Decoder.random(TINY, pruned=False)
    with pytest.raises(ValueError, match=r"layer 0 q_proj is not 2:4 \(\d+ bad groups\)"):
        pack_blocks(unpruned, RehearsalOps())


def test_check_agreement_refuses_different_models(tiny):
    other = Decoder.random(dataclasses.replace(TINY, vocab=128))
    with pytest.raises(ValueError, match=r"same vocab and dtype"):
        check_agreement(tiny, other)


# --- measurement ----------------------------------------------------------------------------------


def test_measure_decode_on_cpu(tiny):
    rec = measure_decode(tiny, batch=2, context=8, mode="eager", ops=ops_for("cpu"), warmup=0, repeats=2, steps=3)
    assert rec["t_ms"]["n"] == 2 and rec["tokens_per_s"] == pytest.approx(2e3 / rec["t_ms"]["median_ms"])
    prof = rec["profile"]
    assert prof["device"] == "cpu" and prof["eligible_from"] == "kernels under the block-linear label"
    # eligible = everything under the block-linear label (the GEMM and its reshapes), GEMM = matmul operators
    assert 0 < prof["eligible_ms"] <= prof["busy_ms"] and 0 < prof["gemm_ms"] <= prof["busy_ms"]
    assert prof["p_eligible"] == pytest.approx(prof["eligible_ms"] / prof["share_of_ms"])


def test_graph_modes_need_a_gpu_on_cpu(tiny):
    with pytest.raises(NotSupported, match="CUDA graphs need a CUDA GPU"):
        measure_decode(tiny, batch=1, context=4, mode="graph", ops=ops_for("cpu"), warmup=0, repeats=1, steps=1)
    with pytest.raises(ValueError, match=r"mode must be one of \('eager', 'graph', 'graph-searched', 'compile'\)"):
        measure_decode(tiny, batch=1, context=4, mode="fast", ops=ops_for("cpu"))


def test_gemm_share_attributes_kernels_to_their_launching_operator():
    recs = [
        OpRecord(ELIGIBLE_LABEL, "cpu", 5.0), OpRecord("aten::mm", "cpu", 3.0, parent=0),
        OpRecord("nvjet_hsh_128x64", "cuda", 600.0, parent=1),  # a block linear's GEMM
        OpRecord("aten::mm", "cpu", 3.0), OpRecord("nvjet_hsh_256x128", "cuda", 200.0, parent=3),  # the LM head
        OpRecord("flash_fwd_kernel", "cuda", 100.0), OpRecord("elementwise_kernel", "cuda", 100.0),
    ]
    s = gemm_share(recs, calls=2, step_ms=1.0)
    assert s["device"] == "cuda" and s["gemm_ms"] == pytest.approx(0.4) and s["eligible_ms"] == pytest.approx(0.3)
    assert s["p_gemm"] == pytest.approx(0.4) and s["p_eligible"] == pytest.approx(0.3)
    assert s["kernel_ms"] == {"dense-gemm": pytest.approx(0.4), "other": pytest.approx(0.1)}


def test_gemm_share_in_a_graph_replay_uses_the_2to4_kernel_names():
    recs = [OpRecord("cudaGraphLaunch", "cpu", 10.0), OpRecord("sm90_xmma_sparse_gemm_f16", "cuda", 50.0, parent=0),
            OpRecord("nvjet_dense_lm_head", "cuda", 30.0, parent=0), OpRecord("rms_norm_kernel", "cuda", 20.0, parent=0)]
    s = gemm_share(recs, calls=1, step_ms=0.2)
    assert s["eligible_ms"] == pytest.approx(0.05) and s["eligible_from"].startswith("2:4 kernels by name")
    dense_only = gemm_share(recs[:1] + recs[2:], calls=1, step_ms=0.2)
    assert dense_only["eligible_ms"] is None and dense_only["p_eligible"] is None  # unknown, not zero


def test_prediction_beside_a_measurement():
    kw = dict(phase="decode", dtype="float16", mode="graph", batch=1, prompt_len=512, gpu="H200")
    dense, sparse = predict(LLAMA_3_8B, weights="dense", **kw), predict(LLAMA_3_8B, weights="2:4", **kw)
    assert dense["t_ms"] == sparse["dense_ms"] and sparse["t_ms"] == dense["sparse_ms"]
    assert 0.5 < dense["p"] < 1 and dense["scenario"] == "cached"
    eager = predict(LLAMA_3_8B, weights="2:4", **dict(kw, mode="eager"))
    assert eager["scenario"] == "eager" and eager["t_ms"] > sparse["t_ms"]  # a cuSPARSELt plan per call
    assert predict(TINY, weights="dense", **dict(kw, dtype="float32")) is None


# --- the plan and the rehearsal (fake CUDA) -------------------------------------------------------


def test_plan_order_and_validation():
    plan = make_plan(TINY, dtypes=["float16"], batches=[1, 32], prompt_lens=[512], modes=["eager", "graph-searched"])
    assert [i.label for i in plan.items] == [
        "decode float16 dense eager batch 1 context 512", "decode float16 2:4 eager batch 1 context 512",
        "decode float16 2:4 graph-searched batch 1 context 512",  # no cuSPARSELt algorithm for a dense GEMM
        "decode float16 dense eager batch 32 context 512", "decode float16 2:4 eager batch 32 context 512",
        "decode float16 2:4 graph-searched batch 32 context 512",
        "prefill float16 dense eager batch 1 prompt 512", "prefill float16 2:4 eager batch 1 prompt 512",
        "prefill float16 2:4 graph-searched batch 1 prompt 512",
    ]
    for kwargs, message in [
        ({"modes": ["eager", "fast"]}, r"modes must be a non-empty list of \['eager', 'graph', 'graph-searched', 'compile'\], got \['eager', 'fast'\]"),
        ({"dtypes": ["fp8"]}, r"dtypes must be a non-empty list of \['float16', 'bfloat16', 'float32'\]"),
        ({"batches": [0]}, r"batches must hold ints >= 1, got 0"),
        ({"n_layers": 5}, r"n_layers must be None \(all\) or an int from 1 to 2, got 5"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_plan(TINY, **kwargs)


def test_rehearsal_runs_the_gpu_control_flow_and_records_failures(tmp_path):
    """Fake CUDA: packing and graphs "work", the algorithm search fails; every item ends as a record."""
    out = tmp_path / "decode.json"
    seen = []

    def log(line):  # the file is rewritten after every item, so a killed run keeps what it measured
        if not line.startswith(("built", "packed", "dense vs")):
            seen.append(len(json.loads(out.read_text())["measurements"]))

    plan = _tiny_plan(dtypes=["float16"], batches=[2], prompt_lens=[8], modes=["eager", "graph", "graph-searched"],
                      weights=["dense", "2:4"], prefill_modes=["eager"])
    res = run_plan(plan, RehearsalOps(fail={"search_algorithm": "torch lacks cuSPARSELt"}), out=out, log=log)
    assert seen == list(range(1, len(plan.items) + 1))
    outcome = [(m["weights"], m["mode"], "t_ms" if "t_ms" in m else "error") for m in res.measurements]
    assert outcome == [("dense", "eager", "t_ms"), ("dense", "graph", "t_ms"), ("2:4", "eager", "t_ms"),
                       ("2:4", "graph", "t_ms"), ("2:4", "graph-searched", "error"),
                       ("dense", "eager", "t_ms"), ("2:4", "eager", "t_ms")]
    assert res.problems() == ["decode float16 2:4 graph-searched batch 2 context 8: "
                              "RuntimeError: torch lacks cuSPARSELt (rehearsed failure)"]
    assert [a["dtype"] for a in res.agreement] == ["float16"] and res.agreement[0]["passed"]  # once per dtype
    assert all(m["prediction"]["gpu"] == "H200" for m in res.measured())  # the rehearsal predicts for the target
    graph = res.measurements[1]["profile"]
    assert graph["eligible_from"].startswith("the eager profile")  # a replay hides the launching operator
    assert load_decode_results(out).to_dict() == res.to_dict() and "rehearsal" in res.settings


def test_a_failed_packing_fails_only_the_2to4_items():
    plan = _tiny_plan(dtypes=["bfloat16"], batches=[1], prompt_lens=[], weights=["dense", "2:4"])
    res = run_plan(plan, RehearsalOps(fail={"pack": "to_sparse_semi_structured: no cuSPARSELt"}), log=None)
    assert ["t_ms" in m for m in res.measurements] == [True, False]
    assert res.measurements[1]["error"] == "RuntimeError: to_sparse_semi_structured: no cuSPARSELt (rehearsed failure)"
    assert res.agreement == []


def test_cpu_skips_2to4_with_the_reason_and_a_spent_budget_skips_the_rest():
    res = run_plan(_tiny_plan(weights=["dense", "2:4"], prompt_lens=[]), ops_for("cpu"), log=None)
    assert [m.get("skipped", "")[:27] for m in res.measurements] == ["", "2:4 sparse kernels need an ", "",
                                                                    "2:4 sparse kernels need an "]
    late = run_plan(_tiny_plan(), ops_for("cpu"), budget_s=0.0, log=None)
    assert all(m["skipped"].startswith("time limit") for m in late.measurements)


def _gpu_measure():
    spec = importlib.util.spec_from_file_location("gpu_measure", REPO / "scripts" / "gpu_measure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._log = lambda line: None
    return module


def test_gpu_measure_decode_plan_runs_in_its_stated_order():
    labels = [i.label for i in _gpu_measure().decode_plan(rehearse=False).items]
    assert labels == [f"decode {dtype} {w} {mode} batch {b} context 512" for dtype in ("float16", "bfloat16")
                      for b in (1, 16, 64) for w, mode in (("dense", "graph"), ("2:4", "graph"), ("2:4", "graph-searched"))]
    rehearsal = [i.label for i in _gpu_measure().decode_plan(rehearse=True).items]
    assert [x.split(" context")[0] for x in rehearsal] == [x.split(" context")[0] for x in labels]  # smaller counts only


def test_gpu_measure_decode_rehearsal(tmp_path):
    """scripts/gpu_measure.py decode --rehearse: the gpu-check step's plan on the fake CUDA device.

    (Without the profiler here to stay fast; the profiled path is rehearsed by the test above it
    and by ``make gpu-check GPU_CHECK_ARGS="--rehearse --steps decode"``.)
    """
    gpu_measure = _gpu_measure()
    plan = dataclasses.replace(gpu_measure.decode_plan(rehearse=True), profiled_calls=0)
    assert gpu_measure.decode(tmp_path, rehearse=True, budget_s=None, plan=plan) == 0
    res = load_decode_results(tmp_path / "decode-rehearsal.json")
    assert len(res.measured()) == len(plan.items) and not res.problems()
    assert [a["dtype"] for a in res.agreement] == ["float16", "bfloat16"]
    searched = [m for m in res.measurements if m["mode"] == "graph-searched"]
    assert searched and all(m["algorithms"] and m["tpot_ms"] > 0 for m in searched) and "rehearsal" in res.settings


# --- results files --------------------------------------------------------------------------------


def test_write_atomic_refuses_inputs_and_fifos_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "r.json"
    write_atomic(target, "old\n")
    with pytest.raises(OutputRefused, match="is an input of this command"):
        write_atomic(target, "new\n", inputs=[tmp_path / "." / "r.json"])
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputRefused, match="is a FIFO .*; give the path of a regular file"):
        write_atomic(fifo, "x")
    with pytest.raises(OutputRefused, match="is a directory; give the path of a regular file"):
        write_atomic(tmp_path, "x")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "r.json"]


def test_a_broken_results_file_names_the_place(tmp_path):
    res = run_plan(_tiny_plan(batches=[1], prompt_lens=[]), ops_for("cpu"), log=None)
    data = res.to_dict()
    data["measurements"][0]["error"] = "both a time and an error"
    (tmp_path / "d.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"decode results file .*d.json': measurements/0: .* is valid under each of"):
        load_decode_results(tmp_path / "d.json")
    (tmp_path / "e.json").write_text(json.dumps(dict(data, schema="twofour-bench/2")))
    with pytest.raises(ValueError, match=r"has schema 'twofour-bench/2'; expected 'twofour-decode/1'"):
        load_decode_results(tmp_path / "e.json")


# --- twofour bench --decode -----------------------------------------------------------------------

_SMALL = ["--batch", "1", "2", "--prompt", "16", "--context", "8", "--repeats", "1", "--warmup", "0"]


def test_cli_cpu_path_writes_a_file_that_passes_the_schema(tmp_path, capsys):
    out = tmp_path / "decode.json"
    assert main(["bench", "--decode", *_SMALL, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0" in text
    assert "dense only" in text and f"results written to {out}" in text
    data = json.loads(out.read_text())
    jsonschema.validate(data, DECODE_SCHEMA)
    assert [(m["phase"], m["batch"], m["prompt_len"]) for m in data["measurements"]] == [
        ("decode", 1, 8), ("decode", 2, 8), ("prefill", 1, 16)]
    assert data["provenance"]["device"] == "cpu" and data["settings"]["model"] == "tiny"
    assert "2:4 needs an NVIDIA GPU" in data["settings"]["sparse_note"]


@pytest.mark.parametrize("args, message", [
    (["--model", "gpt-9"], r"--model: unknown model gpt-9; valid: tiny, llama-3-8b, llama-3-70b"),
    (["--model", "llama-3-8b"], r"--model llama-3-8b: on the CPU only --model tiny runs"),
    (["--layers", "3"], r"--layers must be from 1 to 2 \(the blocks of tiny\), got 3"),
    (["--batch", "0"], r"--batch: every batch must be from 1 to 4096, got \[0\]"),
    (["--context", "9000"], r"--context must be from 1 to 8176 .*, got 9000"),
    (["--prompt", "0", "16"], r"--prompt: every prompt length must be from 1 to 8192, got \[0\]"),
    (["--modes", "eager", "graph"], r"--modes graph: CUDA graphs need a CUDA GPU; on the CPU use eager"),
    (["--modes", "stream"], r"--modes: with --decode unknown stream; valid: eager graph graph-searched compile"),
    (["--shapes", "llama-3-8b"], r"--shapes: a GEMM-sweep option, not used with --decode"),
    (["--repeats", "0"], r"--repeats must be from 1 to 10,000, got 0"),
])
def test_cli_errors_name_the_option(args, message, capsys):
    assert main(["bench", "--decode", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("twofour bench: error: ")
    assert __import__("re").search(message, err), err


def test_cli_decode_options_need_decode(capsys):
    assert main(["bench", "--batch", "8"]) == 2
    assert "--batch: only used with --decode (whole steps)" in capsys.readouterr().err


def test_cli_refuses_a_directory_fifo_or_data_file_as_output(tmp_path, capsys):
    from twofour.bench import DATA_DIR

    assert main(["bench", "--decode", *_SMALL, "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe")
    assert main(["bench", "--decode", *_SMALL, "--out", str(tmp_path / "pipe")]) == 2
    assert "is a FIFO" in capsys.readouterr().err
    data_file = sorted(DATA_DIR.glob("kernel-fit.json"))[0]
    before = data_file.read_bytes()
    assert main(["bench", "--decode", *_SMALL, "--out", str(data_file)]) == 2
    assert "is an input of this command" in capsys.readouterr().err and data_file.read_bytes() == before


# --- on a GPU (make gpu-check) ------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_dense_and_2to4_agree_and_graphs_replay():
    from twofour.serve import algorithm_per_linear, search_algorithms

    ops = ops_for("cuda")
    dense = Decoder.random(TINY, dtype=torch.float16, device="cuda")
    packed = pack_blocks(dense, ops)
    assert type(packed.blocks[0].linears["q_proj"]).__name__.startswith("SparseSemiStructured")
    assert check_agreement(packed, dense).passed
    found = search_algorithms(dense, 8, ops)
    assert set(found) == {"64x64", "32x64", "128x64", "64x128"} and all("alg_id" in f for f in found.values())
    pinned = pack_blocks(dense, ops, algorithm_per_linear(found))  # to_sparse_semi_structured(W, alg_id=)
    assert all(W.alg_id_cusparselt == found[f"{W.shape[0]}x{W.shape[1]}"]["alg_id"]
               for b in pinned.blocks for W in b.linears.values())
    for mode, model in (("eager", packed), ("graph", packed), ("graph-searched", pinned)):
        rec = measure_decode(model, batch=8, context=16, mode=mode, ops=ops, warmup=1, repeats=2, steps=4)
        assert rec["timing"]["host_ahead"] == 1.0 or mode == "eager", rec["timing"]
        assert rec["t_ms"]["median_ms"] > 0, mode
        if mode == "eager":  # the profiler's proof that the 2:4 kernel ran (graph replays may hide kernels)
            assert rec["profile"]["kernel_ms"].get("sparse-cusparselt", 0) > 0, rec["profile"]


def test_gemm_share_in_a_graph_replay_takes_the_block_linears_from_a_labelled_eager_step():
    from twofour.dispatch.kernels import OpRecord
    from twofour.serve.measure import eligible_positions

    # the labelled eager step: a block-linear GEMM, then the LM head's GEMM with the same kernel name
    eager = [OpRecord(ELIGIBLE_LABEL, "cpu", 1.0), OpRecord("gemm", "cuda", 5.0, parent=0), OpRecord("gemm", "cuda", 9.0)]
    labels = eligible_positions(eager, [0.0, 1.0, 2.0])
    assert labels == [("gemm", True), ("gemm", False)]
    # two replayed steps, no operator labels; positions say which kernel is which
    replay = [OpRecord("gemm", "cuda", 4.0), OpRecord("gemm", "cuda", 8.0), OpRecord("gemm", "cuda", 4.0),
              OpRecord("gemm", "cuda", 8.0)]
    share = gemm_share(replay, calls=2, step_ms=0.02, starts=[0.0, 1.0, 2.0, 3.0], labels=labels)
    assert share["eligible_ms"] == pytest.approx(0.004) and share["p_eligible"] == pytest.approx(0.2)
    assert share["kernels"]["gemm"]["per_step"] == 2.0 and share["kernels"]["gemm"]["us_per_step"] == 12.0
    # a replay that ran another sequence is not matched by position
    other = gemm_share(replay[:3], calls=1, step_ms=0.02, starts=[0.0, 1.0, 2.0], labels=labels)
    assert other["eligible_ms"] is None
