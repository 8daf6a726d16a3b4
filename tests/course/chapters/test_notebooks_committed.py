"""Every chapter and lab notebook is committed clean and ready for Colab.

* no outputs, no execution counts (outputs are produced when the site is built);
* the first code cell is the set-up cell (scripts/install_cell.py), hidden on the site, that
  installs twofour only where the kernel lacks it and never installs torch (Colab's own CUDA
  build must stay);
* notebooks that use the device helper (GPU notebooks) ask Colab for a GPU runtime.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted(
    p
    for folder in ("notebooks", "labs")
    for p in (ROOT / folder).rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts
)
IDS = [p.relative_to(ROOT).as_posix() for p in NOTEBOOKS]


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_there_are_notebooks():
    assert "notebooks/00-environment.ipynb" in IDS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_committed_without_outputs(path):
    dirty = [
        i
        for i, cell in enumerate(_load(path)["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, (
        f"{path.name}: cells {dirty} have outputs or execution counts; clear them "
        "(Jupyter: Edit > Clear Outputs of All Cells; or `jupyter nbconvert --clear-output --inplace`)"
    )


def check_install_cell(nb: dict) -> list[str]:
    """Problems with a notebook's first code cell (empty list when it is right)."""
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    if not code:
        return ["no code cells"]
    first, src = code[0], _source(code[0])
    problems = []
    if "hide-on-site" not in first.get("metadata", {}).get("tags", []):
        problems.append("first code cell is not tagged hide-on-site")
    if not re.search(r"""^if\s+importlib\.util\.find_spec\(["']twofour["']\)\s+is\s+None\s*:""", src, re.M):
        problems.append('first code cell does not guard on `importlib.util.find_spec("twofour") is None`')
    installs = re.findall(r"^\s*[%!]\s*pip install (.+)$", src, re.M)
    if not any("twofour" in line for line in installs):
        problems.append("first code cell does not `%pip install` twofour")
    if any(re.search(r"(^|\s)[\"']?torch([=<>~\s\"']|$)", line) for line in installs):
        problems.append("first code cell installs torch; it must keep Colab's preinstalled torch")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_first_code_cell_is_the_set_up_cell(path):
    assert check_install_cell(_load(path)) == []


def test_install_cell_check_rejects_a_torch_install():
    nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["hide-on-site"]}, "source":
          'import importlib.util\nif importlib.util.find_spec("twofour") is None:\n    %pip install torch twofour\n'}]}
    assert check_install_cell(nb) == ["first code cell installs torch; it must keep Colab's preinstalled torch"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_gpu_notebooks_request_a_colab_gpu(path):
    nb = _load(path)
    uses_gpu = any("pick_device" in _source(c) or "environment(" in _source(c) for c in nb["cells"] if c["cell_type"] == "code")
    if not uses_gpu:
        pytest.skip("does not use twofour.device: not a GPU notebook")
    meta = nb.get("metadata", {})
    assert meta.get("accelerator") == "GPU", f"{path.name}: set metadata.accelerator = 'GPU' for Colab"
    assert meta.get("colab", {}).get("gpuType"), f"{path.name}: set metadata.colab.gpuType (e.g. 'T4', 'L4', 'A100')"
