"""What a learner sees in Jupyter when running a lab (issue 16): a wrong answer shows a short hint,
not a traceback through the checker; an untouched exercise prints "not done yet" and nothing else.

Runs lab 1 in a real kernel (the site build's kernel set-up), as Jupyter or Colab would.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from twofour.course.labs._common import MAX_HINT_LINES

ROOT = Path(__file__).resolve().parents[3]
LAB1 = ROOT / "labs" / "lab1-find-the-broken-groups.ipynb"

# One run of the lab for both tests: under xdist they stay on one worker (--dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("lab1-feedback")]


def _kernel_env() -> dict:
    sys.path.insert(0, str(ROOT / "site_hooks"))
    try:
        import nb_execute
    finally:
        sys.path.pop(0)
    return {**os.environ, **nb_execute.KERNEL_ENV}


def _cell_index(nb, text: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source)


@pytest.fixture(scope="module")
def lab1_run():
    """Lab 1 with exercise 1 answered wrongly (groups along the wrong dimension) and exercise 2 untouched."""
    nb = nbformat.read(LAB1, as_version=4)
    exercise = _cell_index(nb, "def find_bad_groups")
    nb.cells[exercise].source = (
        "def find_bad_groups(W):\n"
        "    N, K = W.shape\n"
        "    per_group = (W != 0).T.reshape(K, N // 4, 4).sum(-1)  # along N: the classic mistake\n"
        "    return [tuple(p) for p in (per_group > 2).nonzero().tolist()]\n"
    )
    client = NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(LAB1.parent)}})
    client.execute(env=_kernel_env())
    return nb


def test_a_wrong_answer_shows_a_short_hint_and_no_traceback(lab1_run):
    nb = lab1_run
    outputs = nb.cells[_cell_index(nb, "check_find_bad_groups(find_bad_groups)")].outputs
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1, outputs
    shown = "\n".join(errors[0].traceback)
    lines = shown.splitlines()
    assert 1 <= len(lines) <= MAX_HINT_LINES, shown
    assert "not right yet" in shown and "find_bad_groups" in shown
    for leak in ("Traceback", "File ", ".py", "raise ", "twofour/course/labs", "---->"):
        assert leak not in shown, f"{leak!r} in what the learner sees:\n{shown}"
    assert [o for o in outputs if o.output_type != "error"] == [], "nothing but the hint"


def test_an_untouched_exercise_prints_not_done_yet_and_nothing_else(lab1_run):
    nb = lab1_run
    outputs = nb.cells[_cell_index(nb, "check_prune_2to4(prune_2to4)")].outputs
    assert [o.output_type for o in outputs] == ["stream"], outputs
    assert outputs[0].text.startswith("not done yet:") and outputs[0].text.count("\n") <= 2
