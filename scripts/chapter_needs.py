"""The reading time each chapter's "What you need" states, computed from its prose.

A chapter opens (above its set-up cell) with "What you will be able to do" and "What you need";
the time in the latter is the words of its Markdown cells at READING_WPM words a minute, rounded
to the nearest 5 minutes. ``tests/course/chapters/test_chapters.py`` checks that every chapter states this
number, so a chapter that grows says so; run this script to print them, and with ``--write`` to
put each computed number into its chapter (the stated time is never typed by hand):

    .venv/bin/python scripts/chapter_needs.py [--write]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READING_WPM = 200  # a common figure for technical reading; a stated assumption, not a measurement
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")
STATED = re.compile(r"(\*\*Time:\*\* about )(\d+)( minutes to read)")


def prose_words(notebook: Path) -> int:
    """Words in a notebook's Markdown cells (HTML tags and link targets left out)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return len(_WORD.findall(text))


def reading_minutes(notebook: Path) -> int:
    """Minutes to read a chapter's prose, to the nearest 5 (at least 5).

    >>> reading_minutes(ROOT / "notebooks/00-environment.ipynb") % 5
    0
    """
    return max(5, 5 * round(prose_words(notebook) / READING_WPM / 5))


def write_stated(notebook: Path) -> bool:
    """Put the computed reading time into the chapter's "**Time:** about N minutes to read".

    Edits the notebook's text in place (one number), so its JSON layout is kept; True when it
    changed. A chapter with no such line is an error: the test requires one.
    """
    text = notebook.read_text(encoding="utf-8")
    if not STATED.search(text):
        raise ValueError(f"{notebook.name}: no '**Time:** about N minutes to read' line to update")
    new = STATED.sub(lambda m: f"{m.group(1)}{reading_minutes(notebook)}{m.group(3)}", text, count=1)
    if new != text:
        notebook.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str]) -> int:
    write = argv == ["--write"]
    if argv and not write:
        print(f"usage: chapter_needs.py [--write]; got {' '.join(argv)!r}", file=sys.stderr)
        return 2
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        changed = write and write_stated(nb)
        note = " (updated)" if changed else ""
        print(f"{nb.name}: {prose_words(nb)} words, about {reading_minutes(nb)} minutes{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
