"""MkDocs hook: fill the generated parts of the Reference pages.

* ``reference/glossary.md``: ``<!-- glossary-terms -->`` becomes a definition list built from
  ``includes/abbreviations.md``, the same file that gives every page its hover definitions,
  so the glossary and the tooltips can never disagree.
* ``reference/api.md``: ``<!-- twofour-api -->`` becomes the public API of every module in
  ``src/twofour`` (signature + docstring). New modules appear without editing anything; a
  module that fails to import fails the strict build with its name.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil
import re
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.reference")

ROOT = Path(__file__).resolve().parent.parent
ABBREVIATIONS = ROOT / "includes" / "abbreviations.md"
_ABBR = re.compile(r"^\*\[(?P<term>[^\]]+)\]:\s*(?P<text>.+)$", re.MULTILINE)
_DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)")


def glossary_terms() -> list[tuple[str, str]]:
    """(term, definition) pairs from includes/abbreviations.md, sorted case-insensitively."""
    pairs = [(m["term"], m["text"].strip()) for m in _ABBR.finditer(ABBREVIATIONS.read_text())]
    return sorted(pairs, key=lambda pair: pair[0].lower())


def glossary_markdown() -> str:
    """One entry per definition; terms sharing a definition (SM, SMs) are listed together."""
    grouped: dict[str, list[str]] = {}
    for term, text in glossary_terms():
        grouped.setdefault(text, []).append(term)
    entries = sorted(grouped.items(), key=lambda item: item[1][0].lower())
    return "\n\n".join(f"{', '.join(terms)}\n:   {text}" for text, terms in entries) + "\n"


def _docstring_markdown(doc: str | None) -> str:
    """Summary paragraph as prose; the rest verbatim, with examples as highlighted code."""
    if not doc:
        return "*No docstring.*"
    lines = inspect.cleandoc(doc).splitlines()
    blank = lines.index("") if "" in lines else len(lines)
    summary, rest = " ".join(lines[:blank]), lines[blank + 1 :]
    blocks: list[tuple[str, list[str]]] = []  # (lang, lines), consecutive runs
    for line in rest:
        lang = "pycon" if _DOCTEST.match(line) or (blocks and blocks[-1][0] == "pycon" and line.strip()) else "text"
        if blocks and blocks[-1][0] == lang:
            blocks[-1][1].append(line)
        else:
            blocks.append((lang, [line]))
    parts = [summary]
    for lang, body in blocks:
        text = inspect.cleandoc("\n".join(body))
        label = None
        if lang == "text" and text.splitlines() and text.splitlines()[-1].strip() in ("Example:", "Examples:"):
            text, label = "\n".join(text.splitlines()[:-1]).rstrip(), "**Example**"
        if text.strip():
            fence = "```{.text .htw-doc}" if lang == "text" else "```pycon"
            parts.append(f"{fence}\n{text}\n```")
        if label:
            parts.append(label)
    return "\n\n".join(parts)


def _public_members(module) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n for n, obj in vars(module).items()
            if not n.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
            and getattr(obj, "__module__", None) == module.__name__
        ]
    return [(n, getattr(module, n)) for n in names]


class _Annotation:
    """Shows a string annotation (``from __future__ import annotations``) without quotes."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(obj) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    unquote = lambda a: _Annotation(a) if isinstance(a, str) else a  # noqa: E731
    params = [p.replace(annotation=unquote(p.annotation)) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=unquote(sig.return_annotation)))


def api_markdown() -> str:
    import twofour

    parts: list[str] = []
    for info in sorted(pkgutil.iter_modules(twofour.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        name = f"twofour.{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception as err:  # any import failure: say which module, keep building
            log.warning("API page: cannot import %s: %s: %s", name, type(err).__name__, err)
            continue
        parts.append(f"## `{name}`\n\n{_docstring_markdown(module.__doc__).split(chr(10) + chr(10))[0]}")
        for member, obj in _public_members(module):
            if inspect.isfunction(obj) or inspect.isclass(obj):
                kind = "class " if inspect.isclass(obj) else ""
                parts.append(
                    f"### `{member}` {{#{name}.{member}}}\n\n"
                    f"```python\n{kind}{member}{_signature(obj)}\n```\n\n{_docstring_markdown(obj.__doc__)}"
                )
            else:
                value = repr(obj) if len(repr(obj)) <= 120 else repr(obj)[:117] + "..."
                parts.append(f"### `{member}` {{#{name}.{member}}}\n\nConstant: `{value}`")
    return "\n\n".join(parts) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "<!-- glossary-terms -->" in markdown:
        markdown = markdown.replace("<!-- glossary-terms -->", glossary_markdown())
    if "<!-- twofour-api -->" in markdown:
        markdown = markdown.replace("<!-- twofour-api -->", api_markdown())
    return markdown
