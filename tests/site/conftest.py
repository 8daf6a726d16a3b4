"""Fixtures for the site tests: one strict build per run, served on 127.0.0.1, and Debian's
chromium driven by Playwright (one browser per test process).

The build goes to a temporary folder (never the repository's site/), and reuses the notebook
execution cache in build/notebook-cache, so an unchanged notebook is not executed again. Under
xdist the controller makes it, once for every worker (tests/site/twofour_site_build.py). Tests
read the built site and never change it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
try:  # the build's command and server, shared with the xdist controller (tests/conftest.py)
    from twofour_site_build import (EMPTY_SEARCH_HEADER, SITE_BUILD_TIMEOUT_S, serve, site_build_command,
                                    site_build_env)
    import page_walk
    from page_walk import is_external
finally:
    sys.path.pop(0)
# Debian's chromium-headless-shell: the same Blink without the full browser around it. A page
# load cost half the CPU of the full `chromium --headless` (benchmarks/README.md), and the browser
# tests open pages for most of their time. TWOFOUR_CHROMIUM runs them in another build.
CHROMIUM = Path(os.environ.get("TWOFOUR_CHROMIUM", "/usr/bin/chromium-headless-shell"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Offline by construction: every host but this machine fails to resolve, in every context
    # (``watched`` also records any request to another host, so a test can assert there was none).
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]


def missing(what: str) -> None:
    """Fail in CI (CI=true), skip elsewhere: a missing tool must never pass CI silently."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(what, pytrace=False)
    pytest.skip(what)


@dataclass(frozen=True)
class Build:
    returncode: int
    log: str
    site: Path
    base_url: str  # where the built site is served, e.g. http://127.0.0.1:40123


def _from_the_controller(config) -> dict | None:
    """Under xdist: where the controller builds and serves the run's one site (tests/conftest.py)."""
    shared = getattr(config, "workerinput", {}).get("twofour_site")
    return json.loads(shared) if shared else None


@pytest.fixture(scope="session")
def build(request, tmp_path_factory):
    """Run ``mkdocs build --strict`` once into a temporary folder and serve it on 127.0.0.1.

    The server's port is chosen first and given to the build as site_url, because Material's
    instant navigation only intercepts links that match the sitemap's host and port.

    Under xdist the controller makes the one build of the run, in the background while the
    unit tests run, and serves it on one port for every worker (tests/conftest.py); a worker's
    first site test waits here for it. Without xdist the build is made here.
    """
    shared = _from_the_controller(request.config)
    if shared is not None:
        done = Path(shared["dir"]) / "result.json"
        deadline = time.monotonic() + SITE_BUILD_TIMEOUT_S + 60
        while not done.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"the controller's site build gave no result in {SITE_BUILD_TIMEOUT_S} s", pytrace=False)
            time.sleep(0.2)
        result = json.loads(done.read_text())
        yield Build(result["returncode"], result["log"], Path(shared["dir"]) / "site", shared["url"])
        return
    site = tmp_path_factory.mktemp("site")
    server = serve(site)
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    proc = subprocess.run(
        site_build_command(site),
        cwd=ROOT,
        env=site_build_env(base_url),
        capture_output=True,
        text=True,
        timeout=SITE_BUILD_TIMEOUT_S,
    )
    yield Build(proc.returncode, proc.stdout + proc.stderr, site, base_url)
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def site(build: Build) -> Path:
    """The built site folder; fails every dependent test if the build failed."""
    if build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed:\n{build.log[-4000:]}", pytrace=False)
    return build.site


@pytest.fixture(scope="session")
def base_url(build: Build, site: Path) -> str:
    return build.base_url


def pages_of(site: Path) -> list[str]:
    """URL paths (``/``, ``/reference/glossary/``, ...) of every page in the sitemap."""
    tree = ET.parse(site / "sitemap.xml")
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    return [urlsplit(loc.text.strip()).path for loc in tree.findall(".//s:loc", ns)]


@pytest.fixture(scope="session")
def pages(site: Path) -> list[str]:
    return pages_of(site)


class Browser:
    """Playwright's browser, whose contexts get an empty search index from the test server unless
    asked for the real one: building the real index is half of what a page load costs, and only
    the tests marked ``search_index`` (search itself, and a few pages as a reader gets them) use it."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def new_context(self, *, real_search_index: bool = False, **kwargs):
        if not real_search_index:
            kwargs["extra_http_headers"] = {EMPTY_SEARCH_HEADER: "empty", **(kwargs.get("extra_http_headers") or {})}
        return self._browser.new_context(**kwargs)

    def __getattr__(self, name):
        return getattr(self._browser, name)


@pytest.fixture(scope="session")
def _chromium():
    if not CHROMIUM.exists():
        missing(
            f"chromium not found at {CHROMIUM}. Install Debian's headless browser with "
            "`apt-get update && apt-get install -y chromium-headless-shell` (or run "
            "scripts/install-chromium.sh as root); Playwright's own browser download does not work here."
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed: run `make setup` (test extra of pyproject.toml)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser(request, _chromium) -> Browser:
    """One chromium per test process; contexts made in a test marked ``search_index`` get the real
    search index by default."""
    wrapped = Browser(_chromium)
    if request.node.get_closest_marker("search_index") is not None:
        wrapped.new_context = functools.partial(wrapped.new_context, real_search_index=True)
    return wrapped


@dataclass
class Watched:
    """A page plus everything it did that a test may want to assert on."""

    page: object
    external_requests: list[str]
    console_errors: list[str]


class _ReaderPage:
    """The page ``watched`` hands from test to test in one test process.

    A page that navigates within the site costs about half the CPU of one opened in a fresh
    context (a new renderer compiles the site's scripts again: benchmarks/README.md), and the site
    tests open hundreds. Between tests the page leaves the site and its storage is cleared; the
    site keeps no other state (no cookies, session storage or IndexedDB).
    """

    def __init__(self, browser: Browser) -> None:
        self.browser, self.page, self.record = browser, None, None

    def take(self) -> Watched:
        if self.page is None:
            context = self.browser.new_context(color_scheme="light", viewport=READER_VIEWPORT)  # see Browser
            context.on("request", lambda request: is_external(request.url) and self.record.external_requests.append(request.url))
            self.page = context.new_page()
            self.page.on("console", lambda msg: msg.type == "error" and self.record.console_errors.append(msg.text))
            self.page.on("pageerror", lambda exc: self.record.console_errors.append(f"uncaught: {exc}"))
        self.record = Watched(page=self.page, external_requests=[], console_errors=[])
        return self.record

    def give_back(self, base_url: str, reusable: bool) -> None:
        page = self.page
        try:
            if reusable and not page.is_closed() and page.url.startswith(base_url):
                page.evaluate("localStorage.clear()")
                page.goto("about:blank")
                page.set_viewport_size(READER_VIEWPORT)
                page.emulate_media(media="screen")
                return
        except Exception:  # a page that cannot be reset is not handed on
            pass
        self.close()

    def close(self) -> None:
        if self.page is not None:
            self.page.context.close()
            self.page = None


READER_VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="session")
def _reader_page(_chromium):
    reader = _ReaderPage(Browser(_chromium))
    yield reader
    reader.close()


@pytest.fixture
def watched(request, browser, base_url, _reader_page) -> Watched:
    """A page (light scheme, 1280 x 900) whose non-local requests are recorded (and fail: CHROMIUM_ARGS).

    One page per test process goes from test to test (``_ReaderPage``), blank and with empty
    storage; a test marked ``own_page`` (it installs a fake clock or a listener, which cannot be
    taken off) or ``search_index`` gets a context of its own, and a failed test's page is not
    handed on. Requests are watched as events, not intercepted: routing every request of a page
    through Python cost a quarter of a page load's CPU.
    """
    if request.node.get_closest_marker("own_page") or request.node.get_closest_marker("search_index"):
        reader = _ReaderPage(browser)
        yield reader.take()
        reader.close()
        return
    yield _reader_page.take()
    failed = any(getattr(request.node, f"rep_{when}", None) is not None and getattr(request.node, f"rep_{when}").failed
                 for when in ("setup", "call"))
    _reader_page.give_back(base_url, reusable=not failed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    setattr(item, f"rep_{call.when}", outcome.get_result())


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core, from the axe-playwright-python wheel (installed from PyPI, never committed)."""
    try:
        from importlib.resources import files

        return (files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")
    except (ImportError, FileNotFoundError):
        missing("axe-core not found: install the test extra (`make setup`), which brings axe-playwright-python")


@pytest.fixture(scope="session")
def desktop_walk(_chromium, base_url, site, pages, axe_source) -> page_walk.Walk:
    """Every page opened once at 1280 px and measured (tests/site/page_walk.py); mark its readers page_walk.DESKTOP_WALK."""
    return page_walk.desktop_walk(Browser(_chromium), base_url, site, pages, axe_source)


@pytest.fixture(scope="session")
def phone_walk(_chromium, base_url, pages) -> page_walk.Walk:
    """Every page opened once on a 390 px phone and measured; mark its readers page_walk.PHONE_WALK."""
    return page_walk.phone_walk(Browser(_chromium), base_url, pages)
