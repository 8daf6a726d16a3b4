"""One walk over the built site per screen width: each page opened once, every per-page measurement taken.

Opening a page is most of what a per-page check costs, and seven tests used to open every page
again. :func:`walk` opens each page once in one browser context and runs the measurements (the
JavaScript below) that apply to it; the tests then judge the numbers. The walks are session
fixtures (``desktop_walk``, ``phone_walk`` in conftest.py), and the tests that read one carry its
xdist group (:data:`DESKTOP_WALK`, :data:`PHONE_WALK`), so that each walk is taken once, on one worker.

The desktop walk is the reader at 1280 px in the light scheme, watched for requests to other hosts
and console errors, with axe-core run last on each page it checks; the phone walk is a 390 px
touch screen at device scale 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest

DESKTOP_WALK = pytest.mark.xdist_group("desktop-walk")
PHONE_WALK = pytest.mark.xdist_group("phone-walk")
PHONE_SCREEN = {"width": 390, "height": 844}

AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# resultTypes: axe still runs every rule and lists every violation in full; passes, incomplete and
# inapplicable results keep one node each, and only the violations come back to Python. On a
# long chapter that is 3x faster (axe's own advice for large pages) and checks the same.
# Highlighted code is most of axe's work on a chapter (4,252 of chapter 4's 7,020 elements are code
# tokens, each checked for colour contrast), and a token's contrast is fixed by its colour, size,
# weight, opacity and the background behind it: the same on every page. So axe checks the tokens
# of a code block only if the block holds a look new to the walk (TOKEN_SAMPLES marks those blocks
# and returns the new looks; `seen` is the looks before this page); the other blocks get the one
# rule that depends on the block itself (can a keyboard scroll it?), and every other element on the
# page every rule. (Blocks are left out whole: an exclusion list of single tokens cost axe more
# than checking them.)
TOKEN_SAMPLES = """seen => {
  const known = new Set(seen), fresh = [];
  const background = (e) => { for (; e; e = e.parentElement) {
    const bg = getComputedStyle(e).backgroundColor; if (bg !== 'rgba(0, 0, 0, 0)' && bg !== 'transparent') return bg; }
    return 'none'; };
  for (const text of document.querySelectorAll('.highlight code, .highlight code span')) {  // a block's own text too
    const cs = getComputedStyle(text);
    const look = [cs.color, cs.fontSize, cs.fontWeight, cs.opacity, background(text)].join(' ');
    if (known.has(look)) continue;
    known.add(look); fresh.push(look); text.closest('.highlight').dataset.axeSample = '';
  }
  return fresh;
}"""
AXE_RUN = """async (tags) => {
  const seen = '.highlight:not([data-axe-sample]) code';
  const options = {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']};
  const all = await axe.run({exclude: [[seen]]}, options);
  if (!document.querySelector(seen)) return all.violations;
  const scroll = await axe.run({include: [[seen]]},
                               {runOnly: {type: 'rule', values: ['scrollable-region-focusable']}, resultTypes: ['violations']});
  return [...all.violations, ...scroll.violations];
}"""


def notebook_pages(pages: list[str]) -> list[str]:
    """The chapters and the labs (not the labs overview, not the solutions)."""
    return [p for p in pages if p.startswith("/notebooks/") or p.startswith("/labs/lab")]


def chapter_and_lab_pages(pages: list[str]) -> list[str]:
    """The chapters (notebooks/0*), the labs overview, every lab and every lab's solutions page."""
    return [p for p in pages if p.startswith("/notebooks/0") or p.startswith("/labs/")]


def printed_pages(pages: list[str]) -> list[str]:
    """Every page whose code printed something: chapters, labs, the labs overview and solutions."""
    return [p for p in pages if p.startswith(("/notebooks/", "/labs/"))]


def axe_checked(site, pages: list[str]) -> set[str]:
    """The pages axe checks: every page but the API reference's, of which the index and the largest
    page. Those 46 pages are one mkdocstrings template filled from docstrings, whose markup (tables,
    code, admonitions, links) the largest page holds too; axe on all of them took 133 of the 225 s
    axe took over the site (2026-12-06, this 2-core machine, run alone)."""
    api = [p for p in pages if p.startswith("/reference/api/") and p != "/reference/api/"]
    largest = max(api, key=lambda p: (site / p.strip("/") / "index.html").stat().st_size, default=None)
    return {p for p in pages if p not in api} | {largest} - {None}


# --- what is measured on a page ------------------------------------------------------------

# Lines each output <pre> would have without wrapping vs the height it takes: a wrapped line
# makes the block taller than its line count. One rule for every printed block: output with
# aligned columns (a run of two or more spaces ending at the same place on two lines) keeps its
# lines, so a table is never broken mid-row; sentences may wrap at the column's edge, as a lab
# check's message does (pre.nb-check; pre.nb-wrap, site_hooks/nb_render.py).
# Which blocks have columns is read here from the text itself, not from the class the build gave.
WRAPPED_PRES = """() => [...document.querySelectorAll('.md-content .nb-output pre')].flatMap((pre) => {
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

# Every table on the page: its scroll box (the widest ancestor that clips or scrolls, or the
# nearest if none is too narrow; the table's own overflow is Material's and does not apply to a
# display:table box; a box inside another that scrolls would hide its cue), how much wider its
# content is than the box, whether the box shows the cue, and each header cell. A table that is not
# rendered at all (display: none, as a calculator's range table while its speedups are typed in:
# tests/site/test_calculator_states.py) has nothing to fit and is left out.
TABLES = """() => [...document.querySelectorAll('.md-content table')].filter((table) => table.getClientRects().length > 0)
  .map((table, index) => {
  const boxes = [];
  for (let e = table.parentElement; e && !e.classList.contains('md-content'); e = e.parentElement) {
    if (getComputedStyle(e).overflowX !== 'visible') boxes.push(e);
  }
  const box = boxes.find((e) => e.scrollWidth > e.clientWidth + 1) || boxes[0] || document.querySelector('.md-content');
  const nested = boxes.filter((e) => e.scrollWidth > e.clientWidth + 1).length > 1;
  const cs = getComputedStyle(box);
  const heads = [...table.querySelectorAll('thead th, tr:first-child > th')].map((th) => {
    const s = getComputedStyle(th);
    return {text: th.textContent.trim().replace(/\\s+/g, ' ').slice(0, 40), width: Math.round(th.getBoundingClientRect().width),
            clipped: th.scrollWidth > th.clientWidth + 1, hidden: s.display === 'none' || s.visibility === 'hidden'};
  });
  const cells = [...table.querySelectorAll('tbody td')];
  const stacked = !!table.closest('.htw-stack') && cells.length > 0 && getComputedStyle(cells[0]).display === 'block';
  const unlabelled = stacked ? cells.filter((td, i) => {
    const head = table.querySelectorAll('thead th')[td.cellIndex];
    const shown = getComputedStyle(td, '::before').content;
    return !head || td.dataset.label !== head.textContent.trim()
      || (td.cellIndex > 0 && !shown.includes(head.textContent.trim()));
  }).map((td) => td.textContent.trim().slice(0, 30)) : [];
  return {index, box: box.className.split(' ')[0] || box.tagName, scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
          tableWidth: Math.round(table.getBoundingClientRect().width), overflowX: cs.overflowX,
          cue: cs.backgroundImage.includes('radial-gradient'), focusable: box.getAttribute('tabindex') === '0',
          heads, stacked, unlabelled, nested};
})"""

# Lab check messages ("passed: ...", "not done yet: ...") and how far each runs past the edge of its box.
CUT_CHECKS = """() => [...document.querySelectorAll('.md-content pre.nb-check')].map((pre) => ({
  text: pre.textContent.slice(0, 60), over: pre.scrollWidth - pre.clientWidth, whiteSpace: getComputedStyle(pre).whiteSpace}))"""

# Printed output blocks wider inside than their column, with the longest line of each.
WIDE_PRES = """() => ({count: document.querySelectorAll('.md-content .nb-output pre').length,
  wide: [...document.querySelectorAll('.md-content .nb-output pre')]
    .filter(p => p.scrollWidth > p.clientWidth + 1)
    .map(p => `${p.scrollWidth} px in ${p.clientWidth}: ${p.textContent.split('\\n')
      .reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 90)}`)})"""

# How many characters of an output block's font its column holds (what twofour's reports are
# fitted to: COLUMNS in the notebooks' kernels, twofour._common.fit.SITE_WIDTH).
COLUMN_CHARS = """() => { const pre = document.querySelector('.md-content .nb-output pre');
  const cs = getComputedStyle(pre); const probe = document.createElement('span');
  probe.textContent = 'x'.repeat(200); probe.style.cssText = 'display: inline-block; white-space: pre';
  pre.appendChild(probe);  // a probe that cannot wrap, even in a block whose sentences may
  const char = probe.getBoundingClientRect().width / 200; probe.remove();
  return (pre.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)) / char; }"""
COLUMN_PAGE = "/notebooks/03-dispatch/"

# Each figure a cell drew: its alt text, caption, and the pixels drawn vs shown (after every image loaded).
FIGURES = """() => [...document.querySelectorAll('.md-content .nb-output .nb-image')].map((wrap) => {
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

# What a phone shows of each figure: an SVG picture's width on screen, whether a PNG opens full
# size on a tap and says so, and an inline SVG's label sizes on screen.
FIGURE_SIZES = """() => ({
  svgs: [...document.querySelectorAll('.md-content img[src$=".svg"]')].map(i => [i.getAttribute('src'), i.clientWidth]),
  pngs: [...document.querySelectorAll('.md-content figure.nb-figure img')].map(i => ({
    zoom: i.closest('a.nb-zoom')?.getAttribute('href') === i.getAttribute('src'),
    hint: [...i.closest('figure').querySelectorAll('.nb-zoom-hint')].some(h => h.offsetParent !== null),
    src: i.getAttribute('src')})),
  inline: [...document.querySelectorAll('.md-content figure.nb-figure svg text')].map(t =>
    t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize)).filter(x => x > 0),
})"""

# How far the page is wider than the screen, and the first content element past its edge that is
# not inside a box meant to scroll.
OVERFLOW = """() => { const w = document.documentElement.clientWidth;
  const over = document.documentElement.scrollWidth - w;
  if (over <= 0) return {over, culprit: null};
  const el = [...document.querySelectorAll('.md-content *')].find((e) => e.getBoundingClientRect().right > w + 1
    && !e.closest('[data-htw-scrolls], .md-typeset__scrollwrap, .nb-output pre, .nb-html, .nb-image, .highlight, .math-block'));
  return {over, culprit: el ? el.tagName + '.' + el.className + ': ' + (el.textContent || '').slice(0, 50) : '?'}; }"""

# Smallest text in each content SVG, in CSS pixels as drawn (inline SVG, or an <img> of one).
SVG_LABELS = """async () => {
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


# --- the walk ------------------------------------------------------------------------------

@dataclass
class Walk:
    """What one walk measured: ``seen[path][name]`` for each measurement taken on that page."""

    width: int
    seen: dict[str, dict] = field(default_factory=dict)
    external_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def of(self, name: str) -> dict[str, object]:
        """``{path: result}`` of one measurement, over the pages it was taken on."""
        return {path: got[name] for path, got in self.seen.items() if name in got}


def is_external(url: str) -> bool:
    """A network request to another host (blob: and data: URLs never leave the page)."""
    parts = urlsplit(url)
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in ("127.0.0.1", "localhost")


def _open(page, base_url: str, path: str) -> None:
    page.goto(base_url + path, wait_until="load")
    # site.js stamps the path on <html> from Material's document$: proves scripts ran.
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    # A calculator mounts once its code has come (docs/js/calc/boot.js): measure the page with it.
    page.wait_for_function("() => [...document.querySelectorAll('[data-calc]')].every((e) => e.dataset.calcReady)")


def serious(violations: list[dict]) -> list[str]:
    return [f"{v['id']} ({v['impact']}): {v['help']} at " + ", ".join(json.dumps(n["target"]) for n in v["nodes"][:3])
            for v in violations if v["impact"] in ("serious", "critical")]


def desktop_walk(browser, base_url: str, site, pages: list[str], axe_source: str) -> Walk:
    """Every page at 1280 x 900, light scheme."""
    context = browser.new_context(color_scheme="light", viewport={"width": 1280, "height": 900})
    out = Walk(1280)
    # Requests are watched as events, not intercepted (routing each through Python cost a quarter
    # of a page load's CPU); one to another host fails anyway (CHROMIUM_ARGS).
    context.on("request", lambda request: is_external(request.url) and out.external_requests.append(request.url))
    page = context.new_page()
    page.on("console", lambda msg: msg.type == "error" and out.console_errors.append(msg.text))
    page.on("pageerror", lambda exc: out.console_errors.append(f"uncaught: {exc}"))
    checked, notebooks, tabled, printed = (axe_checked(site, pages), set(notebook_pages(pages)),
                                           set(chapter_and_lab_pages(pages)), set(printed_pages(pages)))
    token_looks: list[str] = []  # what TOKEN_SAMPLES has had axe check so far
    try:
        for path in pages:
            _open(page, base_url, path)
            got = out.seen[path] = {"h1": page.locator("h1").count()}
            if path in printed:
                got["wide_pres"] = page.evaluate(WIDE_PRES)
            if path == COLUMN_PAGE:
                got["column_chars"] = page.evaluate(COLUMN_CHARS)
            if path in notebooks:
                got["wrapped_pres"] = page.evaluate(WRAPPED_PRES)
            if path in tabled:
                got["tables"], got["checks"] = page.evaluate(TABLES), page.evaluate(CUT_CHECKS)
            if path in notebooks:  # last but axe: loading every image changes the page's height
                page.evaluate("() => document.querySelectorAll('img[loading=lazy]').forEach((i) => { i.loading = 'eager'; })")
                page.wait_for_function("() => [...document.querySelectorAll('.md-content img')].every((i) => i.complete)")
                got["figures"] = page.evaluate(FIGURES)
            if path in checked:
                page.add_script_tag(content=axe_source)  # inline: no request
                token_looks += page.evaluate(TOKEN_SAMPLES, token_looks)
                got["axe"] = serious(page.evaluate(AXE_RUN, AXE_TAGS))
    finally:
        context.close()
    return out


def phone_walk(browser, base_url: str, pages: list[str]) -> Walk:
    """Every page on a 390 x 844 touch screen at device scale 2."""
    context = browser.new_context(viewport=PHONE_SCREEN, is_mobile=True, has_touch=True, device_scale_factor=2,
                                  color_scheme="light")
    out = Walk(PHONE_SCREEN["width"])
    page = context.new_page()
    notebooks, tabled = set(notebook_pages(pages)), set(chapter_and_lab_pages(pages))
    try:
        for path in pages:
            _open(page, base_url, path)
            got = out.seen[path] = {"overflow": page.evaluate(OVERFLOW), "svg_labels": page.evaluate(SVG_LABELS)}
            if path in notebooks:
                got["wrapped_pres"] = page.evaluate(WRAPPED_PRES)
            if path in notebooks or path == "/":
                got["figure_sizes"] = page.evaluate(FIGURE_SIZES)
            if path in tabled:
                got["tables"], got["checks"] = page.evaluate(TABLES), page.evaluate(CUT_CHECKS)
    finally:
        context.close()
    return out
