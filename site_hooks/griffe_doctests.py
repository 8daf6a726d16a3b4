"""Griffe extension for the API pages: a docstring's ``>>>`` examples become ``pycon`` code blocks.

The package's docstrings carry doctests in their text, not only under an ``Examples:`` heading;
as Markdown, ``>>>`` would be a quotation and ``x[0][:3]`` a link. Each run of ``>>>`` /
``...`` lines and the output after them (up to a blank line) is fenced, so it reads as code.
Loaded by mkdocstrings (``extensions`` in ``mkdocs.yml``).

>>> fence_doctests("Text.\\n\\n>>> 1 + 1\\n2\\n\\nMore.")
'Text.\\n\\n```pycon\\n>>> 1 + 1\\n2\\n```\\n\\nMore.'
"""

from __future__ import annotations

import re

import griffe

_PROMPT = re.compile(r"^(\s*)>>>( |$)")


def fence_doctests(text: str) -> str:
    """``text`` with each doctest example (prompt lines and their output) inside a code fence."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _PROMPT.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent = match.group(1)
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        out += [f"{indent}```pycon", *(indent + line for line in block), f"{indent}```"]
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
