"""Plausibility before a verdict, and comparisons of like with like.

Each case starts from the H200 traces shipped with the package and breaks them the way the
third hostile round did: one absurd kernel duration (1e9 us, the last kernel of its stream:
"GPU busy 100%", and as the dense baseline a "measured" 987,994x), a baseline with 2 GEMMs per
step against 14, a 2:4 baseline or the same file, a CPU-only trace of a GPU run, integers of
5,000 digits, zero-length and overlapping steps, begin/end events. A seeded fuzzer mutates the
trace at random and asks for one clear line or a report whose numbers are possible.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import random
import sys
from pathlib import Path

import pytest

from twofour.cli import main
from twofour.dispatch.trace import TraceError, analyze, recorded, report_text
from twofour.dispatch.trace.plausibility import MAX_GEMM_SPEEDUP

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib: the helper by its file name
from trace_cli_errors import one_line_error as _one_line_error  # noqa: E402

sys.path.pop(0)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def sparse():
    return json.loads(gzip.decompress(recorded("sparse-eager").read_bytes()))


@pytest.fixture(scope="module")
def dense():
    return json.loads(gzip.decompress(recorded("dense-eager").read_bytes()))


def _write(tmp_path, data, name="t.json", text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(data))
    return path


def _last_kernel(d):
    ks = [e for e in d["traceEvents"] if e.get("cat") == "kernel"]
    return max(ks, key=lambda e: e["ts"])


def _absurd_last_kernel(d):
    d = copy.deepcopy(d)
    _last_kernel(d)["dur"] = 1e9
    return d


def test_one_absurd_kernel_duration_is_invalid_not_gpu_busy_100(tmp_path, capsys, sparse):
    path = _write(tmp_path, _absurd_last_kernel(sparse))
    err = _one_line_error(capsys, path)
    assert "1 invalid event in the trace" in err and "reaching beyond the step that holds them" in err
    ph = analyze(path, exclude_invalid=True).phase("decode")
    orig = analyze(recorded("sparse-eager")).phase("decode")
    assert ph.idle_fraction == pytest.approx(orig.idle_fraction, abs=0.02) and ph.idle_fraction > 0.9


def test_an_absurd_dense_baseline_gives_no_measured_speedup(tmp_path, capsys, sparse, dense):
    base = _write(tmp_path, _absurd_last_kernel(dense), "dense.json")
    err = _one_line_error(capsys, recorded("sparse-eager"), "--compare", base)
    assert "the baseline" in err and "reaching beyond the step that holds them" in err


def _keep_gemms_per_step(d, keep):
    """The trace with only the first ``keep`` GEMM kernels of each step."""
    d = copy.deepcopy(d)
    ev = d["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if str(e.get("name", "")).startswith("decode_step"))
    seen = {}
    out = []
    for e in ev:
        if e.get("cat") == "kernel" and "gemm" in e["name"].lower():
            corr = e.get("args", {}).get("correlation")
            launch = next((x["ts"] for x in ev if x.get("cat") == "cuda_runtime"
                           and x.get("args", {}).get("correlation") == corr), e["ts"])
            s = next((k for k, (a, b) in enumerate(steps) if a <= launch <= b), None)
            seen[s] = seen.get(s, 0) + 1
            if seen[s] > keep:
                continue
        out.append(e)
    d["traceEvents"] = out
    return d


def test_compare_refuses_different_work_and_says_what_differs(tmp_path, capsys, sparse):
    few = _write(tmp_path, _keep_gemms_per_step(sparse, 2), "few.json")
    err = _one_line_error(capsys, few, "--compare", recorded("dense-eager"))
    assert "ran 2 GEMMs in the trace and 14 in the baseline" in err and "not do the same work" in err


def test_compare_refuses_a_different_number_of_steps(tmp_path, capsys, dense):
    d = copy.deepcopy(dense)
    for e in d["traceEvents"]:
        if e.get("name") == "decode_step_2":
            e["name"] = "warmup"
    err = _one_line_error(capsys, recorded("sparse-eager"), "--compare", _write(tmp_path, d, "dense.json"))
    assert "the trace has 3 steps, the baseline 2" in err


def test_compare_refuses_a_2_4_baseline_and_the_same_file(tmp_path, capsys, sparse):
    copy_of = copy.deepcopy(sparse)
    copy_of["note"] = "a different file, the same 2:4 run"
    err = _one_line_error(capsys, recorded("sparse-eager"), "--compare", _write(tmp_path, copy_of, "s.json"))
    assert "the baseline ran 42 2:4 GEMMs of 42" in err and "not a dense run" in err
    err = _one_line_error(capsys, recorded("dense-eager"), "--compare", recorded("dense-eager"))
    assert "--compare got the same trace as FILE" in err
    twin = tmp_path / "twin.json.gz"
    twin.write_bytes(recorded("dense-eager").read_bytes())
    assert "same trace" in _one_line_error(capsys, recorded("dense-eager"), "--compare", twin)


def test_the_real_comparison_still_measures(capsys):
    assert main(["trace", str(recorded("sparse-eager")), "--compare", str(recorded("dense-eager"))]) == 0
    assert "2:4 GEMM" in capsys.readouterr().out


def _scaled_sparse_gemms(d, factor):
    d = copy.deepcopy(d)
    for e in d["traceEvents"]:
        if e.get("cat") == "kernel" and "sparse_gemm" in e["name"]:
            e["dur"] *= factor
    return d


def test_a_speedup_above_the_ceiling_is_flagged_and_one_past_physics_refused(tmp_path, capsys, sparse):
    base = analyze(recorded("sparse-eager"), baseline=recorded("dense-eager")).phase("decode").comparison
    s0 = base.gemm_speedup
    flagged = _write(tmp_path, _scaled_sparse_gemms(sparse, s0 / 1.95), "flag.json")
    ph = analyze(flagged, baseline=recorded("dense-eager")).phase("decode")
    assert 1.9 < ph.comparison.gemm_speedup < 2.0
    assert ph.verdicts()[0].startswith("IMPLAUSIBLE: the measured 2:4 GEMM speedup 1.95x is above the 1.78x ceiling")
    past = _write(tmp_path, _scaled_sparse_gemms(sparse, s0 / 5.15), "past.json")
    err = _one_line_error(capsys, past, "--compare", recorded("dense-eager"))
    assert "a measured 2:4 GEMM speedup of 5.15x" in err and "no verdict" in err


def test_a_cpu_only_trace_of_a_gpu_run_is_refused(tmp_path, capsys, sparse):
    d = copy.deepcopy(sparse)
    d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") not in
                        ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "gpu_user_annotation")]
    d.pop("deviceProperties", None)
    err = _one_line_error(capsys, _write(tmp_path, d))
    assert "CUDA-only operators (first: 'aten::_cslt_" in err and "ProfilerActivity.CUDA" in err


def test_a_cpu_trace_of_cpu_work_still_reads():
    import torch
    from twofour.dispatch.trace import record

    W, x = torch.randn(64, 128), torch.randn(8, 128)
    path = record(lambda: torch.nn.functional.linear(x, W), steps=3)
    assert analyze(path).phase("decode").gemms == 3


def test_an_integer_of_5000_digits_is_one_line(tmp_path, capsys, sparse):
    text = json.dumps(sparse)
    k = sparse["traceEvents"][768]
    needle = f'"dur": {json.dumps(k["dur"])}'
    err = _one_line_error(capsys, _write(tmp_path, None, text=text.replace(needle, '"dur": 1' + "0" * 5000, 1)))
    assert "more than 4,300 digits" in err


def test_zero_length_steps_are_invalid_not_a_traceback(tmp_path, capsys, sparse):
    d = copy.deepcopy(sparse)
    for e in d["traceEvents"]:
        if str(e.get("name", "")).startswith("decode_step"):
            e["dur"] = 0
    path = _write(tmp_path, d)
    err = _one_line_error(capsys, path)
    assert "3 step annotations of zero length" in err
    assert main(["trace", str(path), "--drop-invalid"]) == 0
    assert "EXCLUDED" in capsys.readouterr().out


def test_overlapping_step_annotations_never_drop_a_step_in_silence(tmp_path, capsys, sparse):
    d = copy.deepcopy(sparse)
    for e in d["traceEvents"]:
        if e.get("name") == "decode_step_1":
            e["dur"] += 5000  # now ends inside decode_step_2
    path = _write(tmp_path, d)
    err = _one_line_error(capsys, path)
    assert "starting inside another step and ending after it" in err and "'decode_step_2'" in err
    assert main(["trace", str(path), "--drop-invalid"]) == 0
    out = capsys.readouterr().out
    assert "EXCLUDED" in out.splitlines()[1] and "decode_step_2" in out.splitlines()[1]


def test_begin_end_events_are_counted_not_ignored(tmp_path, capsys, sparse):
    d = copy.deepcopy(sparse)
    for e in d["traceEvents"]:
        if e.get("cat") == "kernel":
            e["ph"] = "B"
    err = _one_line_error(capsys, _write(tmp_path, d))
    assert "42 recorded as begin/end pairs" in err


def _mutations(rng, d):
    ev = d["traceEvents"]
    xs = [i for i, e in enumerate(ev) if e.get("ph") == "X"]
    for _ in range(rng.randrange(1, 4)):
        i = rng.choice(xs)
        e = ev[i]
        op = rng.randrange(9)
        if op == 0:
            e["dur"] = rng.choice([0, 1e9, 1e15, -1, math.nan, e["dur"] * 1000, e["dur"] / 1000])
        elif op == 1:
            e["ts"] = e["ts"] + rng.choice([-1e6, -5000, 5000, 1e6])
        elif op == 2:
            ev.append(copy.deepcopy(e))
        elif op == 3:
            e["ph"] = rng.choice(["B", "E", "i", "X"])
        elif op == 4:
            e["name"] = rng.choice(["decode_step_9", "prefill", "ProfilerStep#1", "aten::_cslt_sparse_mm", 7, ""])
        elif op == 5:
            e["cat"] = rng.choice(["kernel", "cpu_op", "user_annotation", "cuda_runtime", "nonsense"])
        elif op == 6:
            e["tid"] = rng.choice([1, 99, "x", None])
        elif op == 7:
            ev[i] = {}
        else:
            e.setdefault("args", {})["correlation"] = rng.choice([-1, 0, 2**62, 12345])


@pytest.mark.slow  # 40 traces read and analysed, each against the baseline (seconds)
def test_fuzz_traces_give_one_line_or_possible_numbers(tmp_path, sparse):
    """Seeded, bounded: 40 random mutations, each alone and against the dense baseline."""
    rng = random.Random(40)
    outcomes = {"refused": 0, "report": 0}
    for k in range(40):
        d = copy.deepcopy(sparse)
        _mutations(rng, d)
        path = _write(tmp_path, d, f"m{k}.json")
        for baseline in (None, recorded("dense-eager")):
            try:
                report = analyze(path, baseline=baseline, exclude_invalid=rng.random() < 0.5)
            except TraceError as exc:
                assert "\n" not in str(exc)
                outcomes["refused"] += 1
                continue
            outcomes["report"] += 1
            text = report_text(report)
            assert "Traceback" not in text and "nanx" not in text and "infx" not in text
            for ph in report.phases:
                assert 0 <= ph.p <= 1 + 1e-9
                for st in ph.steps:
                    assert st.wall_us >= 0 and (st.busy_us is None or st.busy_us <= st.wall_us * (1 + 1e-3) + 1)
                if ph.comparison is not None and ph.comparison.gemm_speedup == ph.comparison.gemm_speedup:
                    assert ph.comparison.gemm_speedup <= MAX_GEMM_SPEEDUP
    assert outcomes["refused"] and outcomes["report"], outcomes


# -- a baseline from another GPU; GPU events outside every step --------------------------------------


def test_a_baseline_recorded_on_another_gpu_is_refused_naming_both(tmp_path, capsys, dense):
    d = copy.deepcopy(dense)
    for props in d["deviceProperties"]:
        props["name"] = "NVIDIA H100 80GB HBM3"
    base = _write(tmp_path, d, "dense-h100.json")
    err = _one_line_error(capsys, recorded("sparse-eager"), "--compare", base)
    assert "recorded on NVIDIA H100 80GB HBM3" in err and "on NVIDIA H200" in err and "measures the GPUs" in err


def test_a_baseline_that_names_no_gpu_is_compared_with_a_verdict_saying_so(tmp_path, dense):
    # Before: a baseline without deviceProperties gave "GEMM speedup 0.53x" with no word on the GPUs.
    d = copy.deepcopy(dense)
    d.pop("deviceProperties", None)
    base = _write(tmp_path, d, "dense-unnamed.json")
    text = report_text(analyze(recorded("sparse-eager"), baseline=base))
    assert "GPUs not compared: the baseline (dense-unnamed.json) names no GPU" in text
    assert "GPUs not compared" not in report_text(analyze(recorded("sparse-eager"), baseline=recorded("dense-eager")))


def test_gpu_events_after_the_last_step_are_left_out_and_counted_not_refused(tmp_path, capsys, sparse):
    # work the profiler saw run long after the last step (launched late, or a trace cut by the schedule)
    d = copy.deepcopy(sparse)
    ev = d["traceEvents"]
    k = next(e for e in ev if e.get("cat") == "kernel")
    cpu = [e for e in ev if e.get("cat") in ("cpu_op", "cuda_runtime", "user_annotation")]
    end = max(e["ts"] + e["dur"] for e in cpu)
    span = end - min(e["ts"] for e in cpu)
    for j in range(3):
        late = copy.deepcopy(k)
        late["ts"] = end + 2 * span + j * (k["dur"] + 20)
        late["args"]["correlation"] = late["args"]["External id"] = 900_000 + j
        ev.append(late)
    path = _write(tmp_path, d)
    r = analyze(path)
    before = analyze(recorded("sparse-eager"))
    assert r.outside_steps == (3, 0) and not r.excluded
    assert r.phase("decode").gemms == before.phase("decode").gemms  # no step counts them
    assert r.phase("decode").wall_us == before.phase("decode").wall_us
    assert main(["trace", str(path)]) == 0
    assert "LEFT OUT: 3 GPU events of the trace launched inside no step" in capsys.readouterr().out
