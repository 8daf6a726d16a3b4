"""No quoted number rests on a flagged timing.

The walk computes every number the site quotes from the recorded GPU runs: the verdict's
markers (``quoted_numbers``), the home page's bottom line, the calculator's defaults
(``calculator_verdict``), the bf16 rows and every practice-bank answer. While it runs, each
recorded row ``Results.gpu_points`` hands out reports any read of its timing (``dense_ms``,
``sparse_ms``) while the row is flagged, unless the reader is ``twofour.bench.trusted`` (which
replaces it by a named rule or drops it). A planted flag shows the walk sees what it should.
"""

from __future__ import annotations

import sys

import pytest

from twofour.bench import flags as bench_flags
from twofour.bench.results import Results
from twofour.course import answer
from twofour.course.practice import helpers, load_bank
from twofour.course.practice import questions as bank_questions
from twofour.bench import trusted

TIMINGS = ("dense_ms", "sparse_ms")
# Readers that may read a flagged row's timing: the trusted reader (it replaces or drops it), and
# twofour.roofline.published, which turns every row into a Point that carries its flag (the fit and
# its error tables leave flagged points out: twofour.roofline.published.FIT_RULES).
ALLOWED = {trusted.__name__, "twofour.roofline.published"}


class _Row(dict):
    """A gpu_points row that reports reads of a flagged row's timings to ``sink``."""

    sink: list

    def __getitem__(self, key):
        if key in TIMINGS and dict.get(self, "flagged"):
            reader = sys._getframe(1).f_globals.get("__name__")
            if reader not in ALLOWED:
                self.sink.append((reader, self["shape"], self["M"], self["dtype"], self["mode"], key))
        return dict.__getitem__(self, key)


class _Watched(dict):
    """A trusted table that reports each row it hands out to ``sink``."""

    sink: list

    def _note(self, key, row):
        if row is not None:
            self.sink.append({"file": row["file"], "mode": row["mode"], "M": key[0], "N": key[1], "K": key[2],
                              "shape": row["shape"], "dtype": row["dtype"], "flagged": row["flagged"], "rule": row["rule"],
                              "raw": (row["dense_ms"], row["sparse_ms"]) == (row["raw_dense_ms"], row["raw_sparse_ms"])})
        return row

    def get(self, key, default=None):
        return self._note(key, super().get(key)) if key in self else default

    def __getitem__(self, key):
        return self._note(key, super().__getitem__(key))

    def items(self):
        return [(k, self._note(k, v)) for k, v in super().items()]

    def values(self):
        return [v for _, v in self.items()]


def _clear_caches():
    answer.verdict_table.cache_clear()
    helpers._measured_table.cache_clear()
    bank_questions._evaluate_cached.cache_clear()


def walk(monkeypatch) -> tuple[list, list]:
    """Compute every quoted number; returns (flagged timings read outside the trusted reader, trusted uses)."""
    raw_reads: list = []
    original = Results.gpu_points

    def gpu_points(self, mode="eager"):
        rows = []
        for r in original(self, mode):
            row = _Row(r)
            row.sink = raw_reads
            rows.append(row)
        return rows

    used: list = []
    table = trusted.trusted_gemm_table

    def watched_table(*args, **kwargs):
        out = _Watched(table(*args, **kwargs))
        out.sink = used
        return out

    monkeypatch.setattr(Results, "gpu_points", gpu_points)
    monkeypatch.setattr(trusted, "trusted_gemm_table", watched_table)
    _clear_caches()
    try:
        answer.quoted_numbers()
        answer.bottom_line_markdown()
        answer.calculator_verdict()
        answer.bf16_rows()
        for q in load_bank():
            q.evaluate()
    finally:
        _clear_caches()
    return raw_reads, used


def _plant(monkeypatch, shape, M, dtype, mode, side):
    """Make the flag rules fire on one more (point, mode, side), as a real suspect point would."""
    real = bench_flags.flag_points

    def flag_points(points):
        out = real(points)
        for p in points:
            if (p.get("shape"), p["M"], p["dtype"]) == (shape, M, dtype):
                out.append({"shape": p.get("shape"), "M": M, "N": p["N"], "K": p["K"], "dtype": dtype, "mode": mode,
                            "side": side, "rule": "planted", "evidence": "planted by the test"})
        return out

    monkeypatch.setattr(bench_flags, "flag_points", flag_points)


def test_no_quoted_number_rests_on_a_flagged_timing(monkeypatch):
    raw_reads, used = walk(monkeypatch)
    assert not raw_reads, f"flagged timings read outside twofour.bench.trusted: {sorted(set(raw_reads))[:10]}"
    flagged = [u for u in used if u["flagged"]]
    # the recorded flagged points the quoted numbers need were all replaced by a named rule, none taken raw
    assert flagged and all(u["rule"] in trusted.FLAG_RULES and not u["raw"] for u in flagged)
    assert {(u["shape"], u["M"], u["mode"]) for u in flagged} >= {("Llama-3-8B gate_proj/up_proj", 1, "graph")}


def test_a_planted_flag_is_replaced_where_the_verdict_uses_it(monkeypatch):
    before = answer.verdict_table().row("graph").decode_gemm
    _plant(monkeypatch, "Llama-3-8B q_proj/o_proj", 1, "float16", "graph", "cuSPARSELt")
    raw_reads, used = walk(monkeypatch)
    assert not raw_reads
    hit = [u for u in used if u["shape"] == "Llama-3-8B q_proj/o_proj" and u["M"] == 1 and u["mode"] == "graph"
           and u["file"] == answer.BENCH_FILE and u["dtype"] == "float16"]
    assert hit and all(u["rule"] == "kernel-plus-graph-cost" for u in hit), {(u["rule"], u["flagged"]) for u in hit}
    _clear_caches()
    try:
        row = answer.verdict_table().row("graph")
        assert "q_proj M=1: kernel-plus-graph-cost" in row.note and row.decode_gemm != before
    finally:
        _clear_caches()


def test_the_walk_fails_on_a_planted_flag_a_reader_takes_as_recorded(monkeypatch):
    """The bank's measured-GEMM helper as it was before flags were honoured: the walk must catch it."""

    def raw_table(mode):
        table = {}
        for res in helpers_recorded():
            for row in res.gpu_points(mode):
                table[(row["M"], row["N"], row["K"], row["dtype"])] = (row["dense_ms"], row["sparse_ms"])
        return table

    from twofour.bench import recorded_results as helpers_recorded

    _plant(monkeypatch, "Llama-3-8B down_proj", 1, "bfloat16", "graph", "dense")
    monkeypatch.setattr(helpers, "_measured_table", _cached(raw_table))
    raw_reads, _ = walk(monkeypatch)
    assert ("Llama-3-8B down_proj", 1, "bfloat16", "graph") in {r[1:5] for r in raw_reads}, raw_reads[:5]


def _cached(fn):
    import functools

    return functools.lru_cache(maxsize=None)(fn)


@pytest.mark.parametrize("mode", ["stream", "kernel"])
def test_a_flag_no_rule_can_replace_drops_the_point_and_the_phase(monkeypatch, mode):
    """Outside graph replays there is no rule: the point is left out, and a phase that needs it is unmeasured."""
    from twofour.request import measured_gemm_detail

    _plant(monkeypatch, "Llama-3-8B q_proj/o_proj", 1, "float16", mode, "cuSPARSELt")
    d = measured_gemm_detail(answer.verdict_results(), answer.CHAT, mode=mode)
    assert d["decode"]["speedup"] is None and d["decode"]["rows"]["q_proj"] is None
    assert d["prefill"]["speedup"] is not None
