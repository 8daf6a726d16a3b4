"""The one verdict table (twofour.course.answer) and every page that quotes it.

Measured first: each row of the verdict is labelled measured (with its file and timing mode) or
predicted; the stated range contains the measured best and the measured kernel-only figure; the
home page, chapter 7 and every quoted number in prose read the same table.
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
    assert status == {"eager": "measured", "graph": "measured", "graph-searched": "measured",
                      "graph-searched-linear": "adjusted", "kernel": "measured", "kernel-searched": "predicted"}
    for r in verdict.rows:
        assert r.source and (r.status == "predicted") == ("roofline" in r.source), r


def test_every_row_names_its_call_path_and_only_f_linear_rows_make_the_range(verdict):
    """The sweep called torch._cslt_sparse_mm directly on pre-padded x: its row says so, and stays out of
    the range a page calls "PyTorch's path"; the adjusted row adds F.linear's measured cost per call."""
    paths = {r.key: r.call_path for r in verdict.rows}
    assert paths == {"eager": "F.linear", "graph": "F.linear", "graph-searched": "_cslt_sparse_mm",
                     "graph-searched-linear": "F.linear (adjusted)", "kernel": "F.linear", "kernel-searched": "model"}
    assert "not PyTorch's path" in verdict.row("graph-searched").note
    assert "adjustment, not a measurement" in verdict.row("graph-searched-linear").note
    measured_linear = [r.per_token for r in verdict.rows if r.status == "measured" and r.call_path == "F.linear"]
    assert (verdict.low, verdict.high) == (min(measured_linear), max(measured_linear))
    assert verdict.high < verdict.row("graph-searched-linear").per_token < verdict.row("graph-searched").per_token
    table = answer.verdict_markdown_table()
    assert "call path" in table._repr_html_() and "_cslt_sparse_mm direct, x pre-padded" in table._repr_html_()


def test_the_adjustment_is_f_linear_minus_the_direct_call_of_algorithm_0():
    """Recomputed here from the raw files: F.linear (bench, graph) minus the direct call (sweep), algorithm 0, M = 1."""
    cost = answer.linear_path_cost()
    res = [r for r in recorded_results("gpu") if str(r.path).endswith(answer.BENCH_FILE)][0]
    graph = {(p["M"], p["N"], p["K"]): p for p in res.gpu_points("graph") if p["dtype"] == "float16"}
    direct = {(c["M"], c["N"], c["K"]): c["default_ms"] for c in recorded_alg_search()}
    q = (1, 4096, 4096)
    assert cost["by_kind"]["q_proj"] == pytest.approx((graph[q]["sparse_ms"] - direct[q]) * 1e3, rel=1e-12)
    assert graph[(1, 14336, 4096)]["flagged"] and cost["rule"]["gate_proj"] == "median-of-unflagged"
    assert [round(x, 1) for x in cost["range_us"]] == [2.1, 4.6]
    cases = {(c["M"], c["N"], c["K"]): c for c in recorded_alg_search()}
    shapes = [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096), (14336, 4096), (4096, 14336)]
    kinds = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    dense = sum(cases[(1, N, K)]["dense_ms"] for N, K in shapes)
    sparse = sum(cases[(1, N, K)]["best"]["ms"] + cost["by_kind"][k] * 1e-3 for k, (N, K) in zip(kinds, shapes))
    assert answer.verdict_table().row("graph-searched-linear").decode_gemm == pytest.approx(dense / sparse, rel=1e-12)


def test_measured_rows_are_the_raw_data(verdict):
    """Each measured row's decode GEMM speedup is the recorded points, recomputed independently; the one
    flagged point (gate/up M = 1, 2:4 graph replay) replaced by its kernel time plus the median replay cost
    (graph minus kernel) of the same weight's unflagged points at M <= 256."""
    import statistics

    res = [r for r in recorded_results("gpu") if str(r.path).endswith(answer.BENCH_FILE)][0]
    for key, mode in (("eager", "stream"), ("kernel", "kernel")):
        assert verdict.row(key).decode_gemm == pytest.approx(_layer_speedup(res.gpu_points(mode)), rel=1e-12)
    graph = res.gpu_points("graph")
    flagged = [p for p in graph if p["dtype"] == "float16" and p["M"] == 1 and p["flagged"]]
    assert [(p["N"], p["K"]) for p in flagged] == [(14336, 4096)]
    kernel = {(p["M"], p["N"], p["K"], p["dtype"]): p for p in res.gpu_points("kernel")}
    same_weight = [p["sparse_ms"] - kernel[(p["M"], p["N"], p["K"], p["dtype"])]["sparse_ms"] for p in graph
                   if (p["N"], p["K"], p["dtype"]) == (14336, 4096, "float16") and 1 < p["M"] <= 256 and not p["flagged"]
                   and not kernel[(p["M"], p["N"], p["K"], p["dtype"])]["flagged"]]
    fixed = [dict(p, sparse_ms=kernel[(1, 14336, 4096, "float16")]["sparse_ms"] + statistics.median(same_weight))
             if p in flagged else p for p in graph]
    assert verdict.row("graph").decode_gemm == pytest.approx(_layer_speedup(fixed), rel=1e-12)
    assert _layer_speedup(graph) == pytest.approx(0.603, abs=0.001)  # what the flagged point gave
    assert verdict.row("graph").decode_gemm == pytest.approx(0.626, abs=0.001)
    assert "gate_proj M=1: kernel-plus-graph-cost" in verdict.row("graph").note
    best = searched_gemm_speedup(recorded_alg_search(), answer.CHAT)["decode"]
    assert verdict.row("graph-searched").decode_gemm == best
    # From the kernel table: 158.7 us dense vs 272.7 us 2:4 at M = 1 (0.58x).
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
    assert verdict.measured_best.key == "graph-searched" and verdict.high == verdict.row("graph").per_token
    assert verdict.low == verdict.row("eager").per_token < 0.1 < kernel < verdict.high < 1 < verdict.measured_best.per_token


def test_software_it_holds_for(verdict):
    s = verdict.software
    assert (s["gpu"], s["torch"], s["cusparselt"], s["date"]) == ("NVIDIA H200", "2.11.0+cu130", "0.8.0", "2026-11-30")
    assert "cuSPARSELt 0.8.0" in verdict.software_line


def test_bf16_rows_are_what_was_measured_in_bf16():
    rows = answer.bf16_rows()
    res = [r for r in recorded_results("gpu") if str(r.path).endswith(answer.BENCH_FILE)][0]
    bf16 = replace(answer.CHAT, dtype="bf16")
    for r, mode in zip(rows, ("lone", "graph")):
        assert r.status == "measured" and r.decode_gemm == measured_gemm_speedup(res, bf16, mode=mode)["decode"]
    assert rows[0].decode_gemm == pytest.approx(_layer_speedup(res.gpu_points("lone"), dtype="bfloat16"), rel=1e-12)
    # bf16 graph: the flagged dense k/v M = 1 replay (30.2 us) is replaced by the fastest dense replay at a larger M
    graph = res.gpu_points("graph")
    kv = [p for p in graph if (p["M"], p["N"], p["dtype"]) == (1, 1024, "bfloat16")][0]
    assert kv["flagged"] and round(kv["dense_ms"] * 1e3, 1) == 30.2
    floor = min(p["dense_ms"] for p in graph if (p["N"], p["K"], p["dtype"]) == (1024, 4096, "bfloat16") and p["M"] > 1)
    fixed = [dict(p, dense_ms=floor) if p is kv else p for p in graph]
    assert rows[1].decode_gemm == pytest.approx(_layer_speedup(fixed, dtype="bfloat16"), rel=1e-12)
    assert "dense-at-larger-m" in rows[1].note


def test_the_bottom_line_gives_the_why_then_the_chain_headline_in_both_dtypes():
    from twofour.course.gemm_chain import chain_headline
    from twofour.roofline.mechanism import why

    text, h = answer.bottom_line_markdown(), chain_headline()
    assert text.index(why()) < text.index("The bottom line.")
    assert f"**{h['fp16']['per_token']:.2f}x the dense speed in fp16 and {h['bf16']['per_token']:.2f}x in bf16**" in text
    assert "`F.linear`" in text and "near break-even" in text


def test_quotes_fill_refuse_unknown_keys_and_are_idempotent():
    text = "a <!-- verdict:range -->old<!-- /verdict --> b <!-- verdict:direct -->x<!-- /verdict -->"
    once = answer.fill_quotes(text, "index.md")
    q = answer.quoted_numbers()
    assert once == f"a <!-- verdict:range -->{q['range']}<!-- /verdict --> b <!-- verdict:direct -->{q['direct']}<!-- /verdict -->"
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
    quotes = answer.quoted_numbers()
    stale = [line for path, site in refresh_quotes.quoting_files() for line in refresh_quotes.stale(path, site, quotes)]
    assert not stale, "run `.venv/bin/python scripts/refresh_quotes.py`:\n" + "\n".join(stale)


def test_the_home_page_and_chapter_7_quote_the_headline_and_the_same_checklist():
    home = (ROOT / "docs/index.md").read_text(encoding="utf-8")
    nb = json.loads((ROOT / "notebooks/07-the-answer.ipynb").read_text(encoding="utf-8"))
    chapter = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "<!-- bottom-line -->" in home and "<!-- checklist -->" in home
    takeaway = "".join(nb["cells"][0]["source"])
    assert "<!-- verdict:chain -->" in takeaway and "<!-- verdict:why -->" in takeaway  # the why, then the headline
    assert chapter.count("<!-- checklist -->") == 1
    def items(text):  # the list between the markers, wrapping undone
        body = text.split("<!-- checklist -->", 1)[1].split("<!-- /checklist -->")[0]
        return " ".join(body.split())

    assert items(home).replace("notebooks/", "").replace("(calculator/", "(../calculator/") == items(chapter)


def test_calculator_opens_on_the_gemm_chain_headline(verdict):
    """The calculator's opening decode GEMM speedup is the GEMM-chain traces' (not the one-GEMM graph
    bench's, which flatters 2:4 at decode), so its per-token number is the home page's."""
    from twofour.course.gemm_chain import chain_headline

    c = answer.calculator_verdict()
    r, chain = verdict.row("graph"), chain_headline()["fp16"]
    assert (c["gpu"], c["dtype"], c["batch"], c["row"]) == ("H200", "fp16", 1, "chain")
    assert (c["speedup_decode"], c["speedup_prefill"]) == (chain["gemm"], r.prefill_gemm)
    assert c["per_token"] == pytest.approx(chain["per_token"], rel=1e-12)
    assert c["speedup_decode"] < r.decode_gemm  # the bench's bias is off, not added


def test_the_calculators_opening_values_round_to_the_headline():
    """calculator_opening() (VERDICT in docs/js/calc/data.js, whose freshness tests/course/calculator
    checks): its 3-decimal GEMM speedups give the same 2-decimal request and per-token numbers as the
    unrounded ones (what the headline shows)."""
    from twofour.request import estimate

    c = answer.calculator_verdict()
    opening = answer.calculator_opening()
    rounded = {"prefill": opening["speedup_prefill"], "decode": opening["speedup_decode"]}
    assert rounded == {"prefill": round(c["speedup_prefill"], 3), "decode": round(c["speedup_decode"], 3)}
    est = estimate(answer.CHAT, c["gpu"], gemm_speedup=rounded)
    assert f"{est.speedup('request'):.2f}" == f"{c['request']:.2f}" and f"{est.speedup('tpot'):.2f}" == f"{c['per_token']:.2f}"
    assert c["pruned"] == list(answer.CHAT.pruned)


def test_no_quoted_number_starts_a_line():
    """A line that starts with an HTML comment starts an HTML block in Markdown, which cuts the
    paragraph in two around the quoted number (the calculator page did, at 1280 and 390 px)."""
    bad = [f"{site}: {line.strip()[:60]}" for path, site in refresh_quotes.quoting_files()
           for text in refresh_quotes.markdown_texts(path) for line in text.splitlines()
           if line.lstrip().startswith("<!-- verdict:")]
    assert not bad, bad


def _markdown(path):
    return "\n".join(refresh_quotes.markdown_texts(ROOT / path))


def test_one_explanation_of_the_decode_loss_stated_in_chapter_4_and_quoted_everywhere():
    """Chapter 4 states it once; chapter 7, the calculator (page and its JS), and the bank quote the same text."""
    from twofour.course.decode_loss import decode_loss_explanation
    from twofour.course.practice import load_bank

    text = decode_loss_explanation()
    marker = f"<!-- verdict:decode-loss -->{text}<!-- /verdict -->"
    assert _markdown("notebooks/04-kernel-speed.ipynb").count("<!-- verdict:decode-loss -->") == 1
    for page in ("notebooks/04-kernel-speed.ipynb", "notebooks/07-the-answer.ipynb", "docs/calculator/index.md"):
        assert marker in _markdown(page), page
    assert answer.calculator_verdict()["decode_loss"] == text
    # the calculator's verdict says it in the mechanism's two plain sentences (roofline.mechanism.why)
    from twofour.roofline.mechanism import why

    assert answer.calculator_verdict()["why"] == why()
    assert "VERDICT.why" in (ROOT / "docs/js/calc/ui/request-calc.js").read_text(encoding="utf-8")
    quoted = [q for q in load_bank() if any(n.expr == "decode_loss_explanation()" for n in q.numbers)]
    assert quoted and all(text in q.render("answer") for q in quoted)
    # the three earlier explanations are gone from the pages that gave them
    for page in ("notebooks/07-the-answer.ipynb", "docs/calculator/index.md", "docs/js/calc/ui/request-calc.js"):
        body = (ROOT / page).read_text(encoding="utf-8")
        for old in ("without splitting K", "a tile of 128 padded rows", "per-call cost and padding outweigh"):
            assert old not in body, (page, old)


def test_a_reworded_copy_of_the_explanation_is_caught():
    reworded = "<!-- verdict:decode-loss -->The default kernel loses because of padding.<!-- /verdict -->"
    assert answer.stale_quotes(reworded, "notebooks/07-the-answer.ipynb")


def test_the_sweep_is_quoted_as_it_was_and_no_page_claims_every_algorithm():
    sweep = answer.quoted_numbers()["sweep"]
    assert sweep.startswith("algorithms 0-7 of those the library accepts") and "chose IDs never timed" in sweep
    for page in ("notebooks/04-kernel-speed.ipynb", "notebooks/07-the-answer.ipynb"):
        assert f"<!-- verdict:sweep -->{sweep}<!-- /verdict -->" in _markdown(page)
    hits = []
    for folder in ("docs", "notebooks", "labs", "src", "scripts", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in (".md", ".ipynb", ".py", ".yaml", ".sh", ".js"):
                if "every algorithm" in path.read_text(encoding="utf-8", errors="replace").lower():
                    hits.append(str(path.relative_to(ROOT)))
    assert not hits, hits


def test_quote_keys_may_hold_digits():
    """chain-gemm3 (graph-gemm3 before it) was never filled while the marker pattern took letters and hyphens only."""
    q = answer.quoted_numbers()
    assert answer.fill_quotes("<!-- verdict:chain-gemm3 -->old<!-- /verdict -->", "index.md") == (
        f"<!-- verdict:chain-gemm3 -->{q['chain-gemm3']}<!-- /verdict -->")
