"""`make serve` answers before any notebook has run, and notebook pages fill in by themselves.

From an empty notebook cache (a fresh clone), the server answers; every notebook page shows its
code and an "outputs are being computed" note; the notebooks then run in the background and a page
open in the browser fills in by itself on the live reload. How fast the first page comes (the 15 s
target) is measured by ``benchmarks/site_speed.py`` (``make bench``), not asserted here: wall time
on a shared machine measures the neighbours. The 180 s below is a hang guard.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# One `make serve` for both tests: under xdist they run on the same worker (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("make-serve")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except OSError:
        return 0, ""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    port = _free_port()
    env = {**os.environ, "TWOFOUR_NB_CACHE": str(tmp / "cache"), "TWOFOUR_NB_WORKERS": "1"}
    log = (tmp / "serve.log").open("w")
    started = time.monotonic()
    # -o: the target's own command, never `make setup` (a test leaves its environment alone).
    proc = subprocess.Popen(["make", "-o", ".venv/.setup-done", "serve", "HOST=127.0.0.1", f"PORT={port}"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    answered = False
    while time.monotonic() - started < 180 and proc.poll() is None:  # a hang guard, not a target
        if _get(base + "/")[0] == 200:
            answered = True
            break
        time.sleep(0.2)
    try:
        yield base, answered, tmp / "serve.log"
    finally:
        try:  # the server and the notebook kernels it started: one process group
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_make_serve_answers_from_an_empty_notebook_cache(served):
    base, answered, log = served
    status, home = _get(base + "/")
    assert answered and status == 200 and "Half the Weights" in home, "make serve never answered:\n" + log.read_text()[-3000:]


def test_notebook_pages_say_outputs_are_coming_then_fill_in_on_live_reload(served, browser):
    base, answered, log = served
    assert answered
    status, chapter = _get(base + "/notebooks/05-quality/")
    assert status == 200 and "Outputs are being computed" in chapter
    assert "```" not in chapter and 'class="highlight"' in chapter  # the code is there, rendered

    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "/notebooks/00-environment/", wait_until="load")
    if page.locator(".nb-pending").count():  # not computed yet: wait for the live reload
        page.locator(".nb-output").first.wait_for(state="attached", timeout=300_000)
    assert page.locator(".nb-pending").count() == 0
    assert page.locator(".md-content .nb-output").count() > 0
    context.close()
