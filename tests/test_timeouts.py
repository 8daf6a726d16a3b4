"""A hanging test fails instead of stalling the suite (pytest-timeout, configured in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_every_test_has_a_time_limit(request):
    assert request.config.pluginmanager.hasplugin("timeout"), "pytest-timeout is in the test extra: pip install -e '.[test]'"
    assert float(request.config.getini("timeout")) == 600


def test_site_tests_and_notebook_cells_get_their_own_limits():
    import importlib.util

    spec = importlib.util.spec_from_file_location("root_conftest", REPO / "conftest.py")
    root = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root)
    assert root.SITE_TEST_TIMEOUT_S > 1800  # beyond the site build's own limit (tests/site/conftest.py)
    assert root.NBVAL_CELL_TIMEOUT_S >= 900  # what nb_execute allows one cell in the site build


@pytest.mark.slow
def test_a_hanging_test_fails(tmp_path):
    (tmp_path / "test_hang.py").write_text(
        "import time, pytest\n\n@pytest.mark.timeout(1)\ndef test_hang():\n    time.sleep(60)\n")
    # Only pytest-timeout is loaded (-p timeout): the other installed plugins (nbval, hypothesis,
    # xdist, ...) have nothing to do here and took most of this test's time to import.
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"} | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "timeout",
                           "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "Timeout" in proc.stdout, proc.stdout[-2000:]
