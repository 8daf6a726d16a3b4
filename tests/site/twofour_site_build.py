"""The site build the site tests share: its command, its server, and the xdist controller's
build (one per run, made in the background and served on one port for every worker).

Loaded by tests/conftest.py (the controller's side) and tests/site/conftest.py (the workers'
``build`` fixture) from this folder under one module name, so both see the same objects.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE_TESTS = "tests/site/"
# The build's own limit: a build that takes longer is reported as such, not as a hang.
SITE_BUILD_TIMEOUT_S = 1800


def is_site_test(nodeid: str) -> bool:
    return nodeid.startswith(SITE_TESTS)


def site_build_command(site_dir: Path) -> list[str]:
    return [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]


def site_build_env(base_url: str) -> dict[str, str]:
    # Material's instant navigation only intercepts links whose host and port match the
    # sitemap's, so the build is told where it will be served.
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1", "TWOFOUR_SITE_URL": base_url + "/"}


# A browser context that sends this header gets an empty search index (the site's own search
# configuration, no documents). Material's search worker builds its index from the whole site's
# text on every page load, about half the CPU a page load costs; only the tests about search (and
# a few that load pages as a reader gets them) need the real one (tests/site/conftest.py: the
# ``search_index`` marker).
EMPTY_SEARCH_HEADER = "X-Twofour-Search-Index"
SEARCH_INDEX = "/search/search_index.json"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        if self.headers.get(EMPTY_SEARCH_HEADER) == "empty" and self.path.split("?")[0].endswith(SEARCH_INDEX):
            real = Path(self.translate_path(self.path.split("?")[0]))
            body = _empty_search_index(real, real.stat().st_mtime_ns)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


@functools.lru_cache(maxsize=8)
def _empty_search_index(real: Path, mtime_ns: int) -> bytes:
    """The site's search configuration with no documents (the real index is 1.6 MB of JSON: parsed
    for every page a test opens, it cost the server more CPU than serving the pages)."""
    return json.dumps({"config": json.loads(real.read_text())["config"], "docs": []}).encode()


class QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A browser that closes a connection mid-response (navigating on) is not an error here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(directory: Path) -> http.server.ThreadingHTTPServer:
    """A server for ``directory`` on a free port of 127.0.0.1, answering from a daemon thread."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class SharedSiteBuild:
    """The xdist controller's side: one build, one server, handed to every worker.

    Workers find ``{"dir", "url"}`` in ``config.workerinput["twofour_site"]``; the build writes
    into ``dir/site`` and, when it ends, ``dir/result.json`` (return code and log), which the
    workers' ``build`` fixture waits for (tests/site/conftest.py).
    """

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="twofour-site-"))
        (self.dir / "site").mkdir()
        self.server = serve(self.dir / "site")
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.proc: subprocess.Popen | None = None
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def pytest_configure_node(self, node) -> None:
        node.workerinput["twofour_site"] = json.dumps({"dir": str(self.dir), "url": self.url})

    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        if any(is_site_test(nodeid) for nodeid in ids):
            self.start()

    def start(self) -> None:
        with self.lock:
            if self.thread is not None:
                return
            self.thread = threading.Thread(target=self._build, daemon=True)
            self.thread.start()

    def _build(self) -> None:
        log = self.dir / "build.log"
        with open(log, "w") as out:
            self.proc = subprocess.Popen(site_build_command(self.dir / "site"), cwd=ROOT, env=site_build_env(self.url),
                                         stdout=out, stderr=subprocess.STDOUT, text=True)
            try:
                code, why = self.proc.wait(timeout=SITE_BUILD_TIMEOUT_S), ""
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                code, why = -1, f"\nstopped: the build ran over {SITE_BUILD_TIMEOUT_S} s"
        result = {"returncode": code, "log": log.read_text(errors="replace") + why}
        tmp = self.dir / "result.json.tmp"
        tmp.write_text(json.dumps(result))
        tmp.replace(self.dir / "result.json")  # atomic: a worker never reads half of it

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)


