"""Repository-wide pytest setup for the notebooks that nbval runs (notebooks/, labs/).

Lives at the root (not in tests/) so that `pytest notebooks/` alone gets it too.

1. Kernel environment, the same as the site build's kernels (site_hooks/nb_execute.py):
   headless matplotlib, reproducible hashing, 2 threads per kernel on 2-core machines.
2. No double execution: a notebook that the site build already executed without error, with
   the same notebook file, the same src/twofour and the same settings, is left out of nbval
   (its executed copy is in build/notebook-cache). `make test` warms that cache first, so
   every notebook runs once; a notebook that failed there has no cached copy and nbval runs
   it, pointing at the failing cell. Set TWOFOUR_NBVAL_ALL=1 to run nbval on everything.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _name, _value in {
    "MPLBACKEND": "Agg",
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
}.items():
    os.environ.setdefault(_name, _value)

ROOT = Path(__file__).resolve().parent


def _nb_execute():
    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import nb_execute
    finally:
        sys.path.pop(0)
    return nb_execute


def pytest_collection_modifyitems(config, items):
    if os.environ.get("TWOFOUR_NBVAL_ALL"):
        return
    cells = [item for item in items if type(item).__name__ == "IPyNbCell"]  # nbval's cell items
    if not cells:
        return
    nb_execute = _nb_execute()
    digest = nb_execute._package_digest()
    done: dict[Path, bool] = {}
    for item in cells:
        path = Path(str(item.fspath)).resolve()
        if path not in done:
            done[path] = nb_execute.cached_copy(path, digest) is not None
    deselected = [item for item in cells if done[Path(str(item.fspath)).resolve()]]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        keep = set(map(id, deselected))
        items[:] = [item for item in items if id(item) not in keep]
        names = sorted(p.relative_to(ROOT).as_posix() for p, ok in done.items() if ok)
        config._twofour_nbval_skipped = names


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    names = getattr(config, "_twofour_nbval_skipped", None)
    if names:
        terminalreporter.write_line(
            f"nbval: {len(names)} notebook(s) not re-run, already executed cleanly with identical "
            "inputs (build/notebook-cache; TWOFOUR_NBVAL_ALL=1 runs them): " + ", ".join(names)
        )


def pytest_sessionfinish(session, exitstatus):
    # `pytest notebooks/` with every notebook already executed cleanly: that is a pass, not
    # pytest's "no tests collected" (exit 5).
    if exitstatus == 5 and getattr(session.config, "_twofour_nbval_skipped", None):
        session.exitstatus = 0
