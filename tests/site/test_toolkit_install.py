"""End to end: a reader with only the site installs the toolkit and passes lab 1.

From the built site, served on 127.0.0.1 (tests/site/conftest.py), the test follows lab 1's
"Download notebook" link (and its solutions page's, for the answers), then runs the notebook in
a kernel of a fresh virtual environment that lacks twofour: the set-up cell must install twofour
from the site's wheel, and the lab's checks must pass.

The fresh environment: ``python -m venv --without-pip`` plus a ``.pth`` line pointing at a
*view* of the project's site-packages, a folder of symlinks to every entry of it except
``twofour``'s own (its dist-info and the editable install's ``.pth`` and finder). Python adds
a ``.pth`` line to ``sys.path`` without processing the ``.pth`` files inside it, so the editable
install is not active there, and ``twofour`` is not importable until the cell installs it (the
test checks both). Everything else (torch, numpy, ipykernel, pip) is importable from the
view, as a reader's kernel has its own PyTorch; pip, run with ``PIP_NO_INDEX=1``, finds those
dependencies installed, so it installs only the wheel, fetches nothing and cannot replace torch
(the test checks that twofour is the one thing installed into the environment). Other
approaches: ``--system-site-packages`` sees the base Python's packages, not the project venv's;
a real install of the dependencies needs the network and minutes (torch alone); a ``.pth``
pointing at the project's site-packages itself would show pip the project's ``twofour``
dist-info as installed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from urllib.parse import urljoin
from urllib.request import urlopen

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB = "labs/lab1-find-the-broken-groups/"
SOLUTIONS = "labs/solutions/lab1-solutions/"
VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)

pytestmark = pytest.mark.slow


def _get(url: str) -> bytes:
    with urlopen(url, timeout=60) as response:
        return response.read()


def download_notebook(base_url: str, page: str) -> nbformat.NotebookNode:
    """The notebook behind a page's "Download notebook" button, fetched as a browser would."""
    page_url = f"{base_url}/{page}"
    html = _get(page_url).decode()
    links = re.findall(r'<a class="md-button[^"]*" href="([^"]+\.ipynb)" download>Download notebook</a>', html)
    assert len(links) == 1, f"{page_url}: one Download notebook link expected, found {links}"
    return nbformat.reads(_get(urljoin(page_url, links[0])).decode(), as_version=4)


def _is_twofour(name: str) -> bool:
    return name == "twofour" or name.startswith(("twofour-", "twofour.")) or ("__editable__" in name and "twofour" in name)


def _purelib(python: Path | str) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout
    return Path(out.strip())


def fresh_venv(where: Path) -> Path:
    """A virtual environment that sees the project's packages but not twofour; returns its python."""
    env = where / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    view = where / "view"
    view.mkdir()
    paths = sysconfig.get_paths()
    for folder in dict.fromkeys((Path(paths["purelib"]), Path(paths["platlib"]))):
        for entry in folder.iterdir():
            if not _is_twofour(entry.name) and entry.suffix != ".pth" and not (view / entry.name).exists():
                (view / entry.name).symlink_to(entry)
    python = env / "bin" / "python"
    (_purelib(python) / "project-view.pth").write_text(f"{view}\n")
    return python


def _kernel_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONHOME") and not k.startswith("PIP_")}
    # A reader's Jupyter has no site start-up file (the site build's imports twofour). pip may not
    # reach an index: the wheel must install from the site alone, its dependencies already there.
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", PIP_NO_INPUT="1",
               OMP_NUM_THREADS="2", MKL_NUM_THREADS="2")
    return env


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_a_notebook_downloaded_from_the_site_installs_twofour_from_it_and_the_lab_passes(site, base_url, tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    wheel_url = f"{base_url}/downloads/twofour-{VERSION}-py3-none-any.whl"
    lab, solutions = download_notebook(base_url, LAB), download_notebook(base_url, SOLUTIONS)
    setup = lab.cells[next(i for i, c in enumerate(lab.cells) if c.cell_type == "code")]
    assert f'TWOFOUR_WHEEL = "{wheel_url}"' in setup.source
    # The learner's answers: the solutions page's code in the lab's exercise cells.
    answers = [c for c in solutions.cells if "exercise" in c.metadata.get("tags", [])]
    exercises = [i for i, c in enumerate(lab.cells) if "exercise" in c.metadata.get("tags", [])]
    assert len(answers) == len(exercises) == 2
    for i, answer in zip(exercises, answers):
        lab.cells[i].source = answer.source

    python = fresh_venv(tmp_path)
    probe = "import importlib.util as u; print(u.find_spec('twofour') is None, u.find_spec('torch') is not None)"
    before = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=_kernel_env(), check=True)
    assert before.stdout.split() == ["True", "True"], "the fresh environment must lack twofour and have torch"

    kernels = tmp_path / "kernels" / "twofour-fresh"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh (no twofour)", "language": "python"}))
    km = KernelManager(kernel_name="twofour-fresh",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels.parent)]))
    work = tmp_path / "work"
    work.mkdir()
    client = NotebookClient(lab, km=km, timeout=300, allow_errors=False, resources={"metadata": {"path": str(work)}})
    client.execute(env=_kernel_env())  # a failing cell raises CellExecutionError with its traceback

    printed = _text(setup)
    assert f"Installing twofour from {wheel_url}" in printed and f"Installed twofour {VERSION}" in printed, printed
    checks = [c for c in lab.cells if c.cell_type == "code" and "lab1.check_" in c.source]
    assert len(checks) == 2 and all(_text(c).startswith("passed:") for c in checks), [_text(c) for c in checks]

    # Installed from the site's wheel, into the fresh environment, and nothing else was installed.
    after = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, twofour; "
         "print(twofour.__file__); print(m.distribution('twofour').read_text('direct_url.json'))"],
        capture_output=True, text=True, env=_kernel_env(), check=True).stdout.splitlines()
    purelib = _purelib(python)
    assert Path(after[0]).is_relative_to(purelib), after[0]
    assert json.loads(after[1])["url"] == wheel_url
    installed = sorted(p.name for p in purelib.iterdir() if p.name != "__pycache__")
    assert installed == ["project-view.pth", "twofour", f"twofour-{VERSION}.dist-info"], installed
