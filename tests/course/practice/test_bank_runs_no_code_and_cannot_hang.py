"""A shared question bank is data: no code from it runs, no expression or YAML file can hang or blow up.

Every case here was a failure before: an attribute chain reached ``os`` and ran a shell command,
``9**9**9`` ran unbounded, a billion-laughs YAML reached gigabytes, deep nesting and non-UTF-8
files gave tracebacks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from twofour.course.practice import BankError, check_format, evaluate_expression, format_value, load_bank, parse_question

# Attribute chains and calls that reach, or try to reach, the interpreter's machinery.
EXPLOITS = [
    "rules.torch.os.system('touch {marker}')",
    "structure.torch.os.system('touch {marker}')",
    "estimate.__globals__['os'].system('touch {marker}')",
    "amdahl.speedup.__globals__",
    "amdahl.__dict__",
    "amdahl.__builtins__",
    "math.sys",
    "roofline.model.torch",
    "hardware.get_gpu('H200').cite",
    "hardware.get_gpu('H200').__class__",
    "hardware.get_gpu('H200').peak_tflops.__func__",
    "estimate(request.WORKLOADS['chat decode, batch 1'], 'H200').inputs",
    "estimate(request.WORKLOADS['chat decode, batch 1'], 'H200').to_dict()",
    "LLAMA_3_8B.with_(name='x')",
    "', '.format",
    "'{0.__class__}'.format(1)",
    "', '.join.__self__",
    "bf16.is_floating_point",
    "(1).real",
    "max([1, 2], key=amdahl.speedup)",
    "funnel_step(amdahl, 'decode', 'datasheet')",
    "getattr(amdahl, 'os')",
    "__import__('os').system('touch {marker}')",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "(lambda: 1)()",
    "Workload(**{'model': LLAMA_3_8B})",
    "min(*[1, 2])",
]


@pytest.mark.parametrize("expr", EXPLOITS)
def test_no_expression_reaches_code_outside_the_registry(expr, tmp_path):
    marker = tmp_path / "pwned"
    text = expr.replace("{marker}", str(marker))
    with pytest.raises(BankError) as err:
        evaluate_expression(text)
    assert not marker.exists()
    msg = str(err.value)
    assert "\n" not in msg and f"expr {text!r}" in msg, msg


def test_the_confirmed_exploit_is_refused_with_the_question_the_expression_and_the_part(tmp_path):
    """The reported attack: an attribute chain from a namespace module to os.system, in a shared bank file."""
    marker = tmp_path / "pwned"
    expr = f"rules.torch.os.system('touch {marker}')"
    bank = tmp_path / "bank.yaml"
    bank.write_text(_bank_yaml(expr), encoding="utf-8")
    with pytest.raises(BankError) as err:
        load_bank(bank)
    assert not marker.exists()
    msg = str(err.value)
    assert "question 'q-one'" in msg and "number 'a'" in msg and repr(expr) in msg
    assert "'rules.torch'" in msg and "is not in the namespace 'rules'" in msg


def _bank_yaml(expr: str) -> str:
    return f"""questions:
  - id: q-one
    level: fundamentals
    topic: amdahl
    kind: calculation
    skill: edge
    setting: hostile
    title: T
    prompt: "P {{{{a}}}}"
    rubric: {{must: [one, two], strong: [s], red_flags: [r]}}
    levels: {{mid: m, senior: s, staff: t}}
    answer: A
    mistakes: [m]
    follow_ups: [f]
    connects: c
    numbers:
      - {{name: a, expr: "{expr}", fmt: "{{}}", label: a}}
"""


def test_9_to_the_9_to_the_9_is_refused_before_it_is_computed():
    """Refused by its size, before the power runs: the refusal allocates under 1 MB (the number is ~150 MB)."""
    code = ("import tracemalloc\n"
            "from twofour.course.practice import evaluate_expression, BankError\n"
            "tracemalloc.start()\n"
            "try:\n    evaluate_expression('9**9**9')\nexcept BankError as e:\n"
            "    print('refused:', tracemalloc.get_traced_memory()[1], e)\n")
    # In a child process with a hang guard (not a speed target): unrefused, the power would run
    # for minutes inside one C call, which nothing in this process could interrupt.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.stdout.startswith("refused:") and "bits" in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split()[1]) < 1 << 20, out.stdout


@pytest.mark.parametrize(
    "expr, fragment",
    [
        ("9**9**9", "integer power"),
        ("2**200", "integer power"),
        ("10**39 * 10**39", "bits"),
        ("10.0**400", "OverflowError"),
        ("1e308 * 10", "must be finite"),
        ("1e999", "must be finite"),
        ("(-8) ** 0.5", "complex"),
        ("1 / 0", "ZeroDivisionError"),
        ("'a' * 10", "arithmetic is on numbers only"),
        ("[0] * 10", "arithmetic is on numbers only"),
        ("(1, 2) + (3,)", "arithmetic is on numbers only"),
        ("'%999999999d' % 1", "%-format directive"),
        ("'%*d' % (100000000, 1)", "%-format directive"),
        ("'%(x)s' % {'x': 1}", "uses a %-format directive a bank may not use (allowed: %d, %s, %.2f ..., "
                               "widths up to 99, no '*' or '(name)')"),  # what is allowed, in full
        ("math.comb(1000000, 500000)", "math.comb: n must be an int in [0, 1024]"),
        ("transposable_patterns(3, 6)", "0 < n <= m <= 5"),
        ("math.ceil(1e300)", "bits"),
        ("request.WORKLOADS[1:]", "slices"),
        ("'abc'[0]", "only lists, tuples and dicts are indexed"),
        ("1j", "complex literal"),
        ("b'x'", "bytes literal"),
        ("x" * 1001, "at most 1,000"),
        ("-" * 900 + "1", "nested deeper than 40 levels"),
        ("(" * 300 + "1" + ")" * 300, "not a Python expression"),
        ("1 if 2 else", "not a Python expression"),
    ],
)
def test_expressions_are_bounded(expr, fragment):
    with pytest.raises(BankError, match=re.escape(fragment)):
        evaluate_expression(expr)


def test_what_the_bank_needs_still_works():
    assert evaluate_expression("p_group ** groups_row", {"p_group": 0.6875, "groups_row": 1024}) == 0.6875 ** 1024
    assert evaluate_expression("'%d.%d' % hardware.get_gpu('A100').capability") == "8.0"
    assert evaluate_expression("', '.join(hardware.get_gpu('H200').backends)").startswith("cu")
    assert evaluate_expression("estimate(request.WORKLOADS['chat decode, batch 1'], 'H200').speedup('tpot')") > 0
    assert 0 < evaluate_expression("estimate(Workload(LLAMA_3_8B, 1, 512, 2), 'H200').decode.p") < 1
    assert evaluate_expression("2 ** 100") == 2 ** 100 and evaluate_expression("math.comb(4, 2) ** 4") == 1296
    assert evaluate_expression("1 < 2 <= 2 and not (3 == 4)") is True
    assert evaluate_expression("{'a': 1}['a'] if True else 0") == 1


def test_earlier_numbers_must_be_data():
    with pytest.raises(BankError, match=r"names\['m'\] gives a value of type module"):
        evaluate_expression("m", {"m": os})
    with pytest.raises(BankError, match="not starting with '_'"):
        evaluate_expression("1", {"__builtins__": {}})


@pytest.mark.parametrize("fmt", ["{0.__class__}", "{0.__init__.__globals__}", "{[0]}", "{:999999999}", "{:{}}",
                                 "{} {}", "no field", "{!r}", "{x}"])
def test_formats_are_one_plain_field(fmt):
    with pytest.raises(BankError, match="format"):
        check_format(fmt)
    with pytest.raises(BankError, match="format"):
        format_value(1.0, fmt)


def test_a_format_reading_attributes_is_refused_when_the_bank_loads():
    raw = {
        "id": "q-one", "level": "fundamentals", "topic": "amdahl", "kind": "calculation", "skill": "edge",
        "setting": "hostile", "title": "T", "prompt": "P {{a}}",
        "rubric": {"must": ["one", "two"], "strong": ["s"], "red_flags": ["r"]},
        "levels": {"mid": "m", "senior": "s", "staff": "t"}, "answer": "A", "mistakes": ["m"], "follow_ups": ["f"],
        "connects": "c", "numbers": [{"name": "a", "expr": "1", "fmt": "{0.__class__.__init__.__globals__}",
                                      "label": "a"}],
    }
    with pytest.raises(BankError, match=r"question 'q-one' \(at numbers\[0\]\.fmt\): number 'a': format"):
        parse_question(raw, 0)


# ---- the YAML file -------------------------------------------------------------------------


def _one_line_bank_error(path, fragment):
    with pytest.raises(BankError) as err:
        load_bank(path)
    msg = str(err.value)
    assert "\n" not in msg and fragment in msg, msg
    return msg


def test_billion_laughs_is_refused_before_it_expands(tmp_path):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append("questions: [*j]")
    bank = tmp_path / "laughs.yaml"
    bank.write_text("\n".join(lines), encoding="utf-8")
    _one_line_bank_error(bank, "expands to more than 1,000,000 YAML nodes")


def test_aliases_are_bounded_in_number_and_may_not_recurse(tmp_path):
    bank = tmp_path / "alias.yaml"
    bank.write_text("x: &x [1]\nquestions: [" + ", ".join(["*x"] * 1001) + "]\n", encoding="utf-8")
    _one_line_bank_error(bank, "more than 1,000 YAML aliases")
    bank.write_text("questions: &q [*q]\n", encoding="utf-8")
    _one_line_bank_error(bank, "refers to a node that contains it")


def test_a_bank_written_by_yaml_safe_dump_with_shared_objects_loads(tmp_path):
    """yaml.safe_dump writes an anchor and aliases for objects shared between questions: a few are fine."""
    import yaml

    shared = {"must": ["a", "b"], "strong": ["s"], "red_flags": ["r"]}
    q = {"id": "q-one", "level": "fundamentals", "topic": "amdahl", "kind": "concept", "skill": "edge", "setting": "one",
         "title": "T", "prompt": "P", "rubric": shared, "levels": {"mid": "m", "senior": "s", "staff": "t"},
         "answer": "A", "mistakes": ["m"], "follow_ups": ["f"], "connects": "c"}
    bank = tmp_path / "dumped.yaml"
    bank.write_text(yaml.safe_dump({"questions": [q, dict(q, id="q-two", setting="two")]}), encoding="utf-8")
    assert "&id001" in bank.read_text()
    assert [x.id for x in load_bank(bank)] == ["q-one", "q-two"]


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "a:\n" + "".join(" " * i + "- \n" for i in range(1, 60)),
                                  "{a: " * 50_000 + "1" + "}" * 50_000])
def test_deep_nesting_is_one_line(tmp_path, text):
    bank = tmp_path / "deep.yaml"
    bank.write_text(text, encoding="utf-8")
    _one_line_bank_error(bank, "nested deeper than 16 levels")


def test_non_utf8_is_one_line(tmp_path):
    bank = tmp_path / "latin1.yaml"
    bank.write_bytes("questions: []\n# caf\u00e9\n".encode("latin-1"))
    _one_line_bank_error(bank, "not UTF-8 text (byte 0xe9 at offset 19)")


def test_invalid_yaml_and_python_tags_are_one_line(tmp_path):
    bank = tmp_path / "bad.yaml"
    bank.write_text("questions: [1, 2\n", encoding="utf-8")
    _one_line_bank_error(bank, "not valid YAML")
    bank.write_text("questions: !!python/object/apply:os.system ['true']\n", encoding="utf-8")
    _one_line_bank_error(bank, "not valid YAML")


@pytest.mark.parametrize("text, fragment", [
    ("questions: [" + "9" * 5000 + "]\n", "a value cannot be read: Exceeds the limit (4300 digits)"),
    ("questions: !!set {a, b}\n", "is not of type 'array', got set"),  # braces in jsonschema's message
])
def test_values_yaml_builds_but_a_bank_cannot_hold_are_one_line(tmp_path, text, fragment):
    bank = tmp_path / "odd.yaml"
    bank.write_text(text, encoding="utf-8")
    _one_line_bank_error(bank, fragment)


def test_a_regular_file_that_cannot_be_read_is_one_line():
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("needs /proc")
    _one_line_bank_error("/proc/self/mem", "cannot be read")


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    bank = tmp_path / "huge.yaml"
    with open(bank, "wb") as f:
        f.truncate(64 << 20)  # sparse: no disk used
    _one_line_bank_error(bank, "a practice bank is at most")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "bank.yaml"
    os.mkfifo(fifo)
    with pytest.raises(FileNotFoundError, match="is not a file"):
        load_bank(fifo)


def _question(**changes):
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


@pytest.mark.parametrize("changes, fragment", [
    ({"prompt": "P <script>alert(1)</script> {{a}}"}, "prompt holds markup ('<script>"),
    ({"answer": "see <img src=x onerror=alert(1)>"}, "answer holds markup"),
    ({"title": "T <!-- hidden -->"}, "title holds markup"),
    ({"rubric": {"must": ["one", "<b>two</b>"], "strong": ["s"], "red_flags": ["r"]}}, "rubric.must[1] holds markup"),
    ({"connects": "[click](javascript:alert(1))"}, "connects holds markup"),
    ({"mistakes": ["m \ud800"]}, "mistakes[0] holds a lone surrogate"),
    ({"numbers": [{"name": "a", "expr": "amdahl.speedup(0.5, 2.0)", "fmt": "{:.2f}", "label": "a \udfff"}]},
     "numbers[0].label holds a lone surrogate"),
])
def test_bank_texts_never_reach_the_page_as_markup_or_broken_text(changes, fragment):
    with pytest.raises(BankError, match=re.escape(fragment)):
        parse_question(_question(**changes), 0)


def test_bank_texts_may_still_compare_numbers_and_use_markdown():
    q = parse_question(_question(prompt="Is M < 16 or 2<4? **bold** and [a link](../chapter/) {{a}}"), 0)
    assert "M < 16" in q.fill(q.prompt)
    assert len(load_bank().questions if hasattr(load_bank(), "questions") else load_bank()) > 0
