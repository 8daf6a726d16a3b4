"""The answer comes first: the home page, every chapter's opening, chapter 7's order.

These read the committed sources (Markdown and notebook JSON), so they run without a site build;
``tests/site/test_what_a_reader_sees.py`` checks what the built home page shows in its first screen.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
NOTEBOOKS = sorted(
    p for folder in ("notebooks", "labs") for p in (ROOT / folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
)
STAGES = ("Structure", "Representation", "Dispatch", "Kernel speed", "Quality", "Amdahl")


def _cells(path: Path) -> list[dict]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        src = cell.get("source", "")
        cell["text"] = "".join(src) if isinstance(src, list) else src
    return cells


def _takeaway(text: str) -> str | None:
    """The body of the takeaway box (an ``abstract`` admonition written as HTML), or None."""
    m = re.search(r'<div class="admonition abstract htw-takeaway" markdown="1">\s*'
                  r'<p class="admonition-title">[^<]+</p>\s*(.*?)\s*</div>', text, re.S)
    return m.group(1) if m else None


def test_there_are_nine_chapters():
    assert [p.name[:2] for p in CHAPTERS] == [f"{i:02d}" for i in range(9)]


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_opens_with_a_takeaway_box(path):
    first = next(c for c in _cells(path) if c["cell_type"] == "markdown")
    body = _takeaway(first["text"])
    assert body, f"{path.name}: the first Markdown cell has no takeaway box (admonition abstract htw-takeaway)"
    lines = [line for line in body.splitlines() if line.strip()]
    assert 3 <= len(lines) <= 5, f"{path.name}: the takeaway is {len(lines)} lines; keep it to 3-5"
    # ...and it comes before "what you will be able to do"
    text = "\n".join(c["text"] for c in _cells(path) if c["cell_type"] == "markdown")
    assert text.index("htw-takeaway") < text.index("## What you will be able to do"), path.name


def test_the_takeaway_pattern_finds_a_box_and_rejects_a_plain_paragraph():
    box = ('<div class="admonition abstract htw-takeaway" markdown="1">\n<p class="admonition-title">In short</p>\n\n'
           "one\ntwo\nthree\n\n</div>")
    assert _takeaway(box) == "one\ntwo\nthree"
    assert _takeaway("In short: one, two, three.") is None


def test_chapter_7_answers_in_thirty_seconds_and_gives_the_checklist_before_any_code():
    cells = _cells(ROOT / "notebooks/07-the-answer.ipynb")
    first_code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    before = "\n".join(c["text"] for c in cells[:first_code])
    assert "## The answer in thirty seconds" in before
    assert "## Diagnose your deployment" in before
    checklist = before.split("## Diagnose your deployment", 1)[1]
    assert [int(n) for n in re.findall(r"^(\d)\. ", checklist, re.M)][:5] == [1, 2, 3, 4, 5]


def test_chapter_7_two_minute_answer_is_prose_not_print():
    cells = _cells(ROOT / "notebooks/07-the-answer.ipynb")
    two = [i for i, c in enumerate(cells) if "**Two minutes**" in c["text"]]
    assert len(two) == 1 and cells[two[0]]["cell_type"] == "markdown"
    prose = cells[two[0]]["text"]
    for stage in STAGES:
        assert stage in prose, f"the two-minute answer does not walk stage {stage}"
    code = "\n".join(c["text"] for c in cells if c["cell_type"] == "code")
    assert "print(two_minutes)" not in code


def test_no_notebook_sets_the_matplotlib_backend():
    offenders = [p.relative_to(ROOT).as_posix() for p in NOTEBOOKS
                 for c in _cells(p) if c["cell_type"] == "code" and re.search(r"%matplotlib|MPLBACKEND|matplotlib\.use\(", c["text"])]
    assert not offenders, f"the site's kernel set-up (site_hooks/kernel_startup.py) does this: {offenders}"


def _labs():
    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import labs
    finally:
        sys.path.pop(0)
    return labs.LABS


@pytest.mark.parametrize("lab", _labs(), ids=lambda lab: Path(lab.notebook).stem)
def test_each_chapter_links_to_its_lab_and_the_lab_back(lab):
    chapter_first = _cells(ROOT / lab.chapter)[0]["text"]
    assert f"(../{lab.notebook})" in chapter_first, f"{lab.chapter}: no link to {lab.notebook} at its top"
    lab_first = _cells(ROOT / lab.notebook)[0]["text"]
    assert f"(../{lab.chapter})" in lab_first, f"{lab.notebook}: no link back to {lab.chapter} at its top"


def test_home_page_opens_with_the_bottom_line_and_the_checklist():
    home = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    body = home.split("\n# ", 1)[1]
    first_screen = body.split("<figure", 1)[0]  # everything above the hero figure
    assert "<!-- bottom-line -->" in first_screen
    assert first_screen.index("<!-- bottom-line -->") < first_screen.index("Diagnose your own deployment")
    checklist = first_screen.split("Diagnose your own deployment", 1)[1]
    found = re.findall(r"^(\d)\. \*\*([\w ]+)\*\*", checklist, re.M)
    # the six stages in order, stage N = chapter N
    assert found == [(str(i + 1), s) for i, s in enumerate(STAGES)], found
    assert "--8<--" not in first_screen, "the status box belongs below the answer"


def test_bottom_line_is_chapter_7s_headline():
    import json

    from twofour.course.answer import bottom_line_markdown, quoted_numbers

    text = bottom_line_markdown("notebooks/07-the-answer.ipynb")
    assert "[Chapter 7](notebooks/07-the-answer.ipynb)" in text
    q = quoted_numbers()
    fp16, bf16 = q["chain-fp16"], q["chain-bf16"]
    assert f"{fp16} the dense speed in fp16 and {bf16} in bf16" in text
    nb = json.loads((ROOT / "notebooks/07-the-answer.ipynb").read_text(encoding="utf-8"))
    assert f"{fp16} in fp16 and {bf16} in bf16" in "".join(nb["cells"][0]["source"])  # chapter 7's "In short"


# ---- tables are values, not printed text -------------------------------------------------------

_WIDTH = re.compile(r"^(.?[<>=^])?[+\- ]?z?#?0?\d")  # a format spec that pads to a fixed width: >8, <24, 9.1f, 12,


def _code(text: str) -> str:
    """A code cell as Python: IPython's ``%magic`` and ``!shell`` lines become ``pass``."""
    return re.sub(r"^(\s*)[%!].*$", r"\1pass", text, flags=re.M)


def _pads(node: ast.AST) -> list[ast.FormattedValue]:
    """The f-string fields under ``node`` that pad to a fixed width (``{x:>8}``, ``{'layer':34}``)."""
    return [v for v in ast.walk(node) if isinstance(v, ast.FormattedValue) and isinstance(v.format_spec, ast.JoinedStr)
            and _WIDTH.match("".join(c.value for c in v.format_spec.values if isinstance(c, ast.Constant)))]


def hand_built_tables(source: str) -> list[str]:
    """Why each ``print`` in ``source`` looks like a hand-built table (empty list when none does).

    A print is a table row when it pads an f-string field to a fixed width inside a loop, a
    header when it pads a literal string (``{'layer':<10}``), and a rule when it prints
    ``"-" * n``. Fixed widths outside a loop (one aligned result line) are left alone.

    >>> hand_built_tables('for n in ns:\\n    print(f"{n:>8}")')
    ["line 2: a row padded to a fixed width in a loop: print(f'{n:>8}')"]
    >>> hand_built_tables('print(f"{ratio:.2f}x of {total:,} bytes")')
    []
    """
    tree = ast.parse(_code(source))
    in_loop = {id(n) for loop in ast.walk(tree) if isinstance(loop, (ast.For, ast.While)) for n in ast.walk(loop)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"):
            continue
        pads = _pads(node)
        rule = any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult)
                   and any(isinstance(s, ast.Constant) and s.value in ("-", "=", "─") for s in (b.left, b.right))
                   for b in ast.walk(node))
        if rule:
            why = "a rule line"
        elif any(isinstance(p.value, ast.Constant) and isinstance(p.value.value, str) for p in pads):
            why = "a header padded to fixed widths"
        elif pads and id(node) in in_loop:
            why = "a row padded to a fixed width in a loop"
        else:
            continue
        found.append(f"line {node.lineno}: {why}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(ROOT).as_posix() for p in NOTEBOOKS])
def test_no_notebook_prints_a_hand_built_table(path):
    found = [f"cell {i}, {why}" for i, c in enumerate(_cells(path)) if c["cell_type"] == "code"
             for why in hand_built_tables(c["text"])]
    assert not found, ("build the rows and make `twofour.course.tables.table(rows, ...)` the cell's value "
                       "(an HTML table in a notebook) instead of printing aligned text:\n" + "\n".join(found))


@pytest.mark.parametrize("source, expected", [
    ('print(f"{\'layer\':<10}{\'M\':>5}")', "a header padded to fixed widths"),
    ('for r in rows:\n    print(f"{r.name:<24}" + "".join(f"{v:>8,}" for v in r.hist))', "a row padded"),
    ('print("-" * 40)', "a rule line"),
    ('for r in rows:\n    print(f"{r:9.2f}")', "a row padded"),
])
def test_hand_built_table_check_flags_headers_rows_and_rules(source, expected):
    found = hand_built_tables(source)
    assert len(found) == 1 and expected in found[0], found


def test_hand_built_table_check_flags_chapter_1_as_it_was():
    """Chapter 1's histogram as it was once printed: the header and the rows are both caught."""
    source = (
        'print(f"{\'weight\':<24}" + "".join(f"{f\'{k} nz\':>8}" for k in range(5)) + f"{\'bad\':>9}")\n'
        "for name, w in weights.items():\n"
        '    hist = torch.bincount(twofour.nonzeros_per_group(w).flatten().long(), minlength=5)\n'
        '    print(f"{name:<24}" + "".join(f"{int(v):>8,}" for v in hist) + f"{reports[name].fraction_bad:>9.1%}")\n'
    )
    found = hand_built_tables(source)
    assert [f.split(": ")[1] for f in found] == ["a header padded to fixed widths", "a row padded to a fixed width in a loop"]


@pytest.mark.parametrize("source", [
    'print(f"p = {p:.2f}; speedup {s:.3f}x ({share:.1%} of dense, {n:,} bytes)")',  # precision, no width
    'for v in verdicts:\n    print("-", v)',  # bullets
    'print(f"all weights, dense: {gb:6.2f} GB")',  # one aligned line, not in a loop
    '%pip install -q twofour\nprint(f"{x:.2f}")',  # IPython magic lines are skipped
])
def test_hand_built_table_check_leaves_ordinary_prints_alone(source):
    assert hand_built_tables(source) == []



def _chapter_needs():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import chapter_needs
    finally:
        sys.path.pop(0)
    return chapter_needs


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_opens_with_what_you_will_do_and_what_you_need_above_the_set_up(path):
    cells = _cells(path)
    setup = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    assert "TWOFOUR_WHEEL" in cells[setup]["text"], f"{path.name}: the first code cell is not the set-up cell"
    before = "\n".join(c["text"] for c in cells[:setup])
    assert "## What you will be able to do" in before, f"{path.name}: 'What you will be able to do' is below the set-up cell"
    assert "## What you need" in before, f"{path.name}: no 'What you need' above the set-up cell"
    needs = before.split("## What you need", 1)[1]
    for item in ("**Time:**", "**Before this:**", "**GPU:**"):
        assert item in needs, f"{path.name}: 'What you need' has no {item}"
    # the opening comes first: right after the title cell, before any other section
    assert cells[1]["text"].startswith("## What you will be able to do"), path.name
    stated = re.search(r"\*\*Time:\*\* about (\d+) minutes to read", needs)
    assert stated, f"{path.name}: the time is not stated as 'about N minutes to read'"
    computed = _chapter_needs().reading_minutes(path)
    assert int(stated.group(1)) == computed, (
        f"{path.name} says {stated.group(1)} minutes; its prose now reads in about {computed} "
        "(scripts/chapter_needs.py): run `scripts/chapter_needs.py --write`")
