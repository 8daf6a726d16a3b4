"""The practice-bank loader's limits, at their edges (mutation testing).

A limit tested only far from its edge lets an off-by-one through (``< 0.5`` read as ``<= 0.5``,
``3-6`` entries read as ``3-7``): each test here takes the last accepted and the first refused
value.
"""

from __future__ import annotations

import re

import pytest

from twofour.course.practice import BankError, parse_question


def _question(**changes):
    raw = {
        "id": "q-edge", "level": "fundamentals", "topic": "amdahl", "kind": "calculation", "skill": "edge",
        "setting": "edges", "title": "T", "prompt": "P {{a}}",
        "rubric": {"must": ["one", "two"], "strong": ["s"], "red_flags": ["r"]},
        "levels": {"mid": "m", "senior": "s", "staff": "t"},
        "answer": "A", "mistakes": ["m"], "follow_ups": ["f"],
        "connects": "c", "numbers": [{"name": "a", "expr": "amdahl.speedup(0.5, 2.0)", "fmt": "{:.2f}", "label": "a"}],
    }
    raw.update(changes)
    return raw


def _check(**fields):
    check = {"ask": "q", "answer": "a", "derivation": "d", "basis": "first principles", **fields}
    tol = fields.get("tolerance")
    if isinstance(tol, float) and not isinstance(tol, bool) and tol >= 0.02:  # a wide tolerance names its approximation
        check.setdefault("accepts", [{"number": "a", "why": "an approximation"}])
    return {"quick_check": check}


# 0.07 * 100 and 0.29 * 100 are not whole in binary floating point (7.000000000000001,
# 28.999999999999996): the whole-percent check must allow that rounding, and no more.
@pytest.mark.parametrize("tol", [0.01, 0.05, 0.07, 0.29, 0.49])
def test_tolerance_accepted_up_to_49_percent(tol):
    q = parse_question(_question(**_check(tolerance=tol)), 0)
    assert q.quick_check.tolerance == tol


@pytest.mark.parametrize("tol", [0.5, 0.0, -0.01, 1, True, "0.01"])
def test_tolerance_refused_from_50_percent_and_at_or_below_zero(tol):
    with pytest.raises(BankError, match=r"question 'q-edge'.*tolerance must be a relative tolerance in \(0, 0.5\)"):
        parse_question(_question(**_check(tolerance=tol)), 0)


@pytest.mark.parametrize("tol", [0.015, 0.001, 0.125, 0.01001])
def test_tolerance_must_be_a_whole_percent(tol):
    with pytest.raises(BankError, match="tolerance must be a whole percent"):
        parse_question(_question(**_check(tolerance=tol)), 0)


def test_default_tolerance_and_scale():
    c = parse_question(_question(**_check()), 0).quick_check
    assert c.tolerance == 0.01 and c.scale == 1.0


@pytest.mark.parametrize("scale", [0, -1, True])
def test_scale_must_be_positive(scale):
    with pytest.raises(BankError, match="quick_check.scale must be a positive number"):
        parse_question(_question(**_check(scale=scale)), 0)


@pytest.mark.parametrize("key, low, high", [("mistakes", 1, 5), ("follow_ups", 1, 3)])
def test_list_lengths_at_both_edges(key, low, high):
    for n in (low, high):
        q = parse_question(_question(**{key: [f"item {i}" for i in range(n)]}), 0)
        assert len(getattr(q, key)) == n
    for n in (low - 1, high + 1):
        with pytest.raises(BankError, match=rf"'{key}' must have {low}-{high} entries, got {n}"):
            parse_question(_question(**{key: [f"item {i}" for i in range(n)]}), 0)


@pytest.mark.parametrize("kind, low, high", [("must", 2, 5), ("strong", 1, 4), ("red_flags", 1, 4)])
def test_rubric_lists_at_both_edges(kind, low, high):
    rubric = {"must": ["m1", "m2"], "strong": ["s"], "red_flags": ["r"]}
    for n in (low, high):
        q = parse_question(_question(rubric={**rubric, kind: [str(i) for i in range(n)]}), 0)
        assert len(getattr(q.rubric, kind)) == n
    for bad in (low - 1, high + 1):
        with pytest.raises(BankError, match=rf"question 'q-edge' \(at rubric\.{kind}\): '{kind}' must have {low}-{high} entries, got {bad}"):
            parse_question(_question(rubric={**rubric, kind: [str(i) for i in range(bad)]}), 0)


@pytest.mark.parametrize("key", ["assumptions", "changes"])
def test_design_lists_hold_two_to_five(key):
    design = {"assumptions": ["a1", "a2"], "changes": ["c1", "c2"]}
    q = parse_question(_question(level="deep", kind="design", design={**design, key: list("abcde")}), 0)
    assert len(getattr(q.design, key)) == 5
    for bad in (["only"], list("abcdef")):
        with pytest.raises(BankError, match=rf"\(at design\.{key}\): '{key}' must have 2-5 entries, got {len(bad)}"):
            parse_question(_question(level="deep", kind="design", design={**design, key: bad}), 0)


def test_list_items_must_be_non_empty_text():
    with pytest.raises(BankError, match=r"must\[1\] must be non-empty text"):
        parse_question(_question(rubric={"must": ["one", "  "], "strong": ["s"], "red_flags": ["r"]}), 0)
    with pytest.raises(BankError, match=r"'must' must be a list of 2-5 texts, got str"):
        parse_question(_question(rubric={"must": "one", "strong": ["s"], "red_flags": ["r"]}), 0)
    q = parse_question(_question(rubric={"must": [" one ", "two"], "strong": ["s"], "red_flags": ["r"]}), 0)
    assert q.rubric.must[0] == "one"


def test_a_tolerance_of_two_percent_is_the_first_that_must_name_its_approximation():
    check = {"ask": "q", "answer": "a", "derivation": "d", "basis": "first principles"}
    assert parse_question(_question(quick_check={**check, "tolerance": 0.01}), 0).quick_check.accepts == ()
    with pytest.raises(BankError, match=r"\(at quick_check\.accepts\): a quick check with a tolerance of 2% or more"):
        parse_question(_question(quick_check={**check, "tolerance": 0.02}), 0)


def test_errors_name_the_question_by_position_before_its_id_is_known():
    with pytest.raises(BankError, match=r"^question #3 \(at id\): id must be lower-case-with-dashes, got 'Not An Id'"):
        parse_question(_question(id="Not An Id"), 2)
    with pytest.raises(BankError, match=r"^question #1: must be a mapping, got list"):
        parse_question([], 0)


def test_quick_check_and_sources_errors_name_the_question():
    with pytest.raises(BankError, match=r"^question 'q-edge' \(at quick_check\): quick_check must be a mapping, got \['not', 'a', 'mapping'\]$"):
        parse_question(_question(quick_check=["not", "a", "mapping"]), 0)
    with pytest.raises(BankError, match=r"^question 'q-edge' \(at sources\[0\]\): sources must be a list of texts, got 1$"):
        parse_question(_question(sources=[1, 2]), 0)
    with pytest.raises(BankError, match=r"question 'q-edge' \(at quick_check\.ask\): 'ask' must be non-empty text"):
        parse_question(_question(**{"quick_check": {"answer": "a", "derivation": "d", "basis": "measured"}}), 0)


def test_published_speedup_lists_the_gemm_ids_when_the_id_is_unknown():
    from twofour.course.practice import published_speedup

    with pytest.raises(ValueError, match=r"got 'no-such-record'; GEMM ids: \[.*'pt111339-m1'"):
        published_speedup("no-such-record")


def test_rendered_card_keeps_its_blank_lines_and_headings():
    from twofour.course.practice import render_markdown

    q = parse_question(_question(chapter="notebooks/06-amdahl.ipynb", sources=["ref one", "ref two"],
                                 follow_ups=["f1", {"ask": "f2", "answer": "a2", "strong": "s2"}],
                                 **_check(ask="How much?", tolerance=0.02)), 0)
    md = render_markdown(q)
    assert ("\n**Follow-ups**, in the order an interviewer asks them\n\n1. *f1*\n\n2. *f2*\n\n    **Expected:** a2\n\n"
            "    **A strong answer adds:** s2\n\n</div>\n") in md
    assert "\nRead more: [the chapter](../notebooks/06-amdahl.ipynb).\n\nSources: ref one; ref two\n\n</details>\n" in md
    assert "graded against first-principles arithmetic)</p>\n\n<details class=\"practice-derivation\" markdown=\"1\">\n" in md
    assert "<summary>Derivation</summary>\n\nd\n\n</details>\n\n</div>\n\n</article>\n" in md
    assert "within ±2% of the computed value; accepts 1.33 (an approximation); graded against" in md
    # The numbers table shows each number with how it is obtained.
    assert "| a | 1.33 | `amdahl.speedup(0.5, 2.0)` |" in md


def test_numbers_table_leaves_out_objects():
    from twofour.course.practice import render_markdown

    numbers = [{"name": "a", "expr": "amdahl.speedup(0.5, 2.0)", "fmt": "{:.2f}", "label": "a"},
               {"name": "obj", "expr": "Workload(LLAMA_3_8B, 1, 8, 2)", "fmt": "{}", "label": "workload"}]
    md = render_markdown(parse_question(_question(numbers=numbers), 0))
    assert "| a | 1.33 |" in md and "| workload |" not in md


def test_number_errors_name_their_place():
    with pytest.raises(BankError, match=r"^question 'q-edge' \(at numbers\[0\]\): each number must be a mapping, got str$"):
        parse_question(_question(numbers=["a = 1"]), 0)


def test_load_bank_reads_a_file_and_names_the_bad_question(tmp_path):
    import yaml

    from twofour.course.practice import load_bank

    good = _question()
    path = tmp_path / "bank.yaml"
    path.write_text(yaml.safe_dump({"questions": [good, dict(good, id="q-two", setting="two")]}))
    bank = load_bank(path)
    assert [q.id for q in bank] == ["q-edge", "q-two"]
    path.write_text(yaml.safe_dump({"questions": [good, dict(good, id="q-two", level="easy")]}))
    with pytest.raises(BankError, match=r"bank\.yaml: question 'q-two' \(at level\): level must be one of"):
        load_bank(path)
    path.write_text(yaml.safe_dump({"questions": [good, dict(good, id="Bad")]}))
    with pytest.raises(BankError, match=r"bank\.yaml: question #2 \(at id\): id must be"):
        load_bank(path)


def test_load_bank_names_every_repeated_id(tmp_path):
    import yaml

    from twofour.course.practice import load_bank

    good = _question()
    path = tmp_path / "bank.yaml"
    path.write_text(yaml.safe_dump({"questions": [good, dict(good, id="q-two"), good, dict(good, id="q-two"),
                                                  dict(good, id="q-three")]}))
    with pytest.raises(BankError, match=r"bank\.yaml: question ids must be unique, repeated: \['q-edge', 'q-two'\]$"):
        load_bank(path)


def test_a_unit_outside_the_table_is_shown_as_written():
    # The schema keeps a loaded bank's units to UNITS; a question built in code may use another,
    # and the card then shows the unit itself rather than dropping it.
    import dataclasses

    from twofour.course.practice import render_markdown

    q = parse_question(_question(**_check(unit="%", tolerance=0.02)), 0)
    assert "(in percent, within ±2% of the computed value;" in render_markdown(q)
    odd = dataclasses.replace(q, quick_check=dataclasses.replace(q.quick_check, unit="tokens/s"))
    assert "(tokens/s, within ±2% of the computed value;" in render_markdown(odd)
    plain = dataclasses.replace(q, quick_check=dataclasses.replace(q.quick_check, unit=""))
    assert "(within ±2% of the computed value;" in render_markdown(plain)


def test_an_empty_rubric_text_names_its_list_and_position():
    # The path is rubric.strong[1]: the message's index is the path's last int, not its second part.
    rubric = {"must": ["a", "b"], "strong": ["s", " "], "red_flags": ["r"]}
    with pytest.raises(BankError, match=r"^question 'q-edge' \(at rubric\.strong\[1\]\): strong\[1\] must be non-empty text, got ' '$"):
        parse_question(_question(rubric=rubric), 0)


def test_parsing_a_quick_check_leaves_the_published_schema_alone():
    # Each question's answer is checked against its own numbers' names, in a copy of the schema:
    # QUESTION_SCHEMA, which authors and editors read, keeps the general rule.
    import copy

    from twofour.course.practice import QUESTION_SCHEMA

    before = copy.deepcopy(QUESTION_SCHEMA)
    parse_question(_question(**_check()), 0)
    answer = QUESTION_SCHEMA["properties"]["quick_check"]["anyOf"][1]["properties"]["answer"]
    assert answer == {"type": "string", "x-message": "quick_check.answer must name one of the question's numbers"}
    assert QUESTION_SCHEMA == before
    with pytest.raises(BankError, match=r"\(at quick_check\.answer\): quick_check\.answer must name one of the question's numbers \['a'\], got 'b'$"):
        parse_question(_question(**_check(answer="b")), 0)


def _schema_message(schema, value):
    """The BankError text for the first error of ``value`` against ``schema``."""
    import jsonschema

    from twofour.course.practice.schema import _schema_error

    error = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(value)))
    return str(_schema_error(error, "here", value))


def test_text_schema_messages():
    # QUESTION_SCHEMA is built from these helpers when the module loads; called here, each
    # node's own message must reach the author (not jsonschema's "does not match '\\S'").
    from twofour.course.practice.schema import QUESTION_SCHEMA, _text_schema, _texts_schema

    title = _text_schema("'title' must be non-empty text")
    assert QUESTION_SCHEMA["properties"]["title"] == title
    assert _schema_message(title, "  ") == "here: 'title' must be non-empty text, got '  '"
    must = _texts_schema("must", 2, 5)
    assert QUESTION_SCHEMA["properties"]["rubric"]["properties"]["must"] == must
    assert _schema_message(must, "one") == "here: 'must' must be a list of 2-5 texts, got str"
    assert _schema_message(must, ["a", " ", "c"]) == "here (at [1]): must[1] must be non-empty text, got ' '"
    assert _schema_message(must, ["a"] * 1) == "here: 'must' must have 2-5 entries, got 1"
    assert _schema_message(must, ["a"] * 6) == "here: 'must' must have 2-5 entries, got 6"


def test_compute_bound_m_searches_up_to_2_to_the_20_inclusive():
    # A GPU whose ridge point lies between the intensities at M = 2^20 - 1 and 2^20 (bf16,
    # 4096 x 4096): the answer is the last M searched, not "never reaches".
    import dataclasses

    from twofour import roofline
    from twofour.course.practice import compute_bound_m
    from twofour.hardware import get_gpu

    last = 1 << 20
    below, at = (roofline.arithmetic_intensity(m, 4096, 4096, "bf16") for m in (last - 1, last))
    h200 = get_gpu("H200")
    ridge = (below + at) / 2
    gpu = dataclasses.replace(h200, dense_tflops={**h200.dense_tflops, "bf16": ridge * h200.mem_bw_gbs * 1e9 / 1e12})
    assert below < roofline.ridge_point(gpu, "bf16") <= at
    assert compute_bound_m(4096, 4096, "bf16", gpu) == last
    # Just above the intensity at 2^20, the search gives up and says why.
    beyond = dataclasses.replace(h200, dense_tflops={**h200.dense_tflops, "bf16": (at + (at - below) / 2) * h200.mem_bw_gbs * 1e9 / 1e12})
    with pytest.raises(ValueError, match=r"^N=4096, K=4096 never reaches the ridge point 2044 FLOP/byte$"):
        compute_bound_m(4096, 4096, "bf16", beyond)


# --- the expression sandbox (twofour.course.practice.expressions) ---------------------------


def _nested(opener, closer, levels):
    return opener * levels + "1" + closer * levels


@pytest.mark.parametrize("ok, refused", [
    (_nested("[", "]", 8), _nested("[", "]", 9)),
    (_nested("(", ",)", 8), _nested("(", ",)", 9)),
    (_nested("{0: ", "}", 8), _nested("{0: ", "}", 9)),
    (_nested("[(", ",)]", 4), _nested("[(", ",)]", 4).replace("1", "[1]")),  # lists and tuples alternating
])
def test_values_nest_at_most_8_containers_deep(ok, refused):
    from twofour.course.practice import evaluate_expression

    assert evaluate_expression(ok) is not None
    with pytest.raises(BankError, match=r" gives containers nested deeper than 8$"):
        evaluate_expression(refused)


def test_earlier_numbers_nest_at_most_8_containers_deep():
    from twofour.course.practice import evaluate_expression

    deep = 1
    for _ in range(8):
        deep = [deep]
    assert evaluate_expression("x", {"x": deep}) == deep
    with pytest.raises(BankError, match=r"^names\['x'\] gives containers nested deeper than 8$"):
        evaluate_expression("x", {"x": [deep]})


def test_a_registered_name_starting_with_an_underscore_is_still_private(monkeypatch):
    # Private names are refused by their spelling, not only because the registry lacks them: a
    # helper registered as "_x" by mistake stays out of reach.
    from twofour.course.practice import evaluate_expression
    from twofour.course.practice.registry import NAMESPACE

    monkeypatch.setitem(NAMESPACE, "_secret", 42)
    monkeypatch.setitem(NAMESPACE, "public", 42)
    assert evaluate_expression("public + 1") == 43
    with pytest.raises(BankError, match=r"^expr '_secret \+ 1': '_secret' uses the unknown name '_secret'"):
        evaluate_expression("_secret + 1")


@pytest.mark.parametrize("expr, what", [
    ("(1.5).real", "a float"),
    ("amdahl.speedup.x", r"the function amdahl\.speedup"),
    ("'ab'.x", "a str"),
])
def test_a_refused_attribute_names_what_it_was_read_from(expr, what):
    from twofour.course.practice import evaluate_expression

    with pytest.raises(BankError, match=rf"reads 'x' of {what}, |reads 'real' of {what}, "):
        evaluate_expression(expr)


@pytest.mark.parametrize("expr, want", [
    ("3 > 2", True), ("2 > 3", False), ("2 > 2", False), ("3 >= 3", True), ("2 >= 3", False),
    ("2 < 3", True), ("3 < 2", False), ("3 <= 3", True), ("4 <= 3", False),
    ("2 == 2.0", True), ("2 != 2", False), ("2 != 3", True),
    ("3 > 2 > 1", True), ("3 > 2 > 2", False), ("1 < 3 > 2", True),
])
def test_comparisons(expr, want):
    from twofour.course.practice import evaluate_expression

    assert evaluate_expression(expr) is want


def test_measured_bandwidth_ratio_per_gemm_is_bytes_per_time_over_dense():
    # Each GEMM's ratio, by hand: 2:4 bytes over dense bytes times dense time over 2:4 time
    # (fp16: the packed weight is 9/16 of the dense one; x and y are the same on both sides).
    from twofour.course.practice.helpers import measured_bandwidth_ratio, measured_gemm
    from twofour.models import LLAMA_3_8B, linear_shapes

    ratios = []
    for s in linear_shapes(LLAMA_3_8B, include_lm_head=False):
        N, K = s.out_features, s.in_features
        act = 16 * K * 2 + 16 * N * 2
        speedup = measured_gemm(16, N, K, "float16", "kernel")
        ratios.append((N * K * 2 * 9 / 16 + act) / (N * K * 2 + act) * speedup)
    got = {w: measured_bandwidth_ratio(LLAMA_3_8B, 16, "float16", "kernel", w) for w in ("min", "ratio", "max")}
    assert got["min"] == pytest.approx(min(ratios), rel=1e-12)
    assert got["max"] == pytest.approx(max(ratios), rel=1e-12)
    assert got["min"] <= got["ratio"] <= got["max"]


def test_a_yaml_anchor_on_a_scalar_may_be_reused(tmp_path):
    # An alias of a scalar counts as one node: a bank may name a text once and repeat it.
    from twofour.course.practice import load_bank

    path = tmp_path / "bank.yaml"
    path.write_text(
        "questions:\n"
        "  - {id: q-one, level: fundamentals, topic: amdahl, kind: concept, skill: edge, setting: one, title: T,\n"
        "     prompt: &p 'The same prompt', answer: A, mistakes: [m], follow_ups: [f], connects: c,\n"
        "     rubric: {must: [a, b], strong: [s], red_flags: [r]}, levels: {mid: m, senior: s, staff: t}}\n"
        "  - {id: q-two, level: fundamentals, topic: amdahl, kind: concept, skill: edge, setting: two, title: T,\n"
        "     prompt: *p, answer: A, mistakes: [m], follow_ups: [f], connects: c,\n"
        "     rubric: {must: [a, b], strong: [s], red_flags: [r]}, levels: {mid: m, senior: s, staff: t}}\n",
        encoding="utf-8")
    bank = load_bank(path)
    assert [q.prompt for q in bank] == ["The same prompt"] * 2
    # ... and a billion laughs rooted in a scalar is counted, and refused, like one rooted in a list.
    lines = ["a: &a lol"] + [f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefg", "bcdefgh")]
    path.write_text("\n".join(lines + ["questions: [*h]"]) + "\n", encoding="utf-8")
    with pytest.raises(BankError, match=r"expands to more than 1,000,000 YAML nodes"):
        load_bank(path)


def test_a_calculator_task_without_both_openings_is_refused_at_its_rubric():
    must = ["What the result establishes: a", "two"]  # no "What still needs measurement:"
    raw = _question(calculator={"gpu": "H200"}, rubric={"must": must, "strong": ["s"], "red_flags": ["r"]})
    with pytest.raises(BankError, match=r"q-edge.*\(at rubric\.must\).*'What still needs measurement:'"):
        parse_question(raw, 0)
    raw["rubric"]["must"] = must[:1] + ["What still needs measurement: b"]
    assert parse_question(raw, 0).calculator == (("gpu", "H200"),)


def test_a_questions_own_texts_are_checked_for_markup():
    with pytest.raises(BankError, match=r"prompt holds markup"):
        parse_question(_question(prompt="P <b>x</b> {{a}}"), 0)


def test_a_format_is_at_most_200_characters():
    from twofour.course.practice import check_format

    assert check_format("{}" + "x" * 198) == "{}" + "x" * 198
    with pytest.raises(BankError, match=r"^format must be a string of at most 200 characters, got '\{\}xxx"):
        check_format("{}" + "x" * 199)


def test_a_call_started_after_10_seconds_of_work_is_refused_and_named(monkeypatch):
    import itertools
    from types import SimpleNamespace

    from twofour.course.practice import evaluate_expression, expressions

    # A clock that moves 6 s each time it is read: the expression starts at 0 s, the inner call
    # at 6 s (within 10 s), the outer one at 12 s, past the limit.
    monkeypatch.setattr(expressions, "time", SimpleNamespace(monotonic=itertools.count(0, 6).__next__))
    expr = "amdahl.speedup(0.5, amdahl.speedup(0.5, 2.0))"
    with pytest.raises(BankError, match=re.escape(
            f"expr {expr!r}: {expr!r} is reached after more than 10 s of work; a bank expression is computed in "
            "seconds (split it into earlier numbers)")):
        evaluate_expression(expr)


@pytest.mark.parametrize("expr, message", [
    ("'ab' * 3", "\"'ab' * 3\" applies * to str and int; arithmetic is on numbers only"),
    ("2 + [1]", "'2 + [1]' applies + to int and list; arithmetic is on numbers only"),
    ("'a' + 'b'", "\"'a' + 'b'\" applies + to str and str; arithmetic is on numbers only"),
])
def test_a_bank_expression_refuses_arithmetic_on_a_non_number(expr, message):
    from twofour.course.practice import evaluate_expression

    with pytest.raises(BankError, match=re.escape(message) + "$"):
        evaluate_expression(expr)


def test_a_complex_result_is_refused_as_a_complex_number():
    from twofour.course.practice import evaluate_expression

    # (-8) ** 0.5 is complex in Python; a bank number must be real, and the message says why.
    with pytest.raises(BankError, match=r"^expr '\(-8\) \*\* 0\.5': '\(-8\) \*\* 0\.5' gives the complex number "
                                        r"\([-+.e\d]+\+2\.828\d*j\); a bank number must be real$"):
        evaluate_expression("(-8) ** 0.5")
