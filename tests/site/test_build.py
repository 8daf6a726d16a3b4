"""The site builds strictly, lists every notebook, and ships nothing that phones home."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOK_FOLDERS = ("notebooks", "labs")


def _nav_entries(node) -> list[str]:
    """Every page path in a mkdocs nav (strings at any depth)."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_entries(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_entries(value)]
    return []


def _mkdocs_nav() -> list[str]:
    # mkdocs.yml uses `!relative`, which safe_load does not know; it does not matter for nav.
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    return _nav_entries(config["nav"])


def test_strict_build_succeeds(build):
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.log[-4000:]}"


def test_every_notebook_is_in_the_nav_and_solutions_are_not():
    nav = set(_mkdocs_nav())
    notebooks = [
        p.relative_to(ROOT).as_posix()
        for folder in NOTEBOOK_FOLDERS
        for p in (ROOT / folder).rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts
    ]
    assert notebooks, "expected at least notebooks/00-environment.ipynb"
    solutions = {n for n in notebooks if n.startswith("labs/solutions/")}
    missing = sorted(set(notebooks) - solutions - nav)
    assert not missing, f"add these to `nav` in mkdocs.yml (one line each): {missing}"
    # Solutions stay out of the previous/next chain; each lab links its own (site_hooks/labs.py).
    assert not solutions & nav, f"solutions pages must not be in the nav: {sorted(solutions & nav)}"


def test_notebook_page_has_a_download_link_and_colab_only_with_a_repository(site):
    page = (site / "notebooks/00-environment/index.html").read_text()
    assert 'href="00-environment.ipynb" download' in page
    assert (site / "notebooks/00-environment/00-environment.ipynb").is_file()
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import install_cell
    finally:
        sys.path.pop(0)
    repo, branch = install_cell.configured_repo()  # extra.repo in mkdocs.yml, empty by default
    if repo:
        colab = (f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}"
                 f"/blob/{branch}/notebooks/00-environment.ipynb")
        assert f'href="{colab}"' in page and f'href="{repo}/blob/{branch}/notebooks/00-environment.ipynb"' in page
    else:  # Colab opens notebooks from GitHub only: no repository, no button (and no "View source")
        assert "colab.research.google.com" not in page and "View source" not in page


def test_notebook_page_drops_hidden_cells_and_shows_outputs(site):
    page = (site / "notebooks/00-environment/index.html").read_text()
    assert "TWOFOUR_WHEEL" not in page, "the hide-on-site set-up cell leaked onto the page"
    assert "nb-output" in page and "twofour-env" in page, "executed outputs are missing"
    assert "In&nbsp;[" not in page and "In [" not in page, "prompts should be hidden"


def test_math_is_mathml_not_tex(site):
    home = (site / "index.html").read_text()
    assert "<math" in home
    assert 'class="arithmatex"' not in home, "TeX left for a client-side renderer"


def test_glossary_lists_every_hover_term(site):
    glossary = (site / "reference/glossary/index.html").read_text()
    terms = re.findall(r"^\*\[([^\]]+)\]:", (ROOT / "includes/abbreviations.md").read_text(), re.M)
    assert len(terms) >= 10
    dts = " ".join(re.findall(r"<dt>(.*?)</dt>", glossary, re.S))
    assert all(term in dts for term in terms), "a hover term is missing from the glossary"


def test_api_reference_has_one_page_per_module(site):
    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import reference
    finally:
        sys.path.pop(0)
    modules = [m for *_, ms in reference.api_groups() for m in ms]
    assert len(modules) >= 20
    for name in modules:
        assert (site / f"reference/api/{name}/index.html").is_file(), f"no API page for {name}"
    device = (site / "reference/api/twofour.device/index.html").read_text()
    assert 'id="twofour.device.pick_device"' in device
    plotting = (site / "reference/api/twofour.course.plotting/index.html").read_text()
    assert 'id="twofour.course.plotting.new_figure"' in plotting
    overview = (site / "reference/api/index.html").read_text()
    # The overview links every module, toolkit first, course helpers and the command line after it.
    positions = [overview.index(f'href="{name}/"') for name in modules]
    toolkit = [p for p, m in zip(positions, modules) if reference._room_of(m) == reference.TOOLKIT]
    others = [p for p, m in zip(positions, modules) if reference._room_of(m) != reference.TOOLKIT]
    assert max(toolkit) < min(others), "toolkit modules must come first"
    for name in ("structure", "packing", "dispatch", "roofline", "request"):
        assert overview.index(f'href="twofour.{name}/') < min(others)


def test_api_install_line_is_the_site_wheel(site, base_url):
    wheels = sorted((site / "downloads").glob("twofour-*.whl"))
    assert len(wheels) == 1, wheels
    line = f'pip install "{base_url}/downloads/{wheels[0].name}"'
    overview = (site / "reference/api/index.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", overview))  # highlighted code is split into spans
    assert line in text, f"API page should show: {line}"
    assert "twofour-wheel-url" not in text


def test_api_pages_rank_below_guides_in_search(site):
    import json

    index = json.loads((site / "search/search_index.json").read_text())
    boosts = {}
    for doc in index["docs"]:
        page = doc["location"].split("#")[0]
        boosts.setdefault(page, doc.get("boost", 1))
    api = {p: b for p, b in boosts.items() if p.startswith("reference/api/")}
    assert api and all(b < 1 for b in api.values()), api
    chapters = {p: b for p, b in boosts.items() if p.startswith("notebooks/")}
    assert chapters and all(b >= 1 for b in chapters.values()), chapters


def test_no_page_is_over_300_kb_of_html(site):
    """300 kB for every page a reader reads top to bottom; an API reference page, which mkdocstrings
    renders with every public name's signature and parameter table and which is read by search, gets
    350 kB (twofour.roofline's, the largest, is about 330 kB)."""
    def budget(path: str) -> int:
        return 350_000 if path.startswith("reference/api/") else 300_000

    heavy = {
        path: size for html_file in site.rglob("*.html")
        if (size := html_file.stat().st_size) > budget(path := html_file.relative_to(site).as_posix())
    }
    assert not heavy, f"pages over their budget of HTML (300 kB, API pages 350 kB): {heavy}"


def test_no_page_loads_anything_from_another_host(site):
    # The browser test proves it for the pages it visits; this catches every file, statically.
    loader = re.compile(r"<(?:script|img|link|iframe|source|video|audio)\b[^>]*?\s(?:src|href)=\"(https?:)?//", re.I)
    offenders = []
    for html in site.rglob("*.html"):
        for match in loader.finditer(html.read_text(errors="replace")):
            tag = match.group(0)
            if 'rel="canonical"' in tag:  # a URL, not a request
                continue
            offenders.append(f"{html.relative_to(site)}: {tag[:120]}")
    assert not offenders, "\n".join(offenders)


def test_no_page_is_heavier_than_1_5_mb(site):
    budget = 1_500_000
    for html in site.rglob("*.html"):
        folder = html.parent
        # The page plus the images that sit next to it (notebook figures).
        total = html.stat().st_size + sum(
            p.stat().st_size for p in folder.iterdir() if p.suffix in (".png", ".jpg", ".svg")
        )
        assert total < budget, f"{html.relative_to(site)} weighs {total / 1e6:.2f} MB with its images"


def _draws_figures(notebook: Path) -> bool:
    """Whether a notebook's visible code makes a matplotlib figure (house helper or pyplot)."""
    import json

    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join(
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and "hide-on-site" not in c.get("metadata", {}).get("tags", [])
    )
    return bool(re.search(r"new_figure\(|plt\.|\bplot_\w+\(|\w_(figure|heatmaps?|bars)\(", code))


def test_every_notebook_that_draws_shows_its_figures(site):
    # A kernel with a non-inline matplotlib backend executes plots without error but displays
    # nothing, so a page can silently lose every figure: check the images are on the page.
    drawing = [nb for folder in NOTEBOOK_FOLDERS for nb in sorted((ROOT / folder).rglob("*.ipynb")) if _draws_figures(nb)]
    assert len(drawing) >= 5, "expected the chapters with plots to be found"
    missing = []
    for nb in drawing:
        page = site / nb.relative_to(ROOT).with_suffix("") / "index.html"
        if not re.search(r'<img src="[^"]*-cell\d+-\d+\.png"', page.read_text()):
            missing.append(nb.relative_to(ROOT).as_posix())
    assert not missing, f"notebooks that draw figures but whose pages show none: {missing}"


def test_status_box_is_on_the_home_page_and_chapters_0_3_7(site):
    for page in ("index.html", "notebooks/00-environment/index.html", "notebooks/03-dispatch/index.html",
                 "notebooks/07-the-answer/index.html"):
        html = (site / page).read_text()
        box = re.search(r'<div class="admonition warning htw-status">(.*?)</div>', html, re.S)
        assert box, f"{page}: no status box (an admonition rendered from twofour/course/data/status.md)"
        assert "2:4 in late 2026" in box.group(1)
        assert "https://github.com/vllm-project/vllm/pull/36799" in box.group(1)
        assert "https://github.com/pytorch/ao/pull/4728" in box.group(1)
        assert "<li>" in box.group(1), f"{page}: the box's Markdown was not rendered"
