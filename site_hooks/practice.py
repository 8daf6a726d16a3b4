"""MkDocs hook: render the interview practice bank (``twofour/course/data/practice.yaml``) into the Practice pages.

Markers in ``docs/practice/*.md``:

* ``<!-- practice-level LEVEL -->`` becomes every question of that level, as readable cards
  (prompt, collapsible rubric and worked answer, the numbers table, a quick check);
* ``<!-- practice-mode -->`` becomes the practice-mode root (filters and buttons are added by
  ``docs/js/practice/practice.js``) followed by every question's card; without JavaScript the
  page is simply all questions in order.

Every number in a card is computed by :mod:`twofour.course.practice` while the page is built, so a
question whose expression fails stops the (strict) build with the question's id.
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


def mode_markdown() -> str:
    """The practice-mode root plus every card (the script shows one at a time)."""
    topics = {key: label for key, label in TOPICS.items() if _bank().by_topic(key)}
    root = (
        f'<div class="practice-mode" data-practice-mode data-levels="{html.escape(json.dumps(list(LEVELS)))}" '
        f'data-topics="{html.escape(json.dumps(topics))}"></div>'
    )
    cards = "\n".join(render_markdown(q) for q in _bank())
    return f'{root}\n\n<div class="practice-deck" markdown="1">\n\n{cards}\n\n</div>\n'


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not page.file.src_uri.startswith("practice/"):
        return markdown
    markdown = _LEVEL_MARKER.sub(lambda m: level_markdown(m.group("level")), markdown)
    return _MODE_MARKER.sub(lambda m: mode_markdown(), markdown)
