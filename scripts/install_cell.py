"""The set-up cell every chapter and lab notebook starts with, in one place.

    .venv/bin/python scripts/install_cell.py          # rewrite it in every notebook
    .venv/bin/python scripts/install_cell.py --check  # exit 1 if a notebook's differs

It is the first code cell, tagged ``hide-on-site`` (the site shows no set-up), and it must work
wherever a reader opens the notebook:

* in Colab it installs the toolkit from GitHub; the toolkit's dependencies are ranges, so pip
  keeps Colab's preinstalled CUDA PyTorch;
* in a Jupyter whose kernel already has ``twofour`` (``make lab``, the site build) it does nothing;
* in a Jupyter whose kernel lacks ``twofour`` it says exactly what to run, then stops, rather
  than installing a PyTorch build the reader did not choose.

``tests/test_install_cell.py`` runs this cell in all three situations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO = "https://github.com/half-the-weights/twofour"
INSTALL = f'%pip install -q "twofour @ git+{REPO}@main"'

SOURCE = f'''# Set-up. In Colab this installs the twofour toolkit from GitHub; its dependencies are
# ranges, so pip keeps Colab's preinstalled PyTorch. Elsewhere it checks that this kernel has
# twofour, and if not, says what to run.
import importlib.util
import sys

if "google.colab" in sys.modules:
    {INSTALL}
elif importlib.util.find_spec("twofour") is None:
    print("This kernel's Python ({{}}) has no `twofour`. Either:".format(sys.executable))
    print("  - from a clone of {REPO}, run `make lab`: JupyterLab with everything installed;")
    print("  - or install it into this kernel (an installed torch is kept) by running this in a cell,")
    print('    then running the notebook again from the top:')
    print('    {INSTALL}')
    raise ModuleNotFoundError("No module named 'twofour' (see the lines above for what to run)")'''


def notebooks() -> list[Path]:
    return sorted(p for folder in ("notebooks", "labs") for p in (ROOT / folder).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def first_code_cell(nb: dict) -> dict:
    return next(c for c in nb["cells"] if c["cell_type"] == "code")


def as_lines(source: str) -> list[str]:
    lines = source.splitlines(keepends=True)
    return lines


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in notebooks():
        raw = path.read_text(encoding="utf-8")
        nb = json.loads(raw)
        cell = first_code_cell(nb)
        if "".join(cell["source"]) == SOURCE:
            continue
        stale.append(path.relative_to(ROOT).as_posix())
        if not check:
            cell["source"] = as_lines(SOURCE)
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-on-site" not in tags:
                tags.append("hide-on-site")
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if stale:
        print(("differs in: " if check else "rewrote: ") + ", ".join(stale))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
