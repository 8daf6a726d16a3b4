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

import page_walk

pytestmark = pytest.mark.browser


# The tables a walk measured (tests/site/page_walk.py: TABLES, CUT_CHECKS), judged.
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
@pytest.mark.parametrize("walk", [pytest.param("desktop_walk", marks=page_walk.DESKTOP_WALK),
                                  pytest.param("phone_walk", marks=page_walk.PHONE_WALK)])
def test_every_table_fits_its_column_or_says_it_scrolls(request, pages, walk):
    walk = request.getfixturevalue(walk)
    paths = page_walk.chapter_and_lab_pages(pages)
    assert len([p for p in paths if p.startswith("/notebooks/0")]) >= 8 and "/labs/" in paths, paths
    tables, checks = walk.of("tables"), walk.of("checks")
    assert set(tables) == set(checks) == set(paths)
    failures = [problem for path in paths for problem in _problems(path, walk.width, tables[path])]
    for path in paths:
        failures += [f"{path} at {walk.width}px: lab check message runs {check['over']}px past its box "
                     f"(white-space {check['whiteSpace']}): {check['text']!r}" for check in checks[path] if check["over"] > 1]
    counted = sum(len(t) for t in tables.values())
    assert counted >= 60, f"expected the chapters' and labs' tables, found {counted}"
    assert sum(len(c) for c in checks.values()) >= 6, "expected the labs' check messages (pre.nb-check)"
    if walk.width < 600:
        stacked = sum(t["stacked"] for ts in tables.values() for t in ts)
        assert stacked >= 1, "expected the labs overview to stack into one card per lab on a phone"
    assert not failures, f"{len(failures)} tables that do not fit:\n" + "\n".join(failures)
