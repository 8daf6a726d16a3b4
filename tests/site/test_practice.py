"""Practice mode (docs/practice, docs/js/practice) in a real browser.

Practice mode loads its cards from the level pages (so its own page stays small). Covers
the practice for spoken answers too: the timer, progress by level and topic,
"review my weak ones", remembered quick-check answers, Previous/Next under the card, and no
scroll jump when the page loads.

The practice pages are in the nav, so the every-page test in test_browser.py already covers
them for console errors, external requests and axe; these tests drive them like a reader.
"""

from __future__ import annotations

import re

import pytest

from twofour.course.practice import load_bank, page_of

pytestmark = pytest.mark.browser

MODE = "/practice/"
BANK = load_bank()


def _open(watched, base_url: str, path: str):
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path.split("#")[0])
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    return page


def _visible_cards(page):
    return page.locator(".practice-deck .practice-q:not([hidden])")


def test_practice_pages_are_in_the_site(pages):
    for path in ("/practice/", "/practice/fundamentals/", "/practice/applied/", "/practice/deep/", "/practice/neighbours/",
                 "/notebooks/07-the-answer/"):
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
    page.get_by_role("button", name="Next", exact=True).focus()
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
    boxes.nth(1).check()
    card.get_by_label("Your notes (kept in this browser)").fill("add times, then divide")
    assert "2 of" in card.locator(".practice-score").inner_text()

    page.reload(wait_until="load")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    card = _visible_cards(page).first
    assert card.get_attribute("data-qid") == "averaging-mistake"
    boxes = card.locator(".practice-point input[type=checkbox]")
    assert [boxes.nth(i).is_checked() for i in range(boxes.count())][:2] == [True, True]
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

    # A speedup as it is often typed, with the multiplication sign.
    for typed in (f"{expected:.3f}×", f"{expected:.3f} ×"):
        field.fill(typed)
        field.press("Enter")
        assert result.get_attribute("data-verdict") == "right", typed

    field.fill("about one and a half")
    field.press("Enter")
    assert result.get_attribute("data-verdict") == "invalid"
    assert not watched.console_errors and not watched.external_requests


def test_level_page_cards_work_without_practice_mode(watched, base_url):
    page = watched.page
    page.goto(base_url + "/practice/applied/", wait_until="load")
    page.wait_for_function("() => document.querySelector('.practice-q')?.dataset.practiceReady === 'true'")
    applied = [q for q in load_bank().by_level("applied") if page_of(q) == "applied"]
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


def _grade(card, ticks: list[int]):
    card.locator("details.practice-rubric > summary").click()
    boxes = card.locator(".practice-point input[type=checkbox]")
    for i in ticks:
        boxes.nth(i).check()
    return boxes.count()


@pytest.mark.own_page  # a fake clock or a response listener stays on a page
def test_timer_paces_a_spoken_answer_and_says_when_time_is_up(watched, base_url):
    page = watched.page
    page.clock.install()
    page = _open(watched, base_url, MODE)
    timer = page.locator(".practice-timer")
    page.get_by_role("button", name="Start a 30 second timer").click()
    assert timer.get_attribute("data-state") == "running"
    assert timer.locator("[role=timer]").inner_text() in ("0:30", "0:29")
    page.clock.run_for(12_000)
    assert timer.locator("[role=timer]").inner_text() in ("0:18", "0:17")
    page.clock.run_for(20_000)
    assert timer.get_attribute("data-state") == "done"
    announced = page.locator(".practice-announce").inner_text()
    assert "Time is up" in announced
    # The end message names the rubric's disclosure as the card shows it.
    summary = _visible_cards(page).first.locator("details.practice-rubric > summary").inner_text()
    assert f'open "{summary}"' in announced, (announced, summary)
    # Two minutes, stopped early; moving to another question resets the timer.
    page.get_by_role("button", name="Start a 2 minute timer").click()
    assert timer.locator("[role=timer]").inner_text() in ("2:00", "1:59")
    page.get_by_role("button", name="Next", exact=True).click()
    assert timer.get_attribute("data-state") == "idle" and timer.locator("[role=timer]").inner_text() == ""
    assert not watched.console_errors


def test_progress_by_level_and_topic_and_review_my_weak_ones(watched, base_url):
    bank = load_bank()
    page = _open(watched, base_url, MODE + "#q-averaging-mistake")
    summary = page.locator(".practice-progress > summary")
    assert summary.inner_text() == f"Your progress: 0 of {len(bank)} graded, 0 weak"
    review = page.get_by_role("button", name="Review my weak ones")
    card = _visible_cards(page).first
    points = _grade(card, [0])  # one must-have of several: weak (an answer without any one fails)
    assert points >= 2
    assert summary.inner_text() == f"Your progress: 1 of {len(bank)} graded, 1 weak"
    summary.click()
    q = bank.get("averaging-mistake")
    level_row = page.locator(".practice-progress__table").first.locator("tr", has_text=q.level)
    assert level_row.locator("td").all_inner_texts() == [q.level, f"1 / {len(bank.by_level(q.level))}", "1"]
    topics = page.locator(".practice-progress__table").nth(1).locator("tbody tr")
    assert topics.count() == len({x.topic for x in bank})

    page.get_by_role("button", name="Next", exact=True).click()
    assert _visible_cards(page).first.get_attribute("data-qid") != "averaging-mistake"
    review.click()
    assert page.get_by_label("Show", exact=True).input_value() == "weak"
    assert _visible_cards(page).first.get_attribute("data-qid") == "averaging-mistake"
    assert "Question 1 of 1" in page.locator(".practice-status").inner_text()
    # Grading it well takes it off the weak list.
    card = _visible_cards(page).first
    boxes = card.locator(".practice-point input[type=checkbox]")
    for i in range(boxes.count()):
        boxes.nth(i).check()
    assert summary.inner_text().endswith("1 of %d graded, 0 weak" % len(bank))
    page.get_by_label("Show", exact=True).select_option("ungraded")
    assert _visible_cards(page).first.get_attribute("data-qid") != "averaging-mistake"
    assert not watched.console_errors and not watched.external_requests


def test_quick_check_answer_is_remembered_and_counts_as_weak_when_wrong(watched, base_url):
    q = load_bank().get("amdahl-bs1-decode")
    expected = q.quick_check_expected()
    page = _open(watched, base_url, MODE + "#q-amdahl-bs1-decode")
    check = _visible_cards(page).first.locator(".practice-check")
    field = check.get_by_label(re.compile("Your answer"))
    field.fill(f"{expected * 1.5:.3f}")
    field.press("Enter")
    assert check.locator(".practice-check-result").get_attribute("data-verdict") == "wrong"
    summary = page.locator(".practice-progress > summary").inner_text()
    assert summary.startswith("Your progress: 0 of") and summary.endswith("graded, 1 weak"), summary

    page.reload(wait_until="load")
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    check = _visible_cards(page).first.locator(".practice-check")
    assert check.get_by_label(re.compile("Your answer")).input_value() == f"{expected * 1.5:.3f}"
    assert check.locator(".practice-check-result").get_attribute("data-verdict") == "wrong"
    assert check.locator("details.practice-derivation").is_visible()
    # The level pages remember it too: same browser storage.
    page.goto(base_url + f"/practice/{page_of(q)}/", wait_until="load")
    page.wait_for_function("() => document.querySelector('.practice-q')?.dataset.practiceReady === 'true'")
    card = page.locator("#q-amdahl-bs1-decode")
    assert card.locator(".practice-check-result").get_attribute("data-verdict") == "wrong"
    assert not watched.console_errors


def test_previous_and_next_are_also_under_the_card(watched, base_url):
    page = _open(watched, base_url, MODE)
    first = _visible_cards(page).first.get_attribute("data-qid")
    bottom = page.locator(".practice-bottom-nav")
    assert bottom.is_visible()
    card_box = _visible_cards(page).first.bounding_box()
    assert bottom.bounding_box()["y"] > card_box["y"] + card_box["height"] - 1
    page.get_by_role("button", name="Next question").click()
    second = _visible_cards(page).first.get_attribute("data-qid")
    assert second != first and "Question 2 of" in bottom.inner_text()
    assert _visible_cards(page).first.bounding_box()["y"] >= -1, "the new card starts in view"
    page.get_by_role("button", name="Previous question").click()
    assert _visible_cards(page).first.get_attribute("data-qid") == first
    assert not watched.console_errors


@pytest.mark.parametrize("path", [MODE, MODE + "#q-averaging-mistake"])
def test_no_scroll_jump_on_load(watched, base_url, path):
    page = watched.page
    page.goto(base_url + path, wait_until="commit")
    positions = []
    for _ in range(25):  # through the load event and the practice set-up
        positions.append(page.evaluate("window.scrollY"))
        page.wait_for_timeout(80)
    page.wait_for_function("() => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    positions.append(page.evaluate("window.scrollY"))
    assert max(positions) == 0, f"the page scrolled on load: {positions}"
    assert re.search(r"#q-[\w-]+$", page.url), "the question is still named in the URL"


def test_the_rubric_grades_by_must_haves_and_shows_signals_flags_and_levels(watched, base_url):
    page = _open(watched, base_url, MODE + "#q-compute-bound-m")
    card = _visible_cards(page).first
    assert card.get_attribute("data-qid") == "compute-bound-m"
    rubric = card.locator("details.practice-rubric")
    rubric.locator("summary").click()
    must = load_bank().get("compute-bound-m").rubric.must
    assert card.locator(".practice-point input[type=checkbox]").count() == len(must), "one box per must-have"
    for label in ("Strong signals", "Red flags", "What a pass looks like"):
        assert rubric.get_by_text(label, exact=True).is_visible()
    assert rubric.get_by_text("Staff engineer:", exact=False).first.is_visible()
    assert f"0 of {len(must)} must-haves" in card.locator(".practice-score").inner_text()
    ask = card.locator(".practice-check-ask").inner_text()
    assert "in tokens" in ask and "within ±15% of the computed value; accepts 206 tokens" in ask and "graded against" in ask
    assert not watched.console_errors and not watched.external_requests


def test_a_design_question_shows_its_assumptions_and_what_would_change_it(watched, base_url):
    page = _open(watched, base_url, MODE + "#q-would-you-invest")
    card = _visible_cards(page).first
    card.locator("details.practice-rubric > summary").click()
    card.locator("details.practice-answer").locator("summary", has_text="Worked answer").click()
    design = card.locator(".practice-design")
    assert design.get_by_text("Assumptions", exact=True).is_visible()
    assert design.get_by_text("What would change the decision", exact=True).is_visible()
    assert not watched.console_errors


def test_a_count_answer_takes_a_magnitude_suffix(watched, base_url):
    page = watched.page
    page.goto(base_url + "/practice/fundamentals/", wait_until="load")
    card = page.locator("#q-what-is-two-four")
    check = card.locator(".practice-check")
    answer = check.get_by_label(re.compile("Your answer"))
    for typed, verdict in (("4.19M", "right"), ("4.19 M groups", "right"), ("4194304", "right"), ("4.19", "wrong"),
                           ("4.5M", "wrong")):
        answer.fill(typed)
        check.get_by_role("button", name="Check").click()
        assert check.locator(".practice-check-result").get_attribute("data-verdict") == verdict, typed
    assert not watched.console_errors


def test_the_answer_timer_follows_the_questions_kind(watched, base_url):
    page = watched.page
    design = next(q for q in BANK if q.kind == "design")
    concept = next(q for q in BANK if q.kind == "concept")
    for q, short, long in ((concept, "30 s", "2 min"), (design, "5 min", "15 min")):
        # The second address differs only in its fragment: the browser stays on the page and
        # practice mode must switch cards on the hash change (the timer follows the card).
        page.goto(base_url + f"/practice/#q-{q.id}", wait_until="load")
        page.wait_for_function(
            """id => document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true'
                     && document.getElementById(id)?.hidden === false""",
            arg=f"q-{q.id}",
            timeout=5000,
        )
        timer = page.locator(".practice-timer")
        buttons = timer.locator("button[data-seconds]")
        assert [buttons.nth(i).inner_text() for i in range(2)] == [short, long], q.id
        assert buttons.nth(1).get_attribute("aria-label") == f"Start a {long.replace(' min', ' minute').replace(' s', ' second')} timer"
    assert not watched.console_errors


def test_a_fragment_change_shows_the_named_question_at_once_and_clears_a_filter_that_hides_it(watched, base_url):
    """A link to another question on the page (or an edited address) changes only the fragment: the
    named card is on screen when the hashchange has been handled, not after Material happens to
    fetch the page again, and a level filter that would hide it is cleared rather than letting the
    filtered set's first card replace the address."""
    page = _open(watched, base_url, MODE)
    page.get_by_label("Level", exact=True).select_option("deep")
    target = next(q for q in BANK if q.level == "fundamentals")
    after = page.evaluate(
        """id => new Promise(done => {
            window.addEventListener('hashchange', () => setTimeout(() => done({
                shown: [...document.querySelectorAll('.practice-deck .practice-q')].filter(c => !c.hidden).map(c => c.id),
                level: document.querySelector('[data-practice-mode] select').value,
                hash: location.hash}), 0), {once: true});
            location.hash = id;
        })""",
        f"#q-{target.id}",
    )
    assert after == {"shown": [f"q-{target.id}"], "level": "", "hash": f"#q-{target.id}"}
    assert not watched.console_errors


def test_practice_mode_gives_each_card_its_terms_tooltips_back(watched, base_url):
    """A level page keeps a term's tooltip on its first occurrence only; a card in practice mode
    stands alone, so it has the tooltip of every term it uses again, once."""
    page = _open(watched, base_url, MODE)
    cards = page.evaluate(
        """() => {
            const deck = [...document.querySelectorAll('.practice-deck .practice-q')];
            const glossary = new Map();
            for (const a of document.querySelectorAll('.practice-deck abbr[title]')) glossary.set(a.textContent, a.title);
            return deck.map(card => {
                const abbrs = [...card.querySelectorAll('abbr')];
                return {qid: card.dataset.qid, terms: abbrs.length,
                        expected: [...new Set(abbrs.map(a => glossary.get(a.textContent)).filter(Boolean))].sort(),
                        titles: abbrs.filter(a => a.title).map(a => a.title).sort()};
            });
        }"""
    )
    assert len(cards) == len(BANK) and sum(c["terms"] for c in cards) > len(BANK)  # the cards use the glossary
    wrong = [c["qid"] for c in cards if c["titles"] != c["expected"]]
    assert not wrong, f"cards without each of their terms' tooltips exactly once: {wrong[:5]}"
    level = watched.page
    level.goto(base_url + "/practice/deep/", wait_until="load")
    titled = level.evaluate("() => [...document.querySelectorAll('.practice-q abbr[title]')].map(a => a.textContent)")
    assert titled and len(titled) == len(set(titled)), "a level page repeats a term's tooltip"


@pytest.mark.parametrize("fragment", ["#q-%ZZ", "#%", "#q-%E0%A4%A"])
def test_a_malformed_fragment_is_taken_as_written_without_an_error(watched, base_url, fragment):
    """A fragment with a broken %-escape names no question: the page stays where it is, and the
    hashchange handler throws no URIError (on load or when the fragment changes)."""
    # One card shown, and still one half a second later: the hash changes below are handled after
    # the calls that make them return, and the deck may be set up again meanwhile (seen once in CI:
    # no card for a moment after "#q-%E0%A4%A"), so a single look can come too early.
    one_card = """() => {
      const one = document.querySelectorAll('.practice-deck .practice-q:not([hidden])').length === 1
        && document.querySelector('[data-practice-mode]')?.dataset.practiceReady === 'true';
      window.__oneCardSince = one ? (window.__oneCardSince ?? performance.now()) : null;
      return one && performance.now() - window.__oneCardSince > 500;
    }"""
    page = _open(watched, base_url, MODE + fragment)
    page.wait_for_function(one_card, timeout=10_000)
    page.evaluate("f => { window.__oneCardSince = null; location.hash = f; }", fragment.replace("%", "%%", 1))
    page.evaluate("f => { window.__oneCardSince = null; location.hash = f; }", fragment)
    page.wait_for_function(one_card, timeout=10_000)
    assert _visible_cards(page).count() == 1
    assert not watched.console_errors, watched.console_errors


@pytest.mark.own_page  # a fake clock or a response listener stays on a page
def test_practice_mode_weighs_at_most_1_5_mb_in_the_browser_and_cards_keep_their_tags(watched, base_url):
    """Everything practice mode loads (the page, its scripts and styles, every page's cards file),
    the site-wide search index aside (a worker fetches it on every page), stays within 1.5 MB; the
    cards' tags and the way to each number's expression come back in the browser."""
    page = watched.page
    sizes = {}

    def weigh(response):
        try:
            sizes[response.url] = len(response.body())
        except Exception:  # a redirect or an aborted request has no body
            pass

    page.on("response", weigh)
    page = _open(watched, base_url, MODE)
    page.wait_for_timeout(500)
    total = sum(n for url, n in sizes.items() if "search_index" not in url)
    assert total <= 1_500_000, f"practice mode loads {total / 1e6:.2f} MB: {sorted(sizes.items(), key=lambda kv: -kv[1])[:6]}"
    assert any(url.endswith("/cards.html") for url in sizes), "practice mode fetches the cards files, not the pages"
    card = _visible_cards(page).first
    q = BANK.get(card.get_attribute("data-qid"))
    assert card.locator(".practice-meta .practice-tag").count() == 3
    assert q.level in card.locator(".practice-meta").inner_text()
    if q.numbers:
        link = card.locator(".practice-how a")
        assert link.get_attribute("href").endswith(f"/practice/{page_of(q)}/#q-{q.id}")
    assert not watched.console_errors and not watched.external_requests
