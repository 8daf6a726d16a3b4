"""The planning helpers the bank's follow-up questions use, and its calculator tasks."""

from __future__ import annotations

import doctest
import math
import re

import pytest

from twofour import models
from twofour.course.practice import BankError, load_bank, parse_question
from twofour.course.practice import planning
from twofour.course.practice.terms import CALCULATOR_KEYS, CALCULATOR_MUSTS

BANK = load_bank()


def test_doctests():
    assert doctest.testmod(planning).failed == 0


def test_sample_size_at_80_percent_power_against_the_two_standard_error_rule():
    # n = 2 ((z_0.975 + z_0.8) sigma / delta)^2: 9, 16 and 3 runs where the 50%-power rule gave 5, 8 and 2
    for sigma, delta, at_80, at_50 in ((0.03, 0.04, 9, 5), (0.01, 0.01, 16, 8), (0.03, 0.08, 3, 2)):
        assert planning.runs_for_power(sigma, delta) == at_80
        assert planning.runs_for_power(sigma, delta, power=0.5) == at_50
        assert math.ceil(2 * (2 * sigma / delta) ** 2) in (at_50, at_50 + 1)  # the old rule, z = 2
    assert planning.runs_for_power(0.03, 0.04, power=0.9) > planning.runs_for_power(0.03, 0.04)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"sigma": 0, "delta": 0.1}, "sigma must be"),
    ({"sigma": 0.1, "delta": float("nan")}, "delta must be"),
    ({"sigma": 0.1, "delta": 0.1, "power": 1.0}, "power must be in"),
    ({"sigma": 0.1, "delta": 0.1, "alpha": 0}, "alpha must be in"),
])
def test_sample_size_refuses_bad_input(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        planning.runs_for_power(**kwargs)


def test_tp_degrees_check_every_split_dimension():
    assert planning.tp_degrees(models.LLAMA_3_70B) == "1, 2, 4, 8"
    # down_proj's K alone divides by 7; the heads and the hidden size do not
    assert models.LLAMA_3_70B.intermediate % 7 == 0 and models.LLAMA_3_70B.heads % 7 != 0
    assert planning.tp_degrees(models.LLAMA_3_8B, (1, 2, 4, 8, 16)) == "1, 2, 4, 8, 16"
    # a column multiple the shards cannot meet removes the degree
    assert "8" not in planning.tp_degrees(models.LLAMA_3_70B, (8,), k_multiple=2048)
    with pytest.raises(ValueError, match="multiple of 4"):
        planning.tp_degrees(models.LLAMA_3_70B, k_multiple=6)
    with pytest.raises(ValueError, match="at least one"):
        planning.tp_degrees(models.LLAMA_3_70B, ())


def test_kv_batch_limit_and_allreduce():
    assert planning.kv_batch_limit(1e9, 1e6, 1000) == 1
    assert planning.kv_batch_limit(1e9, 1e6, 1001) == 0
    assert planning.kv_batch_limit(1e9, 1e6, 999, block_tokens=16) == 0  # 63 blocks of 16 = 1,008 tokens
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        planning.kv_batch_limit(1e9, -1, 10)
    assert planning.ring_allreduce_us(1e6, 1, 100) == 0.0
    # bandwidth term 2 (n-1)/n x bytes / bandwidth plus 2 (n-1) latencies
    assert planning.ring_allreduce_us(8e6, 4, 100, 2.0) == pytest.approx(1.5 * 8e6 / 1e5 + 12)
    with pytest.raises(ValueError, match="latency_us"):
        planning.ring_allreduce_us(1e6, 4, 100, -1)


def test_normal_quantile():
    assert planning.normal_quantile(0.5) == 0
    with pytest.raises(ValueError, match="p must be"):
        planning.normal_quantile(1)


CALC = [q for q in BANK if q.calculator]


def test_at_least_twelve_calculator_tasks_grade_what_is_established_and_what_is_open():
    assert len(CALC) >= 12
    for q in CALC:
        keys = [k for k, _ in q.calculator]
        assert set(keys) <= set(CALCULATOR_KEYS), q.id
        assert {"gpu", "model", "dtype", "batch", "gemm"} <= set(keys), q.id
        for opening in CALCULATOR_MUSTS:
            assert sum(m.startswith(opening) for m in q.rubric.must) == 1, (q.id, opening)
    # no two tasks open in the same state and ask the same change
    assert len({(q.calculator, q.prompt) for q in CALC}) == len(CALC)


def _minimal(**changes):
    raw = {
        "id": "t", "level": "applied", "topic": "capacity", "kind": "calculation", "skill": "s", "setting": "x",
        "title": "T", "prompt": "P", "answer": "A", "mistakes": ["m"], "follow_ups": ["f"], "connects": "c",
        "rubric": {"must": ["What the result establishes: a", "What still needs measurement: b"], "strong": ["s"],
                   "red_flags": ["r"]},
        "levels": {"mid": "a", "senior": "b", "staff": "c"},
        "calculator": {"gpu": "H100", "batch": 8},
    }
    raw.update(changes)
    return raw


def test_a_calculator_task_is_checked_when_the_bank_loads():
    q = parse_question(_minimal(), 0)
    assert q.calculator_query() == "gpu=H100&batch=8"
    with pytest.raises(BankError, match=r"calculator keys must be the calculator's URL keys"):
        parse_question(_minimal(calculator={"colour": "red"}), 0)
    with pytest.raises(BankError, match=r"needs a must-have that opens with 'What still needs measurement:'"):
        parse_question(_minimal(rubric={"must": ["What the result establishes: a", "b"], "strong": ["s"],
                                        "red_flags": ["r"]}), 0)
    with pytest.raises(BankError, match=r"calculator values must be text or numbers"):
        parse_question(_minimal(calculator={"gpu": ["H100"]}), 0)


def test_a_calculator_task_renders_a_link_with_its_state():
    from twofour.course.practice import render_markdown

    q = CALC[0]
    md = render_markdown(q)
    assert f"(../calculator/index.md?{q.calculator_query()})" in md
    assert "practice-calc-link" in md
    assert "calculator/index.md" not in render_markdown(BANK.get("what-is-two-four"))


# The follow-up questions a candidate should be ready for, by the area an interviewer moves to from the 2:4 question
# (in order of how often they come up). Each id is a question of the bank; no id is in two areas.
FOLLOW_UPS = {
    "KV cache and the scheduler": ["paged-kv-batch", "freed-bytes-to-batch", "prefix-cache-prefill-share",
                                   "preemption-p99-spikes", "static-batching-occupancy",
                                   "prefix-sharing-batch", "kv-fp8-versus-two-four-room", "kv-offload-over-pcie"],
    "attention kernels": ["flash-attention-io", "split-kv-decode", "attention-flops-share", "mla-kv-and-p", "sliding-window-kv-cap"],
    "reading Nsight metrics": ["nsight-dram-bound-reading", "nsight-latency-bound-launch", "l2-resident-benchmark", "compute-bound-ncu"],
    "multi-GPU communication": ["tp-allreduce-versus-saving", "pipeline-bubble-stages", "expert-parallel-all-to-all", "moe-hot-expert",
                                "tensor-parallel-shapes"],
    "quantization beyond bytes": ["smoothquant-outliers", "w8a8-versus-weight-only", "per-channel-scales"],
    "the dense batching curve": ["dense-batching-curve", "max-batch-from-memory"],
    "reasoning-model latency": ["reasoning-latency-under-load"],
    "one change to GPU architecture": ["change-one-thing-gpu", "which-upgrade-helps-decode"],
}


# A follow-up is tied back to the 2:4 question when a sentence of its answer names 2:4 (or the
# sparse path, or p) together with what the follow-up changes for it: p or the share of the step,
# the batch or M at which 2:4 pays, the bytes, or what must be measured; and a must-have grades it.
TIED_TO_TWO_FOUR = re.compile(r"2:4|\bsparse\b|\bp\b|eligible fraction")
WHAT_IT_CHANGES = re.compile(r"\bp\b|1 - p|eligible|share|\bbatch|\bM\b|at decode|one token|small M|\bstep\b|"
                             r"\bbytes?\b|\bcuts?\b|at most|measur|evaluat|quality")


def tie_back_sentences(q) -> list[str]:
    """The sentences of ``q``'s answer that say what its subject does for 2:4."""
    sentences = re.split(r"(?<=[.?!])\s+", q.fill(q.answer).replace("\n", " "))
    return [s for s in sentences if TIED_TO_TWO_FOUR.search(s) and WHAT_IT_CHANGES.search(s)]


def test_the_tie_back_check_fails_on_an_answer_that_never_returns_to_two_four():
    import dataclasses

    q = BANK.get("flash-attention-io")
    assert tie_back_sentences(q)
    detached = dataclasses.replace(q, answer="FlashAttention tiles Q, K and V through on-chip memory. The scores never reach HBM.")
    assert not tie_back_sentences(detached)


def test_at_least_thirty_follow_up_questions_cover_every_area():
    ids = [qid for area in FOLLOW_UPS.values() for qid in area]
    assert len(ids) == len(set(ids)) >= 30
    for area, qids in FOLLOW_UPS.items():
        for qid in qids:
            q = BANK.get(qid)  # KeyError names a missing one
            assert q.connects, f"{area}: {qid}"
            assert tie_back_sentences(q), f"{area}: {qid}: no sentence of the answer ties it back to 2:4"
            # A question about another subject grades its own subject; tying it back to 2:4 is a
            # strong signal (a must-have would fail a perfect FlashAttention answer that never says 2:4).
            assert [m for m in (*q.rubric.must, *q.rubric.strong) if TIED_TO_TWO_FOUR.search(q.fill(m))], \
                f"{area}: {qid}: no must-have or strong signal grades what it means for 2:4"
    # these two areas are checked by name: each holds at least one question
    assert FOLLOW_UPS["reading Nsight metrics"] and FOLLOW_UPS["reasoning-model latency"]
    # every number a follow-up states is computed (or cited) and renders
    for qid in ids:
        assert "{{" not in BANK.get(qid).render("answer")
