"""``make serve``: the site from its newest complete build; no request waits on a build or a notebook.

Three kinds of work run side by side, each in processes of its own:

* **this server**, a threaded static file server over the newest *complete* build, a folder
  ``build/serve/site-N/``. A finished build is swapped in by replacing the one reference that
  each request reads when it starts (:meth:`Site.swap`), so every request is answered from one
  whole build, old or new, and never waits on one being made;
* **builds**: ``mkdocs build`` with ``TWOFOUR_NOTEBOOKS=pending`` (site_hooks/notebooks.py: a
  notebook missing from the cache becomes a page of its code with an "outputs are being
  computed" note, and nothing is executed), each into a fresh folder, one at a time, started
  whenever a watched source or the notebook cache changed since the last one began
  (:class:`Builder`, :class:`Watcher`). With no earlier build to serve (a fresh clone), the
  first is a quick build (``TWOFOUR_BUILD=quick``, site_hooks/quick.py: the API reference, the
  practice questions and the toolkit's wheel left out, each page saying so), and the full build
  follows it at once;
* **the notebooks**: ``site_hooks/nb_execute.py`` run standalone fills ``build/notebook-cache``,
  two kernels at a time, at a lower CPU priority than the server and the builds; each notebook
  that lands there is a change, so a build follows (:class:`NotebookRunner`).

A page open in the browser asks ``/__twofour/page`` once a second whether its own page differs
in the newest build, and reloads if it does (the script is added to each HTML page as it is sent,
so it is never part of a build). Until the first build is done (on a fresh clone, the one wait)
a request gets a short page that reloads itself, with status 503, as does a request for a file
that a quick build left out (the wheel), until the full build has it. A later start serves the
last session's newest build at once, if it was built for the same address, while a fresh one is
made.

    .venv/bin/python scripts/serve.py [--host 127.0.0.1] [--port 8000]

``/__twofour/status`` says what the server is doing (JSON: the build served, whether one is
being made, its notebook pages still computing, whether notebooks are running); tests and
``benchmarks/site_speed.py`` read it.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
STATE_DIR = Path(os.environ.get("TWOFOUR_SERVE_DIR") or ROOT / "build" / "serve")
CACHE_DIR = Path(os.environ.get("TWOFOUR_NB_CACHE") or ROOT / "build" / "notebook-cache")
# What a build reads (mkdocs.yml's docs_dir and its `watch` list), and what a notebook run reads.
SOURCES = ("mkdocs.yml", "docs", "includes", "notebooks", "labs", "site_hooks", "src/twofour")
NOTEBOOK_INPUTS = ("notebooks", "labs", "src/twofour", "site_hooks/nb_execute.py", "site_hooks/kernel_startup.py")
SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints"}
POLL_S = 1.0  # how often the watcher looks for changes, and the open page for a newer build
# The notebooks run below the server and the builds: on 2 cores the page a reader asked for
# comes first, then the build that shows finished outputs, then the kernels.
NOTEBOOK_NICE = 10
MARKER = ".twofour-serve.json"  # written into a build's folder once the build is complete
# The notes site_hooks/notebooks.py's pending_html() writes (tests/site/test_serve.py checks them).
PENDING_NOTE = b'class="admonition info nb-pending"'
FAILED_NOTE = b'class="admonition failure nb-pending"'
# site_hooks/quick.py's note on a page a quick build left for the next, and its list of the
# files it left out (tests/site/test_serve.py checks they are the hook's).
DEFERRED_NOTE = b'class="admonition info nb-deferred"'
DEFERRED_MANIFEST = ".twofour-deferred.json"
PAGE_API, STATUS_API = "/__twofour/page", "/__twofour/status"


def log(message: str) -> None:
    print(f"serve: {message}", flush=True)


# ---- builds --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Build:
    """One complete build: its folder and what each of its HTML pages is."""

    number: int
    directory: Path
    pages: dict[str, str] = field(repr=False)  # "notebooks/x/index.html" -> sha256 of its bytes
    pending: tuple[str, ...] = ()  # pages whose notebook outputs are still being computed
    failed: tuple[str, ...] = ()  # pages whose notebook failed to run
    deferred: tuple[str, ...] = ()  # pages and files a quick build left for the next build

    @classmethod
    def scan(cls, number: int, directory: Path) -> "Build":
        pages, pending, failed, deferred = {}, [], [], []
        for path in sorted(directory.rglob("*.html")):
            data = path.read_bytes()
            key = path.relative_to(directory).as_posix()
            pages[key] = hashlib.sha256(data).hexdigest()[:16]
            if PENDING_NOTE in data:
                pending.append(key)
            elif FAILED_NOTE in data:
                failed.append(key)
            if DEFERRED_NOTE in data:
                deferred.append(key)
        manifest = directory / DEFERRED_MANIFEST
        if manifest.is_file():
            deferred += json.loads(manifest.read_text(encoding="utf-8"))["files"]
        return cls(number, directory, pages, tuple(pending), tuple(failed), tuple(deferred))


def page_key(url_path: str) -> str:
    """The file a URL path is served from, relative to a build.

    >>> page_key("/"), page_key("/notebooks/05-quality/"), page_key("/calculator")
    ('index.html', 'notebooks/05-quality/index.html', 'calculator/index.html')
    >>> page_key("/downloads/twofour-0.1.0-py3-none-any.whl")
    'downloads/twofour-0.1.0-py3-none-any.whl'
    """
    path = urllib.parse.unquote(url_path).lstrip("/")
    if path == "" or path.endswith("/"):
        return path + "index.html"
    return path if Path(path).suffix else path + "/index.html"


class Site:
    """The build being served, the one being made and the notebooks' state, for every thread.

    A request takes :attr:`current` once, when it starts, and serves only from that build;
    :meth:`swap` replaces it in one assignment, so no request sees half of two builds and none
    waits for a build. The folder of the build before the one replaced is deleted then (the
    replaced one stays for the requests that started on it).
    """

    def __init__(self, state_dir: Path, site_url: str):
        self.state_dir = state_dir
        self.site_url = site_url
        self.current: Build | None = None
        self.building: int | None = None  # number of the build being made
        self.last_error: str | None = None  # the last build's failure, until one succeeds
        self.notebooks_running = False
        # Set once the first build of this session is in (or failed), or an earlier one is served:
        # the notebooks start then, so that the first build has the machine to itself.
        self.ready = threading.Event()
        self._lock = threading.Lock()
        self._previous: Build | None = None
        self._numbers = 0

    def next_number(self) -> int:
        with self._lock:
            self._numbers += 1
            return self._numbers

    def swap(self, build: Build) -> None:
        with self._lock:
            older, self._previous, self.current = self._previous, self.current, build
            self.last_error = None
        self.ready.set()
        (build.directory / MARKER).write_text(json.dumps({"site_url": self.site_url}), encoding="utf-8")
        if older is not None:
            shutil.rmtree(older.directory, ignore_errors=True)

    def resume(self) -> None:
        """Serve the newest complete build of an earlier session made for this address, if any;
        delete the rest (unfinished builds, other addresses)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        found = []
        for folder in self.state_dir.glob("site-*"):
            try:
                number, meta = int(folder.name.removeprefix("site-")), json.loads((folder / MARKER).read_text())
            except (ValueError, OSError):
                shutil.rmtree(folder, ignore_errors=True)
                continue
            found.append((number, folder, meta.get("site_url")))
        found.sort()
        self._numbers = found[-1][0] if found else 0
        usable = [f for f in found if f[2] == self.site_url]
        for number, folder, _url in found:
            if not usable or folder != usable[-1][1]:
                shutil.rmtree(folder, ignore_errors=True)
        if usable:
            self.current = Build.scan(usable[-1][0], usable[-1][1])
            self.ready.set()
            log(f"serving build {self.current.number} from the last session while a fresh one is made")

    def status(self) -> dict:
        build = self.current
        return {
            "build": build.number if build else None,
            "building": self.building,
            "pending": list(build.pending) if build else None,
            "failed": list(build.failed) if build else None,
            "deferred": list(build.deferred) if build else None,
            "notebooks_running": self.notebooks_running,
            "last_error": self.last_error,
        }


def mkdocs_build(directory: Path, site_url: str, quick: bool = False) -> str | None:
    """Build the site into ``directory`` without executing a notebook; None, or the error log.

    ``quick``: the quick build (site_hooks/quick.py), which leaves its costliest parts for the next.
    """
    env = {**os.environ, "TWOFOUR_NOTEBOOKS": "pending", "TWOFOUR_SITE_URL": site_url, "NO_MKDOCS_2_WARNING": "1",
           "TWOFOUR_BUILD": "quick" if quick else "full"}
    # In the server's process group: Ctrl-C stops a build too.
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--site-dir", str(directory)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode == 0:
        return None
    return "\n".join(proc.stdout.strip().splitlines()[-30:]) or f"mkdocs build exited {proc.returncode}"


class Worker:
    """A thread that does its job once per :meth:`request`, coalescing the requests that come
    while a job runs into one more run after it (so nothing asked for is lost, nothing doubled)."""

    name = "worker"

    def __init__(self):
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self.runs = 0  # jobs finished (:meth:`wait_runs`)
        self._done = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name=f"twofour-{self.name}", daemon=True)

    def start(self) -> "Worker":
        self._thread.start()
        return self

    def request(self) -> None:
        self._wanted.set()

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()

    def _loop(self) -> None:
        while True:
            self._wanted.wait()
            if self._stop.is_set():
                return
            self._wanted.clear()  # before the job: a change seen during it asks for the next one
            try:
                self.job()
            except Exception as err:  # noqa: BLE001 (the thread must outlive one bad job)
                log(f"{self.name} failed: {type(err).__name__}: {err}")
            with self._done:
                self.runs += 1
                self._done.notify_all()

    def wait_runs(self, count: int, timeout: float | None = None) -> bool:
        """Wait until ``count`` jobs have finished (False if ``timeout`` passed first)."""
        with self._done:
            return self._done.wait_for(lambda: self.runs >= count, timeout)

    def job(self) -> None:
        raise NotImplementedError


class Builder(Worker):
    """Makes a build into a fresh folder and swaps it in when it is complete.

    With ``quick_build``, a build made while nothing is served yet is a quick one, and a full
    build (``build``) is asked for as soon as it is in: the first page comes from the quick build.
    """

    name = "builder"

    def __init__(self, site: Site, build: Callable[[Path], str | None],
                 quick_build: Callable[[Path], str | None] | None = None):
        super().__init__()
        self.site, self.build, self.quick_build = site, build, quick_build

    def job(self) -> None:
        number = self.site.next_number()
        directory = self.site.state_dir / f"site-{number}"
        shutil.rmtree(directory, ignore_errors=True)
        quick = self.quick_build is not None and self.site.current is None
        self.site.building = number
        started = time.monotonic()
        log(f"build {number} started" + (" (quick: the first page comes from it; the full build follows)"
                                         if quick else ""))
        try:
            error = (self.quick_build if quick else self.build)(directory)
            if error is None:
                build = Build.scan(number, directory)
                self.site.swap(build)
                if quick:
                    self.request()  # the full build, next
                log(f"serving build {number} (made in {time.monotonic() - started:.1f} s; "
                    f"{len(build.pending)} notebook page(s) still computing, {len(build.failed)} failed"
                    + (f", {len(build.deferred)} page(s) and file(s) left for the full build)" if build.deferred else ")"))
            else:
                shutil.rmtree(directory, ignore_errors=True)
                self.site.last_error = error
                log(f"build {number} failed; still serving the previous build:\n{error}")
        finally:
            self.site.building = None
            self.site.ready.set()  # failed or not: the notebooks need not wait longer


class NotebookRunner(Worker):
    """Runs ``nb_execute.py`` (every notebook missing from the cache) in a process group of its own,
    once the site is ready (:attr:`Site.ready`): on the 2-core build machine, kernels starting beside
    the quick first build, at their lower priority, made it take about a tenth more CPU and nearly
    twice as long (11 s against 6 to 6.5 s, 2026-12-02): nice gives the build first call on a core,
    but the kernels still take the other one, and the caches and memory the two share."""

    name = "notebooks"

    def __init__(self, site: Site, command: list[str], env: dict):
        super().__init__()
        self.site, self.command, self.env = site, command, env
        self.proc: subprocess.Popen | None = None
        # stop() and the start of the command take turns: a stop that came between the site being
        # ready and the Popen left the runner and its kernels going, in their own session, for
        # ten minutes after the server had exited (seen when `make serve` was stopped at its first page).
        self._starting = threading.Lock()

    def request(self) -> None:
        # From the request on, not from the job's start: waiting for the site is part of the run, and
        # the thread may not have been scheduled yet when a status is read.
        self.site.notebooks_running = True
        super().request()

    def job(self) -> None:
        try:
            while not self.site.ready.wait(0.2):
                if self._stop.is_set():
                    return
            with self._starting:
                if self._stop.is_set():
                    return
                self.proc = subprocess.Popen(self.command, cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
            out, _ = self.proc.communicate()
            ran = [line for line in out.splitlines() if line.startswith("executed ")]
            if self.proc.returncode == 0:
                log(f"notebooks: {len(ran)} executed, the rest were cached")
            elif not self._stop.is_set():
                log(f"notebooks: {len(ran)} executed; some failed, their pages show the error "
                    "(`make site` stops on it)")
        finally:
            # a request during this run: another is coming (a stop also sets _wanted, but ends the loop)
            self.site.notebooks_running = self._wanted.is_set() and not self._stop.is_set()

    def stop(self) -> None:
        super().stop()
        with self._starting:
            proc = self.proc
        if proc is not None and proc.poll() is None:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM a child's process group (the notebook runner and its kernels), then SIGKILL."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def signature(root: Path, entries: tuple[str, ...], suffix: str | None = None) -> frozenset:
    """(path, mtime, size) of every file under ``entries`` (files or folders), optionally by suffix."""
    seen = set()
    for entry in entries:
        top = root / entry
        if top.is_file():
            stat = top.stat()
            seen.add((entry, stat.st_mtime_ns, stat.st_size))
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            for name in files:
                if suffix and not name.endswith(suffix):
                    continue
                path = os.path.join(folder, name)
                try:
                    stat = os.stat(path)
                except FileNotFoundError:
                    continue  # removed while we looked
                seen.add((path, stat.st_mtime_ns, stat.st_size))
    return frozenset(seen)


class Watcher(Worker):
    """Looks for changes every ``POLL_S``: a source change asks for a build (and, for a notebook's
    inputs, a notebook run); a new executed notebook or recorded failure asks for a build."""

    name = "watcher"

    def __init__(self, builder: Worker, notebooks: Worker | None, outputs: tuple[Path, ...], root: Path = ROOT):
        super().__init__()
        self.builder, self.notebooks, self.outputs, self.root = builder, notebooks, outputs, root
        self._last: tuple | None = None

    def start(self) -> "Watcher":
        super().start()
        self.request()  # its one job is the polling loop
        return self

    def _look(self) -> tuple:
        outputs = frozenset().union(*(signature(folder, (".",), ".ipynb") | signature(folder, (".",), ".txt")
                                      for folder in self.outputs if folder.is_dir()))
        return signature(self.root, SOURCES), signature(self.root, NOTEBOOK_INPUTS), outputs

    def check(self) -> None:
        """Look once; ask for what changed since the last look (the first look: everything)."""
        now = self._look()
        sources, inputs, outputs = (True, True, True) if self._last is None else (
            a != b for a, b in zip(now, self._last))
        self._last = now
        if sources or outputs:
            self.builder.request()
        if inputs and self.notebooks is not None:
            self.notebooks.request()

    def job(self) -> None:
        self.check()
        while not self._stop.wait(POLL_S):
            self.check()


# ---- requests ------------------------------------------------------------------------------

# Added before </body> of each page sent: poll for a newer build of this page, then reload.
# `shown` keeps, per path, the page as this tab got it; Material's instant navigation changes
# the path without a reload, and the first poll on a new path records it.
RELOAD_JS = """<script data-twofour-serve>(function () {
  var shown = window.__twofourShown = window.__twofourShown || {};
  if (!(location.pathname in shown)) shown[location.pathname] = "%s";
  if (window.__twofourPolling) return;
  window.__twofourPolling = true;
  function poll() {
    var path = location.pathname;
    fetch("%s?path=" + encodeURIComponent(path), {cache: "no-store"})
      .then(function (r) { return r.json(); })
      .then(function (s) {
        if (!(path in shown)) shown[path] = s.hash;
        else if (s.hash && s.hash !== shown[path]) { location.reload(); return; }
        setTimeout(poll, %d);
      }, function () { setTimeout(poll, %d); });
  }
  setTimeout(poll, %d);
})();</script>"""
STARTING_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="1"><title>Building the site</title></head>
<body style="font-family: sans-serif; margin: 3em"><p>The site is being built for the first time;
this page reloads itself until it is there.</p></body></html>"""
COMING_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Being built</title></head>
<body style="font-family: sans-serif; margin: 3em"><p>This file comes with the site's next build, which
is being made now (the first build left it out to show the site sooner). Try again in a minute.</p></body></html>"""


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the build that was current when the request came, with the reload script in pages."""

    server: "Server"

    def __init__(self, request, client_address, server):
        self.build = server.site.current  # this request's build, whatever is swapped in meanwhile
        directory = self.build.directory if self.build else server.site.state_dir
        super().__init__(request, client_address, server, directory=str(directory))

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass  # one line per request would bury the build and notebook messages

    def end_headers(self):
        self.send_header("Cache-Control", "no-cache")  # a reload must ask again: the build may be new
        if self.build is not None:
            self.send_header("X-Twofour-Build", str(self.build.number))
        super().end_headers()

    def do_GET(self):
        self._respond(body=True)

    def do_HEAD(self):
        self._respond(body=False)

    def _respond(self, body: bool) -> None:
        url = urllib.parse.urlsplit(self.path)
        if url.path == STATUS_API:
            return self._send(200, json.dumps(self.server.site.status()).encode(), "application/json", body)
        if url.path == PAGE_API:
            asked = urllib.parse.parse_qs(url.query).get("path", ["/"])[0]
            pages = self.build.pages if self.build else {}
            answer = {"build": self.build.number if self.build else None, "hash": pages.get(page_key(asked))}
            return self._send(200, json.dumps(answer).encode(), "application/json", body)
        if self.build is None:
            return self._send(503, STARTING_HTML.encode(), "text/html; charset=utf-8", body, {"Retry-After": "1"})
        target = Path(self.translate_path(self.path))
        if target.is_dir() and url.path.endswith("/"):
            target = target / "index.html"
        if target.suffix == ".html" and target.is_file():
            return self._send_page(200, target, body)
        if not target.exists() and page_key(url.path) in self.build.deferred:  # the wheel, in a quick build
            return self._send(503, COMING_HTML.encode(), "text/html; charset=utf-8", body, {"Retry-After": "5"})
        if not target.exists() and (self.build.directory / "404.html").is_file():
            return self._send_page(404, self.build.directory / "404.html", body)
        return super().do_GET() if body else super().do_HEAD()  # files, and a folder's redirect to "/"

    def _send_page(self, status: int, path: Path, body: bool) -> None:
        data = path.read_bytes()
        key = path.relative_to(self.build.directory).as_posix()
        poll_ms = int(POLL_S * 1000)
        extra = RELOAD_JS % (self.build.pages.get(key, ""), PAGE_API, poll_ms, 2 * poll_ms, poll_ms)
        error = self.server.site.last_error
        if error:
            extra += ('<div role="alert" style="position:fixed;bottom:0;left:0;right:0;z-index:10;padding:.5em 1em;'
                      'background:#b00020;color:#fff;font:14px sans-serif;white-space:pre-wrap;max-height:30vh;'
                      'overflow:auto">The last rebuild failed, so this is the build before it. The error:\n'
                      f"{html.escape(error)}</div>")
        data = data.replace(b"</body>", extra.encode() + b"</body>", 1)
        self._send(status, data, "text/html; charset=utf-8", body)

    def _send(self, status: int, data: bytes, kind: str, body: bool, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a slow client never holds the server's exit

    def __init__(self, address, site: Site):
        self.site = site
        super().__init__(address, Handler)


# ---- the command ---------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].strip("`: "))
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    args = parser.parse_args(argv)
    site_url = f"http://{args.host}:{args.port}/"
    try:
        site = Site(STATE_DIR, site_url)
        server = Server((args.host, args.port), site)
    except OSError as err:
        parser.error(f"--port {args.port} on --host {args.host}: cannot listen there ({err.strerror}); "
                     "choose another, e.g. `make serve PORT=8001`")
    site.resume()
    failures = STATE_DIR / "failed"  # this session's notebook failures: a new start tries again
    shutil.rmtree(failures, ignore_errors=True)
    nice = ["nice", "-n", str(NOTEBOOK_NICE)] if shutil.which("nice") else []
    notebooks = NotebookRunner(site, nice + [sys.executable, str(ROOT / "site_hooks" / "nb_execute.py")],
                               {**os.environ, "TWOFOUR_NB_FAILURES": str(failures)})
    # The builds read the same records, so a failed notebook's page shows its error.
    os.environ["TWOFOUR_NB_FAILURES"] = str(failures)
    # With nothing to serve yet, the first build is a quick one (the full build, with the toolkit's
    # wheel, follows it); a later start serves the last build and makes full builds only.
    builder = Builder(site, lambda directory: mkdocs_build(directory, site_url),
                      quick_build=lambda directory: mkdocs_build(directory, site_url, quick=True))
    watcher = Watcher(builder, notebooks, (CACHE_DIR, failures))
    for worker in (builder, notebooks, watcher):
        worker.start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill` stops the children too (finally)
    log(f"http://{args.host}:{args.port}/ (Ctrl-C stops the server, its builds and its notebooks)")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stop_all((watcher, notebooks, builder))
        server.server_close()
    return 0


def stop_all(workers) -> None:
    """Stop each worker in turn, deaf to SIGTERM and SIGINT from here on.

    A stop often brings a second signal: make passes on the TERM it got to the server, which had
    it already from its process group, and a reader presses Ctrl-C twice. Raised in the middle of
    this loop, it skipped the workers after the one being stopped, and the notebook runner, in a
    session of its own, went on with its kernels after the server had exited (seen once in five
    runs stopped at their first page).
    """
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    for worker in workers:
        worker.stop()


if __name__ == "__main__":
    sys.exit(main())
