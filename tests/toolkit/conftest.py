"""Toolkit tests read printed reports whole: no COLUMNS.

The root conftest.py gives this process the site kernels' environment (for nbval), and that sets
COLUMNS to the width of the site's output column, to which twofour's reports then fit themselves
(twofour._common.fit). A toolkit test that reads a report line by line must not depend on it, nor
on a COLUMNS a developer's shell exports; tests/toolkit/common/test_fit.py sets it where it tests it.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _whole_report_lines(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
