"""The decode loss's mechanism (twofour.roofline.mechanism): every figure re-read from the raw stored files."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from twofour.roofline import mechanism

DATA = Path(mechanism.__file__).resolve().parents[1] / "data"
PER_SM = 1979e12 / 132  # H200 sparse fp16 peak per SM (data sheet)


@pytest.fixture(scope="module")
def facts():
    return mechanism.mechanism_facts()


def test_the_default_kernels_token_tile_is_256_wide_in_every_recorded_kernel_name(facts):
    names = set()
    for path in (DATA / "traces").glob("*sparse*.json.gz"):
        with gzip.open(path) as f:
            names |= {e["name"] for e in json.load(f)["traceEvents"] if "xmma_sparse" in e.get("name", "")}
    kernels = json.loads((DATA / "kernels-nvidia-h200-20261130.json").read_text())
    names |= {r["name"] for c in kernels["cases"] for r in c["rows"] if "xmma_sparse_gemm_f16" in r["name"]}
    tiles = {re.search(r"tilesize(\d+)x(\d+)", n).groups() for n in names}
    assert tiles == {("128", "256")}
    assert (facts["tile"], facts["token_tile"]) == ("128 x 256", 256)
    assert facts["dense_tiles"] == {"float16": "128 x 8", "bfloat16": "64 x 8"}


def test_gate_up_kernel_time_is_flat_to_one_token_tile_then_grows_with_each_tile(facts):
    raw = json.loads((DATA / "bench-nvidia-h200-llama-3-8b-20261130.json").read_text())
    us = {p["M"]: p["modes"]["kernel"]["sparse"]["cuSPARSELt"]["median_ms"] * 1e3 for p in raw["points"]
          if (p["N"], p["K"], p["dtype"]) == (14336, 4096, "float16") and "kernel" in p["modes"]}
    assert facts["flat"] == pytest.approx({M: us[M] for M in mechanism.MEASURED_M})
    assert max(us[1], us[16], us[256]) < 1.3 * min(us[1], us[16], us[256])  # flat to M = 256
    assert us[256] < us[512] < us[1024] < us[2048]


def test_about_half_of_sparse_peak_with_one_and_with_eight_token_tiles(facts):
    flops_256 = 2 * 14336 * 256 * 4096  # 112 tiles of 128 x 256, all padding counted
    assert facts["efficiency"][256] == pytest.approx(flops_256 / (facts["flat"][256] * 1e-6) / (PER_SM * 112))
    assert 0.4 < facts["efficiency"][256] < 0.6 and 0.4 < facts["efficiency"][2048] < 0.6


def test_padded_math_at_one_token_outlasts_streaming_the_packed_weight(facts):
    rows = {r["layers"]: r for r in facts["one_token"]}
    # gate/up: one 128 x 256 tile per CTA over all of K (no split), at the per-SM peak
    assert rows["gate/up"]["math_us"] == pytest.approx(2 * 128 * 256 * 4096 / PER_SM * 1e6)
    assert rows["gate/up"]["stream_us"] == pytest.approx(14336 * 4096 * 2 * 0.5625 / 4.8e12 * 1e6)
    assert [rows[k]["split"] for k in ("gate/up", "down", "q/o", "k/v")] == [1, 3, 3, 4]
    assert all(r["math_us"] > r["stream_us"] for r in rows.values())


def test_every_surface_text_carries_the_computed_figures(facts):
    para, short = mechanism.mechanism_paragraph(), mechanism.why()
    for r in facts["one_token"]:
        assert f"{r['math_us']:.1f}" in para and f"{r['stream_us']:.1f}" in para
    assert f"{facts['efficiency'][2048]:.0%}" in para and "none were recorded" in para
    assert "256" in short and "\n" not in short and "`" not in short


def test_a_second_tile_shape_in_the_traces_is_refused(monkeypatch):
    from twofour.roofline import evidence

    real = evidence.trace_grids
    monkeypatch.setattr(evidence, "trace_grids", lambda tag="sparse-graph": real(tag) + [{**real(tag)[0], "tile_m": 128}])
    mechanism.mechanism_facts.cache_clear()
    try:
        with pytest.raises(ValueError, match="assumes one tile"):
            mechanism.mechanism_facts()
    finally:
        mechanism.mechanism_facts.cache_clear()
