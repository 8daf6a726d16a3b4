"""The calculators on a desktop and on a phone, in Debian's chromium.

* Desktop (1280 x 900): each calculator's headline figure (form.js ``headline()``) stays on
  screen, under the page header and clear of the field, while the reader is at any of its inputs.
* Phone (390 x 844): the headline comes before the inputs and stays on screen beside every one
  of them, also for a keyboard user going back up the form; the page never scrolls sideways;
  the results tables that are wider than the card scroll in their own box, which shows the
  site's scroll cue and a "scroll" line and is a named keyboard stop; the funnel's labels are
  at least 10 px as drawn; axe finds no serious problem there, in light or dark mode.
* The headline repeats the results, never contradicts them, and says when it is stale.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

# Every calculator on the site: (page, kind). The Calculator page has all four.
CALCULATORS = [
    ("/calculator/", "request"), ("/calculator/", "amdahl"), ("/calculator/", "gemm"), ("/calculator/", "packing"),
    ("/notebooks/06-amdahl/", "request"), ("/notebooks/06-amdahl/", "amdahl"),
    ("/notebooks/04-kernel-speed/", "gemm"), ("/notebooks/02-packing/", "packing"),
]
# The result each headline repeats: [data-out] of the full results.
HEADLINE_OF = {"request": "speedup_request", "amdahl": "speedup", "gemm": "speedup", "packing": "ratio"}


def _open(page, base_url: str, path: str):
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    page.wait_for_function("() => [...document.querySelectorAll('[data-calc]')].every(e => e.dataset.calcReady === 'true')")
    return page


# For one calculator: scroll each visible form control into view as a reader would reach it
# (centred), and report where the headline and the control are then. The header is Material's
# sticky bar; the headline must be below it, inside the viewport, and must not cover the control.
_AT_EACH_INPUT = """kind => {
  const root = document.querySelector(`[data-calc='${kind}']`);
  const head = root.querySelector('[data-headline=box]');
  if (!head) return {error: 'no headline'};
  const header = document.querySelector('.md-header').getBoundingClientRect().bottom;
  const vh = innerHeight, vw = document.documentElement.clientWidth;
  const controls = [...root.querySelector('form').querySelectorAll('input, select')].filter((e) => e.checkVisibility());
  const problems = [];
  for (const c of controls) {
    c.scrollIntoView({block: 'center'});
    const h = head.getBoundingClientRect(), r = c.getBoundingClientRect();
    const name = c.id || c.name;
    if (h.top < header - 1 || h.bottom > vh + 1 || h.left < -1 || h.right > vw + 1) {
      problems.push(`${name}: headline at ${Math.round(h.top)}..${Math.round(h.bottom)} px, off screen (header ends at ${header})`);
    }
    if (r.top < h.bottom - 1 && r.bottom > h.top + 1 && r.left < h.right && r.right > h.left) {
      problems.push(`${name}: covered by the headline`);
    }
  }
  return {count: controls.length, problems, height: head.getBoundingClientRect().height};
}"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280px", "390px"])
def test_the_headline_stays_on_screen_at_every_input(browser, base_url, viewport):
    context = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE, has_touch=viewport is PHONE)
    page = context.new_page()
    failures = []
    for path, kind in CALCULATORS:
        _open(page, base_url, path)
        found = page.evaluate(_AT_EACH_INPUT, kind)
        if "error" in found:
            failures.append(f"{path} {kind}: {found['error']}")
            continue
        assert found["count"] >= 2, (path, kind, found)
        failures += [f"{path} {kind}: {p}" for p in found["problems"]]
        # A sticky figure must leave most of a phone's screen to the form.
        if found["height"] > 0.15 * viewport["height"]:
            failures.append(f"{path} {kind}: headline {found['height']:.0f} px tall")
    context.close()
    assert not failures, "\n".join(failures)


def test_on_a_phone_the_headline_comes_before_the_inputs(browser, base_url):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    for path, kind in CALCULATORS:
        _open(page, base_url, path)
        order = page.evaluate("""kind => { const root = document.querySelector(`[data-calc='${kind}']`);
            const head = root.querySelector('[data-headline=box]');
            const first = root.querySelector('form').querySelector('input, select');
            return head ? [head.getBoundingClientRect().top, first.getBoundingClientRect().top,
                           Boolean(head.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING)] : null; }""", kind)
        assert order is not None, f"{path} {kind}: no headline"
        head_top, first_top, before_in_source = order
        assert head_top < first_top and before_in_source, (path, kind, order)
    context.close()


def test_keyboard_going_up_the_form_never_lands_under_the_headline(browser, base_url):
    """Shift+Tab scrolls each field into view from above, where the sticky headline sits."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = _open(context.new_page(), base_url, "/calculator/")
    root = page.locator("[data-calc='request']")
    last = root.locator("form input:visible, form select:visible").last
    last.focus()
    covered = []
    for _ in range(40):
        page.keyboard.press("Shift+Tab")
        where = page.evaluate("""() => { const a = document.activeElement;
            const root = document.querySelector("[data-calc='request']");
            if (!root.querySelector('form').contains(a)) return null;
            const h = root.querySelector('[data-headline=box]').getBoundingClientRect(), r = a.getBoundingClientRect();
            return {name: a.id, covered: r.top < h.bottom - 1 && r.bottom > h.top + 1, shown: r.top >= 0 && r.bottom <= innerHeight}; }""")
        if where is None:
            break
        if where["covered"] or not where["shown"]:
            covered.append(where)
    context.close()
    assert not covered, covered


def _agrees(kind: str, head_text: str, table_text: str) -> bool:
    """The request calculator's headline rounds the exact speedup to 2 decimals, as the verdict table
    and the prose do; its table shows 3. Rounding the table's text again could differ in the last
    digit (0.6155 shows as 0.616x and 0.62x), so the two must agree to within half a hundredth."""
    if kind != "request":
        return head_text == table_text
    head, table = float(head_text.rstrip("x")), float(table_text.rstrip("x"))
    return len(head_text.rstrip("x").split(".")[1]) == 2 and abs(head - table) <= 0.0055


def test_the_headline_repeats_the_results_and_says_when_it_is_stale(watched, base_url):
    page = _open(watched.page, base_url, "/calculator/")
    heads = {}
    for kind, out in HEADLINE_OF.items():
        root = page.locator(f"[data-calc='{kind}']")
        heads[kind] = root.locator("[data-headline=value]")
        assert _agrees(kind, heads[kind].inner_text(), root.locator(f"[data-out='{out}']").inner_text()), kind
    root = page.locator("[data-calc='request']")
    note = root.locator("[data-headline=note]")
    detail = root.locator("[data-headline=detail]").inner_text()
    # The worked deployment is slower with 2:4; the words agree with the figure, which is already
    # the ratio of speeds ("0.62x the dense speed", never "0.62x slower").
    assert float(heads["request"].inner_text().rstrip("x")) < 1 and note.inner_text() == "the dense speed (slower)"
    by_name = dict(part.rsplit(" ", 1) for part in detail.split(" · ")[:2])  # {"TTFT": "1.04x", ...}
    assert _agrees("request", by_name["TTFT"], root.locator("[data-out='speedup_ttft']").inner_text())
    assert _agrees("request", by_name["per output token"], root.locator("[data-out='speedup_tpot']").inner_text())
    assert "GEMMs measured on the H200 (CUDA graphs)" in detail
    root.get_by_label("predicted by the roofline model").check()
    assert "cached plans or CUDA graphs" in root.locator("[data-headline=detail]").inner_text()
    # A workload where 2:4 wins: long prompts, prefill-heavy.
    root.get_by_label("prompt tokens", exact=True).fill("8192")
    root.get_by_label("output tokens", exact=True).fill("1")
    root.get_by_label("batch", exact=True).fill("16")
    assert _agrees("request", heads["request"].inner_text(), root.locator("[data-out='speedup_request']").inner_text())
    assert note.inner_text() == ("the dense speed (faster)" if float(heads["request"].inner_text().rstrip("x")) > 1
                                 else "the dense speed (slower)")
    before = heads["request"].inner_text()
    stale = root.locator("[data-headline=stale]")
    assert stale.inner_text() == ""
    root.get_by_label("batch", exact=True).fill("eight")
    assert heads["request"].inner_text() == before and "last valid" in stale.inner_text()
    root.get_by_label("batch", exact=True).fill("16")
    assert stale.inner_text() == ""
    # The small cards follow their inputs too.
    amdahl = page.locator("[data-calc='amdahl']")
    amdahl.get_by_label("eligible fraction p").fill("0.5")
    amdahl.get_by_label("GEMM speedup s").fill("2")
    assert heads["amdahl"].inner_text() == "1.333x"
    packing = page.locator("[data-calc='packing']")
    packing.get_by_label("element type and pattern").select_option("int8")
    assert heads["packing"].inner_text() == "62.50 %"
    assert not watched.console_errors


_TABLES = """() => [...document.querySelectorAll('[data-calc] table')].map((t) => {
  const box = t.parentElement, cs = getComputedStyle(box);
  const hint = box.parentElement.querySelector('.calc-scroll-hint');
  return {caption: t.caption ? t.caption.textContent : '', overflows: box.scrollWidth > box.clientWidth + 1,
          overflowX: cs.overflowX, cue: cs.backgroundImage, tab: box.getAttribute('tabindex'), role: box.getAttribute('role'),
          label: box.getAttribute('aria-label'), hint: hint ? hint.checkVisibility() && hint.textContent : null,
          tableScrolls: t.scrollWidth > t.clientWidth + 1 && getComputedStyle(t).overflowX !== 'visible'};
})"""


def test_wide_results_tables_scroll_in_a_box_with_a_cue_on_a_phone(browser, base_url):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    page = _open(context.new_page(), base_url, "/calculator/")
    tables = page.evaluate(_TABLES)
    assert len(tables) == 2, tables
    assert any(t["overflows"] for t in tables), "the request calculator's tables are wider than a phone: expected a scroll box"
    for t in tables:
        assert t["overflowX"] == "auto" and "radial-gradient" in t["cue"] and not t["tableScrolls"], t
        if t["overflows"]:
            assert t["tab"] == "0" and t["role"] == "region" and t["label"] and "scroll" in t["label"], t
            assert t["hint"] and "scroll" in t["hint"], t
    # Keyboard: the box takes focus and the arrow keys scroll it.
    box = page.locator("[data-calc='request'] .calc-scroll[tabindex='0']").first
    box.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.activeElement.scrollLeft > 0")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    context.close()
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    # On a desktop the same tables fit: no scroll box, no extra tab stop, no hint.
    context = browser.new_context(viewport=DESKTOP)
    wide = _open(context.new_page(), base_url, "/calculator/").evaluate(_TABLES)
    context.close()
    for t in wide:
        assert not t["overflows"] and t["tab"] is None and not t["hint"], t


@pytest.mark.parametrize("width", [390, 320])
def test_no_calculator_page_scrolls_sideways_and_funnel_labels_stay_legible_on_a_phone(browser, base_url, width):
    context = browser.new_context(viewport={"width": width, "height": 844}, is_mobile=True, has_touch=True, device_scale_factor=2)
    page = context.new_page()
    for path in sorted({p for p, _ in CALCULATORS}):
        _open(page, base_url, path)
        # Inputs that make the longest numbers and labels: a custom model, a huge workload.
        if page.locator("[data-calc='request']").count():
            root = page.locator("[data-calc='request']").first
            root.get_by_label("batch", exact=True).fill("1000000")
            root.get_by_label("prompt tokens", exact=True).fill("100000000")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{path} at {width} px: scrolls sideways by {overflow} px"
        labels = page.evaluate("""() => [...document.querySelectorAll('[data-calc] svg[viewBox]')].map((svg) => {
            const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
            return Math.min(...[...svg.querySelectorAll('text')].map((t) => parseFloat(getComputedStyle(t).fontSize) * scale)); })""")
        for px in labels:
            assert px >= 10, f"{path} at {width} px: funnel label {px:.1f} px"
    context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_calculators_on_a_phone_pass_axe(browser, base_url, axe_source, scheme):
    """The narrow layout (sticky headline, focusable scroll boxes) in both colour schemes."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, color_scheme=scheme)
    page = context.new_page()
    failures = []
    for path in ("/calculator/", "/notebooks/06-amdahl/"):
        _open(page, base_url, path)
        if scheme == "dark":
            page.evaluate("() => document.body.setAttribute('data-md-color-scheme', 'slate')")
        page.add_script_tag(content=axe_source)
        # Only the violations, in full (see AXE_RUN in page_walk.py).
        violations = page.evaluate("""() => axe.run(document.querySelectorAll('[data-calc]').length ? [...document.querySelectorAll('[data-calc]')] : document,
            {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}, resultTypes: ['violations']})
            .then(r => r.violations)""")
        failures += [f"{path}: {v['id']} ({v['impact']}): {v['help']} at " + ", ".join(json.dumps(n["target"]) for n in v["nodes"][:3])
                     for v in violations if v["impact"] in ("serious", "critical")]
    context.close()
    assert not failures, "\n".join(failures)
