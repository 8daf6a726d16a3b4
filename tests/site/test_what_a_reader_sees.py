"""What a reader sees on the built site: one count and numbering of the stages, terms defined
where they are first used, search that keeps "split-K" and "2:4" whole and puts guides first,
worked examples not buried in checking code, outputs and printed lines that fit their column,
figures with captions, their own alt text and legible labels on a phone, no sideways scrolling,
the home page's answer first (the why before any number), the labs overview and footers,
downloaded notebooks whose links work, one number per quantity, and what axe-core names.

Tests that drive chromium through Playwright are marked ``browser``; the others read the built
HTML.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import page_walk
from twofour.course.answer import CHECKLIST

ROOT = Path(__file__).resolve().parents[2]
STAGES = [name for name, _ in CHECKLIST]
CHAPTER_PAGES = [f"/notebooks/{p.stem}/" for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))]
_NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten"
_TAGS = re.compile(r"<[^>]+>")


def _page_html(site: Path, path: str) -> str:
    return (site / path.strip("/") / "index.html").read_text(encoding="utf-8")


def _article(page_html: str) -> str:
    """The page's own content (Material's <article>), without navigation, search or footer."""
    m = re.search(r'<article class="md-content__inner[^"]*">(.*)</article>', page_html, re.S)
    assert m, "no article on the page"
    return m.group(1)


def _text(fragment: str) -> str:
    return " ".join(html.unescape(_TAGS.sub(" ", fragment)).split())


# ---------------------------------------------------------------------------------------------
# One count and one numbering of the stages


def test_the_stages_figure_the_home_page_and_the_nav_number_the_same_stages(site):
    figure = ET.parse(site / "assets/stages.svg").getroot()
    labels = ["".join(t.itertext()) for t in figure.iter("{http://www.w3.org/2000/svg}text")]
    numbered = [re.match(r"(\d) · ([\w ]+?):", label) for label in labels]
    assert [(int(m.group(1)), m.group(2)) for m in numbered if m] == list(enumerate(STAGES, 1))
    home = _article(_page_html(site, "/"))
    stages = home.split('<div class="htw-stages">', 1)[1].split("</ol>", 1)[0]
    assert re.findall(r"<li>\s*(?:<p>\s*)?<strong>([\w ]+)\.</strong>", stages) == STAGES
    # Stage N is chapter N: the checklist's item N links chapter N, and so does the stages list.
    checklist = home.split("Diagnose your own deployment", 1)[1].split("</ol>", 1)[0]
    items = re.findall(r"<li>(.*?)</li>", checklist, re.S)
    assert len(items) == len(STAGES)
    for n, item in enumerate(items, 1):
        assert f'href="notebooks/0{n}-' in item, f"checklist item {n} does not link chapter {n}"
    for n, item in enumerate(re.findall(r"<li>(.*?)</li>", stages, re.S), 1):
        assert f'href="notebooks/0{n}-' in item, f"stage {n} does not link chapter {n}"
    # The nav shows the stages as chapters 1 to 6 under one group, and the others outside it.
    nav = _page_html(site, "/")
    group = re.search(r"The six stages \(stage N = chapter N\)(.*?)</nav>", nav, re.S)
    assert group, "the nav has no group for the six stages"
    linked = re.findall(r'href="notebooks/(\d\d)-', group.group(1))
    assert linked[:len(STAGES)] == [f"{n:02d}" for n in range(1, len(STAGES) + 1)]


def test_the_home_page_answers_why_before_any_number_with_at_most_four(site):
    """The answer box opens with the mechanism in words, then at most four numbers, fp16 and bf16 named."""
    from twofour.course.gemm_chain import chain_headline
    from twofour.roofline.mechanism import why

    home = _article(_page_html(site, "/"))
    box = _text(home.split('<div class="htw-bottom-line">', 1)[1].split("</div>", 1)[0])
    assert box.startswith("Why. " + why()), box[:200]
    quantities = re.sub(r"2:4|[Cc]hapter \d|Llama-3(?:-8B)?|H200", "", box)  # names, not quantities
    numbers = set(re.findall(r"(?<![\w.-])\d+(?:\.\d+)?x?(?![\w-])", quantities))
    assert len(numbers) <= 4, sorted(numbers)
    h = chain_headline()
    assert f"{h['fp16']['per_token']:.2f}x" in box and f"{h['bf16']['per_token']:.2f}x in bf16" in box


def test_every_page_counts_the_stages_and_numbers_them_alike(site, pages):
    """No page says "five stages" (or checks) and none calls stage N by another stage's name."""
    assert len(STAGES) == 6  # the count the prose below is held to
    wrong = []
    for path in pages:
        text = _text(_article(_page_html(site, path)))
        for number, what in re.findall(rf"\b({_NUMBER_WORDS}) (stages|checks)\b", text, re.I):
            if number.lower() != "six":
                wrong.append(f"{path}: '{number} {what}'")
        for n, name in re.findall(r"\bStage (\d) ?[·:] ?([A-Z][a-z]+(?: speed)?)", text):
            if name in STAGES and STAGES[int(n) - 1] != name:
                wrong.append(f"{path}: 'Stage {n}: {name}' (stage {n} is {STAGES[int(n) - 1]})")
    assert not wrong, "\n".join(wrong)


# ---------------------------------------------------------------------------------------------
# Terms


class _FirstUses(HTMLParser):
    """The first use of each term in a page's prose, and whether it carries its definition (<abbr>)."""

    SKIP = {"code", "pre", "script", "style", "svg", "kbd", "figcaption"}
    SKIP_CLASSES = ("nb-output", "calc", "headerlink", "htw-status", "md-source-file")

    def __init__(self, terms: list[str]) -> None:
        super().__init__(convert_charrefs=True)
        self.patterns = {t: re.compile(rf"(?<![\w-]){re.escape(t)}(?![\w-])") for t in terms}
        self.first: dict[str, bool] = {}
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, skipped, is abbr)

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "hr", "input", "meta", "link", "wbr", "source", "col"):
            return
        classes = dict(attrs).get("class") or ""
        skipped = tag in self.SKIP or any(c in classes for c in self.SKIP_CLASSES)
        self.stack.append((tag, skipped, tag == "abbr"))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        if any(s for _, s, _ in self.stack):
            return
        in_abbr = any(a for *_, a in self.stack)
        for term, pattern in self.patterns.items():
            if term not in self.first and pattern.search(data):
                self.first[term] = in_abbr


def _terms() -> list[str]:
    return re.findall(r"^\*\[([^\]]+)\]:", (ROOT / "includes/abbreviations.md").read_text(encoding="utf-8"), re.M)


def test_the_glossary_has_at_least_40_terms(site):
    glossary = _article(_page_html(site, "/reference/glossary/"))
    terms = re.findall(r"<dt>(.*?)</dt>", glossary, re.S)
    definitions = re.findall(r"<dd>(.*?)</dd>", glossary, re.S)
    assert len(set(definitions)) >= 40 and len(terms) >= 40, (len(terms), len(set(definitions)))
    for term in ("split-K", "CTA", "tile", "wave quantization", "roofline", "prefill", "decode", "eligible share",
                 "CUDA graph", "alg_id"):
        assert any(term in t for t in terms), f"the glossary has no {term}"


def test_every_term_carries_its_definition_where_a_page_first_uses_it(site, pages):
    """A reader who lands on any page meets each glossary term with its hover definition the first time."""
    terms = _terms()
    missing = []
    for path in pages:
        # Solutions pages are out of the nav; the practice pages are HTML the bank's hook writes and
        # the API pages HTML mkdocstrings renders from docstrings (signatures, parameter tables),
        # which Markdown's abbreviations do not reach.
        if path.startswith(("/labs/solutions/", "/practice/", "/reference/api/")):
            continue
        parser = _FirstUses(terms)
        parser.feed(_article(_page_html(site, path)))
        missing += [f"{path}: {term}" for term, defined in parser.first.items() if not defined]
    assert not missing, "first use without its definition:\n" + "\n".join(missing[:40])


def test_the_home_page_says_what_m_is_where_it_asks_about_it(site):
    text = _text(_article(_page_html(site, "/")))
    asks = text.index("faster at your M")
    assert "rows each GEMM multiplies" in text[asks:asks + 120]


SEARCH_TERMS = ["split-K", "2:4", "alg_id"]


def _search_terms_hook():
    import sys

    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import search_terms
    finally:
        sys.path.pop(0)
    return search_terms


def _pages_holding(index: dict, term: str) -> set[str]:
    """Pages whose built search index holds ``term`` as one word, as lunr reads it: the text split at
    the index's separator, each word lower-cased and trimmed of non-word characters at its ends, a
    query being a prefix (Material adds a trailing wildcard)."""
    separator = re.compile(index["config"]["separator"])
    held = _search_terms_hook().search_terms(term).lower()
    pages = set()
    for doc in index["docs"]:
        words = separator.split(_TAGS.sub(" ", f"{doc.get('title') or ''} {doc.get('text') or ''}").lower())
        if any(re.sub(r"^\W+|\W+$", "", w, flags=re.ASCII).startswith(held) for w in words):
            pages.add(doc["location"].split("#")[0])
    return pages


def test_the_built_search_index_holds_split_k_and_2_4_as_one_word(site):
    index = json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))
    hook = _search_terms_hook()
    # Every document went through the swap (none still has a hyphen or colon the search would cut) ...
    unswapped = [d["location"] for d in index["docs"] if hook.search_terms(d.get("text") or "") != (d.get("text") or "")]
    assert not unswapped, f"documents whose 'split-K' or '2:4' search still cuts: {unswapped[:5]}"
    # ... and each term is a word of the pages that use it, not its parts: "k" and "4" alone are not
    # what those pages were found by.
    for term in SEARCH_TERMS:
        pages = _pages_holding(index, term)
        assert pages, f"no page of the index holds {term!r} as one word"
    assert len(_pages_holding(index, "split-K")) < len(_pages_holding(index, "k")) / 3


def test_the_query_swap_in_site_js_is_the_index_swap(watched, base_url):
    """site.js's searchTerms (the queries) and site_hooks/search_terms.py (the index) swap alike."""
    page = watched.page
    page.goto(base_url + "/", wait_until="load")
    samples = ["split-K", "a 2:4 weight", "top-k and x-axis", "12:30", "K-1", "alg_id", "well-known", "4:8 and 2:4-sparse"]
    hook = _search_terms_hook()
    assert page.evaluate("samples => samples.map(searchTerms)", samples) == [hook.search_terms(s) for s in samples]


@pytest.mark.search_index  # the site as a reader gets it, search index included
@pytest.mark.parametrize("term", SEARCH_TERMS)
def test_search_finds_the_pages_that_hold_the_term_and_no_others(watched, base_url, site, term):
    """Searching "split-K" finds the pages with split-K, not every page with a word starting with "k"."""
    expected = _pages_holding(json.loads((site / "search/search_index.json").read_text(encoding="utf-8")), term)
    page = watched.page
    page.goto(base_url + "/", wait_until="load")
    page.wait_for_function("document.documentElement.dataset.htwPage === '/'")
    page.wait_for_load_state("networkidle")  # the search worker has fetched its index
    search = page.locator("input.md-search__input")
    search.click()
    # One query, the whole term: fill() sets the value at once, and Material reads it on keyup.
    search.fill(term)
    search.press("End")
    meta = page.locator(".md-search-result__meta")
    page.wait_for_function("() => /matching document/.test(document.querySelector('.md-search-result__meta')?.textContent || '')")
    said = meta.text_content()
    found = 0 if said.startswith("No") else int(re.match(r"(\d+)", said).group(1))
    # lunr's own tokenizing and stemming (Material's) differ a little from _pages_holding's reading
    # (one run: "2:4" found on 54 of the 56 pages that hold it). Cut at the hyphen, "split-K" found
    # nearly every page with a word that starts with "k" (56 results in one run), seven times too many.
    assert 0.9 * len(expected) <= found <= len(expected), (
        f"{term!r}: search says {said!r}; the index holds it on {len(expected)} pages")
    # What the results highlight is the term itself, never a part of it.
    marks = page.locator(".md-search-result mark").evaluate_all("els => els.map(e => e.textContent)")
    plain = [m.replace("\u2011", "-").replace("\u2236", ":").lower() for m in marks]
    assert marks and all(m.startswith(term.lower()) for m in plain), (term, sorted(set(plain))[:10])
    assert not watched.console_errors and not watched.external_requests


# ---------------------------------------------------------------------------------------------
# Worked examples, printed lines


_CODE_BLOCK = re.compile(r'<div class="(?:language-python )?highlight"><pre>.*?</pre></div>', re.S)
_FOLD = re.compile(r'<details class="nb-code">.*?</details>', re.S)


@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_checking_code_is_folded_and_its_output_shown(site, path):
    article = _article(_page_html(site, path))
    folds = _FOLD.findall(article)
    visible = _CODE_BLOCK.findall(_FOLD.sub("", article))
    for block in visible:
        code = html.unescape(_TAGS.sub("", block))
        lines = code.strip().splitlines()
        asserts = sum(1 for line in lines if line.strip().startswith("assert"))
        assert asserts <= 2 and len(lines) <= 25, f"{path}: a checking cell is shown open:\n{code[:300]}"
    for fold in folds:
        assert "Show the code" in fold and _CODE_BLOCK.search(fold)
    if path.startswith("/notebooks/07-"):
        assert len(folds) >= 3, "chapter 7's checking cells are not folded"


@pytest.mark.slow
@page_walk.DESKTOP_WALK
def test_no_printed_line_is_wider_than_its_column_at_1280_px(desktop_walk, pages):
    """Chapter 0's environment report, chapter 3's audit and trace reports and lab 3's used to run
    off the column (up to 2,146 px): twofour's printers fit them to COLUMNS, the column's width."""
    import sys

    from twofour._common.fit import SITE_WIDTH

    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import nb_execute
    finally:
        sys.path.pop(0)
    assert nb_execute.KERNEL_ENV["COLUMNS"] == str(SITE_WIDTH)
    held = desktop_walk.of("column_chars")[page_walk.COLUMN_PAGE]
    assert held >= SITE_WIDTH, f"an output column holds {held:.1f} characters at 1280 px, not {SITE_WIDTH}"
    seen = desktop_walk.of("wide_pres")
    assert set(seen) == set(page_walk.printed_pages(pages))
    checked = sum(got["count"] for got in seen.values())
    wide = [f"{path}: {line}" for path, got in seen.items() for line in got["wide"]]
    assert checked >= 100, f"expected the chapters' and labs' printed outputs, found {checked}"
    assert not wide, "printed lines wider than their column:\n" + "\n".join(wide)


# ---------------------------------------------------------------------------------------------
# Figures on a phone


# Inline SVG figures (no file to open full size) whose smallest label is still under 10 px at 390 px:
# chapter 3's dispatch-path figure, at 9.7 px. Listed so that the test holds every other figure.
_INLINE_TOO_SMALL = {"/notebooks/03-dispatch/"}


def _svg_font_sizes(svg_text: str) -> tuple[float, list[float]]:
    root = ET.fromstring(svg_text)
    width = float(root.get("viewBox").split()[2]) if root.get("viewBox") else float(root.get("width"))
    sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
    return width, sizes


@pytest.mark.slow
@page_walk.PHONE_WALK
def test_figures_can_be_read_at_390_px(phone_walk, pages, site):
    """At 390 px every label of a drawn figure is at least 10 px, or the picture opens full size on a tap."""
    seen = phone_walk.of("figure_sizes")
    assert set(seen) == {"/", *page_walk.notebook_pages(pages)}
    problems = []
    for path, found in seen.items():
        page_dir = site / path.strip("/")
        for src, shown in found["svgs"]:
            where = urlsplit(src).path
            file = site / where.lstrip("/") if where.startswith("/") else page_dir / where
            width, sizes = _svg_font_sizes(file.read_text(encoding="utf-8"))
            if sizes and min(sizes) * shown / width < 10:
                problems.append(f"{path}: {src} labels {min(sizes) * shown / width:.1f} px on screen")
        for img in found["pngs"]:
            if not (img["zoom"] and img["hint"]):
                problems.append(f"{path}: {img['src']} neither opens full size on a tap nor says so")
        if found["inline"] and min(found["inline"]) < 10 and path not in _INLINE_TOO_SMALL:
            problems.append(f"{path}: an inline figure's labels are {min(found['inline']):.1f} px")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# A downloaded notebook


_MD_TARGET = re.compile(r"\]\(([^)\s]+)")


def test_a_downloaded_notebook_links_to_pages_that_exist(site, base_url):
    relative = []
    for nb_path in sorted(site.glob("notebooks/*/*.ipynb")) + sorted(site.glob("labs/*/*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            src = "".join(cell["source"])
            for target in _MD_TARGET.findall(src) + re.findall(r'href="([^"]+)"', src):
                if target.startswith("#") or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    if target.startswith(base_url + "/"):
                        page = target[len(base_url) + 1:].split("#")[0]
                        if not (site / page / "index.html").exists() and not (site / page).is_file():
                            relative.append(f"{nb_path.relative_to(site)}: {target} (no such page)")
                    continue
                relative.append(f"{nb_path.relative_to(site)}: {target}")
    assert not relative, "links that break once the notebook is downloaded:\n" + "\n".join(relative[:30])


# ---------------------------------------------------------------------------------------------
# What axe-core named


_AXE_RULES = "rules => axe.run(document, {runOnly: {type: 'rule', values: rules}}).then(r => r.violations.map(v => `${v.id}: ${v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', ')}`))"


@pytest.mark.parametrize("path, rules", [
    ("/calculator/", ["empty-table-header"]),
    ("/notebooks/02-packing/", ["empty-table-header"]),
    ("/notebooks/05-quality/", ["empty-table-header"]),
    ("/notebooks/06-amdahl/", ["empty-table-header"]),
    ("/labs/lab1-find-the-broken-groups/", ["heading-order"]),
    ("/labs/lab2-pack-it-by-hand/", ["heading-order"]),
    ("/practice/fundamentals/", ["label-content-name-mismatch"]),
    ("/", ["aria-dialog-name"]),
])
def test_axe_finds_none_of_the_issues_it_named(watched, base_url, axe_source, path, rules):
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    page.wait_for_function("() => [...document.querySelectorAll('[data-calc]')].every(e => e.dataset.calcReady === 'true')")
    page.add_script_tag(content=axe_source)
    assert page.evaluate(_AXE_RULES, rules) == []


# ---------------------------------------------------------------------------------------------
# One deployment, one number per quantity


_QUOTE = re.compile(r"<!--\s*verdict:([a-z0-9-]+)\s*-->(.*?)<!--\s*/verdict\s*-->", re.S)
_QUOTED = {"chain-request": "whole request", "chain-gemm3": "decode GEMMs",
           "chain-fp16": "per token, GEMM chain", "chain-bf16": "per token, GEMM chain, bf16"}
_NUMBER = re.compile(r"(\d+(?:\.(\d+))?)\s*(x|%| %)")


def _reading(text: str) -> tuple[float, int, bool]:
    m = _NUMBER.search(text)
    assert m, f"no number in {text!r}"
    return float(m.group(1)), len(m.group(2) or ""), "%" in m.group(3)


def test_the_worked_deployment_has_one_number_per_quantity(watched, base_url, site, pages):
    """Every number quoted for chapter 7's worked deployment, on any page, is that quantity's computed
    value at the precision written: no page, table or card shows a second value for it."""
    from twofour.course.answer import verdict_table

    from twofour.course.gemm_chain import chain_headline

    from twofour.course.answer import calculator_verdict

    row, chain, opening = verdict_table().row("graph"), chain_headline(), calculator_verdict()
    # the worked deployment as the calculator opens on it: decode GEMMs from the GEMM-chain traces
    truth = {"per token": chain["fp16"]["per_token"], "whole request": opening["request"], "decode GEMMs": chain["fp16"]["gemm"],
             "decode p": row.estimate.decode.p, "request p": row.estimate.p_request,
             "per token, GEMM chain": chain["fp16"]["per_token"], "per token, GEMM chain, bf16": chain["bf16"]["per_token"]}
    shown: list[tuple[str, str, str]] = []  # (quantity, as written, where)
    for path in pages:
        for key, text in _QUOTE.findall(_page_html(site, path)):
            if key in _QUOTED:
                shown.append((_QUOTED[key], _text(text), path))
    page = watched.page
    page.goto(base_url + "/calculator/", wait_until="load")
    page.wait_for_function("() => [...document.querySelectorAll('[data-calc]')].every(e => e.dataset.calcReady === 'true')")
    calc = page.locator("[data-calc='request']").first
    out = lambda root, name: root.locator(f"[data-out='{name}']").first.text_content()  # noqa: E731
    head = calc.locator("[data-headline='box']")
    shown += [("whole request", head.locator("[data-headline='value']").text_content(), "calculator headline"),
              ("per token", head.locator("[data-headline='detail']").text_content().split("per output token", 1)[1],
               "calculator headline"),
              ("per token", out(calc, "speedup_tpot"), "calculator table"),
              ("whole request", out(calc, "speedup_request"), "calculator table"),
              ("decode p", out(calc, "p_decode"), "calculator table"),
              ("request p", out(calc, "p_request"), "calculator table"),
              ("per token", out(page.locator("[data-calc='amdahl']").first, "speedup"), "calculator Amdahl card")]
    two_minutes = _article(_page_html(site, "/notebooks/07-the-answer/"))
    for label, quantity in (("share of decode time that is pruned GEMM (predicted)", "decode p"),
                            ("per token, CUDA graphs, default algorithm", "per token, GEMM chain"),
                            ("per token, the same in bf16", "per token, GEMM chain, bf16")):
        cell = re.search(rf"<td[^>]*>{re.escape(label)}</td>\s*<td[^>]*>([^<]+)</td>", two_minutes)
        assert cell, f"chapter 7's two-minute table has no row {label!r}"
        shown.append((quantity, cell.group(1), "chapter 7, two minutes"))
    # The calculator computes from one GEMM speedup per phase, typed in to 3 decimals (its fields),
    # where the verdict table uses each GEMM's own measured speedup: at 3 decimals its numbers are
    # its own (checked against Python in test_calculators.py), and they must still give the quoted
    # 2-decimal value.
    from twofour import models
    from twofour.course.answer import calculator_verdict
    from twofour.request import Workload, estimate

    cv = calculator_verdict()
    calc = estimate(Workload(models.PRESETS[cv["model"]], cv["batch"], cv["prompt_len"], cv["output_len"], dtype=cv["dtype"],
                             pruned=tuple(cv["pruned"])), cv["gpu"],
                    gemm_speedup={"prefill": round(cv["speedup_prefill"], 3), "decode": round(cv["speedup_decode"], 3)})
    calc_truth = {"per token": calc.speedup("tpot"), "whole request": calc.speedup("request"),
                  "decode GEMMs": round(cv["speedup_decode"], 3), "decode p": calc.decode.p, "request p": calc.p_request}
    wrong = []
    for quantity, written, where in shown:
        value, decimals, percent = _reading(written)
        scale = 100 if percent else 1
        own = calc_truth if where.startswith("calculator") and decimals >= (1 if percent else 3) else truth
        true = own[quantity] * scale
        if abs(value - true) > 0.5 * 10 ** -decimals + 1e-9:
            wrong.append(f"{where}: {quantity} {written.strip()} (computed {true:.4f})")
        elif own is calc_truth and f"{true:.{1 if percent else 2}f}" != f"{truth[quantity] * scale:.{1 if percent else 2}f}":
            wrong.append(f"{where}: {quantity} {written.strip()} is not the quoted {truth[quantity] * scale:.2f} at its precision")
    by_quantity = {q: sorted({w.strip() for qq, w, _ in shown if qq == q}) for q in truth}
    assert not wrong, "\n".join(wrong) + f"\nall values shown: {by_quantity}"


# ---------------------------------------------------------------------------------------------
# In the browser: outputs, figures, phone widths, the labs, search order, the home page

PHONE = page_walk.PHONE_SCREEN
GENERIC_ALT = "Figure produced by the code above"


def _open(page, base_url: str, path: str):
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    return page


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("walk", [pytest.param("desktop_walk", marks=page_walk.DESKTOP_WALK),
                                  pytest.param("phone_walk", marks=page_walk.PHONE_WALK)])
def test_no_notebook_output_wraps_mid_line(request, pages, walk):
    """page_walk.WRAPPED_PRES: a printed block with aligned columns keeps its lines; sentences may wrap."""
    walk = request.getfixturevalue(walk)
    seen = walk.of("wrapped_pres")
    assert set(seen) == set(page_walk.notebook_pages(pages))
    failures = [f"{path} at {walk.width}px: {problem}" for path, problems in seen.items() for problem in problems]
    assert not failures, "output blocks that wrap mid-line:\n" + "\n".join(failures[:20])


@pytest.mark.browser
def test_wide_output_scrolls_sideways_with_a_cue_and_takes_focus(browser, base_url):
    context = browser.new_context(viewport=PHONE)
    # Chapter 3's audit and trace reports keep their columns (70 characters, fitted to the column
    # at 1280 px), so on a phone they are wider than the screen; chapter 4's wide lines were
    # sentences, which now wrap instead (site_hooks/nb_render.py).
    page = _open(context.new_page(), base_url, "/notebooks/03-dispatch/")
    wide = page.evaluate("""() => [...document.querySelectorAll('.md-content .nb-output pre')]
        .filter((pre) => pre.scrollWidth > pre.clientWidth + 1)
        .map((pre) => ({tab: pre.getAttribute('tabindex'), role: pre.getAttribute('role'),
                        overflow: getComputedStyle(pre).overflowX,
                        cue: getComputedStyle(pre).backgroundImage}))""")
    context.close()
    assert wide, "expected at least one output wider than a phone on chapter 3"
    for box in wide:
        assert box["tab"] == "0" and box["role"] == "region", box
        assert box["overflow"] == "auto" and "radial-gradient" in box["cue"], box


@pytest.mark.browser
@pytest.mark.slow
@page_walk.DESKTOP_WALK
def test_every_figure_has_its_own_alt_text_and_a_numbered_caption(desktop_walk, pages):
    seen = desktop_walk.of("figures")
    assert set(seen) == set(page_walk.notebook_pages(pages))
    failures, counted = [], 0
    for path, figures in seen.items():
        counted += len(figures)
        alts = [f["alt"] for f in figures]
        for n, fig in enumerate(figures, start=1):
            if not fig["alt"] or fig["alt"] == GENERIC_ALT or len(fig["alt"]) < 15:
                failures.append(f"{path} figure {n}: alt text {fig['alt']!r}")
            if not fig["caption"] or not fig["caption"].startswith(f"Figure {n}.") or len(fig["caption"]) < len(f"Figure {n}.") + 5:
                failures.append(f"{path} figure {n}: caption {fig['caption']!r}")
            if fig["natural"] is not None and fig["shown"] and fig["natural"] < 1.9 * fig["shown"]:
                failures.append(f"{path} figure {n}: {fig['natural']} px drawn for {fig['shown']} px shown (not 2x)")
        if len(set(alts)) != len(alts):
            failures.append(f"{path}: two figures share an alt text")
    assert counted >= 15, f"expected the chapters' figures, found {counted}"
    assert not failures, "\n".join(failures)


@pytest.mark.browser
def test_figures_are_framed_cards_in_dark_mode(browser, base_url):
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    page = _open(context.new_page(), base_url, "/notebooks/06-amdahl/")
    page.evaluate("() => { document.body.setAttribute('data-md-color-scheme', 'slate'); }")
    style = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('.nb-figure img'));
        return {filter: s.filter, radius: parseFloat(s.borderTopLeftRadius), bg: s.backgroundColor}; }""")
    context.close()
    assert "brightness" in style["filter"] and style["radius"] > 0, style


# Pages whose diagrams the label check must find (so that it never passes by finding none).
DIAGRAM_PAGES = {"/": "the home page funnel", "/notebooks/03-dispatch/": "chapter 3's dispatch path"}


@pytest.mark.browser
@pytest.mark.slow
@page_walk.PHONE_WALK
def test_no_page_scrolls_sideways_on_a_phone_and_diagram_labels_stay_legible(phone_walk, pages):
    assert set(DIAGRAM_PAGES) <= set(pages) and set(phone_walk.seen) == set(pages)
    wide = [f"{path}: {got['over']}px wider than the screen ({got['culprit']})"
            for path, got in phone_walk.of("overflow").items() if got["over"] > 0]
    labels = phone_walk.of("svg_labels")
    for path, what in DIAGRAM_PAGES.items():
        assert labels[path], f"expected {what} on {path}"
    small = [f"{path}: {label['what']}: smallest label {label['px']:.1f}px"
             for path, found in labels.items() for label in found if label["px"] < 10]
    assert not wide, "pages that scroll sideways at 390 px:\n" + "\n".join(wide)
    assert not small, "diagram labels under 10 px at 390 px:\n" + "\n".join(small)


@pytest.mark.browser
def test_labs_overview_and_no_lab_footer_leads_to_its_solutions(watched, base_url):
    page = _open(watched.page, base_url, "/labs/")
    links = page.locator(".md-content table a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    for n in range(1, 7):
        assert any(f"lab{n}-" in href and "solutions" not in href for href in links), f"lab {n} missing"
        assert any(f"solutions/lab{n}-solutions" in href for href in links), f"lab {n} solutions missing"
    header = page.locator(".md-content table th").all_inner_texts()
    assert header == ["Lab", "What it trains", "Time", "Before you start", "Chapter"]
    # Material's instant navigation makes these absolute: http://host/labs/lab1-.../
    lab_paths = sorted({"/labs/" + href.split("/labs/", 1)[1] for href in links
                        if "/labs/lab" in href and "solutions" not in href})
    assert len(lab_paths) == 6, lab_paths
    for path in lab_paths:
        _open(page, base_url, path)
        nxt = page.locator("a.md-footer__link--next")
        if nxt.count():
            assert "solutions" not in nxt.get_attribute("href"), f"{path}: footer next is its solutions"
        end = page.locator(".htw-lab-footer a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert any("solutions/" in href for href in end), f"{path}: no link to its solutions at the end"
    assert not watched.console_errors and not watched.external_requests


@pytest.mark.browser
@pytest.mark.search_index
def test_search_puts_guides_above_api_pages(watched, base_url):
    page = _open(watched.page, base_url, "/")
    page.wait_for_load_state("networkidle")
    search = page.locator("input.md-search__input")
    for term in ("roofline", "pack"):
        search.click()
        search.fill("")
        search.press_sequentially(term, delay=20)
        first = page.locator(".md-search-result__item").first
        first.wait_for(state="visible", timeout=15_000)
        href = page.locator(".md-search-result__link").first.get_attribute("href")
        assert "reference/api" not in href, f"{term!r}: first result is an API page ({href})"
        page.keyboard.press("Escape")
    assert not watched.console_errors and not watched.external_requests


# Where the answer sits on the home page: the bottom line (a computed range) and the diagnosis
# checklist, each as the top and bottom of its box in page pixels.
_ANSWER_BOXES = """() => {
  const box = (sel) => { const el = document.querySelector(sel); if (!el) return null;
    const r = el.getBoundingClientRect(); return {top: r.top + scrollY, bottom: r.bottom + scrollY, text: el.textContent}; };
  return {line: box('.md-content .htw-bottom-line'), checklist: box('.md-content .htw-checklist'),
          figure: box('.md-content figure.htw-figure'), status: box('.md-content .htw-status')};
}"""


@pytest.mark.browser
def test_home_page_first_screen_has_the_bottom_line_and_the_checklist(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    boxes = _open(context.new_page(), base_url, "/").evaluate(_ANSWER_BOXES)
    context.close()
    line, checklist = boxes["line"], boxes["checklist"]
    assert line and checklist, boxes
    # the why first, then the headline in both 16-bit dtypes
    assert line["text"].index("Why.") < line["text"].index("The bottom line.")
    assert "fp16" in line["text"] and "bf16" in line["text"] and "Chapter 7" in line["text"]
    for stage in ("Structure", "Representation", "Dispatch", "Quality", "Amdahl"):
        assert stage in checklist["text"], f"the checklist lacks {stage}"
    assert checklist["bottom"] <= 900, f"the checklist ends at {checklist['bottom']:.0f}px, below the first screen"
    assert line["bottom"] <= checklist["top"] <= boxes["figure"]["top"] <= boxes["status"]["top"]
    # On a phone the bottom line is still the first thing after the title.
    context = browser.new_context(viewport=PHONE, is_mobile=True)
    boxes = _open(context.new_page(), base_url, "/").evaluate(_ANSWER_BOXES)
    context.close()
    assert boxes["line"]["bottom"] <= PHONE["height"], boxes["line"]


# Material's "Back to top" appears when the reader scrolls back up, under the header, over the
# text. Scroll to a heading, then back up a little, and report the button's box (null when it
# is not shown) and the text boxes in the content that it overlaps.
_TOP_BUTTON_AFTER_SCROLLING_UP = """async (target) => {
  const el = document.querySelectorAll(target)[2];
  el.scrollIntoView({block: 'start'});
  window.scrollBy(0, 400);
  await new Promise((r) => setTimeout(r, 150));
  window.scrollBy(0, -200);
  await new Promise((r) => setTimeout(r, 150));
  window.scrollBy(0, -200);
  await new Promise((r) => setTimeout(r, 400));
  const top = document.querySelector('.md-top');
  const s = top && getComputedStyle(top);
  if (!top || top.hidden || s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) {
    return {button: null, covered: []};
  }
  const b = top.getBoundingClientRect();
  const hits = (r) => r.width > 0 && r.height > 0 && r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top;
  const covered = [...document.querySelectorAll('.md-content :is(h1, h2, h3, h4, p, li, summary, td, th, pre, figcaption)')]
    .filter((t) => hits(t.getBoundingClientRect())).map((t) => t.tagName + ': ' + t.textContent.trim().slice(0, 40));
  return {button: {top: b.top, bottom: b.bottom, left: b.left, right: b.right}, covered};
}"""


@pytest.mark.parametrize(("path", "target"), [("/practice/fundamentals/", "details.practice-answer > summary"),
                                               ("/notebooks/07-the-answer/", ".md-content h2")])
@pytest.mark.browser
def test_back_to_top_never_covers_text_on_a_phone(browser, base_url, path, target):
    # On a wide screen the same scrolling brings the button up (so the phone check is not vacuous).
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    wide = _open(context.new_page(), base_url, path).evaluate(_TOP_BUTTON_AFTER_SCROLLING_UP, target)
    context.close()
    assert wide["button"], f"{path}: scrolling back up did not show Back to top at 1280 px"
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    phone = _open(context.new_page(), base_url, path).evaluate(_TOP_BUTTON_AFTER_SCROLLING_UP, target)
    context.close()
    assert not phone["covered"], f"{path} at 390 px: Back to top {phone['button']} covers {phone['covered'][:3]}"
