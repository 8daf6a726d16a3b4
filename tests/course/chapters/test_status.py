"""The "2:4 in late 2026" status box: one text, dated and cited, on the four pages that show it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from twofour.course.status import STATUS_DATE, STATUS_FILE, status_box, status_markdown

ROOT = Path(__file__).resolve().parents[3]
CHAPTERS = ("notebooks/00-environment.ipynb", "notebooks/03-dispatch.ipynb", "notebooks/07-the-answer.ipynb")


def test_the_box_is_dated_and_cites_both_removals():
    text = status_markdown()
    assert "30 November 2026" in text and STATUS_DATE == "2026-11-30"
    assert "https://github.com/vllm-project/vllm/pull/36799" in text
    assert "https://github.com/pytorch/ao/pull/4728" in text
    for part in ("Removed.", "Still runs.", "If you hold a 2:4 checkpoint."):
        assert f"**{part}**" in text
    # one admonition that Material renders and Jupyter shows as plain Markdown
    assert text.startswith('<div class="admonition warning htw-status" markdown="1">')
    assert text.rstrip().endswith("</div>") and text.count("<div") == 1


def test_the_box_is_short():
    words = len(re.sub(r"\(https?://[^)]*\)|<[^>]+>", "", status_markdown()).split())
    assert words <= 260, f"the status box has {words} words; keep it a box, put detail on the Sources page"


def test_the_display_object_gives_jupyter_the_markdown():
    box = status_box()
    assert box._repr_markdown_() == status_markdown() == str(box)
    assert STATUS_DATE in repr(box)


def test_the_home_page_includes_the_one_file():
    home = (ROOT / "docs" / "index.md").read_text()
    assert f'--8<-- "src/twofour/course/data/{STATUS_FILE}"' in home
    assert (ROOT / "src" / "twofour" / "course" / "data" / STATUS_FILE).is_file()


@pytest.mark.parametrize("path", CHAPTERS)
def test_each_chapter_shows_it_with_one_hidden_input_cell(path):
    cells = json.loads((ROOT / path).read_text())["cells"]
    shown = [c for c in cells if c["cell_type"] == "code" and "status_box()" in "".join(c["source"])]
    assert len(shown) == 1
    assert "hide-input" in shown[0]["metadata"].get("tags", [])


def test_no_page_keeps_its_own_copy_of_the_text():
    # A sentence of the box written into a page would drift from the file; pages include it instead.
    marker = "lack of\n  widespread usage"
    pages = [*ROOT.glob("docs/**/*.md"), *ROOT.glob("notebooks/*.ipynb")]
    assert not [p for p in pages if "pull/4728) and" in p.read_text() or marker in p.read_text()]
