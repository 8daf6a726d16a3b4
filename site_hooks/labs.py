"""MkDocs hook: the labs overview table and the links at the end of each lab, from one list.

* ``<!-- labs-overview -->`` in ``docs/labs/index.md`` becomes a table: each lab, what it
  trains, about how long it takes, what to know first, and its chapter and solutions.
* Every lab page (``labs/labN-*.ipynb``) ends with its solutions, the overview and its chapter;
  every solutions page ends with a link back to its exercise. Solutions are not in the nav, so
  the footer's "Next" after a lab is the next lab, never its answers.
* Solutions pages are left out of the search index (``search: exclude`` in their page meta).

:data:`LABS` is the one place this is written down; ``tests/site/test_hooks.py``
checks it against the notebooks in ``labs/``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lab:
    notebook: str  # labs/...ipynb, as in the nav
    solutions: str  # labs/solutions/...ipynb
    chapter: str  # notebooks/...ipynb
    chapter_label: str
    trains: str
    minutes: str
    before: str


LABS: list[Lab] = [
    Lab("labs/lab1-find-the-broken-groups.ipynb", "labs/solutions/lab1-solutions.ipynb",
        "notebooks/01-structure.ipynb", "1. Is it really 2:4?",
        "Reading a weight as groups of 4 along K; finding the groups that break 2:4 (wrong "
        "dimension, a third non-zero, `-0.0`); magnitude pruning to 2:4.",
        "20–30", "Chapter 1; PyTorch indexing (`reshape`, `topk`)."),
    Lab("labs/lab2-pack-it-by-hand.ipynb", "labs/solutions/lab2-solutions.ipynb",
        "notebooks/02-packing.ipynb", "2. A dense tensor full of zeros is still dense",
        "Counting packed bytes; packing the kept values; encoding the 2-bit metadata; unpacking, "
        "checked bit for bit against `twofour.packing`.",
        "45–60", "Chapter 2 and lab 1; bit operations (shifts, masks)."),
    Lab("labs/lab3-dispatch-detective.ipynb", "labs/solutions/lab3-solutions.ipynb",
        "notebooks/03-dispatch.ipynb", "3. Did the sparse kernel run?",
        "Diagnosing why a \"2:4\" layer runs dense (dtype, shape, layout, not packed) with "
        "`twofour.dispatch.explain`; fixing what can be fixed; proving which kernel ran.",
        "30–45", "Chapter 3. A GPU is optional: without one the lab uses recorded profiles."),
    Lab("labs/lab4-find-the-crossover.ipynb", "labs/solutions/lab4-solutions.ipynb",
        "notebooks/04-kernel-speed.ipynb", "4. How fast can the sparse GEMM be?",
        "Why the default 2:4 kernel loses at decode: its 256-token-wide tile does padded math that "
        "outlasts reading the weight; the first M where 2:4 wins; the same crossover read off measured data.",
        "30–45", "Chapter 4. A GPU is optional: without one the lab uses recorded results."),
    Lab("labs/lab5-prune-and-recover.ipynb", "labs/solutions/lab5-solutions.ipynb",
        "notebooks/05-quality.ipynb", "5. What did the zeros cost?",
        "An activation-aware pruning score; a fine-tuning step that keeps the model 2:4; recovering "
        "a small language model's perplexity.",
        "45–60", "Chapter 5; a PyTorch training loop. Runs on a CPU (a few minutes of training)."),
    Lab("labs/lab6-budget-a-request.ipynb", "labs/solutions/lab6-solutions.ipynb",
        "notebooks/06-amdahl.ipynb", "6. How much of a request can get faster?",
        "The share of a request's time 2:4 can touch; Amdahl's bound for the whole request "
        "(add times, never average speedups); which deployment change moves it most.",
        "30–45", "Chapters 4 and 6."),
]

_MARKER = re.compile(r"<!--\s*labs-overview\s*-->")


def _title(notebook: str) -> str:
    """The lab's `#` heading ("Lab 1: Find the broken groups")."""
    import json

    cells = json.loads((ROOT / notebook).read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return Path(notebook).stem


def _rel(target: str, page_src: str) -> str:
    """Link from the page whose source is ``page_src`` to the source path ``target``."""
    import posixpath

    return posixpath.relpath(target, posixpath.dirname(page_src) or ".")


def overview_markdown(page_src: str = "labs/index.md") -> str:
    """The overview table (Markdown), links relative to ``page_src``; on a phone each lab is a card
    whose cells are labelled with their column (``htw-stack``: docs/stylesheets/extra.css)."""
    rows = ["| Lab | What it trains | Time | Before you start | Chapter |", "|---|---|---|---|---|"]
    for lab in LABS:
        title = _title(lab.notebook)
        lab_link = f"[{title}]({_rel(lab.notebook, page_src)})"
        solutions = f"<br>(its [solutions]({_rel(lab.solutions, page_src)}))"
        chapter = f"[{lab.chapter_label}]({_rel(lab.chapter, page_src)})"
        rows.append(f"| {lab_link}{solutions} | {lab.trains} | about {lab.minutes} min | {lab.before} | {chapter} |")
    return '<div class="htw-stack" markdown="1">\n\n' + "\n".join(rows) + "\n\n</div>\n"


def footer_markdown(page_src: str) -> str | None:
    """The links at the end of a lab page or a solutions page; None for other pages."""
    for i, lab in enumerate(LABS):
        if page_src == lab.notebook:
            parts = [
                f"**Stuck, or done?** The worked [solutions for this lab]({_rel(lab.solutions, page_src)}) "
                "are on their own page.",
                f"Chapter: [{lab.chapter_label}]({_rel(lab.chapter, page_src)}) · "
                f"[All labs]({_rel('labs/index.md', page_src)})",
            ]
            return '\n\n<div class="htw-lab-footer" markdown="1">\n\n' + "\n\n".join(parts) + "\n\n</div>\n"
        if page_src == lab.solutions:
            parts = [
                f"Back to [the exercise notebook]({_rel(lab.notebook, page_src)}) · "
                f"[All labs]({_rel('labs/index.md', page_src)})"
                + (f" · next: [{_title(LABS[i + 1].notebook)}]({_rel(LABS[i + 1].notebook, page_src)})"
                   if i + 1 < len(LABS) else ""),
            ]
            return '\n\n<div class="htw-lab-footer" markdown="1">\n\n' + "\n\n".join(parts) + "\n\n</div>\n"
    return None


def is_solutions(page_src: str) -> bool:
    """A lab's solutions page (``labs/solutions/...``)."""
    return any(page_src == lab.solutions for lab in LABS)


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    if is_solutions(src):
        # Worked answers stay out of search, so that searching a lab's topic finds the exercise
        # and not its answers (Material's search reads this from the page's meta).
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
    if _MARKER.search(markdown):
        markdown = _MARKER.sub(lambda m: overview_markdown(src), markdown)
    footer = footer_markdown(src)
    return markdown + footer if footer else markdown
