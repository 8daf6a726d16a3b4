"""The one verdict table (twofour.course.answer) and every page that quotes it.

Measured first: each row of the verdict is labelled measured (with its file and timing mode) or
predicted; the stated range contains the measured best and the measured kernel-only figure; the
home page, chapter 7 and every quoted number in prose read the same table (issue 26 item 1, issue
30 item 2).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from twofour import amdahl
from twofour.bench import recorded_alg_search, recorded_results
from twofour.course import answer
from twofour.request import measured_gemm_speedup, searched_gemm_speedup

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import refresh_quotes  # noqa: E402

sys.path.pop(0)


@pytest.fixture(scope="module")
def verdict():
    return answer.verdict_table()


def _layer_speedup(points, M=1, dtype="float16"):
    """One Llama-3-8B layer's seven decode GEMMs, time-weighted, computed here from the raw points."""
    shapes = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
    table = {(p["M"], p["N"], p["K"]): (p["dense_ms"], p["sparse_ms"]) for p in points if p["dtype"] == dtype}
    found = [table[(M, N, K)] for N, K in shapes]
    return sum(d for d, _ in found) / sum(s for _, s in found)


def test_rows_are_labelled_and_measured_where_measured(verdict):
    assert [r.key for r in verdict.rows] == list(answer.ROWS)
    status = {r.key: r.status for r in verdict.rows}
    assert status == {"eager": "measured", "graph": "measured", "graph-searched": "measured", "kernel": "measured",
                      "kernel-searched": "predicted"}
    for r in verdict.rows:
        assert r.source and (r.status == "predicted") == ("roofline" in r.source), r


def test_measured_rows_are_the_raw_data(verdict):
    """Each measured row's decode GEMM speedup is the recorded points, recomputed independently."""
    res = [r for r in recorded_results("gpu") if str(r.path).endswith(answer.BENCH_FILE)][0]
    for key, mode in (("eager", "stream"), ("graph", "graph"), ("kernel", "kernel")):
        assert verdict.row(key).decode_gemm == pytest.approx(_layer_speedup(res.gpu_points(mode)), rel=1e-12)
    best = searched_gemm_speedup(recorded_alg_search(), answer.CHAT)["decode"]
    assert verdict.row("graph-searched").decode_gemm == best
    # The figures, from the kernel table: 158.7 us dense vs 272.7 us 2:4 at M = 1 (0.58x).
    assert verdict.row("kernel").decode_gemm == pytest.approx(0.58, abs=0.005)
    assert verdict.row("graph-searched").decode_gemm == pytest.approx(1.21, abs=0.01)


def test_per_token_is_amdahl_over_the_request_models_p(verdict):
    for r in verdict.rows:
        p, s = r.estimate.decode.p, r.decode_gemm
        assert r.per_token == pytest.approx(amdahl.speedup(p, s), rel=1e-9)
        assert r.estimate.decode.gemm_speedup == pytest.approx(s, rel=1e-12)


def test_the_range_contains_the_measured_best_and_the_measured_kernel_only_figure(verdict):
    kernel = verdict.row("kernel").per_token
    assert verdict.low <= kernel <= verdict.high
    assert verdict.measured_best.key == "graph-searched" and verdict.high == verdict.measured_best.per_token
    assert verdict.low == verdict.row("eager").per_token < 0.1 < kernel < 1 < verdict.high


def test_software_it_holds_for(verdict):
    s = verdict.software
    assert (s["gpu"], s["torch"], s["cusparselt"], s["date"]) == ("NVIDIA H200", "2.11.0+cu130", "0.8.0", "2026-11-30")
    assert "cuSPARSELt 0.8.0" in verdict.software_line


def test_bf16_rows_are_what_was_measured_in_bf16():
    rows = answer.bf16_rows()
    res = [r for r in recorded_results("gpu") if str(r.path).endswith(answer.BENCH_FILE)][0]
    bf16 = replace(answer.CHAT, dtype="bf16")
    for r, mode in zip(rows, ("eager", "graph")):
        assert r.status == "measured" and r.decode_gemm == measured_gemm_speedup(res, bf16, mode=mode)["decode"]
        assert r.decode_gemm == pytest.approx(_layer_speedup(res.gpu_points(mode), dtype="bfloat16"), rel=1e-12)


def test_the_bottom_line_quotes_the_table(verdict):
    text = answer.bottom_line_markdown()
    for key in ("eager", "graph", "kernel"):
        assert f"{verdict.row(key).per_token:.2f}x" in text
    assert f"**{verdict.low:.2f}x to {verdict.high:.2f}x the dense speed**" in text


def test_quotes_fill_refuse_unknown_keys_and_are_idempotent():
    text = "a <!-- verdict:range -->old<!-- /verdict --> b <!-- verdict:best -->x<!-- /verdict -->"
    once = answer.fill_quotes(text, "index.md")
    q = answer.quoted_numbers()
    assert once == f"a <!-- verdict:range -->{q['range']}<!-- /verdict --> b <!-- verdict:best -->{q['best']}<!-- /verdict -->"
    assert answer.fill_quotes(once, "index.md") == once
    assert answer.stale_quotes(text, "index.md") and not answer.stale_quotes(once, "index.md")
    with pytest.raises(KeyError, match="verdict:nonsense"):
        answer.fill_quotes("<!-- verdict:nonsense -->1<!-- /verdict -->", "index.md")


def test_the_checklist_links_resolve_from_each_page():
    home = answer.fill_quotes("<!-- checklist --><!-- /checklist -->", "index.md")
    chapter = answer.fill_quotes("<!-- checklist --><!-- /checklist -->", "notebooks/07-the-answer.ipynb")
    assert "(notebooks/01-structure.ipynb)" in home and "(calculator/index.md)" in home
    assert "(01-structure.ipynb)" in chapter and "(../calculator/index.md)" in chapter
    assert [line[:3] for line in home.splitlines() if line[:1].isdigit()] == [f"{i}. " for i in range(1, 7)]


def test_every_quoted_number_on_the_site_is_current():
    """Prose quotes the verdict between markers; a stale quote fails here (fix: scripts/refresh_quotes.py)."""
    stale = [line for path, site in refresh_quotes.quoting_files() for line in refresh_quotes.stale(path, site)]
    assert not stale, "run `.venv/bin/python scripts/refresh_quotes.py`:\n" + "\n".join(stale)


def test_the_home_page_and_chapter_7_quote_the_range_and_the_same_checklist():
    home = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    nb = json.loads((ROOT / "notebooks/07-the-answer.ipynb").read_text(encoding="utf-8"))
    chapter = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "<!-- bottom-line -->" in home and "<!-- checklist -->" in home
    takeaway = "".join(nb["cells"][0]["source"])
    assert "<!-- verdict:range -->" in takeaway  # the "In short" box gives the range
    assert chapter.count("<!-- checklist -->") == 1
    def items(text):  # the list between the markers, wrapping undone
        body = text.split("<!-- checklist -->", 1)[1].split("<!-- /checklist -->")[0]
        return " ".join(body.split())

    assert items(home).replace("notebooks/", "").replace("(calculator/", "(../calculator/") == items(chapter)


def test_calculator_opens_on_the_graph_row(verdict):
    c = answer.calculator_verdict()
    r = verdict.row("graph")
    assert (c["gpu"], c["dtype"], c["batch"]) == ("H200", "fp16", 1)
    assert (c["speedup_decode"], c["speedup_prefill"], c["per_token"]) == (r.decode_gemm, r.prefill_gemm, r.per_token)


def test_the_calculators_copy_of_the_verdict_is_current_and_rounds_to_the_table(verdict):
    """docs/js/calc/verdict.js is calculator_verdict() as generated; its 3-decimal GEMM speedups give
    the same 2-decimal request and per-token numbers as the verdict table (what the headline shows)."""
    from twofour.request import estimate

    committed = (Path(__file__).resolve().parents[3] / answer.VERDICT_JS).read_text(encoding="utf-8")
    assert committed == answer.verdict_js(), "stale: run `.venv/bin/python scripts/refresh_quotes.py` and commit"
    c = answer.calculator_verdict()
    rounded = {"prefill": round(c["speedup_prefill"], 3), "decode": round(c["speedup_decode"], 3)}
    est = estimate(answer.CHAT, c["gpu"], gemm_speedup=rounded)
    r = verdict.row("graph")
    assert f"{est.speedup('request'):.2f}" == f"{r.request:.2f}" and f"{est.speedup('tpot'):.2f}" == f"{r.per_token:.2f}"
    assert c["pruned"] == list(answer.CHAT.pruned)


def test_no_quoted_number_starts_a_line():
    """A line that starts with an HTML comment starts an HTML block in Markdown, which cuts the
    paragraph in two around the quoted number (the calculator page did, at 1280 and 390 px)."""
    bad = [f"{site}: {line.strip()[:60]}" for path, site in refresh_quotes.quoting_files()
           for text in refresh_quotes.markdown_texts(path) for line in text.splitlines()
           if line.lstrip().startswith("<!-- verdict:")]
    assert not bad, bad
