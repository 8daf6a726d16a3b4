"""Follow-up chains: what an interviewer asks next, with the answer expected and what a strong answer adds.

Every deep and applied question carries a chain of 2-3 answered follow-ups; every fundamentals
question at least one. The rendered card lists them in order, each with its expected answer.
"""

from __future__ import annotations

import pytest

from twofour.course.practice import BankError, load_bank, parse_question, render_markdown

BANK = load_bank()


@pytest.mark.parametrize("qid", [q.id for q in BANK])
def test_every_question_has_answered_follow_ups_for_its_level(qid):
    q = BANK.get(qid)
    answered = [f for f in q.follow_ups if f.answered]
    need = 1 if q.level == "fundamentals" else 2
    assert need <= len(answered) <= 3, f"{qid}: {len(answered)} answered follow-ups, a {q.level} question needs {need}-3"
    for f in answered:
        assert f.ask.endswith("?"), f"{qid}: a follow-up asks a question: {f.ask!r}"
        assert f.answer != f.ask


def test_the_chain_renders_in_order_with_its_answers():
    q = BANK.get("one-token-slower")
    md = render_markdown(q)
    at = [md.index(q.fill(f.ask)) for f in q.follow_ups]
    assert at == sorted(at)
    for f in q.follow_ups:
        assert f"**Expected:** {q.fill(f.answer)}" in md
        if f.strong:
            assert f"**A strong answer adds:** {q.fill(f.strong)}" in md


def test_a_follow_up_mapping_needs_an_ask_and_an_answer_and_nothing_else():
    base = {"id": "x", "level": "deep", "topic": "amdahl", "kind": "multi-step", "skill": "s", "setting": "t",
            "title": "T", "prompt": "P", "rubric": {"must": ["a", "b"], "strong": ["s"], "red_flags": ["r"]},
            "levels": {"mid": "m", "senior": "s", "staff": "t"}, "answer": "A", "mistakes": ["m"], "connects": "c"}
    ok = parse_question({**base, "follow_ups": [{"ask": "Why?", "answer": "Because."}, "And then?"]}, 0)
    assert [f.answered for f in ok.follow_ups] == [True, False]
    with pytest.raises(BankError, match="follow_ups"):
        parse_question({**base, "follow_ups": [{"ask": "Why?"}]}, 0)
    with pytest.raises(BankError, match="follow_ups"):
        parse_question({**base, "follow_ups": [{"ask": "Why?", "answer": "A", "hint": "h"}]}, 0)


def test_the_seeds_neighbours_are_at_least_a_quarter_of_the_bank():
    """GEMM work partitioning, routing and cascades, reasoning budgets, serving design, speculative
    decoding, multi-LoRA and long context, each asked on its own terms."""
    from twofour.course.practice.terms import NEIGHBOUR_TOPICS

    neighbours = [q for q in BANK if q.topic in NEIGHBOUR_TOPICS]
    assert len(neighbours) >= 0.25 * len(BANK), (len(neighbours), len(BANK))
    for topic in NEIGHBOUR_TOPICS:
        assert len(BANK.by_topic(topic)) >= 3, topic
