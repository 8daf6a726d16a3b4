"""Every example in a docstring of the toolkit runs and prints what it claims."""

import doctest
import importlib
import pkgutil

import pytest

import twofour


def _modules():
    for info in pkgutil.walk_packages(twofour.__path__, prefix="twofour."):
        yield info.name


# Their examples train a small model (seconds each): left out of `make test-fast`.
SLOW = {"twofour.quality.train", "twofour.course.examples"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in ["twofour", *sorted(_modules())]])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name} (run python -m doctest -v)"
