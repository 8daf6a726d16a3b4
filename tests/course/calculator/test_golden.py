"""scripts/golden.py: the parity tables for the static calculators are complete, strict JSON and right."""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from twofour.amdahl import speedup
from twofour.roofline import DEFAULT_PARAMS, SCENARIOS, KernelParams, default_params, predict
from twofour.request import COMPONENTS, RequestInputs, evaluate

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import golden as golden_script  # noqa: E402

sys.path.pop(0)
golden_main = golden_script.main


def _strict_load(path):
    def refuse(token):
        raise AssertionError(f"{path.name} contains the non-JSON token {token}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    out = tmp_path_factory.mktemp("golden")
    assert golden_main(["--out", str(out), "--cases", "40", "--seed", "3"]) == 0
    return {name: _strict_load(out / f"{name}.json") for name in ("amdahl", "request", "funnel", "roofline")} | {"dir": out}


def test_amdahl_cases_match_the_formula(golden):
    cases = golden["amdahl"]["speedup"]
    assert len(cases) >= 300
    assert {(c["p"], c["s"]) for c in cases} >= {(0.0, 2.0), (1.0, 2.0), (0.5, 1.0)}  # the limits are there
    for c in cases:
        assert c["speedup"] == 1.0 / ((1.0 - c["p"]) + c["p"] / c["s"])
    assert any(c["max_speedup"] == "Infinity" for c in golden["amdahl"]["max_speedup"])


def test_amdahl_error_cases_say_what_was_wrong(golden):
    errors = golden["amdahl"]["errors"]
    assert {e["input"].get("p") for e in errors if e["function"] == "speedup"} >= {"NaN", "Infinity", -0.1}
    assert all(e["error"] == "ValueError" and e["message"] for e in errors)


def test_request_cases_reproduce_and_obey_amdahl(golden):
    """A round-trip lock, not an oracle: evaluate() wrote these files, so agreeing with them only
    proves the JSON carries every number the JS parity tests need, bit for bit (no rounding, no
    lost key). Whether the numbers are *right* is tests/toolkit/request/test_oracles.py's job (hand-derived
    FLOPs, bytes and a published measurement); the Amdahl identity below is an independent check."""
    cases = golden["request"]["cases"]
    edge = [c for c in cases if c["label"] != "random"]
    assert len(cases) == len(edge) + 40
    labels = [c["label"] for c in cases]
    assert "huge context 10M" in labels and "one output token (no decode step)" in labels
    for case in cases:
        est = evaluate(RequestInputs.from_dict(case["inputs"]))
        out = case["output"]
        assert est.to_dict() == out  # what the file says is what the model computes
        for phase in ("prefill", "decode"):
            ph = out[phase]
            assert sum(ph["dense"][c] for c in COMPONENTS) == pytest.approx(ph["dense_s"], rel=1e-12)
            if ph["steps"]:
                assert speedup(ph["p"], ph["gemm_speedup"]) == pytest.approx(ph["speedup"], rel=1e-12)


def test_defaults_are_labelled_with_sources(golden):
    defaults = golden["request"]["defaults"]
    assert set(defaults["sources"]) >= {"model", "gpu", "workload", "pruned", "gemm_source", "assumptions"}
    assert "derived" in defaults["sources"]["workload"]
    assert "lm_head" not in defaults["pruned"]


def test_gpu_table_holds_what_the_cases_used(golden):
    gpus = golden["request"]["gpus"]
    assert "T4" not in gpus  # no sparse tensor cores
    for case in golden["request"]["cases"]:
        spec = gpus[case["context"]["gpu"]]
        assert case["inputs"]["dense_flops"] == spec["dense_tflops"][case["context"]["dtype"]] * 1e12
        assert case["inputs"]["bandwidth"] == spec["mem_bw_gbs"] * 1e9
    assert gpus["H100"]["pad_multiple"]["fp16"] >= 1


def test_random_cases_cover_the_input_space(golden):
    ctx = [c["context"] for c in golden["request"]["cases"] if c["label"] == "random"]
    assert {c["gemm_source"] for c in ctx} == {"roofline", "measured"}
    assert {c["scenario"] for c in ctx} == {"eager", "cached", "kernel"}
    assert {c["backend"] for c in ctx} >= {None, "cuSPARSELt", "CUTLASS"}
    assert len({c["gpu"] for c in ctx}) >= 3 and len({c["dtype"] for c in ctx}) >= 3
    assert max(c["prompt_len"] for c in ctx) > 10_000 and min(c["batch"] for c in ctx) < 10


def test_mixed_step_cases_carry_the_chunk_only_where_it_is_set(golden):
    """Chunked prefill: several named cases and some random ones; the field is in the inputs only when > 0."""
    cases = golden["request"]["cases"]
    mixed = [c for c in cases if c["context"]["prefill_chunk_tokens"] > 0]
    named = [c for c in mixed if c["label"] != "random"]
    assert len(named) >= 6 and any(c["label"] == "random" for c in mixed)
    assert len({c["context"]["gpu"] for c in named}) >= 4 and {c["context"]["scenario"] for c in named} == set(SCENARIOS)
    assert any(c["context"]["prefill_chunk_tokens"] > c["context"]["prompt_len"] for c in named)  # max(P - c, 0)
    assert any(c["context"]["output_len"] == 1 for c in named)  # the one-step TPOT of a request with no decode step
    assert any(c["context"]["gemm_source"] == "measured" for c in named)
    for case in cases:
        chunk = case["context"]["prefill_chunk_tokens"]
        assert case["inputs"].get("prefill_chunk_tokens", 0) == chunk
        assert ("prefill_chunk_tokens" in case["inputs"]) == (chunk > 0)
    for case in mixed:  # the chunk costs decode time: the same inputs without it are faster
        inputs = RequestInputs.from_dict({k: v for k, v in case["inputs"].items() if k != "prefill_chunk_tokens"})
        plain = evaluate(inputs).to_dict()["decode"]["dense"]
        out = case["output"]["decode"]["dense"]
        if case["output"]["decode"]["steps"]:
            assert out["attention"] > plain["attention"] and out["kv_cache"] > plain["kv_cache"]
            assert out["embedding"] > plain["embedding"] and out["lm_head"] == plain["lm_head"]


def test_funnel_cases_end_at_the_request_numbers(golden):
    requests = {c["id"]: c["output"]["summary"] for c in golden["request"]["cases"]}
    rows = golden["funnel"]["cases"]
    assert len(rows) == 3 * len(requests)
    final_key = {"request": "speedup_request", "prefill": "speedup_ttft", "decode": "speedup_tpot"}
    for row in rows:
        stages = row["stages"]
        assert [s["key"] for s in stages][0] == "datasheet" and len(stages) == 5
        assert [s["step"] for s in stages] == [1, 2, 3, 4, 5]
        assert all(s["title"].startswith(f"step {s['step']}: ") and "speedup" in s["title"] for s in stages)
        assert stages[-1]["speedup"] == pytest.approx(requests[row["request_case"]][final_key[row["scope"]]], rel=1e-12)


def test_same_seed_same_bytes(golden, tmp_path):
    assert golden_main(["--out", str(tmp_path), "--cases", "40", "--seed", "3"]) == 0
    for name in ("amdahl", "request", "funnel", "roofline"):
        assert (tmp_path / f"{name}.json").read_bytes() == (golden["dir"] / f"{name}.json").read_bytes()


def test_default_writes_hundreds_of_cases(tmp_path, capsys):
    assert golden_main(["--out", str(tmp_path / "new" / "dir")]) == 0
    printed = capsys.readouterr().out
    assert "request.json (232 cases)" in printed and "roofline.json (" in printed


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "f.json"
    a_file.write_text("{}")
    assert golden_main(["--out", str(a_file)]) == 2
    assert "--out must be a directory" in capsys.readouterr().err
    assert golden_main(["--out", str(tmp_path), "--cases", "-1"]) == 2
    assert "--cases must be >= 0" in capsys.readouterr().err


def test_edge_cases_cover_every_scenario_and_the_fitted_sets(golden):
    ctx = [c["context"] for c in golden["request"]["cases"] if c["label"] != "random"]
    assert {c["scenario"] for c in ctx} == {"eager", "cached", "kernel"}
    pairs = {(c["gpu"], c["roofline_backend"], c["scenario"]) for c in ctx}
    assert {("A100", "CUTLASS", "eager"), ("A100", "cuSPARSELt", "eager"), ("H200", "cuSPARSELt", "eager")} <= pairs
    assert "L4" in {c["gpu"] for c in ctx}  # a GPU without a fitted set of its own: the base set
    for case in golden["request"]["cases"]:
        c = case["context"]
        assert c["roofline_params"] == default_params(c["gpu"], c["roofline_backend"]).to_dict()


def test_roofline_cases_reproduce_predict(golden):
    """A round-trip lock, not an oracle (predict() wrote the file): the golden cases must reload
    into the same predictions. The formula's values are checked by hand in tests/toolkit/roofline/test_roofline.py
    and tests/toolkit/roofline/test_roofline_edges.py."""
    data = golden["roofline"]
    assert data["scenarios"] == list(SCENARIOS) and data["algorithms"] == ["default", "searched"] and len(data["cases"]) > 1000
    cases = data["cases"]
    assert {(c["gpu"], c["backend"]) for c in cases} >= {("A100", "CUTLASS"), ("A100", "cuSPARSELt"), ("L4", None)}
    assert {(c["scenario"], c["algorithm"], c["l2"]) for c in cases} == {
        (s, a, l) for s in SCENARIOS for a in ("default", "searched") for l in ("flushed", "clean")}
    for c in cases:
        params = None if c["params"] is None else KernelParams.from_dict(c["params"])
        p = predict(c["M"], c["N"], c["K"], c["dtype"], c["gpu"], c["backend"], params, scenario=c["scenario"],
                    algorithm=c["algorithm"], l2=c["l2"])
        assert p.to_dict() == c["output"]
    outs = [c["output"] for c in cases]
    # the vectors exercise every branch the JS must follow: host-bound, guard, split-K, several waves,
    # padding with its pad kernels, each family, tile tables of several rows
    assert any(o["bound_sparse"] == "host" for o in outs) and any(o["ceiling_guard"] for o in outs)
    assert any(o["sparse"]["split"] > 1 for o in outs) and any(o["dense"]["split"] > 1 for o in outs)
    assert any(o["sparse"]["waves"] > 1 for o in outs) and any(o["sparse"]["helpers_us"] > 0 for o in outs)
    assert {o["sparse"]["family"] for o in outs} == {"cusparselt", "cusparselt_bf16", "cusparselt_searched", "cutlass"}
    assert len({(o["dense"]["tile_n"], o["dense"]["tile_m"]) for o in outs}) >= 8
    assert data["default_params"]["L4"] == DEFAULT_PARAMS.to_dict()
    assert data["default_params"]["A100/CUTLASS"] == data["default_params"]["A100"] != DEFAULT_PARAMS.to_dict()
    assert len(data["errors"]) >= 11 and len(data["params_errors"]) >= 14
    assert any(e["message"].startswith("scenario must be one of") and e["message"].endswith("got 'ideal'")
               for e in data["errors"])
    assert all(e["message"] for e in data["errors"] + data["params_errors"])


def test_golden_needs_an_out_folder(capsys):
    assert golden_main([]) == 2
    assert "give --out DIR" in capsys.readouterr().err


# ---- the writer: what every output of the project's commands gets -----------------------------


def test_a_symlink_planted_in_the_folder_is_replaced_never_written_through(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (out / "amdahl.json").symlink_to(victim)
    assert golden_main(["--out", str(out), "--cases", "0"]) == 0
    capsys.readouterr()
    assert victim.read_text() == "keep me"
    assert not (out / "amdahl.json").is_symlink() and (out / "amdahl.json").read_text().startswith("{")


def test_a_failed_write_leaves_the_previous_vectors(capsys, tmp_path, monkeypatch):
    from twofour._common import atomic

    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "amdahl.json").write_text("previous")

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    assert golden_main(["--out", str(folder), "--cases", "0"]) == 2
    err = capsys.readouterr().err
    assert "cannot write (No space left on device)" in err and err.count("\n") == 1
    assert (folder / "amdahl.json").read_text() == "previous" and not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_the_folder_is_refused_before_any_work(capsys, tmp_path):
    os.mkfifo(tmp_path / "amdahl.json")
    assert golden_main(["--out", str(tmp_path), "--cases", "0"]) == 2
    assert "FIFO (named pipe)" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.stat(tmp_path / "amdahl.json").st_mode)


@pytest.mark.parametrize("args, match", [
    (["--out", "/dev/full"], "must be a directory"),
    (["--out", "g", "--cases", str(10**9)], "--cases must be at most"),
])
def test_devices_and_absurd_counts_are_one_line_errors(capsys, args, match):
    assert golden_main(args) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1 and "Traceback" not in err


def test_amdahl_errors_hold_the_denormal_case():
    """The parity test (tests/site/test_calculators.py) checks JS refuses these with the same message."""
    import random

    errors = golden_script.amdahl_table(random.Random(0))["errors"]
    assert any(e["input"].get("s") == 1e-320 and "smallest normal double" in e["message"] for e in errors)
