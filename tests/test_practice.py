"""The practice bank: every number in it is computed by the toolkit, and the text never pastes one.

A changed model, GPU table or formula changes the rendered answers; a typo in an expression, a
placeholder that names nothing, or a number typed into the prose fails here.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from twofour import amdahl, packing, roofline
from twofour.course.practice import (
    LEVELS,
    NAMESPACE,
    TOPICS,
    BankError,
    cost_per_token_ratio,
    evaluate_expression,
    format_value,
    funnel_stage,
    load_bank,
    parse_question,
    published_speedup,
    render_markdown,
    tokens_per_second,
    wave_count,
)

BANK = load_bank()
IDS = [q.id for q in BANK]

# A decimal, a percentage or an "Nx" speedup typed into prose. Placeholders and `code spans`
# are removed first. "50%" is allowed: it names a sparsity level (the definition of the topic),
# it is not a claim.
_LITERAL = re.compile(r"(?<![\w.{-])(\d+\.\d+|\d+(?:\.\d+)?\s*%|\d+(?:\.\d+)?x\b)")
_ALLOWED_LITERALS = {"50%"}


def _pasted_numbers(text: str) -> list[str]:
    stripped = re.sub(r"\{\{.*?\}\}", "", text)
    stripped = re.sub(r"`[^`]*`", "", stripped)
    return [m.group(0) for m in _LITERAL.finditer(stripped) if m.group(0) not in _ALLOWED_LITERALS]


def test_bank_size_levels_and_topics():
    assert len(BANK) >= 24
    levels = Counter(q.level for q in BANK)
    assert all(levels[level] >= 8 for level in LEVELS), levels
    # Every stage of the answer, the kernel's speed, and the neighbouring topics are covered.
    assert set(TOPICS) <= {q.topic for q in BANK}


@pytest.mark.parametrize("qid", IDS)
def test_every_number_evaluates_to_something_finite(qid):
    q = BANK.get(qid)
    values = q.evaluate()
    assert list(values) == [n.name for n in q.numbers]
    for name, value in values.items():
        if isinstance(value, float):
            assert math.isfinite(value), f"{qid}.{name} = {value}"
    shown = q.formatted()
    assert all(text.strip() for text in shown.values())


@pytest.mark.parametrize("qid", IDS)
def test_every_placeholder_is_a_number_and_every_claim_is_used_or_shown(qid):
    q = BANK.get(qid)
    names = {n.name for n in q.numbers}
    assert q.placeholders() <= names
    for text in q._texts():
        assert "{{" not in q.fill(text)


@pytest.mark.parametrize("qid", IDS)
def test_no_number_is_pasted_into_the_prose(qid):
    q = BANK.get(qid)
    offenders = [lit for text in q._texts() for lit in _pasted_numbers(text)]
    assert not offenders, f"{qid}: write these as {{{{name}}}} numbers computed by twofour: {offenders}"


@pytest.mark.parametrize("qid", IDS)
def test_every_claim_is_computed_or_cited(qid):
    """A number is a given input, a cited value, or an expression that calls the toolkit / other numbers."""
    q = BANK.get(qid)
    earlier: set[str] = set()
    for n in q.numbers:
        is_literal = re.fullmatch(r"[-+]?\d+(\.\d+)?", n.expr) is not None
        if is_literal:
            assert n.source, f"{qid}.{n.name}: a typed value needs a source ('given' for an input, or a citation)"
        else:
            names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", n.expr))
            assert names & (set(NAMESPACE) | earlier), f"{qid}.{n.name}: {n.expr!r} computes nothing from twofour"
        earlier.add(n.name)


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check])
def test_quick_checks_have_a_positive_expected_value(qid):
    q = BANK.get(qid)
    expected = q.quick_check_expected()
    assert math.isfinite(expected) and expected > 0


def test_quick_checks_cover_the_named_examples():
    # The examples: packed bytes of a weight, request speedup for given p and s.
    answers = {q.id: q.quick_check.answer for q in BANK if q.quick_check}
    assert answers.get("packed-bytes") == "packed_mb" and answers.get("amdahl-bs1-decode") == "bs1_speedup"
    assert len(answers) >= 8


def test_worked_numbers_agree_with_the_toolkit_directly():
    # Spot checks, computed here without the bank's expressions: a change in one fails both.
    bs1 = BANK.get("amdahl-bs1-decode").evaluate()
    assert bs1["bs1_speedup"] == amdahl.speedup(0.87, 1 / packing.packed_ratio(packing.torch.float16))
    avg = BANK.get("averaging-mistake").evaluate()
    assert avg["right"] < avg["wrong"]  # the average always overstates
    assert avg["right"] == pytest.approx(1 / 0.7)
    packed = BANK.get("packed-bytes").evaluate()
    assert packed["packed_mb"] * 1e6 == 14336 * 4096 * 2 * 9 / 16
    waves = BANK.get("wave-quantization").evaluate()
    assert waves["eff_small"] == roofline.wave_efficiency(1, 4096, 132)
    combo = BANK.get("request-not-average").evaluate()
    assert combo["right"] == pytest.approx(combo["model_right"], rel=1e-9)  # Amdahl over phases = the model
    assert combo["avg"] > combo["right"]


def test_rendered_answer_shows_computed_values():
    q = BANK.get("amdahl-bs1-decode")
    text = render_markdown(q)
    assert f"{q.evaluate()['bs1_speedup']:.3f}x" in text
    assert "{{" not in text
    assert 'data-qid="amdahl-bs1-decode"' in text and 'class="practice-check"' in text
    expected = float(re.search(r'data-expected="([^"]+)"', text).group(1))
    assert expected == q.quick_check_expected()


def test_percentage_quick_check_is_scaled():
    q = BANK.get("wave-quantization")
    assert q.quick_check.scale == 100
    assert q.quick_check_expected() == pytest.approx(100 * roofline.wave_efficiency(1, 4096, 132))


# ---- the expression sandbox and helpers -----------------------------------------------------


@pytest.mark.parametrize(
    "expr, fragment",
    [
        ("__import__('os')", "unknown name '__import__'"),
        ("amdahl.__dict__", "private attribute"),
        ("amdahl._require_fraction(0.5)", "private attribute"),
        ("[x for x in (1, 2)]", "ListComp"),
        ("(lambda: 1)()", "Lambda"),
        ("open('x')", "unknown name 'open'"),
        ("nope + 1", "unknown name 'nope'"),
        ("1 +", "is not a Python expression"),
        ("", "non-empty string"),
    ],
)
def test_sandbox_refuses(expr, fragment):
    with pytest.raises(BankError, match=re.escape(fragment)):
        evaluate_expression(expr)


def test_sandbox_uses_earlier_names():
    assert evaluate_expression("amdahl.speedup(p, 2.0)", {"p": 0.5}) == amdahl.speedup(0.5, 2.0)


def test_format_value_errors_name_the_format():
    assert format_value(0.25, "{:.0%}") == "25%"
    with pytest.raises(BankError, match="format"):
        format_value("text", "{:.2f}")


def _minimal(**changes):
    raw = {
        "id": "q-one", "level": "fundamentals", "topic": "amdahl", "title": "T", "prompt": "P {{a}}",
        "rubric": ["one", "two", "three"], "answer": "A", "mistakes": ["m"], "follow_ups": ["f"],
        "connects": "c", "numbers": [{"name": "a", "expr": "amdahl.speedup(0.5, 2.0)", "fmt": "{:.2f}", "label": "a"}],
    }
    raw.update(changes)
    return raw


def test_parse_question_accepts_a_minimal_question():
    q = parse_question(_minimal(), 0)
    assert q.fill(q.prompt) == "P 1.33"


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"level": "easy"}, "level must be one of"),
        ({"topic": "cooking"}, "topic must be one of"),
        ({"rubric": ["only one"]}, "'rubric' must have 3-6 entries"),
        ({"follow_ups": []}, "'follow_ups' must have 1-3 entries"),
        ({"prompt": "uses {{missing}}"}, "not numbers of the question: ['missing']"),
        ({"id": "Bad Id"}, "id must be lower-case-with-dashes"),
        ({"colour": "red"}, "unknown keys ['colour']"),
        ({"numbers": [{"name": "a", "expr": "1", "fmt": "{}", "label": "a"}, {"name": "a", "expr": "2", "fmt": "{}", "label": "b"}]},
         "number names must be unique"),
        ({"numbers": [{"name": "A", "expr": "1", "fmt": "{}", "label": "a"}]}, "lower_snake_case"),
        ({"quick_check": {"ask": "q", "answer": "zzz", "derivation": "d"}}, "quick_check.answer must name one"),
        ({"quick_check": {"ask": "q", "answer": "a", "derivation": "d", "tolerance": 2}}, "relative tolerance"),
    ],
)
def test_parse_question_errors_name_the_problem(changes, fragment):
    with pytest.raises(BankError, match=re.escape(fragment)):
        parse_question(_minimal(**changes), 0)


def test_a_broken_expression_names_question_and_number():
    q = parse_question(_minimal(numbers=[{"name": "a", "expr": "amdahl.speedup(2.0, 1.5)", "fmt": "{}", "label": "a"}]), 0)
    with pytest.raises(BankError, match=r"question 'q-one', number 'a'.*ValueError"):
        q.evaluate()


def test_load_bank_refuses_a_missing_file_and_a_bad_top_level(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a file"):
        load_bank(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just a list\n")
    with pytest.raises(BankError, match="'questions' list"):
        load_bank(bad)


def test_helpers():
    assert wave_count(1, 4096, 132) == 1 and wave_count(128 * 133, 128, 132) == 2
    with pytest.raises(ValueError, match="M must be a positive int"):
        wave_count(0, 1, 1)
    assert cost_per_token_ratio([0.5, 0.5], [0.2, 1.0]) == 0.6
    with pytest.raises(ValueError, match="add up to 1"):
        cost_per_token_ratio([0.5, 0.4], [0.2, 1.0])
    assert tokens_per_second(2e9, 2000) == pytest.approx(1000)
    with pytest.raises(ValueError, match="must be > 0"):
        tokens_per_second(0, 1)
    with pytest.raises(ValueError, match="record_id must be the id of one published record"):
        published_speedup("ao1460")  # a prefix of two ids, not an id
    assert published_speedup("ao1460-bs64") == pytest.approx(0.5939)
    from twofour.request import SCENARIOS, estimate

    est = estimate(SCENARIOS["chat decode, batch 1"], "H100")
    assert funnel_stage(est, "decode", "request") == pytest.approx(est.speedup("tpot"))
    with pytest.raises(ValueError, match="funnel stage key"):
        funnel_stage(est, "decode", "nope")
