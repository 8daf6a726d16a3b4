"""The set-up cell every chapter and lab notebook starts with, in one place.

    .venv/bin/python scripts/install_cell.py          # rewrite it in every notebook
    .venv/bin/python scripts/install_cell.py --check  # exit 1 if a notebook's differs

It is the first code cell, tagged ``hide-on-site`` (the site shows no set-up), and it must work
wherever a reader opens the notebook:

* in a kernel that already has ``twofour`` (``make lab``, the site build, nbval, a second run)
  it does nothing;
* otherwise it installs the toolkit with pip from, in order, ``TWOFOUR_WHEEL`` and
  ``TWOFOUR_REPO``. The committed notebooks leave ``TWOFOUR_WHEEL`` empty; the copy a site page
  offers for download has it set to the site's own wheel (site_hooks/toolkit.py and
  notebooks.py), so a notebook downloaded from the site installs from that site, in Colab or a
  local Jupyter. ``TWOFOUR_REPO`` is ``extra.repo`` from mkdocs.yml (the one place it is
  written), read here: it is what a notebook opened in Colab from GitHub installs from, and
  it is empty (no fallback) while the project has no repository;
* the toolkit's dependencies are ranges, so pip keeps an installed PyTorch (Colab's CUDA build
  included). It refuses to install where pip would pick a PyTorch for the reader: a kernel
  without torch (pip would fetch its default build, several GB with CUDA on Linux) or with a
  torch older than twofour needs (pip would replace it). It says what to run instead;
* every stop is one exception with a one-line message naming what to run.

``tests/course/chapters/test_install_cell.py`` runs this cell in all these situations, and
``tests/site/test_toolkit_install.py`` runs a notebook downloaded from a built site in a fresh
virtual environment that lacks twofour.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
_GITHUB = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+")

_TEMPLATE = '''# Set-up: makes sure this kernel has the `twofour` toolkit the notebook imports.
# A kernel that has it (`make lab`, a second run) does nothing. Otherwise pip installs it from
# TWOFOUR_WHEEL (the copy you download from the site names the site's own wheel here) or else
# from the project's repository, TWOFOUR_REPO. Its dependencies are ranges, so an installed
# PyTorch (Colab's CUDA build too) is kept; in a kernel without PyTorch it installs nothing,
# because pip would pick a PyTorch build for you (several GB, with CUDA, on Linux).
TWOFOUR_WHEEL = ""
TWOFOUR_REPO = <<REPO>>
import importlib.metadata
import importlib.util
import re
import sys

if importlib.util.find_spec("twofour") is None:
    _twofour = TWOFOUR_WHEEL or (f"twofour @ git+{TWOFOUR_REPO}@<<BRANCH>>" if TWOFOUR_REPO else "")
    _torch = importlib.util.find_spec("torch") and importlib.metadata.version("torch")
    if not _twofour:
        raise ModuleNotFoundError(
            "No module named 'twofour', and this copy of the notebook does not say where to get it: "
            "download the notebook from the site (its copy installs the site's wheel), or set "
            "TWOFOUR_WHEEL above to a twofour wheel's URL or file, then run this cell again")
    if not _torch:
        raise ModuleNotFoundError(
            f"No module named 'torch' in this kernel ({sys.executable}), and pip would download a "
            "PyTorch build of its choice with twofour (several GB, with CUDA, on Linux): install the "
            "one you want first, e.g. `%pip install torch --index-url https://download.pytorch.org/whl/cpu` "
            "for the CPU build, then run this cell again")
    if tuple(map(int, re.findall(r"\\d+", _torch)[:2])) < <<TORCH_MIN>>:
        raise ImportError(
            f"this kernel's torch {_torch} is older than twofour needs (>= <<TORCH_MIN_TEXT>>) and pip would "
            "replace it: upgrade it yourself (`%pip install -U torch`), restart the kernel, then run this cell again")
    print(f"Installing twofour from {_twofour} (this kernel's torch {_torch} is kept)")
    from IPython.utils.capture import capture_output

    with capture_output() as _pip:  # even -q leaves blank lines and notes; shown only if it failed
        %pip install -q "{_twofour}"
    importlib.invalidate_caches()
    if importlib.util.find_spec("twofour") is None:
        _pip.show()
        raise ModuleNotFoundError(
            f'twofour is still not importable after `%pip install "{_twofour}"` (pip says why above); '
            "if pip did install it, restart the kernel and run the notebook again")
    print("Installed twofour", importlib.metadata.version("twofour"))'''


class _Tagged:
    """A YAML value with a tag (``!ENV [...]``, ``!relative``): not a plain setting."""

    def __init__(self, tag: str) -> None:
        self.tag = tag


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor("!", lambda loader, suffix, node: _Tagged("!" + suffix))


def configured_repo(mkdocs_yml: Path = ROOT / "mkdocs.yml") -> tuple[str, str]:
    """(``extra.repo``, ``extra.branch``) from mkdocs.yml: the repository URL or "", and the branch.

    Raises ValueError when ``extra.repo`` is not empty and not an https://github.com/<owner>/<name>
    URL, or is not a plain string (the committed notebooks carry it, so it cannot follow !ENV).
    """
    extra = (yaml.load(mkdocs_yml.read_text(encoding="utf-8"), Loader=_Loader) or {}).get("extra") or {}
    repo, branch = extra.get("repo") or "", extra.get("branch") or "main"
    if isinstance(repo, _Tagged) or isinstance(branch, _Tagged):
        raise ValueError(f"{mkdocs_yml.name}: extra.repo and extra.branch must be plain strings, not "
                         "!ENV: the committed notebooks carry them (Colab opens those)")
    repo = str(repo).rstrip("/")
    if repo and not _GITHUB.fullmatch(repo):
        raise ValueError(f"{mkdocs_yml.name}: extra.repo must be empty or an https://github.com/<owner>/<name> URL "
                         f"(Colab opens notebooks from GitHub only), got {repo!r}")
    if not re.fullmatch(r"[\w./-]+", str(branch)):
        raise ValueError(f"{mkdocs_yml.name}: extra.branch must be a branch name, got {branch!r}")
    return repo, str(branch)


def torch_minimum(pyproject: Path = ROOT / "pyproject.toml") -> tuple[int, int]:
    """The lowest torch twofour accepts, from its dependency ``torch>=X.Y`` in pyproject.toml."""
    match = re.search(r'"torch>=(\d+)\.(\d+)', pyproject.read_text(encoding="utf-8"))
    if not match:
        raise ValueError(f"{pyproject.name}: no `torch>=X.Y` dependency found")
    return int(match.group(1)), int(match.group(2))


def cell_source(repo: str, branch: str = "main", torch_min: tuple[int, int] = (2, 3)) -> str:
    """The set-up cell for repository ``repo`` ("" for none) at ``branch``."""
    return (_TEMPLATE.replace("<<REPO>>", json.dumps(repo)).replace("<<BRANCH>>", branch)
            .replace("<<TORCH_MIN>>", repr(tuple(torch_min)))
            .replace("<<TORCH_MIN_TEXT>>", ".".join(map(str, torch_min))))


def source() -> str:
    """The set-up cell as the repository's settings make it (mkdocs.yml, pyproject.toml)."""
    return cell_source(*configured_repo(), torch_min=torch_minimum())


def notebooks() -> list[Path]:
    return sorted(p for folder in ("notebooks", "labs") for p in (ROOT / folder).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def first_code_cell(nb: dict) -> dict:
    return next(c for c in nb["cells"] if c["cell_type"] == "code")


def as_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    try:
        expected = source()
    except ValueError as err:
        print(f"install_cell.py: {err}", file=sys.stderr)
        return 2
    stale = []
    for path in notebooks():
        raw = path.read_text(encoding="utf-8")
        nb = json.loads(raw)
        cell = first_code_cell(nb)
        if "".join(cell["source"]) == expected:
            continue
        stale.append(path.relative_to(ROOT).as_posix())
        if not check:
            cell["source"] = as_lines(expected)
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-on-site" not in tags:
                tags.append("hide-on-site")
            tmp = path.with_suffix(".ipynb.tmp")  # writers never destroy: a whole file or none
            tmp.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            tmp.replace(path)
    if stale:
        print(("differs in: " if check else "rewrote: ") + ", ".join(stale))
        if check:
            print("run: .venv/bin/python scripts/install_cell.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
