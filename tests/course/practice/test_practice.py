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
    FORMULAS,
    GRADES,
    KINDS,
    LEVELS,
    MAX_DRILLS,
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
    assert len(BANK) >= 110
    levels = Counter(q.level for q in BANK)
    assert all(levels[level] >= 25 for level in LEVELS), levels
    # Every stage of the answer, the kernel's own speed, and the loop's neighbouring themes are covered.
    topics = Counter(q.topic for q in BANK)
    assert set(TOPICS) <= set(topics)
    assert all(n >= 2 for n in topics.values()), topics


def test_quick_checks_on_most_questions():
    assert sum(1 for q in BANK if q.quick_check) >= 0.6 * len(BANK)


def test_at_least_ten_open_ended_design_questions_with_their_frame():
    design = BANK.by_kind("design")
    assert len(design) >= 10, [q.id for q in design]
    for q in design:
        assert q.design and len(q.design.assumptions) >= 2 and len(q.design.changes) >= 2, q.id
        assert len(q.answer.split()) >= 120, f"{q.id}: a design question needs a worked answer, not a sketch"
    assert all(q.design is None for q in BANK if q.kind != "design")


def test_levels_ask_for_the_right_kind_of_thinking():
    """Fundamentals test a concept or one calculation; deep questions need several steps, a
    diagnosis from evidence or a design trade-off (the schema refuses anything else)."""
    for q in BANK:
        assert q.kind in KINDS
        if q.level == "fundamentals":
            assert q.kind in ("concept", "calculation"), q.id
        if q.level == "deep":
            assert q.kind in ("multi-step", "diagnosis", "design"), q.id
    with pytest.raises(BankError, match=r"\(at kind\): a deep question's kind must be one of"):
        parse_question(_minimal(level="deep", kind="calculation"), 0)
    with pytest.raises(BankError, match=r"\(at kind\): a fundamentals question's kind must be one of"):
        parse_question(_minimal(kind="design", design={"assumptions": ["a", "b"], "changes": ["c", "d"]}), 0)


def test_no_two_questions_share_a_skill_and_a_setting(tmp_path):
    pairs = [(q.skill, q.setting) for q in BANK]
    assert len(pairs) == len(set(pairs))
    import yaml

    path = tmp_path / "bank.yaml"
    path.write_text(yaml.safe_dump({"questions": [_minimal(), _minimal(id="q-two")]}))
    with pytest.raises(BankError, match=r"questions 'q-one' and 'q-two' both test skill 'one-part' in setting 'given'"):
        load_bank(path)


def test_no_formula_is_drilled_by_more_than_three_questions(tmp_path):
    drills = Counter(f for q in BANK for f in q.drills)
    assert drills and all(n <= MAX_DRILLS for n in drills.values()), drills
    assert set(drills) <= set(FORMULAS)
    import yaml

    path = tmp_path / "bank.yaml"
    four = [_minimal(id=f"q-{i}", setting=f"s{i}", drills=["amdahl"]) for i in range(MAX_DRILLS + 1)]
    path.write_text(yaml.safe_dump({"questions": four}))
    with pytest.raises(BankError, match=r"4 questions drill 'amdahl' \(q-0, q-1, q-2, q-3\); at most 3 may"):
        load_bank(path)


# A quick check whose answer is computed with one of these drills that formula: it must say so,
# so the three-per-formula limit cannot be dodged by leaving `drills` out.
_DRILL_SIGNS = {"amdahl": ("amdahl.",), "kv-bytes": ("kv_bytes_per_token",)}


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check])
def test_a_quick_check_that_drills_a_formula_declares_it(qid):
    q = BANK.get(qid)
    exprs = {n.name: n.expr for n in q.numbers}
    chain = " ".join(exprs[n] for n in _dependencies(q, q.quick_check.answer))
    for formula, signs in _DRILL_SIGNS.items():
        if any(sign in chain for sign in signs):
            assert formula in q.drills, f"{qid}: its quick check drills {formula!r}; declare it in drills"


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check and q.quick_check.accepts])
def test_a_tolerance_accepts_the_approximations_it_names(qid):
    """Each standard approximation a quick check lists lands inside its tolerance, and is a
    different number from the exact answer (an approximation, not the answer again)."""
    q = BANK.get(qid)
    expected = q.quick_check_expected()
    for a, (value, why) in zip(q.quick_check.accepts, q.quick_check_accepted()):
        assert a.number != q.quick_check.answer, f"{qid}: accepts names the answer itself"
        assert abs(value - expected) <= q.quick_check.tolerance * abs(expected), (qid, why, value, expected)


def test_a_wide_tolerance_must_say_which_approximation_it_accepts():
    check = {"ask": "q", "answer": "a", "derivation": "d", "basis": "first principles", "tolerance": 0.05}
    with pytest.raises(BankError, match=r"\(at quick_check\.accepts\): a quick check with a tolerance of 2% or more must list"):
        parse_question(_minimal(quick_check=check), 0)
    numbers = [{"name": "a", "expr": "amdahl.speedup(0.5, 2.0)", "fmt": "{:.2f}", "label": "a"},
               {"name": "b", "expr": "4 / 3", "fmt": "{:.2f}", "label": "b"}]
    q = parse_question(_minimal(numbers=numbers, quick_check={**check, "accepts": [{"number": "b", "why": "4/3"}]}), 0)
    assert q.quick_check_accepted() == [(4 / 3, "4/3")]
    with pytest.raises(BankError, match=r"quick_check\.accepts\[0\]\.number must name one of the question's numbers \['a', 'b'\], got 'c'"):
        parse_question(_minimal(numbers=numbers, quick_check={**check, "accepts": [{"number": "c", "why": "x"}]}), 0)


# What a rubric may not need: this site's tools and its own vocabulary (an interviewer elsewhere
# grades with it), and PR or version recall as a must-have (a bonus at most, in `strong`).
_SITE_WORDS = re.compile(r"twofour|\bfunnel\b|\bchapter\b|calculator|verdict table|\bstage \d|\bstep \d|practice mode",
                         re.IGNORECASE)
_RECALL = re.compile(r"#\d{3,}|\bv?\d+\.\d+\.\d+\b|\bPR\b")


# Five lines an earlier bank graded as must-haves are recall of one library's details (its
# defaults, its error paths, its release history): a candidate who reasons correctly without
# them should still pass, so each is a strong signal. The start of each line, by question.
RECALL_LINES = {
    "fp8-two-four-call-path": "Traps: the bias is not applied, the result is transposed",
    "what-still-runs-2026": "The main serving engines and torchao dropped their 2:4 paths",
    "int8-plain-linear": "The output dtype defaults to int8 and the int32 sum is saturated",
    "hopper-dispatch": "PyTorch's CUTLASS 2:4 path is built for compute capability 8.x only",
    "cusparselt-versions": "Knows fp8 2:4 runs only through a scaled-matmul call",
}


@pytest.mark.parametrize("qid", sorted(RECALL_LINES))
def test_library_recall_is_a_strong_signal_not_a_must_have(qid):
    q, start = BANK.get(qid), RECALL_LINES[qid]
    assert [t for t in q.rubric.strong if t.startswith(start)], f"{qid}: the recall line is not a strong signal"
    assert not [t for t in q.rubric.must if t.startswith(start)], f"{qid}: the recall line is still a must-have"


@pytest.mark.parametrize("qid", IDS)
def test_every_question_has_a_rubric_two_interviewers_grade_alike(qid):
    q = BANK.get(qid)
    assert 2 <= len(q.rubric.must) <= 5 and q.rubric.strong and q.rubric.red_flags
    assert [grade for grade, _ in q.levels] == list(GRADES)
    texts = [q.fill(t) for t in q.grading_texts()]
    offenders = [t for t in texts if _SITE_WORDS.search(t)]
    assert not offenders, f"{qid}: a rubric line needs this site's vocabulary: {offenders}"
    recall = [t for t in q.rubric.must if _RECALL.search(q.fill(t))]
    assert not recall, f"{qid}: PR or version recall may be a strong signal, never a must-have: {recall}"


# Functions whose result is a model's prediction: never part of a quick check's answer key.
_PREDICTIONS = ("estimate(", "roofline.predict(", "roofline.gemm_speedup(", "roofline.crossover_m(",
                "roofline.speedup_curve(", "funnel_step(", "roofline.default_params(", "roofline.fit(")


def _dependencies(q, name: str, stop=frozenset()) -> set[str]:
    """``name`` and every number it is computed from, not looking past the numbers in ``stop``."""
    exprs = {n.name: n.expr for n in q.numbers}
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current in stop:
            continue
        todo += [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", exprs[current]) if w in exprs]
    return seen


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check])
def test_quick_checks_are_graded_against_first_principles_or_measurements(qid):
    q = BANK.get(qid)
    c = q.quick_check
    assert c.basis in BASES and c.unit in UNITS
    exprs = {n.name: n.expr for n in q.numbers}
    # A number shown to the candidate (in the prompt or the ask) is an input, whatever produced it;
    # the answer key is what is computed from the inputs, and that is never a model's prediction.
    shown = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", q.prompt + " " + c.ask)) - {c.answer}
    chain = _dependencies(q, c.answer, stop=shown)
    offenders = [f"{n}: {exprs[n]}" for n in chain - shown if any(f in exprs[n] for f in _PREDICTIONS)]
    assert not offenders, f"{qid}: the quick check's answer depends on a model prediction: {offenders}"
    full = _dependencies(q, c.answer)
    sources = " ".join(n.source or "" for n in q.numbers if n.name in full) + " ".join(exprs[n] for n in full)
    if c.basis == "published":
        assert "published" in sources or any(tag in sources for tag in ("#", "README", "arXiv")), qid
    if c.basis == "measured":
        assert any(tag in sources for tag in ("measured_", "recorded_launch", "searched_gemm", "verdict_table")), qid
    # the page's checker reports the tolerance in whole percent
    assert abs(c.tolerance * 100 - round(c.tolerance * 100)) < 1e-9


# Numbers a candidate cannot derive: measurements, published values, model outputs, given inputs.
_OPAQUE = ("measured_", "published", "recorded_launch", "searched_gemm", "verdict_table", "bf16_rows", "TORCHAO",
           "estimate(", "capacity_at_tpot", "break_even", "rules.", "first_torch_pinning", "roofline.predict(")


@pytest.mark.parametrize("qid", [q.id for q in BANK if q.quick_check])
def test_a_quick_check_is_answerable_from_the_question(qid):
    """Every measured, published, modelled or given number its answer rests on is shown in the
    prompt or the ask: a quick check is arithmetic on what the candidate was told, never recall
    of a number only this site's run (or a paper) knows."""
    q = BANK.get(qid)
    shown = set()
    for text in (q.prompt, q.quick_check.ask):
        shown.update(re.findall(r"\{\{\s*(\w+)\s*\}\}", text))
    exprs = {n.name: n for n in q.numbers}
    todo, seen, hidden = [q.quick_check.answer], set(), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in shown and name != q.quick_check.answer:
            continue
        n = exprs[name]
        deps = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", n.expr) if w in exprs and w != name]
        opaque = any(tag in n.expr for tag in _OPAQUE) or (n.source is not None and not deps)
        if opaque:
            hidden.append(name)
        todo += deps
    assert not hidden, f"{qid}: the quick check rests on {hidden}, which the prompt or the ask must show"


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
        is_literal = re.fullmatch(r"[-+]?\d+(\.\d+)?|\[[\d., ]+\]", n.expr) is not None
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
    # Examples: packed bytes of a weight, request speedup for given p and s.
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
    assert bs1["bs1_speedup"] == amdahl.speedup(0.8, 1.5)
    avg = BANK.get("averaging-mistake").evaluate()
    assert avg["right"] < avg["wrong"]  # the average always overstates
    assert avg["right"] == pytest.approx(1 / 0.7)
    packed = BANK.get("packed-bytes").evaluate()
    assert packed["packed_mb"] * 1e6 == 14336 * 4096 * 2 * 9 / 16
    waves = BANK.get("wave-quantization").evaluate()
    assert waves["s_busy"] == pytest.approx(32 / 132) and waves["d_busy"] == pytest.approx(48 / 132)
    combo = BANK.get("averaging-mistake").evaluate()
    assert combo["phases"] == pytest.approx(1 / (0.35 / 1.35 + 0.65 / 0.95), rel=1e-12)
    assert combo["avg"] > combo["phases"]
    marlin = BANK.get("sparse-marlin-vs-int4").evaluate()
    assert marlin["measured"] == pytest.approx(226.02 / 180.80) and marlin["ceiling"] == pytest.approx(4.22 / 3.05)
    cap = BANK.get("capacity-at-slo").evaluate()
    assert cap["b_sparse"] > cap["b_dense"] and cap["extra"] == pytest.approx(cap["freed_gb"] / cap["seq_gb"])
    # tokens/s at the target is batch over step time: the corrected capacity reasoning
    assert cap["gain"] == pytest.approx((cap["b_sparse"] / cap["t_sparse"]) / (cap["b_dense"] / cap["t_dense"]))
    breakeven = BANK.get("capacity-break-even-kernel").evaluate()
    assert breakeven["r_64"] < breakeven["r_128"] < breakeven["break_even"] and breakeven["gain_slow"] < 1 < breakeven["gain_1"]
    # the target, not memory, sets the batch in this scenario; capacity-at-slo is the memory-bound one
    assert breakeven["dense"].bound == "tpot" and breakeven["b_mem"] > breakeven["b_dense"] and cap["dense"].bound == "memory"
    assert BANK.get("negative-zero").evaluate()["ordered"] == 6 and BANK.get("negative-zero").evaluate()["repeated"] == 4
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
    assert q.quick_check_expected() == pytest.approx(100 * 32 / 132)
    assert roofline.wave_efficiency(4096, 4096, 132) == q.evaluate()["eff_big"]


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
        "id": "q-one", "level": "fundamentals", "topic": "amdahl", "kind": "calculation", "skill": "one-part",
        "setting": "given", "title": "T", "prompt": "P {{a}}",
        "rubric": {"must": ["one", "two"], "strong": ["s"], "red_flags": ["r"]},
        "levels": {"mid": "m", "senior": "s", "staff": "t"},
        "answer": "A", "mistakes": ["m"], "follow_ups": ["f"],
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
        ({"rubric": {"must": ["only one"], "strong": ["s"], "red_flags": ["r"]}}, "'must' must have 2-5 entries"),
        ({"rubric": ["one", "two", "three"]}, "rubric must be a mapping: must"),
        ({"rubric": {"must": ["a", "b"], "strong": ["s"]}}, "(at rubric.red_flags): 'red_flags' must be a list"),
        ({"levels": {"mid": "m", "senior": "s"}}, "(at levels.staff): levels.staff must say what a pass looks like"),
        ({"kind": "design"}, "a fundamentals question's kind must be one of"),
        ({"level": "applied", "kind": "design"}, "a design question needs design"),
        ({"design": {"assumptions": ["a", "b"], "changes": ["c", "d"]}}, "only a question of kind 'design' has a design block"),
        ({"level": "applied", "kind": "design", "design": {"assumptions": ["a"], "changes": ["c", "d"]}},
         "'assumptions' must have 2-5 entries"),
        ({"skill": "Not A Slug"}, "skill must be lower-case-with-dashes"),
        ({"drills": ["calculus"]}, "drills[0] must be one of"),
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
        ({"rubric": {"must": ["a", "b"], "strong": ["s"], "red_flags": ["r"], "great": ["g"]}}, "unknown rubric keys"),
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
    from twofour.request import WORKLOADS, estimate

    est = estimate(WORKLOADS["chat decode, batch 1"], "H100")
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


def test_rendered_card_shows_the_rubric_basis_and_units():
    q = BANK.get("packed-bytes")
    text = render_markdown(q)
    assert '<div class="practice-must" markdown="1">' in text and "**Strong signals**" in text and "**Red flags**" in text
    assert "- **Senior engineer:** " in text and 'data-kind="calculation"' in text
    assert text.index("**Must-haves.**") < text.index("<summary>Worked answer</summary>")
    design = render_markdown(BANK.get("would-you-invest"))
    assert "**Assumptions**" in design and "**What would change the decision**" in design
    accepts = render_markdown(BANK.get("compute-bound-m"))
    assert "within ±15% of the computed value; accepts 206 tokens (M = ridge point" in accepts
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
    with pytest.raises(BankError, match=r"\(at rubric\.must\[1\]\): must\[1\] must be non-empty text, got ' '"):
        parse_question(_minimal(rubric={"must": ["a", " ", "c"], "strong": ["s"], "red_flags": ["r"]}), 0)


# ---- measured first: the bank quotes the verdict the chapters quote ---------------------------

_VERDICT = re.compile(r"(?:verdict_table\(\)\.(?:row\('(?P<key>[a-z-]+)'\)|(?P<best>measured_best))|bf16_rows\(\)\[(?P<bf16>\d)\])"
                      r"\.(?P<attr>per_token|decode_gemm|prefill_gemm|request)")


def test_each_quoted_verdict_number_is_the_verdict_tables():
    """A verdict number in an answer is read from twofour.course.answer's table, the one chapter 7,
    chapter 6 and the home page quote: the same value, and where prose quotes it (quoted_numbers),
    the same text."""
    from twofour.course.answer import bf16_rows, quoted_numbers, verdict_table

    table, quoted, bf16 = verdict_table(), quoted_numbers(), bf16_rows()
    ties = 0
    for q in BANK:
        values, shown = q.evaluate(), q.formatted()
        for n in q.numbers:
            m = _VERDICT.fullmatch(n.expr.strip())
            if m is None:
                continue
            row = (bf16[int(m["bf16"])] if m["bf16"] is not None else table.measured_best if m["best"]
                   else table.row(m["key"]))
            assert values[n.name] == getattr(row, m["attr"]), (q.id, n.name)
            key = {"per_token": row.key, "decode_gemm": f"{row.key}-gemm"}.get(m["attr"])
            if m["bf16"] is None and m["best"] is None and key in quoted:
                assert shown[n.name] == quoted[key], (q.id, n.name, shown[n.name], quoted[key])
            if m["best"] and m["attr"] == "per_token":
                assert shown[n.name] == quoted["direct"], (q.id, n.name)
            ties += 1
        for n in q.numbers:
            if n.expr.strip() in ("verdict_table().low", "verdict_table().high"):
                ties += 1
                assert f"{table.low:.2f}x to {table.high:.2f}x" == quoted["range"]
                assert shown[n.name] in quoted["range"].split(" to "), (q.id, n.name)
    assert ties >= 20, ties
    quoted_in_bank = {m["key"] for q in BANK for n in q.numbers if (m := _VERDICT.fullmatch(n.expr.strip())) and m["key"]}
    assert {"eager", "graph", "graph-searched", "kernel"} <= quoted_in_bank


_WORKED = ("WORKLOADS['chat decode, batch 1']", "Workload(LLAMA_3_8B, 1, 512, 256", "verdict_table().workload")


def test_the_worked_deployment_is_quoted_only_from_the_table():
    """No answer recomputes the worked deployment's measured verdict another way (the old bank
    had 0.50x and 0.65x for one scenario): its GEMM speedups come from the table, and a model
    estimate of it appears only as a labelled what-if (gemm_speedup given) or for its p."""
    for q in BANK:
        for n in q.numbers:
            if not any(w in n.expr for w in _WORKED):
                continue
            assert "measured_phase_speedup(" not in n.expr, f"{q.id}.{n.name}: read the verdict table instead"
            if ".speedup('tpot')" in n.expr or ".speedup('request')" in n.expr:
                assert "gemm_speedup=" in n.expr, f"{q.id}.{n.name}: a per-token verdict comes from the table"


def test_one_decode_p_per_setting_and_never_typed_for_a_named_model():
    """The eligible fraction of a setting comes from the model (labelled) or from a given trace;
    a typed p is a given of a generic question, never a claim about Llama-3-8B."""
    by_setting: dict[str, set] = {}
    for q in BANK:
        for n in q.numbers:
            if n.expr.endswith(".decode.p"):
                assert "predict" in n.label, f"{q.id}.{n.name}: label p as predicted"
                by_setting.setdefault(n.expr.split(".decode.p")[0].replace("verdict_table().row('graph').estimate",
                                      "estimate(request.WORKLOADS['chat decode, batch 1'], 'H200')"), set()).add(
                    round(q.evaluate()[n.name], 12))
            literal = re.fullmatch(r"[-+]?\d+(\.\d+)?", n.expr) is not None
            if literal and re.search(r"eligible|\bp\b", n.label):
                assert "llama" not in q.prompt.lower(), f"{q.id}.{n.name}: a typed p for a named model"
    assert all(len(v) == 1 for v in by_setting.values()), by_setting
    # batch 1, 512-token prompt: one p, fp16 or bf16 alike
    batch1 = {v for k, vs in by_setting.items() if "chat decode, batch 1" in k for v in vs}
    assert len(batch1) == 1


def test_the_registry_holds_exactly_what_the_bank_uses():
    from twofour.course.practice.registry import Namespace

    exprs = " ".join(n.expr for q in BANK for n in q.numbers)
    unused = []
    for name, value in NAMESPACE.items():
        if isinstance(value, Namespace):
            unused += [f"{name}.{m}" for m in value.members if not re.search(rf"\b{name}\.{m}\b", exprs)]
        elif not re.search(rf"\b{name}\b", exprs):
            unused.append(name)
    assert not unused, f"registered but used by no bank expression (remove them from the registry): {unused}"
