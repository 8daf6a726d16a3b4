"""The set-up cell at the top of every notebook (scripts/install_cell.py) in every place a reader
runs it: a kernel that has twofour (does nothing); a kernel without it, with the site's wheel
named (the copy a site page offers for download), with only the repository (the copy Colab opens
from GitHub), with neither; a kernel without torch or with a torch too old (installs nothing, says
what to run); and a pip that fails. The real install, from a built site into a fresh virtual
environment, is tests/site/test_toolkit_install.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "site_hooks")]
import install_cell  # noqa: E402
import toolkit_wheel  # noqa: E402

del sys.path[:2]

WHEEL = "https://example.org/course/downloads/twofour-0.1.0-py3-none-any.whl"
REPO = "https://github.com/someone/twofour"


def test_every_notebook_starts_with_the_same_set_up_cell():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "install_cell.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\nrun: .venv/bin/python scripts/install_cell.py"


def test_the_cell_carries_the_repository_of_mkdocs_yml(tmp_path):
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(f"site_url: !ENV [X, 'https://a/']\nextra:\n  repo: {REPO}/\n  branch: dev\n")
    assert install_cell.configured_repo(cfg) == (REPO, "dev")
    source = install_cell.cell_source(REPO, "dev")
    assert f'TWOFOUR_REPO = "{REPO}"' in source and "@dev" in source
    cfg.write_text("extra:\n  repo: ''\n")
    assert install_cell.configured_repo(cfg) == ("", "main")
    cfg.write_text("extra: {}\n")
    assert install_cell.configured_repo(cfg) == ("", "main")


@pytest.mark.parametrize("repo, why", [
    ("!ENV [TWOFOUR_REPO_URL, '']", "plain strings"),
    ("https://gitlab.com/someone/twofour", "https://github.com/<owner>/<name>"),
    ("https://github.com/someone", "https://github.com/<owner>/<name>"),
])
def test_a_repository_colab_cannot_open_is_refused(tmp_path, repo, why):
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(f"extra:\n  repo: {repo}\n")
    with pytest.raises(ValueError, match="extra.repo") as err:
        install_cell.configured_repo(cfg)
    assert why in str(err.value)


def test_the_torch_minimum_is_the_package_dependency():
    assert install_cell.torch_minimum() == (2, 3)  # pyproject.toml: "torch>=2.3"
    assert "< (2, 3):" in install_cell.source()


# Runs the cell in an IPython shell in a fresh process. The situation is set up first: a fake
# google.colab module, twofour or torch hidden, an old torch version, and a fake %pip that
# records its arguments and, unless the situation is "pip fails", makes twofour importable again.
_RUNNER = r"""
import importlib.metadata, json, sys, types
from IPython.core.interactiveshell import InteractiveShell
situation, source = json.loads(sys.argv[1]), sys.stdin.read()
calls = []
def fake_pip(line):
    calls.append(line)
    print()  # what a quiet pip still prints under nbclient: blank lines and notes
    print("Note: you may need to restart the kernel to use updated packages.")
    if situation.get("pip_fails"):
        print("ERROR: no such wheel", file=sys.stderr)
    else:
        sys.modules.pop("twofour", None)
shell = InteractiveShell.instance()
shell.register_magic_function(fake_pip, "line", "pip")
if situation.get("colab"):
    sys.modules["google"] = types.ModuleType("google")
    sys.modules["google.colab"] = types.ModuleType("google.colab")
if not situation.get("has_twofour"):
    sys.modules["twofour"] = None  # importlib.util.find_spec("twofour") is then None
if situation.get("no_torch"):
    sys.modules["torch"] = None
if situation.get("torch_version"):
    real = importlib.metadata.version
    importlib.metadata.version = lambda name: situation["torch_version"] if name == "torch" else real(name)
result = shell.run_cell(source)
err = result.error_in_exec
print("@@" + json.dumps({"pip": calls, "error": type(err).__name__ if err else None, "message": str(err) if err else None}))
"""


def _run(source: str, **situation) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(situation)], input=source,
                          capture_output=True, text=True, timeout=120)
    assert "@@" in proc.stdout, proc.stdout + proc.stderr
    printed, result = proc.stdout.rsplit("@@", 1)
    return json.loads(result), printed


def _site_copy(repo: str = "") -> str:
    """The cell as a notebook downloaded from a site has it (site_hooks/notebooks.py's rewrite)."""
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": install_cell.as_lines(install_cell.cell_source(repo))}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    copy = json.loads(toolkit_wheel.with_wheel_url(json.dumps(nb), WHEEL))
    return "".join(copy["cells"][0]["source"])


def test_a_kernel_with_twofour_does_nothing():
    result, printed = _run(install_cell.source(), has_twofour=True)
    assert result == {"pip": [], "error": None, "message": None} and printed == ""


@pytest.mark.parametrize("colab", [False, True], ids=["jupyter", "colab"])
def test_the_site_copy_installs_the_site_wheel_and_keeps_torch(colab):
    result, printed = _run(_site_copy(repo=REPO), colab=colab)
    assert result["error"] is None, result
    assert result["pip"] == [f'install -q "{WHEEL}"'], "the site's wheel comes first, before the repository"
    assert f"Installing twofour from {WHEEL}" in printed and "torch" in printed and "kept" in printed
    assert "Installed twofour" in printed
    # pip's own printing (blank lines, its notes) is kept out of a successful set-up's output
    assert printed.splitlines() == [line for line in printed.splitlines() if line.strip()], repr(printed)
    assert "Note:" not in printed


def test_the_repository_copy_installs_from_the_repository():
    # What Colab opens from GitHub: the committed notebook, whose cell names the repository.
    result, printed = _run(install_cell.cell_source(REPO, "dev"), colab=True)
    assert result["error"] is None, result
    assert result["pip"] == [f'install -q "twofour @ git+{REPO}@dev"']
    assert "torch" not in result["pip"][0].replace("twofour", "")


def _assert_stops(result: dict, error: str, *needles: str) -> None:
    assert result["pip"] == [], "it must stop before pip runs"
    assert result["error"] == error, result
    message = result["message"]
    assert "\n" not in message, "one line"
    for needle in needles:
        assert needle in message, message


def test_no_wheel_and_no_repository_says_where_to_get_it():
    result, _ = _run(install_cell.cell_source(""))
    _assert_stops(result, "ModuleNotFoundError", "download the notebook from the site", "TWOFOUR_WHEEL")


def test_a_kernel_without_torch_gets_no_install_and_the_command_for_one():
    result, _ = _run(_site_copy(), no_torch=True)
    _assert_stops(result, "ModuleNotFoundError", "No module named 'torch'", "several GB",
                  "%pip install torch --index-url https://download.pytorch.org/whl/cpu")


def test_a_torch_older_than_twofour_needs_is_not_replaced_by_pip():
    result, _ = _run(_site_copy(), torch_version="2.1.2+cu121")
    _assert_stops(result, "ImportError", "torch 2.1.2+cu121 is older than twofour needs (>= 2.3)",
                  "%pip install -U torch")
    result, _ = _run(_site_copy(), torch_version="2.13.0+cpu")
    assert result["error"] is None and len(result["pip"]) == 1


def test_a_failed_pip_says_so_in_one_line():
    result, printed = _run(_site_copy(), pip_fails=True)
    assert "Note: you may need to restart" in printed, "pip's own output, held back, is shown when it failed"
    assert result["pip"] == [f'install -q "{WHEEL}"'] and result["error"] == "ModuleNotFoundError"
    assert "still not importable" in result["message"] and "restart the kernel" in result["message"]
    assert "\n" not in result["message"]
