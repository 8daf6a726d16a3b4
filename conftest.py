"""Repository-wide pytest setup for the notebooks that nbval runs (notebooks/, labs/).

Lives at the root (not in tests/) so that `pytest notebooks/` alone gets it too.

1. Kernel environment, the same as the site build's kernels (site_hooks/nb_execute.py):
   headless matplotlib, reproducible hashing, 2 threads per kernel on 2-core machines.
2. nbval is the executor: when every code cell of a notebook has run under nbval without
   error, the outputs nbval collected are written to the site build's notebook cache
   (build/notebook-cache, the same key nb_execute.py uses). `make test` runs nbval on every
   notebook first, so the strict site build that the site tests make afterwards reads the
   cache and no notebook runs twice. A notebook that failed, or had a cell skipped, writes
   nothing: the build then executes it itself and reports the failing cell.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


def _nb_execute():
    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import nb_execute
    finally:
        sys.path.pop(0)
    return nb_execute


# nbval's kernels inherit this process's environment: make it exactly the site build's, so the
# outputs written to the cache are the ones the build would have produced.
os.environ.update(_nb_execute().KERNEL_ENV)


def _is_nbval_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell"


# nbval gives up on a cell when 5 s (here: 300 s; 60 s was still exceeded by lab 5 under a load of 15) pass between two of the kernel's output messages after the
# cell finished, which a busy 2-core machine (several suites at once) can exceed while a kernel
# flushes the output of a long training cell. The cell's own time limit stays nbval's.
NBVAL_OUTPUT_TIMEOUT_S = 300


# pytest-timeout limits (the default, 600 s, is in pyproject.toml). A notebook cell may run as
# long as the site build lets one (nb_execute.CELL_TIMEOUT_S = 900 s); the first site test builds
# the site in its setup, which tests/site/conftest.py itself stops after 1800 s with a clearer
# message than a timeout would give, so the site tests' limit lies beyond that.
NBVAL_CELL_TIMEOUT_S = 900
SITE_TEST_TIMEOUT_S = 2400
_SITE_TESTS = Path(__file__).resolve().parent / "tests" / "site"


def pytest_collection_modifyitems(items):
    _remember_cache_keys(items)
    for item in items:
        if _is_nbval_cell(item):
            item.output_timeout = NBVAL_OUTPUT_TIMEOUT_S
        if item.get_closest_marker("timeout") is not None:
            continue  # a test's own limit wins
        if _is_nbval_cell(item):
            item.add_marker(pytest.mark.timeout(NBVAL_CELL_TIMEOUT_S))
        elif _SITE_TESTS in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.timeout(SITE_TEST_TIMEOUT_S))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if _is_nbval_cell(item):
        report = outcome.get_result()
        if report.failed or report.skipped:
            item.parent._twofour_incomplete = True


def pytest_runtest_teardown(item, nextitem):
    if not _is_nbval_cell(item):
        return
    notebook = item.parent
    if nextitem is not None and nextitem.parent is notebook:
        return  # not the notebook's last cell yet
    if getattr(notebook, "_twofour_incomplete", False):
        return
    _write_to_site_cache(notebook)


def _remember_cache_keys(items) -> None:
    """Each notebook's cache key as collected: if its bytes or the package change before its last
    cell finishes, the key at the end differs and nothing is written (an edit made while the
    suite runs must not store old outputs under the new key)."""
    notebooks = {id(item.parent): item.parent for item in items if _is_nbval_cell(item)}
    if not notebooks:
        return
    nb_execute = _nb_execute()
    digest = nb_execute._package_digest()
    for notebook in notebooks.values():
        notebook._twofour_cache_key = nb_execute.cache_key(Path(str(notebook.fspath)).resolve(), digest)


def _write_to_site_cache(notebook) -> None:
    """Store the notebook with nbval's outputs where the site build looks for executed copies."""
    import nbformat

    nb = notebook.nb
    ran = {id(item.cell): item for item in notebook.session.items if _is_nbval_cell(item) and item.parent is notebook}
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        item = ran.get(id(cell))
        if item is None or item.test_outputs is None:
            return  # a cell did not run under nbval: leave it to the build
        count += 1
        cell.outputs = [nbformat.from_dict(dict(out)) for out in item.test_outputs]
        cell.execution_count = count
        for out in cell.outputs:
            if out.get("output_type") == "execute_result":
                out["execution_count"] = count
    nb_execute = _nb_execute()
    path = Path(str(notebook.fspath)).resolve()
    key = nb_execute.cache_key(path, nb_execute._package_digest())
    if key != getattr(notebook, "_twofour_cache_key", None):
        return  # the notebook or twofour changed while it ran: these outputs may be stale
    out = nb_execute._cache_path(path, key)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".{os.getpid()}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)  # atomic, as in nb_execute
    nb_execute._prune(path, out)
