"""Turn an executed notebook into a Markdown page: the one place that knows how.

Markdown cells are passed through unchanged, so notebook prose gets everything the rest of
the site gets (admonitions, glossary tooltips, build-time MathML, heading anchors, the table
of contents). Code cells become fenced code blocks (highlighting, copy button). Outputs are
rendered to HTML here and left in the Markdown as ``<!-- nb-output N -->`` placeholders,
which :func:`fill_outputs` swaps in after Markdown has run, so no Markdown extension ever
rewrites a program's output. The one exception is an output that *declares* itself Markdown
(``text/markdown`` with no HTML or image beside it, e.g. an object with ``_repr_markdown_``):
it joins the page's Markdown like a markdown cell, so a chapter can show a box whose text
lives in the package (``twofour.course.status``) exactly as a Markdown page would.

Cell tags understood (set them in Jupyter's or Colab's cell metadata):

``hide-on-site``   drop the cell (Colab install cells, ipywidgets front ends)
``hide-input``     show only the outputs
``hide-output``    show only the code

To change how notebooks look on the site, change this module; nothing else parses cells.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

HIDE_CELL, HIDE_INPUT, HIDE_OUTPUT = "hide-on-site", "hide-input", "hide-output"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PLACEHOLDER = re.compile(r"(?:<p>)?<!-- nb-output (\d+) -->(?:</p>)?")
_H1 = re.compile(r"^# .+$", re.MULTILINE)
# Output types shown on a static page, best first. Widget views are left out on purpose:
# without a kernel they are dead controls (DESIGN: the site uses JS calculators instead).
_IMAGES = {"image/png": "png", "image/jpeg": "jpg"}


@dataclass
class Rendered:
    markdown: str
    outputs: list[str] = field(default_factory=list)  # HTML, indexed by placeholder number
    images: dict[str, bytes] = field(default_factory=dict)  # file name -> bytes


@dataclass(frozen=True)
class _Markdown:
    """An output that is Markdown by declaration: it goes into the page's Markdown as it is."""

    text: str


def _is_markdown(data: dict) -> bool:
    return "text/markdown" in data and "text/html" not in data and not any(m in data for m in _IMAGES) \
        and "image/svg+xml" not in data


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _fence(code: str, lang: str = "python") -> str:
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}"


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{cls}">{html.escape(_ANSI.sub("", text).rstrip())}</pre>'


class _Renderer:
    def __init__(self, stem: str, actions_html: str):
        self.stem = stem
        self.actions_html = actions_html
        self.result = Rendered(markdown="")
        self.parts: list[str] = []

    def placeholder(self, fragment: str) -> str:
        self.result.outputs.append(fragment)
        return f"<!-- nb-output {len(self.result.outputs) - 1} -->"

    def markdown_cell(self, source: str) -> None:
        # The action buttons go right under the page title (the notebook's one `#` heading).
        if self.actions_html and (match := _H1.search(source)):
            end = match.end()
            source = f"{source[:end]}\n\n{self.placeholder(self.actions_html)}\n{source[end:]}"
            self.actions_html = ""
        self.parts.append(source)

    def code_cell(self, cell, index: int) -> None:
        tags = _tags(cell)
        if HIDE_INPUT not in tags and cell.source.strip():
            self.parts.append(_fence(cell.source))
        if HIDE_OUTPUT in tags:
            return
        # Runs of ordinary outputs become one placeholder; a Markdown output sits between them.
        for item in self.outputs(cell.get("outputs", []), index):
            if isinstance(item, _Markdown):
                self.parts.append(item.text)
            else:
                self.parts.append(self.placeholder(f'<div class="nb-output">{"".join(item)}</div>'))

    def outputs(self, outputs: list, index: int) -> list:
        """Output groups in order: lists of HTML fragments, and :class:`_Markdown` items between them."""
        groups: list = []
        fragments: list[str] = []
        for k, out in enumerate(outputs):
            kind = out.get("output_type")
            data = out.get("data", {}) if kind in ("display_data", "execute_result") else {}
            if _is_markdown(data):
                if fragments:
                    groups.append(["\n".join(fragments)])
                    fragments = []
                groups.append(_Markdown(_text(data["text/markdown"]).strip()))
                continue
            if kind == "stream":
                cls = "nb-stream nb-stderr" if out.get("name") == "stderr" else "nb-stream"
                fragments.append(_pre(_text(out.get("text", "")), cls))
            elif kind == "error":  # only reachable for cells tagged raises-exception
                fragments.append(_pre("\n".join(out.get("traceback", [])), "nb-error"))
            elif kind in ("display_data", "execute_result"):
                fragment = self.rich(data, f"{self.stem}-cell{index}-{k}")
                if fragment:
                    fragments.append(fragment)
        if fragments:
            groups.append(["\n".join(fragments)])
        return groups

    def rich(self, data: dict, name: str) -> str | None:
        if "text/html" in data:
            return f'<div class="nb-html">{_text(data["text/html"])}</div>'
        if "image/svg+xml" in data:
            return f'<div class="nb-image">{_text(data["image/svg+xml"])}</div>'
        for mime, ext in _IMAGES.items():
            if mime in data:
                filename = f"{name}.{ext}"
                self.result.images[filename] = base64.b64decode(_text(data[mime]))
                # Images sit next to the page; the page URL is a directory, so a bare name works.
                return (
                    f'<div class="nb-image"><img src="{filename}" loading="lazy" '
                    f'alt="Figure produced by the code above"></div>'
                )
        if "application/vnd.jupyter.widget-view+json" in data:
            return None
        if "text/plain" in data:
            return _pre(_text(data["text/plain"]), "nb-text")
        return None


def render(nb, *, stem: str, actions_html: str = "") -> Rendered:
    """Render an executed notebook (an ``nbformat`` node) to Markdown plus output fragments.

    Args:
        nb: the executed notebook.
        stem: file stem, used to name extracted images (``<stem>-cell3-0.png``).
        actions_html: HTML placed under the title (the Colab / download buttons).

    Example:
        >>> import nbformat.v4 as v4
        >>> nb = v4.new_notebook(cells=[v4.new_markdown_cell("# Hi"), v4.new_code_cell("1+1")])
        >>> nb.cells[1].outputs = [v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
        >>> r = render(nb, stem="demo")
        >>> print(r.markdown, end="")
        # Hi
        <BLANKLINE>
        ```python
        1+1
        ```
        <BLANKLINE>
        <!-- nb-output 0 -->
        >>> r.outputs[0]
        '<div class="nb-output"><pre class="nb-text">2</pre></div>'
    """
    renderer = _Renderer(stem, actions_html)
    for index, cell in enumerate(nb.cells):
        if HIDE_CELL in _tags(cell):
            continue
        if cell.cell_type == "markdown":
            renderer.markdown_cell(cell.source)
        elif cell.cell_type == "code":
            renderer.code_cell(cell, index)
        # raw cells are notebook-only by definition
    renderer.result.markdown = "\n\n".join(renderer.parts) + "\n"
    return renderer.result


def fill_outputs(page_html: str, outputs: list[str]) -> str:
    """Replace the ``<!-- nb-output N -->`` placeholders in rendered HTML with the outputs.

    Example:
        >>> fill_outputs("<p>a</p>\\n<!-- nb-output 0 -->", ["<pre>2</pre>"])
        '<p>a</p>\\n<pre>2</pre>'
    """
    return _PLACEHOLDER.sub(lambda m: outputs[int(m.group(1))], page_html)
