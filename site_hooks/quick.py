"""``make serve``'s first build on a fresh clone: a quick build, whose left-out parts say so.

``make serve`` (``scripts/serve.py``) has nothing to show until its first build is done, so on a
fresh clone (no earlier build to serve) that build is made with ``TWOFOUR_BUILD=quick``, and the
full build follows it at once and is swapped in when done (within a minute). A quick build
leaves out what costs the most CPU and is not needed to read the site:

* the toolkit API reference (``site_hooks/reference.py``): mkdocstrings reading every module
  of ``twofour`` and rendering 40 pages of signatures. Each of those pages is there, with its
  title and :func:`deferred_html` instead of its entries, so every link and the navigation are
  the full build's;
* the practice questions (``site_hooks/practice.py``): reading and checking the bank and
  computing every card's numbers; each level page keeps its introduction and says the cards come
  with the next build;
* the toolkit's wheel (``site_hooks/toolkit.py``) when it is not cached yet: the pages name its
  URL as always, and :func:`write_manifest` lists it, so the server answers a request for it
  with "being built, try again" (503) instead of a 404, until the full build has it.

Everything else is the full build's, computed numbers included: the two differ only where a
page says so. The server counts the pages that carry :data:`DEFERRED_NOTE` (its status JSON,
``deferred``), and an open page reloads itself when the full build changes it, as it does for a
notebook's outputs. ``make site`` and the site tests never set the variable: they always build
everything.

>>> "nb-deferred" in deferred_html("the toolkit API reference") and "next build" in deferred_html("x")
True
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

ENV = "TWOFOUR_BUILD"  # "quick": make serve's first build on a fresh clone
DEFERRED_NOTE = 'class="admonition info nb-deferred"'  # scripts/serve.py counts the pages with it
MANIFEST = ".twofour-deferred.json"  # in the built site: the files a quick build left out


def quick_mode() -> bool:
    """Whether this build is ``make serve``'s quick first build (``TWOFOUR_BUILD=quick``)."""
    return os.environ.get(ENV) == "quick"


def deferred_html(what: str) -> str:
    """The note on a page whose content a quick build left for the next build."""
    return (
        f'<div {DEFERRED_NOTE} role="status">'
        '<p class="admonition-title">This page comes with the next build</p>'
        f"<p><code>make serve</code> showed the site first without {html.escape(what)}; the full build "
        "is being made now and replaces this one by itself, usually within a minute (the page reloads "
        "on its own). The deployed site always has it.</p></div>"
    )


def write_manifest(site_dir: str | Path, files: list[str]) -> None:
    """Record in the built site the files (paths relative to it) that this quick build left out."""
    Path(site_dir, MANIFEST).write_text(json.dumps({"files": sorted(files)}), encoding="utf-8")


def read_manifest(site_dir: str | Path) -> list[str]:
    """The files a build left out (:func:`write_manifest`); none for a full build."""
    try:
        return list(json.loads(Path(site_dir, MANIFEST).read_text(encoding="utf-8"))["files"])
    except FileNotFoundError:
        return []
