"""MkDocs hook: turn TeX math into MathML at build time, so pages need no math script.

``pymdownx.arithmatex`` (generic mode) finds ``$...$`` and ``$$...$$`` in Markdown pages and in
notebook Markdown cells and wraps the TeX in ``<span class="arithmatex">`` / ``<div
class="arithmatex">``. This hook converts those to ``<math>`` elements with latex2mathml;
browsers render MathML natively, with no CDN and no JavaScript. TeX that latex2mathml cannot
parse fails the (strict) build with the page and the formula in the message.
"""

from __future__ import annotations

import html
import logging
import re

from latex2mathml.converter import convert

log = logging.getLogger("mkdocs.hooks.mathml")

_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?P<tex>.*?)</(?P=tag)>',
    re.DOTALL,
)
_DELIMITERS = re.compile(r"^\s*\\[(\[](?P<body>.*)\\[)\]]\s*$", re.DOTALL)


def tex_to_mathml(tex: str, *, block: bool) -> str:
    """Convert one formula (without delimiters) to a ``<math>`` element.

    Example:
        >>> tex_to_mathml("x^2", block=False)[:60]
        '<math xmlns="http://www.w3.org/1998/Math/MathML" display="in'
    """
    return convert(tex.strip(), display="block" if block else "inline")


def on_page_content(html_text: str, page, config, files) -> str:
    def replace(match: re.Match) -> str:
        raw = html.unescape(match.group("tex"))
        body = _DELIMITERS.match(raw)
        tex = body.group("body") if body else raw
        block = match.group("tag") == "div"
        try:
            mathml = tex_to_mathml(tex, block=block)
        except Exception as err:  # latex2mathml raises many types; all mean "cannot parse"
            log.warning("%s: cannot convert math %r to MathML (%s)", page.file.src_uri, tex, err)
            return match.group(0)
        return f'<div class="math-block">{mathml}</div>' if block else mathml

    return _MATH.sub(replace, html_text)
