"""`make serve` answers within seconds of the venv, before any notebook has run (issue 16).

From an empty notebook cache (a fresh clone), the server must answer within 15 s; every
notebook page shows its code and an "outputs are being computed" note; the notebooks then run
in the background and a page open in the browser fills in by itself on the live reload.

The 15 s is wall-clock time on a machine doing nothing else. On a shared machine whose load
is above its core count (several test suites at once), wall time measures the neighbours, so
the test then holds the server's own CPU time to the same 15 s: with the machine to itself,
that is how long the first page would take (the first build is one single-threaded process).
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
FIRST_PAGE_S = 15
# One `make serve` for both tests: under xdist they run on the same worker (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("make-serve")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(group: int) -> float:
    """User + system CPU time of every live process in process group ``group`` (Linux /proc)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # fields after the command: state ppid pgrp ...
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


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
    answered = cpu = None
    load = os.getloadavg()[0]
    while time.monotonic() - started < 180 and proc.poll() is None:
        cpu_now = _cpu_seconds(proc.pid)
        if _get(base + "/")[0] == 200:
            answered, cpu = time.monotonic() - started, cpu_now
            break
        load = max(load, os.getloadavg()[0])
        time.sleep(0.2)
    try:
        yield base, (answered, cpu, load), tmp / "serve.log"
    finally:
        try:  # the server and the notebook kernels it started: one process group
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_make_serve_answers_within_15_s_of_the_venv(served):
    base, (answered, cpu, load), log = served
    assert answered is not None, "make serve never answered:\n" + log.read_text()[-3000:]
    cores = os.cpu_count() or 1
    if answered <= FIRST_PAGE_S:
        return
    assert load > cores, (
        f"first page after {answered:.1f}s (goal: {FIRST_PAGE_S}s) on a machine that was not overloaded "
        f"(load {load:.1f}, {cores} cores; the server used {cpu:.1f}s of CPU)"
    )
    assert cpu <= FIRST_PAGE_S, (
        f"first page after {answered:.1f}s wall, {cpu:.1f}s of the server's own CPU time (goal: {FIRST_PAGE_S}s; "
        f"load {load:.1f} on {cores} cores)"
    )


def test_notebook_pages_say_outputs_are_coming_then_fill_in_on_live_reload(served, browser):
    base, (answered, _, _), log = served
    assert answered is not None
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
