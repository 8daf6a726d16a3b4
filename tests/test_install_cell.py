"""The set-up cell at the top of every notebook (scripts/install_cell.py) in the three places a
reader runs it: Colab (installs twofour), a kernel that has twofour (does nothing), and a local
Jupyter whose kernel lacks twofour (says exactly what to run, then stops)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import install_cell  # noqa: E402

sys.path.pop(0)


def test_every_notebook_starts_with_the_same_set_up_cell():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "install_cell.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"{proc.stdout}\nrun: .venv/bin/python scripts/install_cell.py"


# Runs the cell in an IPython shell in a fresh process. `situation` sets the stage first:
# a fake google.colab module and a fake %pip that records its arguments, or twofour hidden.
_RUNNER = r"""
import json, sys, types
from IPython.core.interactiveshell import InteractiveShell
situation, source = sys.argv[1], sys.stdin.read()
calls = []
shell = InteractiveShell.instance()
shell.register_magic_function(lambda line: calls.append(line), "line", "pip")
if situation == "colab":
    sys.modules["google"] = types.ModuleType("google")
    sys.modules["google.colab"] = types.ModuleType("google.colab")
elif situation == "no-twofour":
    sys.modules["twofour"] = None  # importlib.util.find_spec("twofour") is then None
result = shell.run_cell(source)
error = type(result.error_in_exec).__name__ if result.error_in_exec else None
print("@@" + json.dumps({"pip": calls, "error": error}))
"""


def _run(situation: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", _RUNNER, situation], input=install_cell.SOURCE,
                          capture_output=True, text=True, timeout=120)
    out = proc.stdout
    result = json.loads(out.rsplit("@@", 1)[1])
    return result, out.rsplit("@@", 1)[0]


@pytest.mark.parametrize("situation", ["colab", "has-twofour", "no-twofour"])
def test_set_up_cell(situation):
    result, printed = _run(situation)
    if situation == "colab":
        assert result["error"] is None and len(result["pip"]) == 1
        assert "twofour @ git+https://github.com/half-the-weights/twofour@main" in result["pip"][0]
        assert "torch" not in result["pip"][0].replace("twofour", "")
    elif situation == "has-twofour":
        assert result == {"pip": [], "error": None} and "twofour" not in printed
    else:
        assert result["pip"] == [] and result["error"] == "ModuleNotFoundError"
        assert "make lab" in printed
        assert '%pip install -q "twofour @ git+https://github.com/half-the-weights/twofour@main"' in printed
