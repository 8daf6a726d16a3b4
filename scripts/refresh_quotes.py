"""Rewrite the verdict numbers and the checklist that prose quotes, from twofour.course.answer.

Prose on the site (docs/*.md, the chapter and lab notebooks' Markdown cells) quotes the verdict
between markers, ``<!-- verdict:range -->0.05x to 1.19x<!-- /verdict -->``, and the diagnosis
checklist between ``<!-- checklist -->`` and ``<!-- /checklist -->``. The site's build fills in
the computed values anyway; the text in the files is what a reader of the notebook in Jupyter
or Colab sees, so tests/course/answer/test_answer.py fails when it is stale, and this script brings
it up to date after new measurements or a refitted model (the calculator's opening values are in
``docs/js/calc/data.js``: rerun ``scripts/js_data.py`` too):

    .venv/bin/python scripts/refresh_quotes.py          # rewrite stale quotes in place
    .venv/bin/python scripts/refresh_quotes.py --check  # list them, exit 1 if any
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twofour.course.answer import fill_quotes, quoted_numbers, stale_quotes

ROOT = Path(__file__).resolve().parents[1]


def quoting_files() -> list[tuple[Path, str]]:
    """(file, its path in the site) for every page that may quote the verdict."""
    out = [(p, p.relative_to(ROOT / "docs").as_posix()) for p in sorted((ROOT / "docs").rglob("*.md"))]
    for folder in ("notebooks", "labs"):
        out += [(p, p.relative_to(ROOT).as_posix()) for p in sorted((ROOT / folder).rglob("*.ipynb"))
                if ".ipynb_checkpoints" not in p.parts]
    return out


def markdown_texts(path: Path) -> list[str]:
    """The Markdown of a page: the file, or each Markdown cell of a notebook."""
    if path.suffix != ".ipynb":
        return [path.read_text(encoding="utf-8")]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def stale(path: Path, site_path: str, quotes: dict[str, str] | None = None) -> list[str]:
    """``path``'s stale quotes, one line each; ``quotes``: :func:`quoted_numbers`, computed once for many files."""
    quotes = quoted_numbers() if quotes is None else quotes
    return [line for text in markdown_texts(path) for line in stale_quotes(text, site_path, quotes)]


def refresh(path: Path, site_path: str, quotes: dict[str, str] | None = None) -> bool:
    """Rewrite ``path``'s stale quotes; True if it changed."""
    quotes = quoted_numbers() if quotes is None else quotes
    raw = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        new = fill_quotes(raw, site_path, quotes)
    else:
        nb = json.loads(raw)
        for c in nb["cells"]:
            if c["cell_type"] == "markdown":
                text = fill_quotes("".join(c["source"]), site_path, quotes)
                parts = text.split("\n")
                c["source"] = [line + "\n" for line in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != raw:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale quotes; exit 1 if any")
    args = parser.parse_args(argv)
    quotes = quoted_numbers()
    if args.check:
        lines = [line for path, site in quoting_files() for line in stale(path, site, quotes)]
        print("\n".join(lines) or "every quoted number is current")
        return 1 if lines else 0
    changed = [str(path.relative_to(ROOT)) for path, site in quoting_files() if refresh(path, site, quotes)]
    print("rewrote: " + ", ".join(changed) if changed else "every quoted number was current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
