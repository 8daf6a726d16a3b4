"""The algorithm sweep's control flow, rehearsed on the CPU: every accepted alg_id, both call paths, the search's ID."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from twofour.bench import recorded_alg_search
from twofour.bench.algsweep import PATHS, RehearsalCase, accepted_alg_ids, sweep_case

ROOT = Path(__file__).resolve().parents[3]


def _library(n_accepted):
    calls = []

    def accepts(alg):
        calls.append(alg)
        if alg >= n_accepted:
            raise RuntimeError("CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value")

    return accepts, calls


@pytest.mark.parametrize("n", [1, 8, 23, 40])
def test_ids_are_tried_upward_until_the_library_refuses_one(n):
    accepts, calls = _library(n)
    ids, why = accepted_alg_ids(accepts)
    assert ids == list(range(n)) and calls == list(range(n + 1))  # no maximum assumed, one refusal asked
    assert why.startswith(f"alg_id {n} refused: RuntimeError")


def test_a_library_that_never_refuses_stops_at_the_guard_and_says_so():
    ids, why = accepted_alg_ids(lambda alg: None, guard=12)
    assert ids == list(range(12)) and "no refusal up to the loop guard (12 IDs)" in why
    with pytest.raises(ValueError, match="guard must be an int >= 1"):
        accepted_alg_ids(lambda alg: None, guard=0)


def test_a_refusal_of_id_0_gives_no_ids():
    ids, why = accepted_alg_ids(_library(0)[0])
    assert ids == [] and why.startswith("alg_id 0 refused")


def test_every_accepted_id_is_timed_on_both_paths_with_kernel_names_and_the_search_id_too():
    case = sweep_case(RehearsalCase(accepts=3, search_id=9), repeats=2)
    assert case["accepted_alg_ids"] == [0, 1, 2]
    timed = {(c["path"], c["alg_id"]) for c in case["configs"] if "ms" in c}
    assert timed == {(p, a) for p in PATHS for a in (0, 1, 2, 9)}  # 9: the search's ID, outside the accepted run
    assert case["search_alg_id"] == 9 and case["search_timed"]
    assert all(c["kernels"] for c in case["configs"]) and case["dense_kernels"]
    assert set(case["best"]) == set(PATHS) and all(case["best"][p]["path"] == p for p in PATHS)


def test_a_search_inside_the_run_is_not_timed_twice_and_a_missing_search_is_recorded():
    case = sweep_case(RehearsalCase(accepts=4, search_id=2), repeats=1)
    assert len(case["configs"]) == 4 * len(PATHS)
    none = sweep_case(RehearsalCase(accepts=2, search_id=None), repeats=1)
    assert none["search_alg_id"].startswith("RuntimeError") and not none["search_timed"]


def test_a_path_that_fails_records_its_errors_and_has_no_best():
    case = sweep_case(RehearsalCase(accepts=2, fail_path="F.linear"), repeats=1)
    lin = [c for c in case["configs"] if c["path"] == "F.linear"]
    assert lin and all("error" in c and "ms" not in c for c in lin)
    assert case["best"]["F.linear"] is None and case["best"]["_cslt_sparse_mm"] is not None


def test_a_result_that_differs_from_dense_is_never_the_best():
    class Wrong(RehearsalCase):
        def copies(self, path, alg_id):
            fn = super().copies(path, alg_id)[0]
            return [(lambda: fn() * 2) if alg_id == 1 else fn]

    case = sweep_case(Wrong(accepts=3), repeats=1)
    assert all(case["best"][p]["alg_id"] != 1 for p in PATHS)
    assert any(c["alg_id"] == 1 and c["rel_err"] > 0.5 for c in case["configs"])


def test_the_scripts_rehearsal_writes_a_file_the_reader_takes(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gpu_measure
    finally:
        sys.path.pop(0)
    gpu_measure.alg_search(tmp_path, rehearse=True)
    written = json.loads((tmp_path / "cslt-algsearch-rehearsal.json").read_text())
    assert written["schema"] == "twofour-cslt-algsearch/3" and written["rehearsal"] is True
    assert {c["dtype"] for c in written["cases"]} == {"float16", "bfloat16"}
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(tmp_path / "cslt-algsearch-rehearsal.json", data / "cslt-algsearch-rehearsal.json")
    cases = recorded_alg_search(data)
    assert len(cases) == 2 and all(c["call_path"] == "_cslt_sparse_mm" and set(c["best_by_path"]) == set(PATHS)
                                   for c in cases)
    assert all(c["searched_alg_ids_timed"] for c in cases)


def test_the_recorded_sweep_reads_as_it_was():
    """The H200 sweep of 2026-11-30 (schema /1): direct calls only, IDs 0-7, the search's IDs mostly never timed."""
    cases = recorded_alg_search()
    assert {c["call_path"] for c in cases} == {"_cslt_sparse_mm"}
    assert sorted({c["alg_id"] for case in cases for c in case["configs"] if "ms" in c}) == list(range(8))
    assert sum(not c["searched_alg_ids_timed"] for c in cases) == 14 and len(cases) == 16
