"""Every lab's exercise notebook and its solutions notebook stay in sync.

Outside the exercise cells (and the title cell, which links the two pages) they must be
identical; exercise cells are stubs (`# YOUR CODE HERE`; a function stub raises
NotImplementedError) in the exercise and real code in the solutions, with the same docstring;
both are committed without outputs.
"""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# exercise notebook, solutions notebook, number of exercise cells
LABS = [
    ("lab1-find-the-broken-groups", "lab1-solutions", 2),
    ("lab2-pack-it-by-hand", "lab2-solutions", 4),
    ("lab3-dispatch-detective", "lab3-solutions", 5),
    ("lab4-find-the-crossover", "lab4-solutions", 6),
    ("lab5-prune-and-recover", "lab5-solutions", 2),
    ("lab6-budget-a-request", "lab6-solutions", 3),
]


def _docstring(source: str) -> str | None:
    parts = source.split('"""')
    return parts[1] if len(parts) > 2 else None


def test_every_lab_is_listed():
    found = sorted(p.stem for p in (ROOT / "labs").glob("lab*.ipynb"))
    assert found == sorted(exercise for exercise, _, _ in LABS)


@pytest.mark.parametrize("exercise, solution, n_exercises", LABS)
def test_exercise_and_solutions_differ_only_in_exercise_cells(exercise, solution, n_exercises):
    ex_path = ROOT / "labs" / f"{exercise}.ipynb"
    sol_path = ROOT / "labs" / "solutions" / f"{solution}.ipynb"
    ex = json.loads(ex_path.read_text())["cells"]
    sol = json.loads(sol_path.read_text())["cells"]
    assert len(ex) == len(sol), "the two notebooks have different numbers of cells"
    found = 0
    for i, (a, b) in enumerate(zip(ex, sol)):
        src_a, src_b = "".join(a["source"]), "".join(b["source"])
        tags = a.get("metadata", {}).get("tags", [])
        assert tags == b.get("metadata", {}).get("tags", []), f"cell {i}: tags differ"
        if "exercise" in tags:
            found += 1
            assert "# YOUR CODE HERE" in src_a and "YOUR CODE HERE" not in src_b, f"cell {i}: stub vs solution"
            if "def " in src_a:  # a function to write: the stub raises until it is written
                assert "raise NotImplementedError" in src_a, f"cell {i}: the stub should raise NotImplementedError"
                assert "NotImplementedError" not in src_b, f"cell {i} of the solutions is still a stub"
            assert _docstring(src_a) == _docstring(src_b), f"cell {i}: docstrings differ"
        elif i > 0:  # the title cells differ (links between the two pages)
            assert src_a == src_b, f"cell {i} differs outside an exercise cell"
        if a["cell_type"] == "code":
            assert a["outputs"] == [] and a["execution_count"] is None, f"{exercise} cell {i} has outputs"
            assert b["outputs"] == [] and b["execution_count"] is None, f"{solution} cell {i} has outputs"
    assert found == n_exercises
