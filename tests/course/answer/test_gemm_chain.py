"""The per-token headline from the GEMM-chain traces (twofour.course.gemm_chain), and the bench's bias."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from twofour.course import gemm_chain

TRACES = Path(gemm_chain.__file__).resolve().parents[1] / "data" / "traces"


@pytest.fixture(scope="module")
def head():
    return gemm_chain.chain_headline()


def _chain_wall_us(tag: str) -> float:
    """Median wall span of one chain of 14 GEMMs in a trace, from the raw events."""
    with gzip.open(TRACES / f"h200-20261130-trace-{tag}.json.gz") as f:
        ev = sorted((e for e in json.load(f)["traceEvents"] if e.get("cat") in ("kernel", "gpu_memset")),
                    key=lambda e: e["ts"])
    gemms = [e for e in ev if "nvjet" in e["name"] or "xmma_sparse" in e["name"]]
    spans = []
    for i in range(0, len(gemms), 14):
        chain = gemms[i:i + 14]
        spans.append(chain[-1]["ts"] + chain[-1]["dur"] - chain[0]["ts"])
    return sorted(spans)[len(spans) // 2]


def test_the_chains_gemm_ratio_is_its_wall_time_ratio(head):
    ratio = _chain_wall_us("dense-graph") / _chain_wall_us("sparse-graph")
    assert head["fp16"]["gemm_m16"] == pytest.approx(ratio, abs=0.02)


def test_the_bench_adds_more_to_every_dense_call_than_to_its_2to4_call():
    for r in gemm_chain.chain_rows():
        assert r["bias_dense"] > r["bias_sparse"] > 0, r["kind"]


def test_headline_sits_below_the_biased_bench_in_both_dtypes(head):
    assert 0.4 < head["fp16"]["per_token"] < head["bench"]["per_token"]
    assert 0.2 < head["bf16"]["per_token"] < head["bench"]["bf16_per_token"]
    assert head["bf16"]["gemm"] < head["fp16"]["gemm"]  # bf16 runs its own, slower 2:4 kernel


def test_bias_corrected_bf16_matches_the_unflushed_kernel_table(head):
    c = head["bf16_check"]
    assert c["corrected_dense"] == pytest.approx(c["table_dense"], rel=0.05)
    assert c["corrected_sparse"] == pytest.approx(c["table_sparse"], rel=0.05)


def test_searched_algorithm_bracket_spans_break_even(head):
    low, high = head["searched"]
    assert low < 1.0 < high


def test_sentences_quote_the_computed_figures(head):
    s, b = gemm_chain.headline_sentence(), gemm_chain.bias_sentence()
    assert f"{head['fp16']['per_token']:.2f}x in fp16" in s and f"{head['bf16']['per_token']:.2f}x in bf16" in s
    assert f"{head['bench']['gemm_m16']:.2f}x where the chain gives {head['fp16']['gemm_m16']:.2f}x" in b
