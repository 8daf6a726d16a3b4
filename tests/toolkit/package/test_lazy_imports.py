"""What a cheap import stays cheap of: ``make serve``'s quick first build reads tables of numbers.

``import twofour`` re-exports its core names lazily (``twofour._common.lazy``), so it does not
import PyTorch until a name that needs it is read; the site's practice hook reads the bank's
levels and topics without the expression registry (PyTorch and most of the toolkit); and the
decode-loss numbers the home page and chapter 7 quote (``twofour.course.decode_loss``) never
import matplotlib.
Each check runs in a fresh interpreter: this test session has imported both long ago.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _modules_after(code: str) -> set[str]:
    """The top-level packages in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "site_hooks")])}
    probe = code + "\nimport sys\nprint(' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("code", [
    "import twofour",
    "import twofour.course.practice as p; p.LEVELS, p.TOPICS",
    "import practice",  # the site hook itself, as mkdocs loads it (site_hooks/ on the path)
], ids=["twofour", "practice-terms", "practice-hook"])
def test_reading_names_and_tables_does_not_import_torch(code):
    assert "torch" not in _modules_after(code)


@pytest.mark.slow  # its probe imports torch in a fresh interpreter (3 to 5 s of CPU)
def test_the_decode_loss_numbers_do_not_import_matplotlib():
    loaded = _modules_after("import twofour; twofour.prune; from twofour.course.decode_loss import "
                            "decode_loss_explanation, step_against_graphs; decode_loss_explanation(); step_against_graphs()")
    assert "twofour" in loaded  # the probe ran
    assert "torch" in loaded  # a name read imports what it needs, and the probe sees it: the tests above would catch it
    assert "matplotlib" not in loaded


@pytest.mark.parametrize("package", ["twofour", "twofour.course.practice"])
def test_every_lazily_exported_name_resolves_and_is_listed(package):
    import importlib

    module = importlib.import_module(package)
    for name in module.__all__:
        assert name in dir(module), name
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        getattr(module, "no_such_name")


def test_reading_a_notebook_does_not_build_an_iri_grammar():
    """``make setup`` removes rfc3987-syntax (see the Makefile): jsonschema imports it whenever it is
    installed and compiles an Earley grammar on the spot, 2.2 s of CPU in every process that reads a
    notebook (nbformat) or a twofour JSON file; nothing here checks the "iri" format it serves."""
    loaded = _modules_after("import nbformat, jsonschema; import twofour._common.jsonfile")
    assert "jsonschema" in loaded and "nbformat" in loaded  # the probe ran
    assert "rfc3987_syntax" not in loaded, "rfc3987-syntax is installed: run `make setup` (it removes it)"
    assert "lark" not in loaded
