"""No two questions of the practice bank teach one lesson with new numbers.

Word overlap does not find these pairs: a calculator task and a profile reading can teach the same
thing in different words and on different numbers, while the calculator tasks share a template and
look alike without repeating a lesson (on the bank of 147 questions, the most similar pair by
must-have and `connects` words was two calculator tasks on different lessons). So the lessons are
declared here, by reading: each lesson the bank teaches more than one way, with every question that
taught it. At most one of them may stay in the bank; the others were merged into it (their best
follow-up kept) or rewritten to teach another lesson. A new question on one of these lessons fails
here and has to be merged or given a lesson of its own.
"""

from __future__ import annotations

import pytest

from twofour.course.practice import load_bank

BANK = load_bank()
IDS = {q.id for q in BANK}

# lesson -> the questions that taught it (the one the bank keeps first)
LESSONS: dict[str, tuple[str, ...]] = {
    "a compute-bound prefill GEMM's 2:4 gain is the sparse kernel's share of its doubled peak":
        ("compute-bound-ncu", "nsight-compute-bound-reading"),
    "chunked prefill raises the mixed step's M to the chunk, where 2:4 stops losing, on slow steps":
        ("calc-chunked-prefill", "chunked-prefill"),
    "a reasoning answer is almost all decode, so the request ratio is the per-token one":
        ("calc-reasoning-output", "reasoning-latency-budget"),
    "an eager small 2:4 call is host-bound: a per-call cost seen in Nsight Systems, removed by graphs":
        ("one-token-slower", "host-bound-call"),
    "reserving each sequence's maximum wastes KV memory; allocating as tokens arrive multiplies the batch":
        ("paged-kv-batch", "admission-reserve-output"),
    "the 2:4 pattern is portable, the packed layout is not: ship the pattern and pack at load":
        ("shard-then-compress", "hipsparselt-portability"),
    "a published low-bit 2:4 decode result read against its bytes ceiling and its own baseline":
        ("sparse-marlin-vs-int4", "fp8-two-four-published-ceiling"),
    "fewer KV bytes per token (shared KV heads) raise p":
        ("mla-kv-and-p", "gqa-kv-bytes"),
    "a tensor-parallel all-reduce is part of 1 - p, priced against 2:4's best saving":
        ("tp-allreduce-versus-saving", "tp-prefill-allreduce"),
    "at decode the 2:4 kernel splits K less than cuBLAS and keeps fewer SMs streaming the weight":
        ("wave-quantization", "split-k-small-m"),
    "KV reads grow with batch x context and 2:4 does not shrink them, so p falls":
        ("calc-long-context", "batch-context-shrink-p"),
    "a cascade's cost is the small model for all plus the big one for the escalated; 2:4 divides one term":
        ("cascade-cost-and-tail", "cascade-with-sparsity"),
    "decode is bytes-bound (ceiling the byte ratio), prefill compute-bound (ceiling the math)":
        ("decode-bytes-ceiling", "phase-regimes"),
}


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_each_declared_lesson_is_taught_by_one_question(lesson):
    taught_by = [qid for qid in LESSONS[lesson] if qid in IDS]
    assert len(taught_by) == 1, f"{lesson!r} is taught by {taught_by}: merge them or give one another lesson"


def test_the_questions_a_lesson_kept_are_in_the_bank():
    """The first id of each lesson is the question that kept it, so the table cannot drift from the bank."""
    assert all(ids[0] in IDS for ids in LESSONS.values()), [ids[0] for ids in LESSONS.values() if ids[0] not in IDS]
    assert len({ids[0] for ids in LESSONS.values()}) == len(LESSONS)


def test_the_rewritten_questions_teach_their_own_lesson():
    """Two pairs were differentiated instead of merged: each question keeps a lesson the other does not teach."""
    typed = BANK.get("calc-typed-gemm-speedup")  # Amdahl's law solved for s, against the bytes ceiling
    assert "solved for s" in next(n.label for n in typed.numbers if n.name == "s")
    assert not any("1 / ((1 - p) + p / s)" in m for m in typed.rubric.must)  # the forward formula is amdahl-bs1-decode's
    sr_ste = BANK.get("sr-ste-training")  # how a dense weight learns a mask, and the step bound
    assert not any("transposable" in m for m in sr_ste.rubric.must)  # which GEMMs qualify is transposable-masks'
