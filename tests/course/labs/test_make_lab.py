"""`make lab` starts JupyterLab from .venv on the labs and chapters (the `lab` extra), headless here."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SETUP_STAMP = ".venv/.setup-done"  # the Makefile's $(STAMP): `make -o` it to skip the setup step
pytestmark = pytest.mark.slow


def test_make_lab_target_exists_and_lab_extra_is_declared():
    proc = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ".venv/bin/jupyter lab" in proc.stdout and "/lab/tree/labs" in proc.stdout
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "lab = [" in pyproject and "jupyterlab" in pyproject
    makefile = (ROOT / "Makefile").read_text()
    assert ".[site,test,lab]" in makefile
    assert "STAMP  := $(VENV)/.setup-done" in makefile and "VENV   := .venv" in makefile  # SETUP_STAMP
    dry = subprocess.run(["make", "-n", "-o", SETUP_STAMP, "lab"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0 and "pip install" not in dry.stdout and ".venv/bin/jupyter lab" in dry.stdout, dry.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except OSError:
        return 0, b""


def test_make_lab_starts_jupyterlab_headless_with_a_twofour_kernel(tmp_path):
    if not (ROOT / ".venv" / "bin" / "jupyter-lab").exists():
        pytest.fail("JupyterLab is not in .venv: `make setup` installs the `lab` extra", pytrace=False)
    port, token = _free_port(), "twofour-test"
    args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token} --ServerApp.port_retries=0"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config")}
    log = (tmp_path / "lab.log").open("w")
    # -o: the target's own command, never `make setup` (which reinstalls .venv when pyproject.toml
    # is newer than its stamp, e.g. in a fresh clone sharing a venv): a test leaves its environment alone.
    proc = subprocess.Popen(["make", "-o", SETUP_STAMP, "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        status = 0
        while time.monotonic() < deadline and proc.poll() is None:
            status, _ = _get(f"{base}/api/status?token={token}")
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, "JupyterLab did not answer:\n" + (tmp_path / "lab.log").read_text()[-3000:]
        status, page = _get(f"{base}/lab/tree/labs?token={token}")
        assert status == 200 and b"JupyterLab" in page
        _, specs = _get(f"{base}/api/kernelspecs?token={token}")
        python = json.loads(specs)["kernelspecs"]["python3"]["spec"]["argv"][0]
        assert python == "python" or ".venv" in python, python  # the venv's own kernel: it has twofour
        _, contents = _get(f"{base}/api/contents/labs?token={token}")
        names = {item["name"] for item in json.loads(contents)["content"]}
        assert "lab1-find-the-broken-groups.ipynb" in names
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen) -> None:
    """Stop make and JupyterLab (its own process group) without leaving kernels behind."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
