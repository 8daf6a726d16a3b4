"""The mock loop of practice mode (docs/js/practice/mock.js) in a real browser, at 1280 and 390 px.

A mixed set under one timer, graded per must-have, a score sheet by question and topic with what
to review, printable on its own and shareable as a link whose fragment holds the whole loop.
Screenshots of each phase go to $TWOFOUR_SHOTS (default: a temporary folder) for a person to look at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from twofour.course.practice import load_bank, page_of

pytestmark = pytest.mark.browser

MODE = "/practice/"
BANK = load_bank()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("TWOFOUR_SHOTS") or tmp_path_factory.mktemp("mock-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _ready(page):
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")


def _open(watched, base_url: str, path: str = MODE, *, width: int = 1280):
    page = watched.page
    page.set_viewport_size({"width": width, "height": 900 if width > 600 else 844})
    page.goto(base_url + path, wait_until="load")
    _ready(page)
    return page


def _start(page, *, minutes: int | None = None):
    setup = page.locator("details.practice-mock-setup")
    setup.locator("summary").click()
    if minutes is not None:
        page.get_by_label("Minutes", exact=True).fill(str(minutes))
    page.get_by_role("button", name="Start the mock loop").click()
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.mock === 'run'")


def _loop_ids(page) -> list[str]:
    fragment = unquote(page.evaluate("location.hash"))
    return re.search(r"[?&]?q=([^&]+)", fragment).group(1).split(".")


def _visible(page):
    return page.locator(".practice-deck .practice-q:not([hidden])")


def _no_sideways_scroll(page):
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth + 1"), "the page scrolls sideways"


# ---- the pure functions, in the browser that runs them -----------------------------------------


def _mock_module(page, base_url):
    page.goto(base_url + MODE, wait_until="load")
    return page.evaluate_handle(f"import('{base_url}/js/practice/mock.js')")


def test_state_round_trips_through_the_url_and_refuses_junk(watched, base_url):
    page = watched.page
    mod = _mock_module(page, base_url)
    out = page.evaluate("""m => {
        const s = {ids: ['what-is-two-four', 'packed-bytes'], minutes: 20, phase: 'sheet', used: 61.4, index: 1,
                   grades: {'what-is-two-four': [true, false]}, seed: 7};
        const h = m.encodeMock(s);
        return {h, back: m.decodeMock('#' + h), junk: m.decodeMock('#mock&q=%3Cscript%3E'),
                other: m.decodeMock('#q-packed-bytes'), stale: m.decodeMock('#' + h, new Set(['packed-bytes'])),
                clamp: m.decodeMock('#mock&q=a-b&t=99999&p=nope&u=-5&i=9')};
    }""", mod)
    assert out["h"].startswith("mock&q=what-is-two-four.packed-bytes&t=20&p=sheet&u=61")
    back = out["back"]
    assert back["ids"] == ["what-is-two-four", "packed-bytes"] and back["minutes"] == 20 and back["phase"] == "sheet"
    assert back["grades"] == {"what-is-two-four": [True, False]} and back["seed"] == 7 and back["used"] == 61
    assert out["junk"] is None and out["other"] is None
    assert out["stale"]["ids"] == ["packed-bytes"]  # an id the bank lost is dropped, the link still opens
    clamp = out["clamp"]
    assert clamp["minutes"] == 39 and clamp["phase"] == "run" and clamp["used"] == 0 and clamp["index"] == 0
    # Strong signals and red flags heard travel with the must-haves; a link without them still opens.
    signals = page.evaluate("""m => {
        const s = {ids: ['a', 'b'], minutes: 10, phase: 'sheet', used: 0,
                   grades: {a: [true, false], b: [true]}, signals: {a: {strong: [true], flags: [false, true]}}};
        const h = m.encodeMock(s);
        return {h, back: m.decodeMock('#' + h), old: m.decodeMock('#mock&q=a&g=10')};
    }""", mod)
    assert "g=10_1_01.1" in signals["h"]
    more = page.evaluate("""m => { const h = m.encodeMock({ids: ['a'], minutes: 10, phase: 'sheet', used: 0,
                   grades: {a: [true]}, signals: {a: {strong: [true], flags: [false], follow: [true, false], placed: 2}}});
                   return {h, back: m.decodeMock('#' + h)}; }""", mod)
    assert "g=1_1_0_10_2" in more["h"]
    assert more["back"]["signals"] == {"a": {"strong": [True], "flags": [False], "follow": [True, False], "placed": 2}}
    assert signals["back"]["signals"] == {"a": {"strong": [True], "flags": [False, True]}}
    assert signals["back"]["grades"] == {"a": [True, False], "b": [True]}
    assert signals["old"]["grades"] == {"a": [True, False]} and signals["old"]["signals"] == {}
    assert not watched.console_errors


def test_a_loop_is_drawn_by_plan_seeded_and_spread_over_topics(watched, base_url):
    page = watched.page
    mod = _mock_module(page, base_url)
    facts = [{"qid": q.id, "level": q.level, "topic": q.topic, "kind": q.kind} for q in BANK]
    out = page.evaluate("""([m, facts]) => ({
        a: m.pickLoop(facts, {fundamentals: 2, applied: 2, design: 1}, 42),
        b: m.pickLoop(facts, {fundamentals: 2, applied: 2, design: 1}, 42),
        c: m.pickLoop(facts, {fundamentals: 2, applied: 2, design: 1}, 43),
        twelve: m.planLoop(facts, {fundamentals: 4, applied: 4, deep: 3, design: 1}, 1),
        big: m.planLoop(facts, {fundamentals: 6, applied: 6, design: 4}, 1),
        short: m.planLoop(facts, {deep: 2, design: 200}, 1),
        none: m.planLoop(facts, {fundamentals: 0}, 1),
        default: m.DEFAULT_PLAN, minutes: m.DEFAULT_MINUTES, slotMinutes: m.SLOT_MINUTES,
    })""", [mod, facts])
    assert out["a"] == out["b"] != out["c"]
    by_id = {q.id: q for q in BANK}
    a = [by_id[i] for i in out["a"]]
    assert [q.level for q in a[:2]] == ["fundamentals"] * 2 and all(q.kind != "design" for q in a[:4])
    assert [q.level for q in a[2:4]] == ["applied"] * 2 and a[4].kind == "design"
    assert len({q.topic for q in a}) == len(a), "a short loop spreads over topics"
    assert len(out["twelve"]["ids"]) == 12 and len(set(out["twelve"]["ids"])) == 12 and not out["twelve"]["problems"]
    # A plan that cannot be filled says why and draws nothing (no slot silently dropped).
    assert out["big"]["ids"] == [] and "at most 12" in " ".join(out["big"]["problems"])
    assert out["short"]["ids"] == [] and "200 design questions asked for" in " ".join(out["short"]["problems"])
    assert out["none"]["ids"] == [] and "no question" in " ".join(out["none"]["problems"])
    # The default plan includes a deep question that is not a design question; minutes follow the kinds.
    assert out["default"]["deep"] >= 1 and out["default"]["design"] >= 1
    assert out["minutes"] == sum(out["slotMinutes"][k] * n for k, n in out["default"].items())
    assert out["slotMinutes"]["design"] >= 10 * out["slotMinutes"]["fundamentals"] / 3
    # Every level and every kind is drawn: each loop of this plan covers all of them.
    draws = page.evaluate("""([m, facts]) => [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((seed) =>
        m.pickLoop(facts, {fundamentals: 2, applied: 3, deep: 2, design: 1}, seed))""", [mod, facts])
    for ids in draws:
        qs = [by_id[i] for i in ids]
        assert {q.level for q in qs} == {"fundamentals", "applied", "deep"}, ids
        assert {q.kind for q in qs} == {"concept", "calculation", "multi-step", "diagnosis", "design"}, ids
        assert any(q.level == "deep" and q.kind != "design" for q in qs), ids
    # Readings from the rubric and the question's level descriptions: must-haves, strong signals,
    # follow-ups answered, the description the grader placed the answer at, red flags.
    readings = page.evaluate("""m => [
        m.readingOf(false, 2, 2, 0, {placed: 3}),
        m.readingOf(true, 1, 1, 0),                                          // one box ticked, no description chosen
        m.readingOf(true, 1, 1, 0, {placed: 3}),                             // one box ticked, placed at staff
        m.readingOf(true, 1, 1, 0, {followHeard: 1, followTotal: 2, placed: 2}),
        m.readingOf(true, 1, 1, 0, {followHeard: 2, followTotal: 2, placed: 3}),
        m.readingOf(true, 1, 1, 1, {followHeard: 2, followTotal: 2, placed: 3}),
        m.readingOf(true, 2, 2, 0, {followHeard: 2, followTotal: 3, placed: 2}),
        m.readingOf(true, 2, 2, 0, {followHeard: 0, followTotal: 0, placed: 0})]""", mod)
    assert readings == ["below mid", "mid", "mid", "senior", "staff", "senior", "senior", "below mid"]
    why = page.evaluate("m => m.readingWhy(true, 1, 1, 0, {followHeard: 0, followTotal: 2, placed: 3}).why", mod)
    assert "every must-have met, 1 of 1 strong signal, 0 of 2 follow-ups answered, placed at staff" in why
    assert "senior needs two signals" in why
    sheet = page.evaluate("""m => m.scoreLoop(
        {ids: ['x', 'y', 'z'], grades: {x: [true], y: [true], z: [false]},
         signals: {x: {strong: [true, true], flags: [false], follow: [true, true], placed: 3},
                   y: {strong: [true, false], flags: [true], placed: 2}}},
        {x: {title: 'X', level: 'fundamentals', topic: 't', must: ['a'], strong: ['s1', 's2'], flags: ['f'], follow: ['q1', 'q2']},
         y: {title: 'Y', level: 'applied', topic: 't', must: ['b'], strong: ['s1', 's2'], flags: ['f']},
         z: {title: 'Z', level: 'deep', topic: 't', must: ['c'], strong: ['s'], flags: ['f']}})""", mod)
    assert [q["reading"] for q in sheet["questions"]] == ["staff", "below mid", "below mid"]
    assert sheet["questions"][0]["why"].startswith("every must-have met, 2 of 2 strong signals, 2 of 2 follow-ups answered")
    assert sheet["flags"] == 1 and sheet["reading"] == "below mid" and sheet["passed"] == 1
    assert sheet["review"][0]["heardFlags"] == ["f"]
    score = page.evaluate("""m => m.scoreLoop(
        {ids: ['x', 'y', 'z'], grades: {x: [true, true], y: [true, false]}},
        {x: {title: 'X', level: 'fundamentals', topic: 't1', must: ['a', 'b']},
         y: {title: 'Y', level: 'applied', topic: 't1', must: ['c', 'd']},
         z: {title: 'Z', level: 'deep', topic: 't2', must: ['e', 'f', 'g']}})""", mod)
    assert (score["passed"], score["met"], score["total"]) == (1, 3, 7)
    assert [q["pass"] for q in score["questions"]] == [True, False, False]
    assert [q["missed"] for q in score["review"]] == [["d"], ["e", "f", "g"]]
    assert score["topics"]["t1"] == {"met": 3, "total": 4, "questions": 2, "passed": 1}
    assert not watched.console_errors


# ---- the loop, driven like a candidate --------------------------------------------------------


@pytest.mark.parametrize("width", [1280, 390])
def test_mock_loop_runs_grades_scores_and_prints(watched, base_url, shots, width):
    page = _open(watched, base_url, width=width)
    page.screenshot(path=str(shots / f"mock-{width}-0-practice-mode.png"))
    _start(page)
    ids = _loop_ids(page)
    assert len(ids) == 6
    qs = [BANK.get(i) for i in ids]
    assert [q.level for q in qs[:4]] == ["fundamentals", "fundamentals", "applied", "applied"]
    assert qs[4].level == "deep" and qs[4].kind != "design" and qs[5].kind == "design"
    # One question at a time; its rubric, worked answer and quick check wait for the grading.
    assert _visible(page).count() == 1 and _visible(page).first.get_attribute("data-qid") == ids[0]
    card = _visible(page).first
    for part in (".practice-rubric", ".practice-answer", ".practice-check"):
        if card.locator(part).count():
            assert card.locator(part).first.is_hidden(), part
    assert page.locator(".practice-bar").is_hidden() and page.locator(".practice-timer").is_hidden()
    assert re.fullmatch(r"3[89]:\d\d left", page.locator(".practice-mock-clock").inner_text())
    assert page.locator(".practice-mock-where").inner_text().startswith("Question 1 of 6")
    assert page.locator(".practice-mock-where").inner_text().endswith("about 3 min")
    card.get_by_label("Your notes (kept in this browser)").fill("bytes-bound; ceiling is the byte ratio")
    _no_sideways_scroll(page)
    page.screenshot(path=str(shots / f"mock-{width}-1-run.png"))
    # Keyboard: Next with Enter, to the last question.
    for n in range(2, 7):
        page.get_by_role("button", name="Next", exact=True).focus()
        page.keyboard.press("Enter")
        assert _visible(page).first.get_attribute("data-qid") == ids[n - 1]
        assert page.locator(".practice-mock-where").inner_text().startswith(f"Question {n} of 6")
    assert page.locator(".practice-mock-where").inner_text().endswith("design · about 15 min")
    assert page.get_by_role("button", name="Next", exact=True).is_disabled()
    page.get_by_role("button", name="Finish and grade").click()
    grade = page.locator(".practice-mock-grade")
    grade.wait_for(state="visible")
    assert page.get_by_role("heading", name="Grade your answers").is_visible()
    items = grade.locator(".practice-mock-grade-list > li")
    assert items.count() == 6
    # First answer met every must-have, every strong signal and every follow-up and reads at the
    # staff description, the second one must-have, the third every must-have but with a red flag,
    # the rest none.
    for box in items.nth(0).locator(".practice-mock-must input, .practice-mock-strong input, .practice-mock-follow input").all():
        box.check()
    items.nth(0).locator(".practice-mock-levels input[type=radio]").last.check()
    items.nth(1).locator(".practice-mock-must input").first.check()
    for box in items.nth(2).locator(".practice-mock-must input").all():
        box.check()
    items.nth(2).locator(".practice-mock-flags input").first.check()
    assert items.nth(5).locator(".practice-mock-levels input[type=radio]").count() == 4  # none, mid, senior, staff
    page.screenshot(path=str(shots / f"mock-{width}-2-grade.png"), full_page=True)
    _no_sideways_scroll(page)
    page.get_by_role("button", name="Show the score sheet").click()
    sheet = page.locator(".practice-mock-sheet")
    sheet.wait_for(state="visible")
    rows = sheet.locator("table").first.locator("tbody tr")
    assert rows.count() == 6
    results = [rows.nth(i).locator("td").nth(7).inner_text() for i in range(6)]
    assert results == ["pass", "fail", "fail", "fail", "fail", "fail"]
    readings = [rows.nth(i).locator("td").nth(6).inner_text() for i in range(6)]
    strong = len(qs[0].rubric.strong)
    # The third: every must-have, one red flag, no strong signal: its mid reading drops a level.
    assert readings == ["staff"] + ["below mid"] * 5
    assert "placed at staff" in rows.nth(0).locator("td").nth(8).inner_text()
    assert rows.nth(0).locator("td").nth(4).inner_text() == f"{strong} / {strong}"
    assert rows.nth(2).locator("td").nth(5).inner_text() == "1"
    musts = [len(q.rubric.must) for q in qs]
    assert rows.nth(0).locator("td").nth(3).inner_text() == f"{musts[0]} / {musts[0]}"
    assert rows.nth(1).locator("td").nth(3).inner_text() == f"1 / {musts[1]}"
    summary = sheet.locator(".practice-mock-summary").inner_text()
    assert summary.startswith("Reading: below mid · 1 of 6 questions passed")
    assert f"{musts[0] + 1 + musts[2]} of {sum(musts)} must-haves met" in summary and "1 red flag " in summary
    assert "Staff: that, its staff description fits, every strong signal" in sheet.locator(".practice-mock-rule").inner_text()
    topic_rows = sheet.locator("table").nth(1).locator("tbody tr")
    assert topic_rows.count() == len({q.topic for q in qs})
    review = sheet.locator(".practice-mock-review")
    assert review.locator("h4").count() == 5  # every question that did not pass
    assert "Red flag: " in review.inner_text()
    # A missed must-have, named as the card shows it (numbers filled in, Markdown rendered).
    missed = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", qs[1].fill(qs[1].rubric.must[1])).replace("`", "").replace("*", "")
    assert " ".join(missed.split())[:60] in " ".join(review.inner_text().split())
    link = review.locator("a", has_text="the question and its worked answer").first
    assert link.get_attribute("href") == f"/practice/{page_of(qs[1])}/#q-{qs[1].id}"
    assert "p=sheet" in unquote(page.url) and "g=" in page.url
    _no_sideways_scroll(page)
    page.screenshot(path=str(shots / f"mock-{width}-3-sheet.png"), full_page=True)
    # Printed, the sheet stands alone.
    page.emulate_media(media="print")
    assert sheet.is_visible() and page.locator(".md-header").is_hidden()
    assert page.locator(".practice-deck").is_hidden() and page.locator("h1").first.is_hidden()
    assert sheet.locator(".practice-mock-share").is_hidden()
    page.screenshot(path=str(shots / f"mock-{width}-4-print.png"), full_page=True)
    page.emulate_media(media="screen")
    # Back to practice: the page is practice mode again, with no mock left in the URL.
    sheet.get_by_role("button", name="Back to practice").click()
    assert page.locator(".practice-bar").is_visible() and _visible(page).count() == 1
    assert "mock" not in page.url
    assert not watched.console_errors and not watched.external_requests


def test_the_score_sheet_link_opens_the_same_sheet_in_a_fresh_browser(watched, browser, base_url):
    page = _open(watched, base_url)
    _start(page)
    ids = _loop_ids(page)
    page.get_by_role("button", name="Finish and grade").click()
    items = page.locator(".practice-mock-grade-list > li")
    for box in items.nth(2).locator(".practice-mock-must input").all():
        box.check()
    page.get_by_role("button", name="Show the score sheet").click()
    sheet = page.locator(".practice-mock-sheet")
    sheet.wait_for(state="visible")
    assert sheet.locator("#mock-link").input_value() == page.url
    expected = sheet.locator("table").first.inner_text()

    # Another browser profile (no shared storage): the link alone carries the loop and the grades.
    other = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        fresh = other.new_page()
        errors = []
        fresh.on("pageerror", lambda exc: errors.append(str(exc)))
        fresh.goto(page.url, wait_until="load")
        _ready(fresh)
        fresh.locator(".practice-mock-sheet").wait_for(state="visible")
        assert fresh.locator(".practice-mock-sheet table").first.inner_text() == expected
        assert fresh.locator(".practice-mock-sheet tbody tr").nth(2).locator("td").nth(7).inner_text() == "pass"
        assert _loop_ids(fresh) == ids and not errors
        # It opens at the sheet, not at the top of the page above it.
        fresh.wait_for_timeout(300)
        top, header = fresh.evaluate("""() => [document.getElementById('mock-sheet-title').getBoundingClientRect().top,
                                               document.querySelector('.md-header').getBoundingClientRect().bottom]""")
        assert header <= top < header + 200, (top, header)  # below the sticky header, at the sheet
        # Someone else's sheet does not become this browser's grades.
        assert fresh.evaluate("localStorage.getItem('htw-practice-v1')") in (None, '{"grades":{},"notes":{},"checks":{}}')
    finally:
        other.close()
    assert not watched.console_errors and not watched.external_requests


@pytest.mark.own_page  # a fake clock or a response listener stays on a page
def test_one_timer_for_the_loop_and_grading_when_time_is_up(watched, base_url):
    page = watched.page
    page.clock.install()
    page = _open(watched, base_url)
    _start(page, minutes=2)
    clock = page.locator(".practice-mock-clock")
    assert clock.inner_text() in ("2:00 left", "1:59 left")
    page.clock.run_for(30_000)
    page.get_by_role("button", name="Next", exact=True).click()  # the timer is the loop's, not the question's
    page.clock.run_for(30_000)
    assert clock.inner_text() in ("1:00 left", "0:59 left", "0:58 left")  # the page's clock also runs in real time
    assert clock.get_attribute("data-low") == "true"
    # A reload resumes the loop where it was: the same questions, question 2, the time left.
    ids = _loop_ids(page)
    page.reload(wait_until="load")
    _ready(page)
    assert _loop_ids(page) == ids and page.locator(".practice-mock-where").inner_text().startswith("Question 2 of 6")
    assert page.locator(".practice-mock-clock").inner_text() in ("1:00 left", "0:59 left", "0:58 left")
    page.clock.run_for(61_000)
    grade = page.locator(".practice-mock-grade")
    grade.wait_for(state="visible")
    assert "Time is up" in grade.locator(".practice-mock-announce").inner_text()
    assert not watched.console_errors and not watched.external_requests


def test_mock_loop_survives_instant_navigation(watched, base_url):
    page = watched.page
    page.goto(base_url + "/practice/deep/", wait_until="load")
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/deep/'")
    page.evaluate("window.__noReload = 'still here'")
    page.locator(".md-content a", has_text="practice mode").first.click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/'")
    _ready(page)
    assert page.evaluate("window.__noReload") == "still here", "navigation was not instant"
    assert page.locator("details.practice-mock-setup").count() == 1  # set up once
    _start(page)
    assert _visible(page).count() == 1 and page.locator(".practice-mock-bar").is_visible()
    assert not watched.console_errors and not watched.external_requests


def test_mock_grades_reach_practice_modes_store_and_weak_review(watched, base_url):
    page = _open(watched, base_url)
    _start(page)
    ids = _loop_ids(page)
    page.get_by_role("button", name="Finish and grade").click()
    items = page.locator(".practice-mock-grade-list > li")
    for box in items.nth(0).locator(".practice-mock-must input").all():
        box.check()
    page.get_by_role("button", name="Show the score sheet").click()
    page.locator(".practice-mock-sheet").wait_for(state="visible")
    store = page.evaluate("JSON.parse(localStorage.getItem('htw-practice-v1'))")
    assert set(ids) <= set(store["grades"])
    assert all(store["grades"][ids[0]]) and not any(store["grades"][ids[1]])
    # Back in practice mode, "Review my weak ones" holds the loop's failed questions, not the passed one.
    page.get_by_role("button", name="Back to practice").click()
    page.locator(".practice-progress > summary").click()
    page.get_by_role("button", name="Review my weak ones").click()
    assert f"Question 1 of {len(ids) - 1}" in page.locator(".practice-status").inner_text()
    shown = set()
    for _ in range(len(ids) - 1):
        shown.add(_visible(page).first.get_attribute("data-qid"))
        page.get_by_role("button", name="Next", exact=True).first.click()
    assert shown == set(ids[1:])
    # The card's own self-grade shows the loop's ticks, on this page and on a fresh load of its link.
    # (A goto that changes only the fragment is a same-document navigation: it would not reload the
    # page, and the card then on screen is the last weak one, so the card is named by its id and the
    # fresh load is a real reload.)
    n = len(BANK.get(ids[0]).rubric.must)
    expected = f"Self-grade: {n} of {n} must-haves."
    card = page.locator(f'.practice-deck .practice-q[data-qid="{ids[0]}"] .practice-score')
    assert card.inner_text() == expected
    page.goto(base_url + MODE + f"#q-{ids[0]}", wait_until="load")
    page.reload(wait_until="load")
    _ready(page)
    assert _visible(page).first.get_attribute("data-qid") == ids[0]
    assert _visible(page).first.locator(".practice-score").inner_text() == expected
    assert not watched.console_errors


def test_a_plan_that_cannot_be_filled_says_so_and_minutes_follow_the_plan(watched, base_url):
    page = _open(watched, base_url)
    setup = page.locator("details.practice-mock-setup")
    setup.locator("summary").click()
    assert page.get_by_label("Minutes", exact=True).input_value() == "39"
    page.get_by_label("Design", exact=True).fill("3")
    assert page.get_by_label("Minutes", exact=True).input_value() == str(39 + 2 * 15)
    page.get_by_label("Applied", exact=True).fill("12")
    page.get_by_role("button", name="Start the mock loop").click()
    problem = page.locator(".practice-mock-problem")
    assert problem.is_visible() and "a loop holds at most 12" in problem.inner_text()
    assert "mock" not in page.url and page.locator(".practice-mock-bar").is_hidden()
    page.get_by_label("Applied", exact=True).fill("1")
    page.get_by_label("Fundamentals", exact=True).fill("0")
    page.get_by_label("Deep", exact=True).fill("1")
    page.get_by_role("button", name="Start the mock loop").click()
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.mock === 'run'")
    assert len(_loop_ids(page)) == 5
    assert not watched.console_errors


def test_one_ticked_box_reads_below_senior_and_the_sheet_says_why(watched, base_url):
    """A question with one strong signal: ticking every must-have and that one box, and choosing the
    staff description, reads mid (the signals do not support more), not staff as it used to."""
    one = next(q for q in BANK if len(q.rubric.strong) == 1 and q.level == "fundamentals" and q.kind != "design")
    page = _open(watched, base_url, f"{MODE}#mock&q={one.id}&t=3&p=grade&u=0")
    grade = page.locator(".practice-mock-grade")
    grade.wait_for(state="visible")
    item = grade.locator(".practice-mock-grade-list > li").first
    for box in item.locator(".practice-mock-must input, .practice-mock-strong input").all():
        box.check()
    item.locator(".practice-mock-levels input[type=radio]").last.check()
    page.get_by_role("button", name="Show the score sheet").click()
    row = page.locator(".practice-mock-sheet table").first.locator("tbody tr").first
    assert row.locator("td").nth(6).inner_text() == "mid"
    why = row.locator("td").nth(8).inner_text()
    assert "1 of 1 strong signal" in why and "senior needs two signals" in why
    assert not watched.console_errors and not watched.external_requests


def test_the_loop_survives_a_calculator_task_and_back_under_instant_navigation(watched, base_url):
    """Mid-loop, the reader opens a calculator task's link (Material's instant navigation replaces
    the page without unloading the loop's script) and comes back with Back: the loop is where it
    was, and the calculator page's address was never rewritten by the loop's clock."""
    task = next(q for q in BANK if q.calculator and q.level == "fundamentals")
    other = next(q for q in BANK if q.level == "applied" and not q.calculator)
    page = watched.page
    page.goto(base_url + "/practice/deep/", wait_until="load")
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/deep/'")
    page.evaluate("window.__noReload = 'still here'")
    page.locator(".md-content a", has_text="practice mode").first.click()  # instant navigation to practice mode
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/'")
    _ready(page)
    # A loop whose second question is the calculator task, resumed from its link.
    page.evaluate("h => { location.hash = h; }", f"#mock&q={other.id}.{task.id}&t=20&p=run&u=0&i=0")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.mock === 'run'")
    page.get_by_role("button", name="Next", exact=True).click()
    assert _visible(page).first.get_attribute("data-qid") == task.id
    page.wait_for_timeout(1200)  # the loop's clock writes its place into this page's address
    link = _visible(page).first.locator("a.practice-calc-link")
    link.click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/calculator/'")
    assert page.evaluate("window.__noReload") == "still here", "navigation was not instant"
    page.wait_for_timeout(2500)  # two ticks of the loop's clock, were it still running
    assert "mock" not in page.url, page.url
    page.go_back()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/'")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.mock === 'run'", timeout=10000)
    assert _visible(page).first.get_attribute("data-qid") == task.id
    assert page.locator(".practice-mock-where").inner_text().startswith("Question 2 of 2")
    assert _loop_ids(page) == [other.id, task.id]
    assert not watched.console_errors and not watched.external_requests
