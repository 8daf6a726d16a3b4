"""Unit tests of site_hooks/practice.py: the markers become the bank's cards, nothing else changes."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "site_hooks"))

import practice as hook  # noqa: E402

from twofour.course.practice import LEVELS, load_bank, page_of  # noqa: E402

BANK = load_bank()


def _page(src_uri: str):
    return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri))


@pytest.mark.parametrize("level", LEVELS)
def test_level_marker_becomes_that_levels_cards(level):
    out = hook.on_page_markdown(f"# T\n\n<!-- practice-level {level} -->\n", _page(f"practice/{level}.md"), None, None)
    ids = [q.id for q in BANK.by_level(level) if page_of(q) == level]
    assert out.count('<article class="practice-q"') == len(ids)
    assert all(f'id="q-{qid}"' in out for qid in ids)
    assert "{{" not in out and "<!-- practice-level" not in out  # the marker is gone ("practice-levels" is a rubric class)


def test_mode_marker_holds_the_filters_and_loads_cards_from_the_level_pages():
    out = hook.on_page_markdown("<!-- practice-mode -->", _page("practice/index.md"), None, None)
    # The cards are on the level pages only: the practice page stays small as the bank grows.
    assert '<article class="practice-q"' not in out and '<div class="practice-deck"></div>' in out
    root = out.split("\n", 1)[0]
    assert "data-practice-mode" in root
    topics = json.loads(html.unescape(root.split('data-topics="', 1)[1].split('"', 1)[0]))
    assert set(topics) == {q.topic for q in BANK}
    sources = json.loads(html.unescape(root.split('data-sources="', 1)[1].split('"', 1)[0]))
    assert sources == [f"{page}/cards.html" for page in (*LEVELS, "neighbours")]
    # Together the level pages and the neighbours' page hold every question once.
    pages = [hook.on_page_markdown(f"<!-- practice-level {level} -->", _page(f"practice/{level}.md"), None, None)
             for level in LEVELS]
    pages.append(hook.on_page_markdown("<!-- practice-neighbours -->", _page("practice/neighbours.md"), None, None))
    assert sum(page.count('<article class="practice-q"') for page in pages) == len(BANK)
    assert all(page.count('<article class="practice-q"') >= 25 for page in pages)


def test_other_pages_are_left_alone_and_bad_levels_refused():
    text = "<!-- practice-mode -->"
    assert hook.on_page_markdown(text, _page("index.md"), None, None) == text
    with pytest.raises(ValueError, match="level must be one of"):
        hook.on_page_markdown("<!-- practice-level easy -->", _page("practice/x.md"), None, None)


def test_a_level_page_keeps_a_terms_tooltip_on_its_first_occurrence_in_the_cards_only():
    title = "2:4 structured sparsity: at most 2 of 4"
    term = f'<abbr title="{title}">2:4</abbr>'
    card = f'<article class="practice-q" id="q-a"><p>{term} and {term}, <abbr title="g">GEMM</abbr></p></article>'
    page = f"<p>{term} {term}</p>{card}{card}"
    out = hook.on_page_content(page, _page("practice/applied.md"), None, None)
    assert out.startswith(f"<p>{term} {term}</p>")  # outside the cards: untouched
    cards = out.split('<article class="practice-q"')[1:]
    assert len(cards) == 2 and all(c.count("<abbr") == 3 for c in cards)  # every term still marked
    assert cards[0].count(title) == 1 and 'title="g"' in cards[0]  # the first card keeps one of each
    assert title not in cards[1] and 'title="g"' not in cards[1] and "<abbr>2:4</abbr> and <abbr>2:4</abbr>," in cards[1]
    assert hook.on_page_content(page, _page("notebooks/07-the-answer.ipynb"), None, None) == page  # other pages


def test_a_card_title_keeps_its_short_anchor_and_loses_only_its_permalink_icon():
    md = hook.level_markdown("fundamentals")
    q = BANK.by_level("fundamentals")[0]
    assert f"{{: .practice-title #t-{q.id} }}" in md
    link = f'<a class="headerlink" href="#t-{q.id}" title="Permanent link">&para;</a>'
    card = f'<article class="practice-q" id="q-{q.id}"><h2 class="practice-title" id="t-{q.id}">T{link}</h2></article>'
    other = '<h2 id="intro">Intro<a class="headerlink" href="#intro" title="Permanent link">&para;</a></h2>'
    out = hook.on_page_content(other + card, _page("practice/fundamentals.md"), None, None)
    assert out == other + card.replace(link, "")


def test_white_space_is_squeezed_on_practice_pages_only_and_never_inside_pre_or_code():
    page = "<nav>\n    <ul>\n      <li>\n        Title\n      </li>\n    </ul>\n</nav>\n<pre>a\n    b</pre> <code>x\n  y</code>"
    out = hook.on_post_page(page, _page("practice/deep.md"), None)
    assert out == "<nav><ul><li>\nTitle\n</li></ul></nav> <pre>a\n    b</pre> <code>x\n  y</code>"
    # a line break between inline tags is a space: it stays one (axe-core reads a lone "\n" as none)
    inline = "<p><strong>a</strong>\n<em>b</em></p>"
    assert hook.on_post_page(inline, _page("practice/deep.md"), None) == "<p><strong>a</strong> <em>b</em></p>"
    assert hook.on_post_page(page, _page("index.md"), None) == page
    script = "<script>\nvar a = 1\n    var b = 2</script>"
    assert hook.on_post_page(script, _page("practice/deep.md"), None) == script
