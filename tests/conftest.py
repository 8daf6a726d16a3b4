"""Generic pytest setup shared by every test module. Keep topic-specific fixtures next to
their tests (e.g. tests/site/conftest.py); add only markers and fixtures everyone needs here.

Under xdist (`make test` runs `pytest -n 2 tests`), the controller also owns the one strict
site build of the run (``SharedSiteBuild`` in tests/site/twofour_site_build.py): it starts the build in the background as
soon as the workers have collected a site test, and serves it on one port for every worker,
so the site tests of both workers share one build and one server and the unit tests run while
it builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no CUDA GPU is visible, with the reason in the report.

    Order: the unit tests, then the site tests (their build is made while the unit tests run);
    in each part the tests marked ``slow`` first, so that xdist's workers do not end on one long
    test while the other waits. The sort is stable: pytest's order stays within each part.
    """
    is_site_test = _site_build_module().is_site_test
    items.sort(key=lambda item: (is_site_test(item.nodeid), item.get_closest_marker("slow") is None))
    if getattr(config.option, "loadgroup", False):
        _keep_xdist_groups(items)
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _keep_xdist_groups(items: list[pytest.Item]) -> None:
    """``--dist loadgroup`` on pytest >= 9.2: put the ``@group`` suffix on the node id again.

    xdist tells its controller a test's group by appending ``@name`` to the node id it sends; it
    writes ``item._nodeid``, which pytest 9.2's structured node ids no longer read, so every
    group was scattered (pytest-dev/pytest-xdist#1386; the pending fix, #1388, writes the
    structured id as done here). Without this, the tests sharing one ``make serve`` or one run
    of a lab each started their own on both workers.
    """
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own suffix works
        return
    for item in items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})
        if groups and not item.nodeid.endswith("@" + "_".join(groups)):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


# ---------------------------------------------------------------------------------------------
# One site build per run under xdist


def _site_build_module():
    """tests/site/twofour_site_build.py, the same module object the site tests' conftest uses."""
    sys.path.insert(0, str(ROOT / "tests" / "site"))
    try:
        import twofour_site_build
    finally:
        sys.path.pop(0)
    return twofour_site_build


def pytest_configure(config: pytest.Config) -> None:
    is_controller = not hasattr(config, "workerinput")
    if is_controller and config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None):
        config.pluginmanager.register(_site_build_module().SharedSiteBuild(), "twofour-shared-site")


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.pluginmanager.get_plugin("twofour-shared-site")
    if shared is not None:
        shared.close()
