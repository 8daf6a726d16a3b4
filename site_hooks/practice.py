"""MkDocs hook: render the interview practice bank (``twofour/course/data/practice.yaml``) into the Practice pages.

Markers in ``docs/practice/*.md``:

* ``<!-- practice-level LEVEL -->`` becomes every question of that level, as readable cards
  (prompt, collapsible rubric and worked answer, the numbers table, a quick check), except the
  questions on the 2:4 question's neighbours (``twofour.course.practice.page_of``);
* ``<!-- practice-neighbours -->`` becomes those neighbour questions, of every level;
* ``<!-- practice-mode -->`` becomes the practice-mode root (filters and buttons are added by
  ``docs/js/practice/practice.js``) and an empty deck. The script fills the deck with the cards
  of the level pages (``data-sources``: same-site pages, fetched when practice mode opens), so
  the bank's answers are on the site once per level instead of twice, and the practice page
  stays small however large the bank grows. Without JavaScript the page says to read the
  questions by level.

Every number in a card is computed by :mod:`twofour.course.practice` while the page is built, so a
question whose expression fails stops the (strict) build with the question's id.

Three things keep a level page inside the site's 300 kB HTML budget, with room for the site's
navigation to grow, without dropping any text:

* The glossary (``abbr``) marks every occurrence of a term with its whole definition as a
  tooltip. On a level page only a term's first occurrence in the cards keeps it
  (:func:`first_tooltip_per_page`): a tooltip on every "2:4" is noise, and the repeats were a
  fifth of a page's HTML. Practice mode, which shows one card at a time, gives each card's first
  occurrence of a term its tooltip back from the page the card came from
  (``docs/js/practice/practice.js``: ``restoreTooltips``).
* The theme's templates indent every tag of the navigation, and the page's table of contents
  (one entry per question) is written twice (drawer and sidebar): runs of white space around a
  line break become one line break, and a line break between two block-level tags goes
  (:func:`squeeze_whitespace`), which HTML renders the same, outside ``pre``, ``code``,
  ``textarea`` and ``script``.
* A card's title has a short anchor (``#t-<id>``, :func:`twofour.course.practice.render_markdown`)
  and no permalink icon (:func:`first_tooltip_per_page` drops it): the card itself is the link
  target (``#q-<id>``), which practice mode and the mock loop use.

``make serve``'s quick first build (:mod:`quick`) reads no bank: each marker becomes the note
that the questions come with the next build (reading and checking the bank and computing every
number of every card is a sixth of a build's CPU time).
"""

from __future__ import annotations

import functools
import html
import json
import logging
import re

import quick
# The bank's loader and renderer are imported where a full build uses them: they import the
# expression registry (PyTorch and most of the toolkit), which a quick build never needs.
from twofour.course.practice import KINDS, LEVELS, TOPICS

log = logging.getLogger("mkdocs.hooks.practice")

_LEVEL_MARKER = re.compile(r"<!--\s*practice-level\s+(?P<level>[a-z]+)\s*-->")
_MODE_MARKER = re.compile(r"<!--\s*practice-mode\s*-->")
_NEIGHBOURS_MARKER = re.compile(r"<!--\s*practice-neighbours\s*-->")
# The pages cards live on, in the order practice mode asks them.
CARD_PAGES = (*LEVELS, "neighbours")


@functools.lru_cache(maxsize=1)
def _bank():
    from twofour.course.practice import load_bank

    return load_bank()


def level_markdown(level: str) -> str:
    """All cards of one page: a level's (neighbour topics aside), or ``"neighbours"``."""
    from twofour.course.practice import NEIGHBOURS_PAGE, page_of, render_markdown

    if level not in LEVELS and level != NEIGHBOURS_PAGE:
        raise ValueError(f"practice-level marker: level must be one of {LEVELS}, got {level!r}")
    return "\n".join(render_markdown(q) for q in _bank() if page_of(q) == level)


def mode_markdown(sources: list[str] | None = None) -> str:
    """The practice-mode root and an empty deck; the script loads the cards from ``sources``.

    ``sources`` are the level pages' URLs relative to the practice-mode page (default: one per
    level, ``fundamentals/``, ...), in the order their cards are asked.
    """
    topics = {key: label for key, label in TOPICS.items() if _bank().by_topic(key)}
    sources = sources if sources is not None else [f"{page}/{CARDS_FILE}" for page in CARD_PAGES]
    root = (
        f'<div class="practice-mode" data-practice-mode data-levels="{html.escape(json.dumps(list(LEVELS)))}" '
        f'data-kinds="{html.escape(json.dumps(KINDS))}" '
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
    for level in CARD_PAGES:
        src = posixpath.join(here, f"{level}.md")
        if files is None or files.get_file_from_path(src) is not None:
            sources.append(f"{level}/{CARDS_FILE}" if page_src.endswith("index.md") else f"../{level}/{CARDS_FILE}")
    if not sources:
        raise ValueError(f"{page_src}: practice mode needs the level pages (practice/<level>.md), found none")
    return sources


_CARD = re.compile(r'<article class="practice-q".*?</article>', re.S)
_HEADERLINK = re.compile(r'<a class="headerlink" href="#t-[^"]*" title="Permanent link">&para;</a>')
_ABBR = re.compile(r'<abbr title="(?P<title>[^"]*)">(?P<term>.*?)</abbr>', re.S)


def first_tooltip_per_page(page_html: str) -> str:
    """``page_html`` with each glossary term's tooltip kept only on its first occurrence in the page's cards.

    A term is its text (``GEMM`` and ``GEMMs`` are two terms), so each spelling keeps one tooltip
    on the page for practice mode to copy back into every card that uses it. Text outside the
    cards, and the text of every term, is unchanged.

    >>> card = '<article class="practice-q">{0} and {0}</article>'.format('<abbr title="two of four">2:4</abbr>')
    >>> first_tooltip_per_page(card + " " + card)  # doctest: +NORMALIZE_WHITESPACE
    '<article class="practice-q"><abbr title="two of four">2:4</abbr> and <abbr>2:4</abbr></article>
     <article class="practice-q"><abbr>2:4</abbr> and <abbr>2:4</abbr></article>'
    """
    seen: set[str] = set()

    def abbr(m: re.Match) -> str:
        if m["term"] in seen:
            return f"<abbr>{m['term']}</abbr>"
        seen.add(m["term"])
        return m[0]

    return _CARD.sub(lambda card: _HEADERLINK.sub("", _ABBR.sub(abbr, card[0])), page_html)


_KEEP_SPACE = re.compile(r"(<(pre|code|textarea|script)\b.*?</\2>)", re.S | re.I)
_LINE_BREAK_RUN = re.compile(r"[ \t]*\n\s*")
# Tags whose neighbouring white space HTML never renders (no inline element among them).
_BLOCK = r"(?:li|ul|ol|p|div|details|summary|table|thead|tbody|tr|td|th|h[1-6]|article|nav|section|header|footer|main|aside|head|body|meta|link|title)"
_BETWEEN_BLOCKS = re.compile(rf"(</?{_BLOCK}\b[^<>]*>)\n(?=</?{_BLOCK}\b)")
# What is left between two tags after that becomes one space, not a line break: HTML renders both
# the same, but axe-core reads a text node that is only "\n" as no separator, so a footer link's
# "Previous" and its page title ran together and failed its label-content-name-mismatch check.
_TAG_LINE_BREAK_TAG = re.compile(r">\n<")


def squeeze_whitespace(page_html: str) -> str:
    """``page_html`` with every run of white space that holds a line break made one line break
    (one space between two tags; nothing between two block-level tags).

    HTML renders any run of white space as one space, so the page looks the same; ``pre``,
    ``code``, ``textarea`` and ``script`` keep theirs.

    >>> squeeze_whitespace("<ul>\\n    <li>\\n      a\\n    </li>\\n</ul>\\n<pre>x\\n    y</pre> <b>c</b>\\n<i>d</i>")
    '<ul><li>\\na\\n</li></ul> <pre>x\\n    y</pre> <b>c</b> <i>d</i>'
    """
    parts = _KEEP_SPACE.split(page_html)
    # split() with two groups gives [text, kept, tag name, text, kept, tag name, ..., text]
    out = []
    for i in range(0, len(parts), 3):
        squeezed = _BETWEEN_BLOCKS.sub(r"\1", _LINE_BREAK_RUN.sub("\n", parts[i]))
        # a kept part starts with "<" and ends with ">": a line break against it is between tags too
        before, after = (">" if i else ""), ("<" if i + 1 < len(parts) else "")
        squeezed = _TAG_LINE_BREAK_TAG.sub("> <", before + squeezed + after)
        out.append(squeezed[len(before):len(squeezed) - len(after)])
        if i + 1 < len(parts):
            out.append(parts[i + 1])
    return "".join(out)


def on_page_content(html_text: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return html_text
    return first_tooltip_per_page(html_text)


CARDS_FILE = "cards.html"


def cards_document(page_html: str) -> str:
    """A page's cards alone, as the small document practice mode fetches (``<page>/cards.html``).

    The theme's navigation, header and table of contents are a sixth of a level page; practice
    mode needs only the cards (their tooltips included), so it fetches this instead of the page
    and the practice page stays within the site's 1.5 MB budget as the bank grows. Links in the
    cards are relative to the page's folder, which is this file's folder too.

    Two parts of a card practice mode rebuilds or links to instead, to stay inside the budget: the
    tags line (level, topic, kind), which it makes from the card's data attributes, and the numbers
    table's "how it is obtained" column (each number's expression and source), which the card's
    own page keeps; practice mode links there.

    >>> cards_document('<nav>n</nav><article class="practice-q" id="q-a"><p class="practice-meta">t</p>A</article><p>x</p>')
    '<!doctype html><meta charset="utf-8"><title>cards</title><article class="practice-q" id="q-a">A</article>'
    >>> cards_document('<article class="practice-q"><table><thead><tr><th>q</th><th>v</th><th>how it is obtained</th></tr>'
    ...                '</thead><tbody><tr><td>a</td><td>1</td><td><code>x</code></td></tr></tbody></table></article>'
    ...                ).split('<table>')[1]
    '<thead><tr><th>q</th><th>v</th></tr></thead><tbody><tr><td>a</td><td>1</td></tr></tbody></table></article>'
    """
    cards, titles = [], {}
    for m in _CARD.finditer(page_html):
        for a in _ABBR.finditer(m[0]):
            titles.setdefault(a["term"], a["title"])
        card = _META.sub("", m[0])
        card = _HOW_HEADER.sub("", card)
        card = _NUMBER_ROW.sub(lambda r: r["keep"] + "</tr>", card)
        cards.append(card)
    body = "".join(cards)
    # A term whose one tooltip was in a removed part gets it back on its first remaining occurrence.
    seen: set[str] = set()

    def first_title(m: re.Match) -> str:
        term = m["term"]
        if term in seen or term not in titles:
            return f"<abbr>{term}</abbr>"
        seen.add(term)
        return f'<abbr title="{titles[term]}">{term}</abbr>'

    body = _ANY_ABBR.sub(first_title, body)
    return '<!doctype html><meta charset="utf-8"><title>cards</title>' + body


_META = re.compile(r'<p class="practice-meta">.*?</p>', re.S)
_ANY_ABBR = re.compile(r'<abbr(?: title="[^"]*")?>(?P<term>.*?)</abbr>', re.S)
_HOW_HEADER = re.compile(r"<th>how it is obtained</th>")
# a numbers-table row: quantity, value, how it is obtained (the last cell goes)
_NUMBER_ROW = re.compile(r"(?P<keep><tr><td>(?:(?!</td>).)*</td><td>(?:(?!</td>).)*</td>)<td>(?:(?!</td>).)*</td></tr>", re.S)


def on_post_page(output: str, page, config) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return output
    output = squeeze_whitespace(output)
    if page.file.src_uri.removeprefix("practice/").removesuffix(".md") in CARD_PAGES and _CARD.search(output):
        import os

        target = os.path.join(os.path.dirname(page.file.abs_dest_path), CARDS_FILE)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(cards_document(output))
    return output


DEFERRED = "the practice questions (their numbers are computed from the toolkit while the page is built)"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return markdown
    if quick.quick_mode():
        note = quick.deferred_html(DEFERRED)
        return _NEIGHBOURS_MARKER.sub(lambda m: note, _MODE_MARKER.sub(lambda m: note, _LEVEL_MARKER.sub(lambda m: note, markdown)))
    markdown = _LEVEL_MARKER.sub(lambda m: level_markdown(m.group("level")), markdown)
    markdown = _NEIGHBOURS_MARKER.sub(lambda m: level_markdown("neighbours"), markdown)
    if _MODE_MARKER.search(markdown):
        sources = _level_sources(page.file.src_uri, files)
        markdown = _MODE_MARKER.sub(lambda m: mode_markdown(sources), markdown)
    return markdown
