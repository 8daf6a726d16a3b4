"""MkDocs hook: search keeps "split-K", "2:4" and "alg_id" whole.

Material's search (lunr) cuts words at its separator, ``[\\s\\-]+``, and its query parser reads
``x:`` as a field name. So the query "split-K" became "split" OR any word starting with "k"
(every page: 56 results), and "2:4" became "2" OR "4". Changing the separator would also glue
together words a reader searches for apart ("cuSPARSELt-backed", "2:4-sparse").

Instead the two characters are swapped, where they join a term, for look-alikes that nothing
cuts: a hyphen before a one-character part ("split-K", "top-k") for a non-breaking hyphen
(U+2011), and a colon between digits ("2:4", "4:8") for a ratio sign (U+2236). This hook makes
the swap in the built search index (``search/search_index.json``, written by the search plugin's
own ``on_post_build``, which runs before hooks'); ``docs/javascripts/site.js`` makes the same swap
in every query before Material's search worker sees it (``searchTerms`` there is this module's
:func:`search_terms`, character for character; tests/site/test_what_a_reader_sees.py checks that both agree).
The swapped characters look the same in the results. "alg_id" needs nothing: "_" cuts nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

NB_HYPHEN, RATIO = "\u2011", "\u2236"
_TERM_HYPHEN = re.compile(r"(\w)-(?=[A-Za-z0-9]\b)", re.ASCII)  # ASCII: as JavaScript reads \w and \b
_RATIO = re.compile(r"(\d):(?=\d)", re.ASCII)
INDEX = Path("search") / "search_index.json"


def search_terms(text: str) -> str:
    """``text`` with the hyphen and colon inside a term swapped for look-alikes search does not cut.

    >>> search_terms("split-K and 2:4, not a well-known word")
    'split\u2011K and 2\u22364, not a well-known word'
    """
    return _RATIO.sub(rf"\1{RATIO}", _TERM_HYPHEN.sub(rf"\1{NB_HYPHEN}", text))


def swap_index(index: dict) -> dict:
    """The search index with every document's title and text passed through :func:`search_terms`."""
    docs = [{**doc, **{k: search_terms(doc[k]) for k in ("title", "text") if isinstance(doc.get(k), str)}}
            for doc in index.get("docs", [])]
    return {**index, "docs": docs}


def on_post_build(config) -> None:
    path = Path(config["site_dir"]) / INDEX
    if not path.exists():  # the search plugin is off: nothing to do
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(swap_index(index), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
