"""Tables that fit: every table in a chapter or a lab, measured in Debian's chromium.

At 1280 px no table scrolls sideways: its scroll box (Material's ``.md-typeset__scrollwrap``
around a Markdown table, ``.nb-html`` around a table a cell displayed) is no wider inside than
outside. At 390 px a table may still be wider than the phone, but then it says so: its box
scrolls, is focusable and shows the scroll cue (the shadow wide output has); or it is stacked
into one card per row whose cells carry their column's header (``.htw-stack``). Either way every
header is there to be read. A lab check's message wraps instead of running off the screen.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}


def _open(page, base_url: str, path: str):
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    return page


def chapter_and_lab_pages(pages: list[str]) -> list[str]:
    """The chapters (notebooks/0*), the labs overview, every lab and every lab's solutions page."""
    return [p for p in pages if p.startswith("/notebooks/0") or p.startswith("/labs/")]


# Every table on the page: its scroll box (the widest ancestor that clips or scrolls, or the
# nearest if none is too narrow; the table's own overflow is Material's and does not apply to a
# display:table box; a box inside another that scrolls would hide its cue), how much wider its
# content is than the box, whether the box shows the cue, and each header cell. A table that is not
# rendered at all (display: none, as a calculator's range table while its speedups are typed in:
# tests/site/test_calculator_states.py) has nothing to fit and is left out.
_TABLES = """() => [...document.querySelectorAll('.md-content table')].filter((table) => table.getClientRects().length > 0)
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

# Lab check messages ("passed: ...", "not done yet: ...") that run past the edge of their box.
_CUT_CHECKS = """() => [...document.querySelectorAll('.md-content pre.nb-check')].map((pre) => ({
  text: pre.textContent.slice(0, 60), over: pre.scrollWidth - pre.clientWidth, whiteSpace: getComputedStyle(pre).whiteSpace}))"""


def _problems(path: str, width: int, tables: list[dict]) -> list[str]:
    out = []
    for t in tables:
        where = (f"{path} table {t['index']} ({' | '.join(h['text'] for h in t['heads']) or 'no header'}) at {width}px: "
                 f"content {t['scrollWidth']}px in a {t['clientWidth']}px {t['box']} (table {t['tableWidth']}px)")
        wide = t["scrollWidth"] > t["clientWidth"] + 1
        if width >= 1280 and wide:
            out.append(f"{where} scrolls sideways")
        elif wide and not (t["overflowX"] in ("auto", "scroll") and t["cue"] and t["focusable"]):
            out.append(f"{where} is cut off without a scroll cue (overflow {t['overflowX']}, cue {t['cue']}, "
                       f"focusable {t['focusable']})")
        if t["nested"]:
            out.append(f"{where} scrolls inside another box that scrolls (its cue is clipped)")
        if t["stacked"]:
            if t["unlabelled"]:
                out.append(f"{where}: stacked cells without their column's label: {t['unlabelled'][:4]}")
        else:
            for h in t["heads"]:
                if h["hidden"] or h["width"] <= 0 or h["clipped"]:
                    out.append(f"{where}: header {h['text']!r} is {h['width']}px wide"
                               + (", hidden" if h["hidden"] else "") + (", clipped" if h["clipped"] else ""))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, PHONE["width"]])  # one test per width: xdist's two workers share them
def test_every_table_fits_its_column_or_says_it_scrolls(browser, base_url, pages, width):
    paths = chapter_and_lab_pages(pages)
    assert len([p for p in paths if p.startswith("/notebooks/0")]) >= 8 and "/labs/" in paths, paths
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    failures, counted, stacked, checks = [], 0, 0, 0
    for path in paths:
        tables = _open(page, base_url, path).evaluate(_TABLES)
        counted += len(tables)
        stacked += sum(t["stacked"] for t in tables)
        failures += _problems(path, width, tables)
        for check in page.evaluate(_CUT_CHECKS):
            checks += 1
            if check["over"] > 1:
                failures.append(f"{path} at {width}px: lab check message runs {check['over']}px past its box "
                                f"(white-space {check['whiteSpace']}): {check['text']!r}")
    context.close()
    assert counted >= 60, f"expected the chapters' and labs' tables, found {counted}"
    assert checks >= 6, f"expected the labs' check messages (pre.nb-check), found {checks}"
    if width < 600:
        assert stacked >= 1, "expected the labs overview to stack into one card per lab on a phone"
    assert not failures, f"{len(failures)} tables that do not fit:\n" + "\n".join(failures)
