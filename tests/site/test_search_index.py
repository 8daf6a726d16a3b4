"""What the built site's search index holds: the labs but not their worked solutions,
and chapter 4's prose on choosing the cuSPARSELt algorithm under the name a reader searches for."""

from __future__ import annotations

import json
import re
from pathlib import Path

_CODE_BLOCK = re.compile(r"<pre\b.*?</pre>", re.DOTALL)


def _docs(site: Path) -> list[dict]:
    return json.loads((site / "search/search_index.json").read_text(encoding="utf-8"))["docs"]


def test_solutions_pages_stay_out_of_search_and_the_labs_are_in_it(site):
    locations = [d["location"] for d in _docs(site)]
    solutions = [loc for loc in locations if loc.startswith("labs/solutions/")]
    assert not solutions, f"solutions pages in the search index: {solutions[:5]}"
    for n in range(1, 7):
        assert any(loc.startswith(f"labs/lab{n}-") for loc in locations), f"lab {n} is not in the search index"
    assert "labs/" in locations, "the labs overview is not in the search index"
    # The pages themselves are still built, and linked from their labs.
    assert (site / "labs/solutions/lab1-solutions/index.html").is_file()


def test_chapter_4_prose_names_alg_id(site):
    """Searching ``alg_id`` finds chapter 4's text on choosing the algorithm, not only its code."""
    found = [d["location"] for d in _docs(site)
             if d["location"].startswith("notebooks/04-kernel-speed/") and "alg_id" in _CODE_BLOCK.sub("", d["text"])]
    assert found, "chapter 4's prose never names alg_id"
    assert any("kernel" in loc.split("#")[-1] or "algorithm" in loc.split("#")[-1] for loc in found), found
