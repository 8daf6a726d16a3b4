"""The built site in a real browser (Debian's chromium via Playwright), served on 127.0.0.1.

Every page: loads with no console errors, makes zero requests to other hosts, runs the site
script, and has no serious or critical axe-core (WCAG 2 A/AA) violation (the API reference's
pages: its index and its largest page; see :func:`page_walk.axe_checked`). Plus the features a reader
touches: dark mode, search, instant navigation.
"""

from __future__ import annotations

import pytest

import page_walk

pytestmark = pytest.mark.browser


def _open(watched, base_url: str, path: str):
    page = watched.page
    page.goto(base_url + path, wait_until="load")
    # site.js stamps the path on <html> from Material's document$: proves scripts ran.
    page.wait_for_function("p => document.documentElement.dataset.htwPage === p", arg=path)
    return page


def _serious_axe_violations(page, axe_source: str) -> list[str]:
    page.add_script_tag(content=axe_source)  # inline: no request
    return page_walk.serious(page.evaluate(page_walk.AXE_RUN, page_walk.AXE_TAGS))


# The search index each page loads in the walk is the empty one (tests/site/conftest.py): the
# search worker is the same on every page, and the tests marked search_index load the real one.
@pytest.mark.slow
@page_walk.DESKTOP_WALK
def test_every_page_loads_offline_cleanly_and_passes_axe(desktop_walk, site, pages):
    assert "/" in pages and "/notebooks/00-environment/" in pages
    assert set(desktop_walk.seen) == set(pages)
    assert set(desktop_walk.of("axe")) == page_walk.axe_checked(site, pages)
    not_one_h1 = [path for path, n in desktop_walk.of("h1").items() if n != 1]
    assert not not_one_h1, f"pages without exactly one h1: {not_one_h1}"
    assert not desktop_walk.external_requests, f"requests to other hosts: {desktop_walk.external_requests}"
    assert not desktop_walk.console_errors, f"console errors: {desktop_walk.console_errors}"
    failures = [f"{path}: {problem}" for path, problems in desktop_walk.of("axe").items() for problem in problems]
    assert not failures, "accessibility violations:\n" + "\n".join(failures)


@pytest.mark.search_index  # the site as a reader gets it, search index included
@pytest.mark.parametrize("path", ["/", "/notebooks/00-environment/"])
def test_dark_mode_toggle_switches_scheme_and_stays_accessible(watched, base_url, axe_source, path):
    page = _open(watched, base_url, path)
    body = page.locator("body")
    assert body.get_attribute("data-md-color-scheme") == "default"
    light_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.locator('[data-md-component="palette"] label:not([hidden])').first.click()
    assert body.get_attribute("data-md-color-scheme") == "slate"
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != light_bg
    # Material remembers the choice across pages.
    page.reload(wait_until="load")
    assert page.locator("body").get_attribute("data-md-color-scheme") == "slate"
    assert _serious_axe_violations(page, axe_source) == []
    assert not watched.console_errors and not watched.external_requests


@pytest.mark.search_index  # the site as a reader gets it, search index included
def test_search_finds_a_glossary_term(watched, base_url):
    page = _open(watched, base_url, "/")
    page.wait_for_load_state("networkidle")  # the search worker has fetched its index
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially("cuSPARSELt", delay=20)
    results = page.locator(".md-search-result__item")
    results.first.wait_for(state="visible", timeout=15_000)
    assert results.count() >= 2
    links = page.locator(".md-search-result__link").evaluate_all("els => els.map(e => e.href)")
    assert any("reference/sources" in href for href in links), links
    assert not watched.console_errors and not watched.external_requests


@pytest.mark.search_index  # the site as a reader gets it, search index included
def test_instant_navigation_keeps_page_scripts_working(watched, base_url):
    page = _open(watched, base_url, "/")
    page.evaluate("window.__noReload = 'still here'")  # gone if the browser reloads the page
    page.locator(".md-content a[href$='reference/sources/']").first.click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/reference/sources/'")
    assert page.evaluate("window.__noReload") == "still here", "navigation was not instant"
    # The script's set-up ran on the swapped-in content: links to other sites open a new tab.
    external = page.locator(".md-content a[href^='https://github.com']").first
    assert external.get_attribute("target") == "_blank"
    page.go_back()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/'")
    assert page.evaluate("window.__noReload") == "still here"
    page.locator("a.md-tabs__link", has_text="Reference").click()
    page.wait_for_function("document.documentElement.dataset.htwPage === '/reference/glossary/'")
    assert page.evaluate("window.__noReload") == "still here"
    assert not watched.console_errors and not watched.external_requests


@pytest.mark.search_index
def test_only_tests_marked_search_index_build_the_real_one(browser, base_url, request):
    """The browser tests not marked ``search_index`` get an empty index from the test server (see
    tests/site/conftest.py); the tests marked, like this one, get the site's real one."""
    assert request.node.get_closest_marker("search_index") is not None
    sizes = {}
    for real in (True, False):
        context = browser.new_context(real_search_index=real)
        index = context.request.get(base_url + "/search/search_index.json").json()
        context.close()
        sizes[real] = len(index["docs"])
        assert index["config"]["fields"]["title"]["boost"] > 1  # the site's own configuration either way
    assert sizes[False] == 0 and sizes[True] > 100, sizes
    context = browser.new_context()  # this test is marked: the real one by default
    assert len(context.request.get(base_url + "/search/search_index.json").json()["docs"]) == sizes[True]
    context.close()


def test_a_request_to_another_host_is_recorded_and_never_reaches_it(watched, base_url):
    """What the every-page test relies on: a watched page records each request to another host,
    from the page or a worker, and it fails (the browser resolves no host but this machine)."""
    page = _open(watched, base_url, "/")
    outcome = page.evaluate("() => fetch('https://example.com/x.js').then(() => 'reached', () => 'failed')")
    page.evaluate("""() => new Promise((done) => {
        const w = new Worker(URL.createObjectURL(new Blob(
            ["fetch('http://cdn.example.org/y.css').finally(() => postMessage(0))"])));
        w.onmessage = done; })""")
    assert outcome == "failed"
    assert watched.external_requests == ["https://example.com/x.js", "http://cdn.example.org/y.css"]
