"""MkDocs hook: the verdict and the checklist, computed while the page is built.

``<!-- bottom-line -->`` becomes the verdict as a range (the home page's first lines). Prose on
any page, chapter notebooks included, quotes the verdict's numbers between markers
(``<!-- verdict:range -->...<!-- /verdict -->``) and the diagnosis checklist between
``<!-- checklist -->`` and ``<!-- /checklist -->``; the build puts the computed values there. All
come from :mod:`twofour.course.answer`, the module chapter 7's table reads too, so no page can
drift from it, and a change to the recorded GPU results or the kernel model moves all of them.
"""

from __future__ import annotations

import functools
import posixpath
import re

_BOTTOM_LINE = re.compile(r"<!--\s*bottom-line\s*-->")
_ANY_QUOTE = re.compile(r"<!--\s*(verdict:[a-z0-9-]+|checklist)\s*-->")
CHAPTER = "notebooks/07-the-answer.ipynb"


@functools.lru_cache(maxsize=4)
def bottom_line(page_src: str) -> str:
    from twofour.course.answer import bottom_line_markdown

    return bottom_line_markdown(posixpath.relpath(CHAPTER, posixpath.dirname(page_src) or "."))


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    if _BOTTOM_LINE.search(markdown):
        markdown = _BOTTOM_LINE.sub(lambda m: bottom_line(src), markdown)
    if _ANY_QUOTE.search(markdown):
        from twofour.course.answer import fill_quotes

        markdown = fill_quotes(markdown, src, quotes())
    return markdown


@functools.lru_cache(maxsize=1)
def quotes() -> dict[str, str]:
    """The quoted numbers, computed once per build (each computation reads and checks the recorded
    results again: a fifth of a second, on each of the half dozen pages that quote them)."""
    from twofour.course.answer import quoted_numbers

    return quoted_numbers()
