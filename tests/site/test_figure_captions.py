"""Every figure on a chapter or lab page has a caption of its own that says what to see.

A caption that only repeats the figure's title (the panel titles drawn in the image) tells the
reader nothing the picture does not. Read from the built site, without a browser: each
``<figure>``'s caption against the title the image carries (the PNG's ``Title`` text chunk,
written by :func:`twofour.course.plotting.figure_png`; an SVG's ``<title>``).
"""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

from twofour.course.plotting import restates

_FIGURE = re.compile(r'<figure class="nb-figure"[^>]*>(.*?)</figure>', re.DOTALL)
_CAPTION = re.compile(r"<figcaption>(.*?)</figcaption>", re.DOTALL)
_IMG = re.compile(r'<img src="([^"]+)"')
_SVG_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_ZOOM_HINT = re.compile(r'<span class="nb-zoom-hint">.*?</span>', re.DOTALL)  # a phone's "tap to open", not the caption


def _text(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub("", fragment)).split())


def page_figures(page_html: str, page_dir: Path) -> list[dict]:
    """``{n, caption, title}`` of every notebook figure of a built page (caption without "Figure N.")."""
    from PIL import Image

    out = []
    for n, body in enumerate(_FIGURE.findall(page_html), start=1):
        caption = _text(_ZOOM_HINT.sub("", _CAPTION.search(body).group(1))) if _CAPTION.search(body) else ""
        caption = re.sub(r"^Figure \d+\.\s*", "", caption)
        title = ""
        img = _IMG.search(body)
        if img:
            with Image.open(io.BytesIO((page_dir / html.unescape(img.group(1))).read_bytes())) as image:
                title = image.text.get("Title", "") if hasattr(image, "text") else ""
        elif _SVG_TITLE.search(body):
            title = _text(_SVG_TITLE.search(body).group(1))
        out.append({"n": n, "caption": caption, "title": title})
    return out


def test_page_figures_reads_caption_and_title(tmp_path):
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_itxt("Title", "Time per call")
    Image.new("RGB", (4, 4), "white").save(tmp_path / "a.png", pnginfo=info)
    page = ('<figure class="nb-figure" id="x-figure-1"><div class="nb-image"><img src="a.png" alt="A"></div>'
            '<figcaption><span class="nb-figure__number">Figure 1.</span> Time per call</figcaption></figure>'
            '<figure class="nb-figure" id="x-figure-2"><div class="nb-image"><svg><title>Road</title></svg></div>'
            '<figcaption><span class="nb-figure__number">Figure 2.</span> Follow the blue road &amp; the orange one.'
            '</figcaption></figure>')
    found = page_figures(page, tmp_path)
    assert found == [{"n": 1, "caption": "Time per call", "title": "Time per call"},
                     {"n": 2, "caption": "Follow the blue road & the orange one.", "title": "Road"}]
    assert restates(found[0]["caption"], found[0]["title"]) and not restates(found[1]["caption"], found[1]["title"])


def test_no_figure_caption_only_repeats_its_title(site, pages):
    failures, counted = [], 0
    for path in (p for p in pages if p.startswith("/notebooks/") or p.startswith("/labs/lab")):
        page_dir = site / path.strip("/")
        seen: dict[str, int] = {}
        for fig in page_figures((page_dir / "index.html").read_text(encoding="utf-8"), page_dir):
            counted += 1
            if restates(fig["caption"], fig["title"]):
                failures.append(f"{path} figure {fig['n']}: caption {fig['caption']!r} repeats the title {fig['title']!r}")
            if fig["caption"] in seen:  # one figure shown twice (a cell whose last line returned the figure)
                failures.append(f"{path} figures {seen[fig['caption']]} and {fig['n']} share the caption {fig['caption']!r}")
            seen.setdefault(fig["caption"], fig["n"])
    assert counted >= 15, f"expected the chapters' figures, found {counted}"
    assert not failures, "\n".join(failures)
