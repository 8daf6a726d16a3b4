"""`make mutate`'s configuration names files that exist.

mutmut reads its test selection from pyproject.toml; when a test file moves (the golden-vector
tests did) pytest stops before any mutant is tested, and the run reports nothing. These tests read
the configuration the way scripts/mutate_report.py does, without running mutmut.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import mutate_report  # noqa: E402

sys.path.pop(0)
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]


def test_every_test_file_and_deselected_test_of_the_selection_exists():
    assert mutate_report.missing_test_paths(CONFIG) == []


def test_the_check_finds_a_moved_file_and_a_deselect_of_one():
    moved = {"pytest_add_cli_args_test_selection": [
        "tests/toolkit/structure/test_structure.py", "tests/toolkit/golden/test_golden.py",
        "--deselect", "tests/toolkit/golden/test_golden.py::test_default_writes_hundreds_of_cases", "-k", "not expand"]}
    assert mutate_report.missing_test_paths(moved) == [
        "tests/toolkit/golden/test_golden.py", "tests/toolkit/golden/test_golden.py::test_default_writes_hundreds_of_cases"]


def test_every_mutated_file_exists_and_every_module_the_script_samples_is_mutated():
    assert [p for p in CONFIG["only_mutate"] if not (ROOT / p).is_file()] == []
    assert mutate_report._not_mutated(list(mutate_report.MODULES)) == []


def test_what_the_tests_import_from_outside_the_package_is_copied():
    # test_golden imports scripts/golden.py; mutmut runs the tests from its own copy of the tree
    assert "scripts" in CONFIG["also_copy"]
