"""Execute notebooks for the site, with a cache so an unchanged notebook runs only once.

The cache key is a hash of the notebook file, every file of the ``twofour`` package and the
execution settings below. Editing a chapter re-runs that chapter; editing the toolkit re-runs
them all (their outputs may have changed); rebuilding or serving the site without changes
runs nothing. Cached notebooks live in ``build/notebook-cache/`` (git-ignored, safe to delete).

The cache is filled from three places, and read only by the site build:

* nbval (``make test`` runs it first): the root ``conftest.py`` writes the outputs nbval
  collected for each notebook that ran cleanly into this cache, under this module's key
  (:func:`cache_key`, :func:`_cache_path`), so the site build that follows reads them and runs
  no notebook twice;
* :func:`execute_notebooks` runs what is still missing and returns when all are done
  (``mkdocs build``, ``make site``: the strict deploy build executes everything and fails on
  any error);
* this module run standalone, which ``make serve`` (``scripts/serve.py``) starts as its own
  process beside the server: each notebook lands in the cache as it finishes, and the server
  rebuilds the site from it. With ``TWOFOUR_NB_FAILURES`` set, a notebook that fails leaves its
  error there (:func:`record_failure`) for its page to show, and is not run again for the same
  sources while that record stays (``make serve`` clears it when it starts).

Run standalone, it fills the cache by hand (all notebooks, or the ones named), e.g. before
``mkdocs build`` on a cold checkout:

    .venv/bin/python site_hooks/nb_execute.py [notebooks/01-structure.ipynb ...]
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
# TWOFOUR_NB_CACHE moves the cache (the serve-time test starts from an empty one).
CACHE_DIR = Path(os.environ.get("TWOFOUR_NB_CACHE") or ROOT / "build" / "notebook-cache")
# Where failed executions leave their error (``make serve`` only; unset: nothing is recorded).
FAILURES_DIR = Path(os.environ["TWOFOUR_NB_FAILURES"]) if os.environ.get("TWOFOUR_NB_FAILURES") else None
PACKAGE_DIR = ROOT / "src" / "twofour"

# Kernel set-up run before a notebook's first cell: inline figures in the house display
# (2x PNG with alt text and caption), so chapters need no `%matplotlib inline` of their own.
KERNEL_STARTUP = Path(__file__).resolve().parent / "kernel_startup.py"
# Kernel environment: headless matplotlib for whatever else inherits it (the startup file
# switches the kernel itself to the inline backend), reproducible hashing, and 2 threads per
# kernel (CI has 2 cores; more threads per kernel only adds contention). Part of the cache key
# (the startup file by its content, not its path).
KERNEL_ENV = {
    "PYTHONSTARTUP": str(KERNEL_STARTUP),
    "MPLBACKEND": "Agg",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # silences a debugger warning on kernel start
    # twofour's printed reports fit this width (twofour._common.fit.SITE_WIDTH): an output column
    # holds 71 characters at 1280 px (tests/site/test_what_a_reader_sees.py measures it), so none scrolls there.
    "COLUMNS": "70",
}
KERNEL_NAME = "python3"
# A cell that gets no answer for this long is taken for a kernel that stopped answering: twice a
# build's chapter 4 (15 s when it runs) waited 15 minutes with the executor and its kernel both
# idle in epoll, once with ipykernel 7 and once with 6.31, never under nbval; cause not found.
# The notebook then runs once more in a new kernel (_execute_in_subprocess), saying so. The
# slowest cell of any notebook takes about 2 minutes on a loaded 2-core machine.
CELL_TIMEOUT_S = int(os.environ.get("TWOFOUR_CELL_TIMEOUT_S", "300"))  # the variable is for tests
_TIMED_OUT = 3  # exit status of `--one` when a cell timed out
# How many kernels run at once on a cold cache. Kernel start-up and imports are mostly
# waiting, so two at a time pays off even on 2 cores.
WORKERS = int(os.environ.get("TWOFOUR_NB_WORKERS", "2"))
KEEP_COPIES = 3  # executed copies kept per notebook (see _prune)
# Bump when the execution settings change in a way the hash above does not see.
CACHE_VERSION = "2"


class NotebookExecutionError(RuntimeError):
    """A notebook cell raised: carries the notebook path and the failing cell's traceback."""


@dataclass(frozen=True)
class Executed:
    path: Path  # the source notebook in the repository
    nb: nbformat.NotebookNode  # with outputs
    from_cache: bool


FOLDERS = ("notebooks", "labs")


def find_notebooks() -> list[Path]:
    """Every notebook the site publishes (notebooks/ and labs/, any depth), in a stable order."""
    found: list[Path] = []
    for folder in FOLDERS:
        found += sorted(
            p for p in (ROOT / folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts
        )
    return found


def _package_digest() -> str:
    """Hash of the twofour sources (and data files) the notebooks import."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(path: Path, package_digest: str) -> str:
    """Key of one notebook's executed copy: notebook bytes + package + settings."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(package_digest.encode())
    env = {k: v for k, v in KERNEL_ENV.items() if k != "PYTHONSTARTUP"}
    digest.update(repr((sorted(env.items()), KERNEL_NAME, CACHE_VERSION)).encode())
    digest.update(KERNEL_STARTUP.read_bytes())
    return digest.hexdigest()[:20]


def _cache_name(path: Path) -> str:
    """Cache file prefix: the repository path, flattened (labs/solutions/x -> labs__solutions__x)."""
    return path.relative_to(ROOT).with_suffix("").as_posix().replace("/", "__")


def _cache_path(path: Path, key: str) -> Path:
    return CACHE_DIR / f"{_cache_name(path)}-{key}.ipynb"


def _execute_here(path: Path, out: Path) -> None:
    """Execute one notebook in this process and write it to ``out`` (the cache)."""
    # Imported here: only the process that runs a notebook needs the kernel client.
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL_NAME,
        timeout=CELL_TIMEOUT_S,
        allow_errors=False,  # a cell tagged "raises-exception" may still raise, on purpose
        resources={"metadata": {"path": str(path.parent)}},  # run where the notebook lives
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # hush start-up warnings in the build log
    )
    try:
        client.execute(env={**os.environ, **KERNEL_ENV})
    except CellTimeoutError as err:
        print(f"{path.relative_to(ROOT)}: {err}", file=sys.stderr)
        sys.exit(_TIMED_OUT)
    except CellExecutionError as err:
        raise NotebookExecutionError(f"{path.relative_to(ROOT)} failed to execute:\n{err}") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)  # atomic: a build killed mid-write never leaves a half notebook behind
    _prune(path, out)


def _prune(path: Path, out: Path, keep: int = KEEP_COPIES) -> None:
    """Drop old executed copies of one notebook so the cache does not grow without bound.

    Keeps the newest few rather than only the latest: two builds running at once from
    slightly different sources (e.g. `make serve` while tests run) must not delete each
    other's fresh results.
    """
    prefix = _cache_name(path) + "-"
    copies = [p for p in out.parent.glob(prefix + "*.ipynb") if len(p.name) == len(out.name)]
    copies.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
    for old in copies[keep:]:
        old.unlink(missing_ok=True)


def _execute_in_subprocess(path: Path, out: Path) -> None:
    # One process per notebook: kernels driven from one process's event loop can hang each
    # other (shared ZMQ state), and a crashed notebook cannot take the build process down.
    for attempt in (1, 2):
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(path), str(out)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != _TIMED_OUT or attempt == 2:
            break
        print(f"nb_execute: {path.relative_to(ROOT)}: a cell got no answer in {CELL_TIMEOUT_S} s; "
              "running the notebook again in a new kernel", file=sys.stderr)
    if proc.returncode != 0:
        raise NotebookExecutionError(proc.stderr.strip()[-6000:] or f"{path} failed (exit {proc.returncode})")


def lookup(paths: list[Path]) -> tuple[dict[Path, Executed], dict[Path, Path]]:
    """Split notebooks into those executed already (read from the cache) and those still to run.

    Returns ``(done, missing)``: ``done`` maps a notebook to its executed copy, ``missing`` maps
    a notebook to the cache file its execution must write.
    """
    package_digest = _package_digest()
    done: dict[Path, Executed] = {}
    missing: dict[Path, Path] = {}
    for path in paths:
        out = _cache_path(path, cache_key(path, package_digest))
        try:  # read hits now: a concurrent build may prune old copies later
            done[path] = Executed(path, nbformat.read(out, as_version=4), True)
        except FileNotFoundError:
            missing[path] = out
    return done, missing


def _failure_path(out: Path, failures: Path | None) -> Path | None:
    return None if failures is None else failures / (out.stem + ".txt")


def record_failure(out: Path, error: str, failures: Path | None = None) -> None:
    """Keep the error of the run that should have written the cache file ``out`` (if recording).

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> out = CACHE_DIR / "notebooks__x-0123.ipynb"
    >>> record_failure(out, "ValueError: boom", folder)
    >>> failure(out, folder)
    'ValueError: boom'
    >>> failure(CACHE_DIR / "notebooks__y-4567.ipynb", folder) is None
    True
    """
    where = _failure_path(out, FAILURES_DIR if failures is None else failures)
    if where is not None:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(error, encoding="utf-8")
        tmp.replace(where)  # the server's watcher never reads half a record


def failure(out: Path, failures: Path | None = None) -> str | None:
    """The recorded error of the run for cache file ``out``, or None (never failed, or not recording)."""
    where = _failure_path(out, FAILURES_DIR if failures is None else failures)
    try:
        return None if where is None else where.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def execute_notebooks(paths: list[Path], *, keep_going: bool = False) -> list[Executed]:
    """Return every notebook executed, from the cache where possible.

    Notebooks missing from the cache run in parallel, ``WORKERS`` at a time. By default the
    first failure stops the rest (a build is failing anyway); ``keep_going=True`` runs them
    all and reports every failure at the end, recording each (:func:`record_failure`) and
    leaving out a notebook whose failure is recorded for the same sources already.

    Raises:
        NotebookExecutionError: naming the notebook(s) and showing the failing cell.
    """
    results, outs = lookup(paths)

    def run(path: Path) -> Executed:
        _execute_in_subprocess(path, outs[path])
        return Executed(path, nbformat.read(outs[path], as_version=4), False)

    errors: list[str] = []
    todo = []
    for path in (p for p in paths if p not in results):
        known = failure(outs[path]) if keep_going else None
        if known is None:
            todo.append(path)
        else:
            errors.append(known)
    with ThreadPoolExecutor(max_workers=max(1, WORKERS)) as pool:
        futures = {path: pool.submit(run, path) for path in todo}
        for path, future in futures.items():
            try:
                results[path] = future.result()
            except NotebookExecutionError as err:
                if not keep_going:
                    pool.shutdown(cancel_futures=True)  # fail fast: do not start the rest
                    raise
                record_failure(outs[path], str(err))
                errors.append(str(err))
    if errors:
        raise NotebookExecutionError("\n\n".join(errors))
    return [results[path] for path in paths]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:  # internal: used by _execute_in_subprocess
        try:
            _execute_here(Path(sys.argv[2]), Path(sys.argv[3]))
        except NotebookExecutionError as err:
            sys.exit(str(err))
    else:  # warm the cache: all published notebooks, or the ones named
        targets = [Path(p).resolve() for p in sys.argv[1:]] or find_notebooks()
        try:
            for item in execute_notebooks(targets, keep_going=True):
                print(("cached   " if item.from_cache else "executed ") + str(item.path.relative_to(ROOT)))
        except NotebookExecutionError as err:
            sys.exit(f"some notebooks failed (nbval and the site build will report them):\n{err}")
