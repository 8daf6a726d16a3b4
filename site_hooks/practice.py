"""MkDocs hook: render the interview practice bank (``twofour/course/data/practice.yaml``) into the Practice pages.

Markers in ``docs/practice/*.md``:

* ``<!-- practice-level LEVEL -->`` becomes every question of that level, as readable cards
  (prompt, collapsible rubric and worked answer, the numbers table, a quick check);
* ``<!-- practice-mode -->`` becomes the practice-mode root (filters and buttons are added by
  ``docs/js/practice/practice.js``) and an empty deck. The script fills the deck with the cards
  of the level pages (``data-sources``: same-site pages, fetched when practice mode opens), so
  the bank's answers are on the site once per level instead of twice, and the practice page
  stays small however large the bank grows. Without JavaScript the page says to read the
  questions by level.

Every number in a card is computed by :mod:`twofour.course.practice` while the page is built, so a
question whose expression fails stops the (strict) build with the question's id.

The glossary (``abbr``) marks every occurrence of a term with its whole definition as a tooltip.
In a card only the first occurrence keeps it (:func:`first_tooltip_per_card`): practice mode shows
one card at a time, a tooltip on every "2:4" of an answer is noise, and the repeats were a fifth
of a level page's HTML (the applied page: 330 kB, over the site's 300 kB budget; 265 kB without).
In a card's folded parts a term keeps it only where the page has not defined it yet (the glossary
grew to 49 terms: per card, the folded parts' repeats were another 12 kB of each level page).
"""

from __future__ import annotations

import functools
import html
import json
import logging
import re

from twofour.course.practice import LEVELS, TOPICS, load_bank, render_markdown

log = logging.getLogger("mkdocs.hooks.practice")

_LEVEL_MARKER = re.compile(r"<!--\s*practice-level\s+(?P<level>[a-z]+)\s*-->")
_MODE_MARKER = re.compile(r"<!--\s*practice-mode\s*-->")


@functools.lru_cache(maxsize=1)
def _bank():
    return load_bank()


def level_markdown(level: str) -> str:
    """All cards of one level."""
    if level not in LEVELS:
        raise ValueError(f"practice-level marker: level must be one of {LEVELS}, got {level!r}")
    return "\n".join(render_markdown(q) for q in _bank().by_level(level))


def mode_markdown(sources: list[str] | None = None) -> str:
    """The practice-mode root and an empty deck; the script loads the cards from ``sources``.

    ``sources`` are the level pages' URLs relative to the practice-mode page (default: one per
    level, ``fundamentals/``, ...), in the order their cards are asked.
    """
    topics = {key: label for key, label in TOPICS.items() if _bank().by_topic(key)}
    sources = sources if sources is not None else [f"{level}/" for level in LEVELS]
    root = (
        f'<div class="practice-mode" data-practice-mode data-levels="{html.escape(json.dumps(list(LEVELS)))}" '
        f'data-topics="{html.escape(json.dumps(topics))}" data-sources="{html.escape(json.dumps(sources))}"></div>'
    )
    loading = (
        '<p class="practice-loading">Practice mode loads the questions from the level pages; '
        "if none appear here (JavaScript off), read them by level with the links above.</p>"
    )
    return f'{root}\n\n{loading}\n\n<div class="practice-deck"></div>\n'


def _level_sources(page_src: str, files) -> list[str]:
    """URLs of the level pages that exist, relative to the page at ``page_src``."""
    import posixpath

    here = posixpath.dirname(page_src)
    sources = []
    for level in LEVELS:
        src = posixpath.join(here, f"{level}.md")
        if files is None or files.get_file_from_path(src) is not None:
            sources.append(f"{level}/" if page_src.endswith("index.md") else f"../{level}/")
    if not sources:
        raise ValueError(f"{page_src}: practice mode needs the level pages (practice/<level>.md), found none")
    return sources


_CARD = re.compile(r'<article class="practice-q".*?</article>', re.S)
_ABBR = re.compile(r'<abbr title="(?P<title>[^"]*)">(?P<term>.*?)</abbr>', re.S)


def first_tooltip_per_card(page_html: str) -> str:
    """``page_html`` with each glossary term's tooltip kept where a reader of a card first needs it.

    In a card's prompt (everything before its first ``<details>``) a term keeps its tooltip on its
    first occurrence in that card: practice mode shows the prompt alone. In the card's folded parts
    (rubric, worked answer, derivation) a term keeps it only where neither the card nor an earlier
    part of the page has defined it yet: those are read after the prompt, mostly on the level page,
    and the repeats were 12 kB of each level page (the site's budget is 300 kB). Text outside the
    cards, and the text of every term, is unchanged.

    >>> t = '<abbr title="two of four">2:4</abbr>'
    >>> card = f'<article class="practice-q">{t} and {t}<details>{t}</details></article>'
    >>> first_tooltip_per_card(card + " " + card)  # doctest: +NORMALIZE_WHITESPACE
    '<article class="practice-q"><abbr title="two of four">2:4</abbr> and 2:4<details>2:4</details></article>
     <article class="practice-q"><abbr title="two of four">2:4</abbr> and 2:4<details>2:4</details></article>'
    >>> g = '<abbr title="matrix multiply">GEMM</abbr>'
    >>> first_tooltip_per_card(f'<article class="practice-q">{t}<details>{g} {g}</details></article>')
    '<article class="practice-q"><abbr title="two of four">2:4</abbr><details><abbr title="matrix multiply">GEMM</abbr> GEMM</details></article>'
    """
    on_page: set[str] = set()

    def keep_first(text: str, seen: set[str], also_seen: set[str] = frozenset()) -> str:
        def abbr(m: re.Match) -> str:
            if m["title"] in seen or m["title"] in also_seen:
                return m["term"]
            seen.add(m["title"])
            return m[0]

        return _ABBR.sub(abbr, text)

    out, at = [], 0
    for card in _CARD.finditer(page_html):
        between = page_html[at:card.start()]
        on_page.update(m["title"] for m in _ABBR.finditer(between))
        text = card[0]
        fold = text.find("<details")
        fold = len(text) if fold < 0 else fold
        in_card: set[str] = set()
        prompt = keep_first(text[:fold], in_card)
        folded = keep_first(text[fold:], in_card, on_page)
        on_page |= in_card
        out += [between, prompt, folded]
        at = card.end()
    out.append(page_html[at:])
    return "".join(out)


def on_page_content(html_text: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return html_text
    return first_tooltip_per_card(html_text)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return markdown
    markdown = _LEVEL_MARKER.sub(lambda m: level_markdown(m.group("level")), markdown)
    if _MODE_MARKER.search(markdown):
        sources = _level_sources(page.file.src_uri, files)
        markdown = _MODE_MARKER.sub(lambda m: mode_markdown(sources), markdown)
    return markdown
