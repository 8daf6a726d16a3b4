"""The practice bank: every number in it is computed by the toolkit, and the text never pastes one.

A changed model, GPU table or formula changes the rendered answers; a typo in an expression, a
placeholder that names nothing, or a number typed into the prose fails here.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest
import torch

from twofour import amdahl, packing, roofline
from twofour.course.practice import (
    BASES,
    LEVELS,
    NAMESPACE,
    TOPICS,
    UNITS,
    BankError,
    compute_bound_m,
    cost_per_token_ratio,
    evaluate_expression,
    first_torch_pinning,
    format_value,
    funnel_step,
    load_bank,
    measured_crossover_m,
    measured_gemm,
    parse_question,
    published_speedup,
    published_value,
    render_markdown,
    tokens_per_second,
    transposable_patterns,
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
    assert len(BANK) >= 60
    levels = Counter(q.level for q in BANK)
    assert all(levels[level] >= 15 for level in LEVELS), levels
    # Every stage of the answer, the kernel's own speed, and the neighbouring topics are covered.
    topics = Counter(q.topic for q in BANK)
    assert set(TOPICS) <= set(topics)
    # the question's neighbourhood, at least three each
    for topic in ("latency", "cost", "gemm-partitioning", "profiling", "quantization", "serving-m", "capacity",
                  "benchmarking"):
        assert topics[topic] >= 3, (topic, topics[topic])


def test_quick_checks_on_most_questions():
    assert sum(1 for q in BANK if q.quick_check) >= 0.6 * len(BANK)


# Functions whose result is a model's prediction: never part of a quick check's answer key.
_PREDICTIONS = ("estimate(", "roofline.predict(", "roofline.gemm_speedup(", "roofline.crossover_m(",
                "roofline.speedup_curve(", "funnel_step(", "roofline.default_params(", "roofline.fit(")


def _dependencies(q, name: str) -> set[str]:
    exprs = {n.name: n.expr for n in q.numbers}
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo += [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", exprs[current]) if w in exprs]
    return seen


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check])
def test_quick_checks_are_graded_against_first_principles_or_measurements(qid):
    q = BANK.get(qid)
    c = q.quick_check
    assert c.basis in BASES and c.unit in UNITS
    exprs = {n.name: n.expr for n in q.numbers}
    chain = _dependencies(q, c.answer)
    offenders = [f"{n}: {exprs[n]}" for n in chain if any(f in exprs[n] for f in _PREDICTIONS)]
    assert not offenders, f"{qid}: the quick check's answer depends on a model prediction: {offenders}"
    sources = " ".join(n.source or "" for n in q.numbers if n.name in chain) + " ".join(exprs[n] for n in chain)
    if c.basis == "published":
        assert "published" in sources or any(tag in sources for tag in ("#", "README", "arXiv")), qid
    if c.basis == "measured":
        assert "measured_" in sources, qid
    # the page's checker reports the tolerance in whole percent
    assert abs(c.tolerance * 100 - round(c.tolerance * 100)) < 1e-9


@pytest.mark.parametrize("qid", IDS)
def test_every_question_has_grading_signals(qid):
    q = BANK.get(qid)
    assert q.signals is not None
    assert q.signals.strong and q.signals.acceptable and q.signals.weak


def test_predictions_say_they_are_predicted():
    """A number from the kernel model is labelled 'predicted' and names its scenario or its inputs."""
    for q in BANK:
        for n in q.numbers:
            if any(f in n.expr for f in ("estimate(", "roofline.predict(", "roofline.crossover_m(")):
                gemm_given = "gemm_speedup=" in n.expr or "gemm=" in n.expr
                labelled = "predict" in n.label and "scenario" in n.label or gemm_given
                assert labelled, f"{q.id}.{n.name}: say 'predicted (fitted model, <scenario> scenario)'"


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


def test_the_one_over_0_5625_drill_appears_once():
    """The bytes ceiling of bf16 is the answer of one question at most, not six."""
    drills = [q.id for q in BANK if q.quick_check
              and q.quick_check_expected() == pytest.approx(1 / packing.packed_ratio(torch.bfloat16), rel=1e-3)]
    assert len(drills) <= 1, drills


def test_worked_numbers_agree_with_the_toolkit_directly():
    # Spot checks, computed here without the bank's expressions: a change in one fails both.
    bs1 = BANK.get("amdahl-bs1-decode").evaluate()
    assert bs1["bs1_speedup"] == amdahl.speedup(0.87, 1.6)
    avg = BANK.get("averaging-mistake").evaluate()
    assert avg["right"] < avg["wrong"]  # the average always overstates
    assert avg["right"] == pytest.approx(1 / 0.7)
    packed = BANK.get("packed-bytes").evaluate()
    assert packed["packed_mb"] * 1e6 == 14336 * 4096 * 2 * 9 / 16
    waves = BANK.get("wave-quantization").evaluate()
    assert waves["eff_small"] == roofline.wave_efficiency(1, 4096, 132)
    combo = BANK.get("request-not-average").evaluate()
    assert combo["right"] == pytest.approx(1 / (0.35 / 1.35 + 0.65 / 0.95), rel=1e-12)
    assert combo["avg"] > combo["right"]
    marlin = BANK.get("sparse-marlin-vs-int4").evaluate()
    assert marlin["measured"] == pytest.approx(226.02 / 180.80) and marlin["ceiling"] == pytest.approx(4.22 / 3.05)
    cap = BANK.get("capacity-at-slo").evaluate()
    assert cap["b_sparse"] > cap["b_dense"] and cap["extra"] == pytest.approx(cap["freed_gb"] / cap["seq_gb"])
    assert BANK.get("transposable-masks").evaluate()["transposable"] == 90
    assert BANK.get("int8-plain-linear").evaluate()["returned"] == 127


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
        "signals": {"strong": ["s"], "acceptable": ["a"], "weak": ["w"]},
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
        ({"quick_check": {"ask": "q", "answer": "a", "derivation": "d", "tolerance": 0.001, "basis": "published"}},
         "whole percent"),
        ({"quick_check": {"ask": "q", "answer": "a", "derivation": "d", "basis": "the model"}}, "quick_check.basis must be one of"),
        ({"quick_check": {"ask": "q", "answer": "a", "derivation": "d", "basis": "published", "unit": "megs"}},
         "quick_check.unit must be one of"),
        ({"signals": None}, "signals must be a mapping"),
        ({"signals": {"strong": ["s"], "acceptable": ["a"]}}, "'weak' must be a list"),
        ({"signals": {"strong": ["s"], "acceptable": ["a"], "weak": ["w"], "great": ["g"]}}, "unknown signals keys"),
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
    assert funnel_step(est, "decode", "request") == pytest.approx(est.speedup("tpot"))
    with pytest.raises(ValueError, match="funnel step key"):
        funnel_step(est, "decode", "nope")


def test_measurement_and_published_helpers():
    assert published_value("pt111339-m1", "dense_time") == 0.022
    with pytest.raises(ValueError, match="field_name must name a number"):
        published_value("pt111339-m1", "source_url")
    down = measured_gemm(1, 4096, 14336)
    assert down == pytest.approx(measured_gemm(1, 4096, 14336, what="dense_us") / measured_gemm(1, 4096, 14336, what="sparse_us"))
    assert down < 1 < measured_gemm(4096, 14336, 4096)  # decode loses, prefill wins (H200, graph)
    with pytest.raises(ValueError, match="no H200 measurement"):
        measured_gemm(3, 4096, 4096)
    m = measured_crossover_m(4096, 4096)
    assert measured_gemm(m, 4096, 4096) > 1 and measured_crossover_m(14336, 4096) < m
    # first principles: the ridge point crossing
    m_star = compute_bound_m(4096, 4096, "bf16", "H200")
    ridge = roofline.ridge_point("H200", "bf16")
    assert roofline.arithmetic_intensity(m_star, 4096, 4096, "bf16") >= ridge > roofline.arithmetic_intensity(m_star - 1, 4096, 4096, "bf16")
    assert transposable_patterns(2, 4) == 90 and transposable_patterns(1, 2) == 2
    assert first_torch_pinning(701) == "2.8.0" and first_torch_pinning(800) == "2.11.0"


def test_rendered_card_shows_signals_basis_and_units():
    q = BANK.get("packed-bytes")
    text = render_markdown(q)
    assert 'class="practice-signals"' in text and "**Strong**" in text and "**Weak**" in text
    assert "in MB (1 MB = 10^6 bytes)" in text and "within ±1% of the computed value" in text
    assert "graded against first-principles arithmetic" in text
    assert "within 0%" not in "".join(render_markdown(x) for x in BANK)


def test_bank_errors_name_the_file_the_path_and_what_is_valid(tmp_path):
    """The structure is checked by JSON Schema (practice.QUESTION_SCHEMA); its errors still read
    as one sentence: file, question, path inside it, what was wrong, what is valid."""
    import jsonschema

    from twofour.course.practice import BANK_SCHEMA, QUESTION_SCHEMA

    for schema in (QUESTION_SCHEMA, BANK_SCHEMA):
        jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(BankError) as err:
        parse_question(_minimal(numbers=[{"name": "a", "expr": "1", "fmt": "x", "label": "l"}]), 0)
    assert str(err.value) == (
        "question 'q-one' (at numbers[0].fmt): number 'a': fmt must be a format template like '{:.3f}', got 'x'")
    bank = tmp_path / "bank.yaml"
    bank.write_text("questions:\n  - id: first\n    level: hard\n")
    with pytest.raises(BankError) as err:
        load_bank(bank)
    assert str(err.value) == (
        f"{bank}: question 'first' (at level): level must be one of ('fundamentals', 'applied', 'deep'), got 'hard'")
    with pytest.raises(BankError, match=r"\(at rubric\[1\]\): rubric\[1\] must be non-empty text, got ' '"):
        parse_question(_minimal(rubric=["a", " ", "c"]), 0)
