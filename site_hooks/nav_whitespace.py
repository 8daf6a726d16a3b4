"""MkDocs hook: the page chrome (header, tabs, both sidebars) without its template indentation.

Material's templates indent every line of the navigation, and every page carries the whole
navigation twice over (the site's nav with its groups, and the page's table of contents in both
sidebars). On a practice page that indentation was about 20 kB of the 300 kB budget
(tests/site/test_build.py), a third of the chrome. This hook shortens each run of whitespace
that holds a line break to one line break, in the part of the page before the content
(``<div class="md-content"``): HTML renders any such run as one space, so the page looks the
same, and the content itself (code blocks, outputs, tables) is never touched. ``<pre>``,
``<textarea>`` and ``<script>`` blocks in the chrome are kept as they are, too.
"""

from __future__ import annotations

import re

CONTENT = '<div class="md-content"'
_KEEP = re.compile(r"<(pre|textarea|script)\b.*?</\1>", re.S | re.I)
_RUN = re.compile(r"[ \t\r\f\v]*\n\s*")


def tighten(page_html: str) -> str:
    """``page_html`` with each whitespace run that holds a line break, before the content, made one line break.

    >>> tighten('<nav>\\n    <a>x</a>\\n\\n   </nav><pre>a\\n   b</pre><div class="md-content">\\n  kept</div>')
    '<nav>\\n<a>x</a>\\n</nav><pre>a\\n   b</pre><div class="md-content">\\n  kept</div>'
    """
    end = page_html.find(CONTENT)
    if end < 0:  # not a Material page (e.g. a redirect): leave it alone
        return page_html
    chrome, rest = page_html[:end], page_html[end:]
    out, at = [], 0
    for keep in _KEEP.finditer(chrome):
        out += [_RUN.sub("\n", chrome[at:keep.start()]), keep.group(0)]
        at = keep.end()
    out.append(_RUN.sub("\n", chrome[at:]))
    return "".join(out) + rest


def on_post_page(output: str, page, config) -> str:
    return tighten(output)
