"""`make gpu-check GPU_CHECK_ARGS=--rehearse`: every step's code runs on the CPU and writes files the readers take."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from twofour.bench import load_results, recorded_alg_search
from twofour.serve import load_decode_results

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_rehearsal_runs_every_step_and_files_what_it_wrote(tmp_path):
    out, pack = tmp_path / "run", tmp_path / "run.tgz"
    run = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--rehearse", "--out", str(out), "--pack",
                          str(pack), "--steps", "decode alg-search counters bench-8b"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    for step in ("decode", "alg-search", "counters", "bench-8b", "file"):
        assert f"{step}: rc=0" in run.stdout
    # the GEMM bench went through every timing mode on the simulated GPU, each point saying how it was timed
    bench = load_results(out / "bench-llama-3-8b.json")
    assert bench.settings["modes"] == ["lone", "graph", "stream", "kernel"]
    assert {p["modes"]["graph"]["dense"]["method"] for p in bench.points} == {"graph/2"}
    # decode: algorithm 0 and the searched one, both dtypes, each with its timing method and profile
    decode = load_decode_results(out / "decode-rehearsal.json")
    assert {(m["dtype"], m["mode"]) for m in decode.measured() if m["weights"] == "2:4"} == {
        (d, m) for d in ("float16", "bfloat16") for m in ("graph", "graph-searched")}
    assert all(m["timing"]["calls_per_window"] == 4 and "kernels" in m["profile"] for m in decode.measured())
    # the sweep in both dtypes, read back per dtype; the counters say why there are none
    filed = out / "filed-rehearsal" / "src" / "twofour" / "data"
    assert len(recorded_alg_search(filed, dtype="bfloat16")) == 2 == len(recorded_alg_search(filed))
    counters = json.loads((out / "counters-rehearsal.json").read_text())
    assert counters["available"] is False and "ncu" in counters["reason"]
    assert sorted(p.name.split("-")[0] for p in filed.iterdir()) == ["bench", "counters", "cslt", "decode"]
    assert (out / "filed-rehearsal" / "benchmarks" / "gpu-runs").is_dir()
    with tarfile.open(pack) as tgz:  # what comes back from the device machine
        assert {"./decode-rehearsal.json", "./environment.txt", "./file.log"} <= set(tgz.getnames())
