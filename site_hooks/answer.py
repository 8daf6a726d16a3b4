"""MkDocs hook: ``<!-- bottom-line -->`` becomes the verdict as a range, computed while the page is built.

The home page opens with the answer. Its numbers are chapter 7's verdict table
(:func:`twofour.course.answer.verdicts`), computed by the toolkit at build time, so the home page
and the chapter cannot drift apart, and a change to the kernel model or the recorded GPU results
moves both.
"""

from __future__ import annotations

import functools
import posixpath
import re

_MARKER = re.compile(r"<!--\s*bottom-line\s*-->")
CHAPTER = "notebooks/07-the-answer.ipynb"


@functools.lru_cache(maxsize=4)
def bottom_line(page_src: str) -> str:
    from twofour.course.answer import bottom_line_markdown

    return bottom_line_markdown(posixpath.relpath(CHAPTER, posixpath.dirname(page_src) or "."))


def on_page_markdown(markdown: str, page, config, files) -> str:
    if not _MARKER.search(markdown):
        return markdown
    return _MARKER.sub(lambda m: bottom_line(page.file.src_uri), markdown)
