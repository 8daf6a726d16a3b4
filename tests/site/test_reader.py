"""What a reader sees on the built site, in Debian's chromium: outputs that keep their
lines, figures with captions and their own alt text, no sideways scrolling on a phone, legible
diagrams, the labs overview and the lab footers, and search that puts guides first.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
GENERIC_ALT = "Figure produced by the code above"


def _open(page, base_url: str, path: str):
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    return page


def _notebook_pages(pages: list[str]) -> list[str]:
    return [p for p in pages if p.startswith("/notebooks/") or p.startswith("/labs/lab")]


# Lines each output <pre> would have without wrapping vs the height it takes: a wrapped line
# makes the block taller than its line count. One rule for every printed block: output with
# aligned columns (a run of two or more spaces ending at the same place on two lines) keeps its
# lines, so a table is never broken mid-row; sentences may wrap at the column's edge, as a lab
# check's message does (pre.nb-check, tests/site/test_tables.py; pre.nb-wrap, site_hooks/nb_render.py).
# Which blocks have columns is read here from the text itself, not from the class the build gave.
_WRAPPED_PRES = """() => [...document.querySelectorAll('.md-content .nb-output pre')].flatMap((pre) => {
  const cs = getComputedStyle(pre);
  const text = pre.textContent;
  const lines = text.split('\\n').length;
  const ends = {};
  for (const line of text.split('\\n')) {
    for (const m of line.trimEnd().matchAll(/\\S {2,}(?=\\S)/g)) ends[m.index + m[0].length] = (ends[m.index + m[0].length] || 0) + 1;
  }
  const columns = Object.values(ends).some((n) => n >= 2);
  const lh = parseFloat(cs.lineHeight);
  const content = pre.scrollHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  const problems = [];
  if (columns && cs.whiteSpace !== 'pre') problems.push(`aligned columns with white-space ${cs.whiteSpace}`);
  if (columns && content > lines * lh + lh / 2) problems.push(`${lines} lines take ${(content / lh).toFixed(1)} line heights`);
  if (!columns && !pre.matches('.nb-check, .nb-wrap') && cs.whiteSpace !== 'pre') problems.push(`white-space is ${cs.whiteSpace}`);
  return problems.length ? [`${text.slice(0, 60)}...: ${problems.join(', ')}`] : [];
})"""


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, PHONE["width"]])  # one test per width: xdist's workers share them
def test_no_notebook_output_wraps_mid_line(browser, base_url, pages, width):
    failures = []
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    for path in _notebook_pages(pages):
        for problem in _open(page, base_url, path).evaluate(_WRAPPED_PRES):
            failures.append(f"{path} at {width}px: {problem}")
    context.close()
    assert not failures, "output blocks that wrap mid-line:\n" + "\n".join(failures[:20])


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


_FIGURES = """() => [...document.querySelectorAll('.md-content .nb-output .nb-image')].map((wrap) => {
  const fig = wrap.closest('figure.nb-figure');
  const img = wrap.querySelector('img');
  const svg = wrap.querySelector('svg');
  return {
    alt: img ? img.getAttribute('alt') : svg && svg.getAttribute('aria-label'),
    caption: fig && fig.querySelector('figcaption') ? fig.querySelector('figcaption').textContent.trim() : null,
    natural: img ? img.naturalWidth : null,
    shown: img ? Number(img.getAttribute('width')) : null,
  };
})"""


@pytest.mark.slow
def test_every_figure_has_its_own_alt_text_and_a_numbered_caption(browser, base_url, pages):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    failures, counted = [], 0
    for path in _notebook_pages(pages):
        _open(page, base_url, path)
        page.evaluate("() => document.querySelectorAll('img[loading=lazy]').forEach((i) => { i.loading = 'eager'; })")
        page.wait_for_function("() => [...document.querySelectorAll('.md-content img')].every((i) => i.complete)")
        figures = page.evaluate(_FIGURES)
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
    context.close()
    assert counted >= 15, f"expected the chapters' figures, found {counted}"
    assert not failures, "\n".join(failures)


def test_figures_are_framed_cards_in_dark_mode(browser, base_url):
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    page = _open(context.new_page(), base_url, "/notebooks/06-amdahl/")
    page.evaluate("() => { document.body.setAttribute('data-md-color-scheme', 'slate'); }")
    style = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('.nb-figure img'));
        return {filter: s.filter, radius: parseFloat(s.borderTopLeftRadius), bg: s.backgroundColor}; }""")
    context.close()
    assert "brightness" in style["filter"] and style["radius"] > 0, style


# Smallest text in each content SVG, in CSS pixels as drawn (inline SVG, or an <img> of one).
_SVG_LABELS = """async () => {
  const out = [];
  const scaleOf = (el, viewBoxWidth) => el.getBoundingClientRect().width / viewBoxWidth;
  for (const svg of document.querySelectorAll('.md-content svg[viewBox]')) {
    // Calculators draw their own charts (docs/js/calc, checked by their own tests).
    if (svg.closest('.md-icon, .headerlink, .md-button, [data-calc]')) continue;
    const texts = [...svg.querySelectorAll('text')];
    if (!texts.length) continue;
    const scale = scaleOf(svg, svg.viewBox.baseVal.width);
    const min = Math.min(...texts.map((t) => parseFloat(getComputedStyle(t).fontSize)));
    out.push({what: svg.querySelector('title')?.textContent.slice(0, 40) || 'inline svg', px: min * scale});
  }
  for (const img of document.querySelectorAll('.md-content img[src$=".svg"]')) {
    const text = await (await fetch(img.src)).text();
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const root = doc.documentElement;
    const texts = [...doc.querySelectorAll('text')];
    if (!texts.length) continue;
    const size = (el) => { for (let e = el; e && e.getAttribute; e = e.parentNode) {
      const v = e.getAttribute('font-size'); if (v) return parseFloat(v); } return 16; };
    const min = Math.min(...texts.flatMap((t) => [size(t), ...[...t.querySelectorAll('tspan[font-size]')].map(size)]));
    const vbw = parseFloat(root.getAttribute('viewBox').split(/[ ,]+/)[2]);
    out.push({what: img.getAttribute('src'), px: min * scaleOf(img, vbw)});
  }
  return out;
}"""


# The pages in interleaved shards, so that xdist's two workers share them; every page is in
# exactly one shard.
PHONE_SHARDS = 3
# Pages whose diagrams the label check must find (so that it never passes by finding none).
DIAGRAM_PAGES = {"/": "the home page funnel", "/notebooks/03-dispatch/": "chapter 3's dispatch path"}


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(PHONE_SHARDS))
def test_no_page_scrolls_sideways_on_a_phone_and_diagram_labels_stay_legible(browser, base_url, pages, shard):
    assert set(DIAGRAM_PAGES) <= set(pages)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    page = context.new_page()
    wide, small, diagrams = [], [], {}
    for path in pages[shard::PHONE_SHARDS]:
        _open(page, base_url, path)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        if overflow > 0:
            culprit = page.evaluate("""() => { const w = document.documentElement.clientWidth;
                const el = [...document.querySelectorAll('.md-content *')].find((e) => e.getBoundingClientRect().right > w + 1
                  && !e.closest('[data-htw-scrolls], .md-typeset__scrollwrap, .nb-output pre, .nb-html, .nb-image, .highlight, .math-block'));
                return el ? el.tagName + '.' + el.className + ': ' + (el.textContent || '').slice(0, 50) : '?'; }""")
            wide.append(f"{path}: {overflow}px wider than the screen ({culprit})")
        for label in page.evaluate(_SVG_LABELS):
            diagrams[path] = diagrams.get(path, 0) + 1
            if label["px"] < 10:
                small.append(f"{path}: {label['what']}: smallest label {label['px']:.1f}px")
    context.close()
    for path, what in DIAGRAM_PAGES.items():
        if path in pages[shard::PHONE_SHARDS]:
            assert diagrams.get(path), f"expected {what} on {path}"
    assert not wide, "pages that scroll sideways at 390 px:\n" + "\n".join(wide)
    assert not small, "diagram labels under 10 px at 390 px:\n" + "\n".join(small)


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


def test_home_page_first_screen_has_the_bottom_line_and_the_checklist(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    boxes = _open(context.new_page(), base_url, "/").evaluate(_ANSWER_BOXES)
    context.close()
    line, checklist = boxes["line"], boxes["checklist"]
    assert line and checklist, boxes
    assert "The bottom line." in line["text"] and "x to " in line["text"] and "chapter 7" in line["text"]
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
