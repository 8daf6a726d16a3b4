"""Every internal link and #anchor in the built site resolves, notebook pages included.

MkDocs validates links written in Markdown; this also covers raw HTML, theme links, and the
links the notebook hook writes (download buttons, figures).
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

SKIP_SCHEMES = ("http:", "https:", "mailto:", "data:", "javascript:", "tel:")


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            value = attrs.get(key)
            if value and not (tag == "a" and key == "name"):
                self.links.append(value)


def _parse(path: Path) -> _Collector:
    collector = _Collector()
    collector.feed(path.read_text(errors="replace"))
    return collector


def _target(page: Path, link: str, site: Path) -> Path:
    """File a relative link points to (directory URLs mean index.html)."""
    path = unquote(urlsplit(link).path)
    target = (page.parent / path).resolve() if path else page
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return target


def broken_links(site: Path) -> list[str]:
    parsed: dict[Path, _Collector] = {}

    def get(path: Path) -> _Collector:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    problems = []
    # 404.html is served from any depth, so Material writes it with site_url-absolute links.
    for page in sorted(p for p in site.rglob("*.html") if p.name != "404.html"):
        for link in get(page).links:
            if link.startswith(SKIP_SCHEMES) or link.startswith("//"):
                continue
            where = f"{page.relative_to(site)} -> {link}"
            if link.startswith("/"):
                problems.append(f"{where}: absolute path breaks when the site is not at the root")
                continue
            target = _target(page, link, site)
            if not target.resolve().is_relative_to(site.resolve()):
                problems.append(f"{where}: points outside the site")
            elif not target.exists():
                problems.append(f"{where}: no such file")
            elif (fragment := unquote(urlsplit(link).fragment)) and target.suffix == ".html":
                if fragment not in get(target).ids:
                    problems.append(f"{where}: no element with id '{fragment}'")
    return problems


def test_internal_links_and_anchors_resolve(site):
    problems = broken_links(site)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_link_checker_catches_a_broken_anchor(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "index.html").write_text('<a href="a/#there">x</a><a href="missing/">y</a>')
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">h</h2>')
    problems = broken_links(tmp_path)
    assert len(problems) == 2
    assert "no element with id 'there'" in problems[0] and "no such file" in problems[1]
