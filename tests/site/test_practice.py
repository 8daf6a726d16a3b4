"""Practice mode (docs/practice, docs/js/practice) in a real browser.

The practice pages are in the nav, so the every-page test in test_browser.py already covers
them for console errors, external requests and axe; these tests drive them like a reader.
"""

from __future__ import annotations

import re

import pytest

from twofour.course.practice import load_bank

pytestmark = pytest.mark.browser

MODE = "/practice/"


def _open(watched, base_url: str, path: str):
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path.split("#")[0])
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    return page


def _visible_cards(page):
    return page.locator(".practice-deck .practice-q:not([hidden])")


def test_practice_pages_are_in_the_site(pages):
    for path in ("/practice/", "/practice/fundamentals/", "/practice/applied/", "/practice/deep/", "/notebooks/07-the-answer/"):
        assert path in pages


def test_mode_shows_one_question_and_reveals_rubric_then_answer(watched, base_url):
    page = _open(watched, base_url, MODE)
    cards = _visible_cards(page)
    assert cards.count() == 1
    card = cards.first
    qid = card.get_attribute("data-qid")
    assert page.url.endswith(f"#q-{qid}")
    answer = card.locator("details.practice-answer")
    assert answer.is_hidden(), "the worked answer must wait for the rubric"
    card.locator("details.practice-rubric > summary").click()
    assert card.locator(".practice-point input[type=checkbox]").first.is_visible()
    answer.wait_for(state="visible")
    answer.locator("summary", has_text="Worked answer").click()  # its own summary, not the nested signals
    assert answer.locator("table").first.is_visible()  # the numbers table, computed at build time
    # Next moves to another question, keyboard-usable buttons.
    page.get_by_role("button", name="Next").focus()
    page.keyboard.press("Enter")
    assert _visible_cards(page).count() == 1
    assert _visible_cards(page).first.get_attribute("data-qid") != qid
    assert not watched.console_errors and not watched.external_requests


def test_level_filter_and_random_stay_within_the_level(watched, base_url):
    page = _open(watched, base_url, MODE)
    page.get_by_label("Level", exact=True).select_option("deep")
    deep = {q.id for q in load_bank().by_level("deep")}
    for _ in range(4):
        assert _visible_cards(page).first.get_attribute("data-qid") in deep
        page.get_by_role("button", name="Random question").click()
    assert re.search(r"Question \d+ of %d" % len(deep), page.locator(".practice-status").inner_text())


def test_self_grade_and_notes_persist_across_a_reload(watched, base_url):
    page = _open(watched, base_url, MODE + "#q-averaging-mistake")
    card = _visible_cards(page).first
    assert card.get_attribute("data-qid") == "averaging-mistake"
    card.locator("details.practice-rubric > summary").click()
    boxes = card.locator(".practice-point input[type=checkbox]")
    boxes.nth(0).check()
    boxes.nth(2).check()
    card.get_by_label("Your notes (kept in this browser)").fill("add times, then divide")
    assert "2 of" in card.locator(".practice-score").inner_text()

    page.reload(wait_until="load")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    card = _visible_cards(page).first
    assert card.get_attribute("data-qid") == "averaging-mistake"
    boxes = card.locator(".practice-point input[type=checkbox]")
    assert [boxes.nth(i).is_checked() for i in range(boxes.count())][:3] == [True, False, True]
    assert card.get_by_label("Your notes (kept in this browser)").input_value() == "add times, then divide"
    assert "2 of" in card.locator(".practice-score").inner_text()
    assert not watched.console_errors


def test_quick_check_accepts_a_right_answer_and_rejects_a_wrong_one(watched, base_url):
    q = load_bank().get("amdahl-bs1-decode")
    expected = q.quick_check_expected()
    page = _open(watched, base_url, MODE + "#q-amdahl-bs1-decode")
    card = _visible_cards(page).first
    check = card.locator(".practice-check")
    derivation = check.locator("details.practice-derivation")
    assert derivation.is_hidden(), "the derivation comes after an attempt"
    field = check.get_by_label(re.compile("Your answer"))
    result = check.locator(".practice-check-result")

    field.fill(f"{expected * 1.25:.3f}")
    field.press("Enter")
    assert result.get_attribute("data-verdict") == "wrong"
    assert derivation.is_visible()

    field.fill(f"{expected:.3f}x")
    check.get_by_role("button", name="Check").click()
    assert result.get_attribute("data-verdict") == "right"

    field.fill("about one and a half")
    field.press("Enter")
    assert result.get_attribute("data-verdict") == "invalid"
    assert not watched.console_errors and not watched.external_requests


def test_level_page_cards_work_without_practice_mode(watched, base_url):
    page = watched.page
    page.goto(base_url + "/practice/applied/", wait_until="load")
    page.wait_for_function("() => document.querySelector('.practice-q')?.dataset.practiceReady === 'true'")
    applied = load_bank().by_level("applied")
    assert page.locator(".practice-q").count() == len(applied)
    assert page.locator(".practice-q:not([hidden])").count() == len(applied)  # all shown, none gated
    assert not watched.console_errors and not watched.external_requests


def test_practice_mode_survives_instant_navigation(watched, base_url):
    page = watched.page
    page.goto(base_url + "/practice/fundamentals/", wait_until="load")
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/fundamentals/'")
    page.evaluate("window.__noReload = 'still here'")
    page.locator(".md-content a", has_text="practice mode").first.click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/practice/'")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    assert page.evaluate("window.__noReload") == "still here", "navigation was not instant"
    assert _visible_cards(page).count() == 1
    assert page.locator(".practice-bar").count() == 1  # set up once, not twice
    assert not watched.console_errors and not watched.external_requests


def test_grader_signals_sit_inside_the_worked_answer(watched, base_url):
    page = _open(watched, base_url, MODE + "#q-capacity-at-slo")
    card = _visible_cards(page).first
    assert card.get_attribute("data-qid") == "capacity-at-slo"
    signals = card.locator("details.practice-signals")
    assert signals.is_hidden(), "the grader's signals wait inside the worked answer"
    card.locator("details.practice-rubric > summary").click()
    card.locator("details.practice-answer").locator("summary", has_text="Worked answer").click()
    signals.locator("summary").click()
    for label in ("Strong", "Acceptable", "Weak"):
        assert signals.get_by_text(label, exact=True).is_visible()
    ask = card.locator(".practice-check-ask").inner_text()
    assert "in sequences" in ask and "within ±2% of the computed value" in ask and "graded against" in ask
    assert not watched.console_errors and not watched.external_requests
