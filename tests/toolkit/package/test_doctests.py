"""Every example in a docstring of the toolkit runs and prints what it claims."""

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import twofour


def _modules():
    for info in pkgutil.walk_packages(twofour.__path__, prefix="twofour."):
        yield info.name


# Left out of `make test-fast` (seconds each): quality.train's examples train a small model;
# roofline.calibration's run the whole kernel-model fit, as tests/toolkit/roofline/test_calibration.py
# does (it checks the stored fit is what the code fits today); serve's, serve.plan's and
# serve.measure's time decode steps on the CPU under the profiler (3.5 to 4.5 s of CPU each).
SLOW = {"twofour.quality.train", "twofour.roofline.calibration", "twofour.serve", "twofour.serve.plan",
        "twofour.serve.measure"}
# Modules whose doctests a test of their own runs, with stricter options (no ELLIPSIS or
# NORMALIZE_WHITESPACE), so that the seconds their examples take are spent once.
OWN_TEST = {"twofour.course.examples": "tests/course/chapters/test_examples.py"}
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
             for n in ["twofour", *sorted(_modules())] if n not in OWN_TEST])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name} (run python -m doctest -v)"


@pytest.mark.parametrize("name", sorted(OWN_TEST))
def test_the_modules_left_out_have_their_doctests_run_elsewhere(name):
    module = importlib.import_module(name)
    own = (ROOT / OWN_TEST[name]).read_text()
    assert f"doctest.testmod({module.__name__.rsplit('.', 1)[1]})" in own
    assert doctest.DocTestFinder().find(module)  # there are examples to run
