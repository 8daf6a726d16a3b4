"""No two questions of the practice bank are one question asked twice.

Texts are compared as sets of content words (lower case, ``{{placeholders}}`` and common function
words removed; token-set Jaccard): the prompts, every pair of must-haves, every pair of "common
mistakes". Word sets, not character diffs, because a re-worded copy keeps its words and loses its
order. The thresholds sit between what the bank's distinct questions reach and what a copy
reaches: two prompts that share the scenario and the ask share about half their content words,
a copied must-have or mistake shares nearly all of them (the shipped bank had three mistakes
copied word for word, at 1.0), while different questions about the same deployment stay near a
quarter. A pair above a threshold fails with both ids and both texts.
"""

from __future__ import annotations

import itertools
import re

import pytest

from twofour.course.practice import load_bank

BANK = load_bank()
# Words every question about 2:4 uses; they say nothing about which question it is.
STOP = frozenset(
    "a an the of to in on at for and or is are be it its this that with by as from what which why how does do you "
    "your not no than then each one into when would will can".split()
)
THRESHOLDS = {"prompt": 0.36, "must": 0.36, "mistakes": 0.5}


def words(text: str) -> frozenset[str]:
    """Content words of ``text``.

    >>> sorted(words("What does {{s}} mean for the 2:4 GEMM?"))
    ['2:4', 'gemm', 'mean']
    """
    text = re.sub(r"\{\{\s*\w+\s*\}\}", " ", text.lower())
    return frozenset(w for w in re.findall(r"[a-z0-9][a-z0-9:+\-]*", text) if w not in STOP)


def similarity(a: str, b: str) -> float:
    """Token-set Jaccard of two texts (0: no shared content word, 1: the same words)."""
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def texts(q, part: str) -> tuple[str, ...]:
    return {"prompt": (q.prompt,), "must": q.rubric.must, "mistakes": q.mistakes}[part]


def closest_pairs(part: str, questions=None):
    """(similarity, id, id, text, text) for every pair of questions, most similar first."""
    out = []
    for x, y in itertools.combinations(questions or list(BANK), 2):
        best = max(((similarity(a, b), a, b) for a in texts(x, part) for b in texts(y, part)), key=lambda t: t[0])
        out.append((best[0], x.id, y.id, best[1], best[2]))
    return sorted(out, reverse=True)


@pytest.mark.parametrize("part", sorted(THRESHOLDS))
def test_no_two_questions_share_a_prompt_a_must_have_or_a_mistake(part):
    limit = THRESHOLDS[part]
    over = [p for p in closest_pairs(part) if p[0] >= limit]
    assert not over, "\n".join(f"{s:.2f} {a} ~ {b}:\n  {ta!r}\n  {tb!r}" for s, a, b, ta, tb in over[:5])


def test_the_measure_catches_a_copy_and_a_reworded_copy():
    q = BANK.get("run-to-run-variance")
    reworded = "Throughput of the serving benchmark varies run to run; a 2:4 build is claimed faster. With runs " \
               "alternating, how many runs of each do you need before the difference stands out?"
    assert similarity(q.prompt, q.prompt) == 1.0
    assert similarity(q.prompt, reworded) >= THRESHOLDS["prompt"]
    assert similarity(q.prompt, BANK.get("what-is-two-four").prompt) < 0.1
