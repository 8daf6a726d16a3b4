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
``collapse-code``  fold the code behind "Show the code" (the outputs stay in view)
``show-code``      never fold the code

A cell whose job is checking rather than teaching is folded without a tag: more than
``CHECK_ASSERTS`` ``assert`` lines, or more than ``CHECK_LINES`` lines (plumbing a reader skims).
It still runs in the build like every cell, so a failing check still fails the build.

Printed lines. Output that is sentences (no run of two spaces inside a line, so no aligned
columns) wraps at the column's edge; output with aligned columns keeps its lines and scrolls.

Figures. Every image or SVG a cell shows becomes a ``<figure>`` numbered per page
("Figure 3.") with a caption under it and its own alt text. Where they come from, first match
wins:

1. the cell's metadata ``figure``: ``{"alt": ..., "caption": ...}``, or a list of such, one per
   figure the cell shows (set it in Jupyter's or Colab's cell metadata editor);
2. the output's display metadata: ``twofour.course.plotting`` shows every matplotlib figure
   with ``alt``, ``title`` and ``caption`` (from ``describe(fig, alt=..., caption=...)``, or
   derived from the figure's titles, axes and legend);
3. the PNG's own ``Description``/``Title`` text chunks, or an SVG's ``<title>``;
4. last, the page and section the figure sits in ("Figure 2 of <page>, section <heading>").

PNGs are shown at the size their display metadata gives (the house display draws them at 2x
for high-DPI screens) and re-encoded as 256-colour PNGs when that is smaller (figures are
flat colours on white; this keeps 2x figures about as light as 1x ones were).

To change how notebooks look on the site, change this module; nothing else parses cells.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

HIDE_CELL, HIDE_INPUT, HIDE_OUTPUT = "hide-on-site", "hide-input", "hide-output"
COLLAPSE_CODE, SHOW_CODE = "collapse-code", "show-code"
CHECK_ASSERTS, CHECK_LINES = 2, 25
_ASSERT_LINE = re.compile(r"^\s*assert\b", re.MULTILINE)
_COLUMNS = re.compile(r"\S {2,}(?=\S)")  # two spaces inside a line: aligned columns (tests/site/test_what_a_reader_sees.py reads alike)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PLACEHOLDER = re.compile(r"(?:<p>)?<!-- nb-output (\d+) -->(?:</p>)?")
_H1 = re.compile(r"^# .+$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_GENERIC_ALT = "Figure produced by the code above"  # what pages said before figures had their own
# Output types shown on a static page, best first. Widget views are left out on purpose:
# without a kernel they are dead controls (DESIGN: the site uses JS calculators instead).
_IMAGES = {"image/png": "png", "image/jpeg": "jpg"}
# A lab check's message (twofour.course.labs._common: "passed: ..." or "not done yet: ...") is a
# sentence, not output with columns: it is marked so that it wraps on a narrow screen.
_CHECK_MESSAGE = re.compile(r"^(?:passed|not done yet): ")


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


def is_checking(source: str, tags: set[str] = frozenset()) -> bool:
    """True when a code cell's code is folded on the site (tags first, then its size and asserts).

    >>> is_checking("x = 1\\nassert x\\nassert x\\nassert x == 1")
    True
    >>> is_checking("W24, mask = prune(W)\\nassert check(W24).valid")
    False
    >>> is_checking("assert a\\nassert b\\nassert c", {"show-code"})
    False
    """
    if SHOW_CODE in tags:
        return False
    if COLLAPSE_CODE in tags:
        return True
    return len(_ASSERT_LINE.findall(source)) > CHECK_ASSERTS or len(source.strip().splitlines()) > CHECK_LINES


def is_prose(text: str) -> bool:
    """True when printed text is sentences, not aligned columns (so it may wrap).

    Columns are runs of two or more spaces that end at the same place on two or more lines; a
    double space inside one sentence ("8.15  ->  7.67") is not a table.

    >>> is_prose("end to end 0.05x, below the 0.71x the GEMMs alone explain")
    True
    >>> is_prose("M      dense   2:4\\n1      10.0    12.0")
    False
    >>> is_prose("magnitude: 8.152  activation-aware: 7.671  -> activation-aware wins")
    True
    """
    ends: dict[int, int] = {}
    for line in text.splitlines():
        for m in _COLUMNS.finditer(line.rstrip()):
            ends[m.end()] = ends.get(m.end(), 0) + 1
    return not any(n >= 2 for n in ends.values())


def _folded(code: str) -> str:
    lines = len(code.strip().splitlines())
    checks = len(_ASSERT_LINE.findall(code))
    what = f"{lines} lines" + (f", {checks} checks" if checks else "")
    return (f'<details class="nb-code" markdown="1">\n<summary>Show the code ({what})</summary>\n\n'
            f"{_fence(code)}\n\n</details>")


def _fence(code: str, lang: str = "python") -> str:
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{code.rstrip()}\n{ticks}"


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{cls}">{html.escape(_ANSI.sub("", text).rstrip())}</pre>'


def _plain(text: str) -> str:
    """Markdown-ish heading or caption text as plain text (no emphasis marks, links, code ticks)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`]+", "", text)
    text = re.sub(r"\{[^}]*\}\s*$", "", text)  # attribute lists: {: .class }
    return " ".join(text.split())


def png_text(png: bytes) -> dict[str, str]:
    """The ``tEXt``/``iTXt`` chunks of a PNG (``Title``, ``Description``, ...); {} if none or not a PNG.

    Example:
        >>> import io, matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> buf = io.BytesIO()
        >>> fig = plt.figure(figsize=(1, 1))
        >>> fig.savefig(buf, format="png", metadata={"Title": "Speedup against M"})
        >>> plt.close(fig)
        >>> png_text(buf.getvalue())["Title"]
        'Speedup against M'
    """
    found: dict[str, str] = {}
    if not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return found
    pos = 8
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        try:
            if kind == b"tEXt":
                key, _, value = body.partition(b"\0")
                found[key.decode("latin-1")] = value.decode("latin-1")
            elif kind == b"zTXt":
                key, _, rest = body.partition(b"\0")
                found[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
            elif kind == b"iTXt":
                key, _, rest = body.partition(b"\0")
                compressed, rest = rest[0], rest[2:]
                _lang, _, rest = rest.partition(b"\0")
                _tkey, _, value = rest.partition(b"\0")
                found[key.decode("latin-1")] = (zlib.decompress(value) if compressed else value).decode("utf-8")
            elif kind == b"IEND":
                break
        except (zlib.error, UnicodeDecodeError, IndexError):
            continue
    return found


def _png_size(png: bytes) -> tuple[int, int] | None:
    if png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) >= 24:
        return struct.unpack(">II", png[16:24])
    return None


# Re-encoding every figure was 45% of a quick site build's CPU, redone on every build: the
# result is kept by the input's content hash (and this recipe's version), so a figure that did
# not change is re-encoded once.
PNG_CACHE = Path(__file__).resolve().parent.parent / "build" / "png-cache"
_PNG_RECIPE = b"quantize-256-mediancut-nodither-optimize/1"


def smaller_png(png: bytes, cache: Path | None = PNG_CACHE) -> bytes:
    """The same picture as a 256-colour PNG when that is smaller (figures are flat colours).

    Returns the input unchanged when it is not a PNG Pillow can read, or when the palette
    version is not smaller. Text chunks (title, description) are kept. The answer is kept in
    ``cache`` (a folder; ``None``: no cache) under the input's hash.
    """
    if cache is None:
        return _smaller_png(png)
    path = cache / f"{hashlib.sha256(_PNG_RECIPE + png).hexdigest()}.png"
    try:
        return path.read_bytes()
    except OSError:
        pass
    out = _smaller_png(png)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(out)
        os.replace(tmp, path)  # whole or absent, with builds running side by side
    except OSError:  # a read-only checkout still builds, just without the cache
        pass
    return out


def _smaller_png(png: bytes) -> bytes:
    try:
        from PIL import Image, PngImagePlugin
    except ImportError:  # Pillow comes with matplotlib; without it, keep the original
        return png
    try:
        image = Image.open(io.BytesIO(png))
        image.load()
        text = {k: v for k, v in png_text(png).items() if k in ("Title", "Description", "Software")}
        if image.mode in ("RGBA", "LA", "P"):
            rgba = image.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            image = Image.alpha_composite(white, rgba)
        quantized = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        info = PngImagePlugin.PngInfo()
        for key, value in text.items():
            info.add_itxt(key, value)
        out = io.BytesIO()
        quantized.save(out, format="PNG", optimize=True, pnginfo=info)
    except Exception:  # a picture we cannot re-encode is shown as it came
        return png
    return out.getvalue() if len(out.getvalue()) < len(png) else png


def _figure_overrides(cell) -> list[dict]:
    """The ``figure`` cell metadata as a list, one entry per figure of the cell."""
    value = cell.get("metadata", {}).get("figure")
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v if isinstance(v, dict) else {} for v in value]
    return []


class _Renderer:
    def __init__(self, stem: str, actions_html: str):
        self.stem = stem
        self.actions_html = actions_html
        self.result = Rendered(markdown="")
        self.parts: list[str] = []
        self.figures = 0  # figures numbered so far on this page
        self.page_title = ""
        self.section = ""  # the last heading above the current cell
        self.alts: set[str] = set()
        self.cell_figures: list[dict] = []  # the current cell's `figure` metadata
        self.cell_figure_index = 0

    def placeholder(self, fragment: str) -> str:
        self.result.outputs.append(fragment)
        return f"<!-- nb-output {len(self.result.outputs) - 1} -->"

    def markdown_cell(self, source: str) -> None:
        headings = _HEADING.findall(source)
        if headings:
            if not self.page_title and (h1 := _H1.search(source)):
                self.page_title = _plain(h1.group(0)[2:])
            self.section = _plain(headings[-1])
        # The action buttons go right under the page title (the notebook's one `#` heading).
        if self.actions_html and (match := _H1.search(source)):
            end = match.end()
            source = f"{source[:end]}\n\n{self.placeholder(self.actions_html)}\n{source[end:]}"
            self.actions_html = ""
        self.parts.append(source)

    def code_cell(self, cell, index: int) -> None:
        tags = _tags(cell)
        if HIDE_INPUT not in tags and cell.source.strip():
            self.parts.append(_folded(cell.source) if is_checking(cell.source, tags) else _fence(cell.source))
        if HIDE_OUTPUT in tags:
            return
        self.cell_figures, self.cell_figure_index = _figure_overrides(cell), 0
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
                text = _text(out.get("text", ""))
                cls = "nb-stream nb-stderr" if out.get("name") == "stderr" else "nb-stream"
                if cls == "nb-stream" and _CHECK_MESSAGE.match(text):
                    cls += " nb-check"
                elif is_prose(text):
                    cls += " nb-wrap"
                fragments.append(_pre(text, cls))
            elif kind == "error":  # only reachable for cells tagged raises-exception
                fragments.append(_pre("\n".join(out.get("traceback", [])), "nb-error"))
            elif kind in ("display_data", "execute_result"):
                fragment = self.rich(data, f"{self.stem}-cell{index}-{k}", out.get("metadata", {}))
                if fragment:
                    fragments.append(fragment)
        if fragments:
            groups.append(["\n".join(fragments)])
        return groups

    def figure_text(self, found: dict) -> tuple[int, str, str]:
        """(number, alt, caption) of the next figure, from the cell metadata, ``found``, or the page."""
        self.figures += 1
        n = self.figures
        override = self.cell_figures[self.cell_figure_index] if self.cell_figure_index < len(self.cell_figures) else {}
        self.cell_figure_index += 1

        def pick(*values) -> str:
            return next((" ".join(str(v).split()) for v in values if isinstance(v, str) and v.strip()), "")

        where = f"Figure {n} of {self.page_title or self.stem}" + (f", section {self.section}" if self.section else "")
        alt = pick(override.get("alt"), found.get("alt"), found.get("Description"), found.get("title"), found.get("Title"))
        if not alt or alt == _GENERIC_ALT:
            alt = where
        if alt in self.alts:  # two figures, one description: say which is which
            alt = f"{alt} (figure {n})"
        self.alts.add(alt)
        caption = pick(override.get("caption"), found.get("caption"), found.get("title"), found.get("Title"), alt)
        return n, alt, caption

    def figure(self, body: str, n: int, caption: str) -> str:
        hint = '<span class="nb-zoom-hint"> Tap the figure to open it full size.</span>' if "nb-zoom" in body else ""
        return (
            f'<figure class="nb-figure" id="{html.escape(self.stem)}-figure-{n}">{body}'
            f'<figcaption><span class="nb-figure__number">Figure {n}.</span> {html.escape(caption)}{hint}</figcaption></figure>'
        )

    def rich(self, data: dict, name: str, metadata: dict | None = None) -> str | None:
        metadata = metadata or {}
        if "text/html" in data:
            return f'<div class="nb-html">{_text(data["text/html"])}</div>'
        if "image/svg+xml" in data:
            svg = _text(data["image/svg+xml"])
            title = _SVG_TITLE.search(svg)
            found = dict(metadata.get("image/svg+xml", {}))
            if title:
                found.setdefault("title", html.unescape(" ".join(title.group(1).split())))
            n, alt, caption = self.figure_text(found)
            # Inline SVG: the alt text becomes its accessible name.
            svg = re.sub(r"<svg\b", f'<svg role="img" aria-label="{html.escape(alt)}"', svg, count=1)
            return self.figure(f'<div class="nb-image">{svg}</div>', n, caption)
        for mime, ext in _IMAGES.items():
            if mime in data:
                filename = f"{name}.{ext}"
                raw = base64.b64decode(_text(data[mime]))
                shown = dict(metadata.get(mime, {}))
                found = {**png_text(raw), **shown}
                image = smaller_png(raw) if ext == "png" else raw
                self.result.images[filename] = image
                n, alt, caption = self.figure_text(found)
                size = ""
                width, height = shown.get("width"), shown.get("height")
                if not (isinstance(width, int) and isinstance(height, int)):
                    width, height = _png_size(raw) or (None, None)
                if width and height:
                    size = f' width="{width}" height="{height}"'
                # Images sit next to the page; the page URL is a directory, so a bare name works.
                img = f'<img src="{filename}" loading="lazy"{size} alt="{html.escape(alt)}">'
                # On a phone a figure is shrunk to the column and its labels get too small to read:
                # the picture is also a link to itself at full size (a hint under it says so there).
                zoom = (f'<a class="nb-zoom" href="{filename}" target="_blank" rel="noopener" '
                        f'title="Open figure {n} full size">{img}</a>')
                return self.figure(f'<div class="nb-image">{zoom}</div>', n, caption)
        if "application/vnd.jupyter.widget-view+json" in data:
            return None
        if "text/plain" in data:
            text = _text(data["text/plain"])
            return _pre(text, "nb-text nb-wrap" if is_prose(text) else "nb-text")
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
        '<div class="nb-output"><pre class="nb-text nb-wrap">2</pre></div>'
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
