"""A trace is validated before it is believed.

Each case starts from a real H200 trace shipped with the package and breaks it the way the
hostile round did: NaN and Infinity (Python's JSON reader accepts them bare), negative and
absurd times, a trace appended to itself, durations scaled by 1000, kernels removed, wrong
types, 100,000-deep nesting. Before the fix these gave wrong verdicts ("GEMMs are 0% of step
time", "p = 4635%", "infx", a CPU-trace speedup) or tracebacks; now each is one clear line, or
with ``--drop-invalid`` a report whose first lines say what was left out.
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import sys
from pathlib import Path

import pytest

from twofour.cli import main
from twofour.dispatch.trace import TraceError, analyze, load, recorded

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib: the helper by its file name
from trace_cli_errors import one_line_error as _one_line_error  # noqa: E402

sys.path.pop(0)

KERNEL_EVENT = 768  # the first kernel of the sparse-eager trace (index in traceEvents)


@pytest.fixture(scope="module")
def sparse():
    return json.loads(gzip.decompress(recorded("sparse-eager").read_bytes()))


def _kernels(data):
    return [i for i, e in enumerate(data["traceEvents"]) if e.get("cat") == "kernel"]


def _step(data, name="decode_step_1"):
    return next(i for i, e in enumerate(data["traceEvents"]) if e.get("name") == name)


def _write(tmp_path, data, name="t.json", text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(data))  # json.dumps writes NaN/Infinity bare
    return path


def _mutated(sparse, change):
    d = copy.deepcopy(sparse)
    change(d)
    return d


def _set(field, value, which="kernel"):
    def change(d):
        i = _kernels(d)[0] if which == "kernel" else _step(d)
        d["traceEvents"][i][field] = value
    return change


@pytest.mark.parametrize(
    "change, fragment",
    [
        (_set("dur", math.nan), "1 with a NaN or Infinity ts or dur (first: event 768, 'sm90_xmma_sparse_gemm"),
        (_set("dur", math.inf), "NaN or Infinity"),
        (_set("ts", math.nan), "NaN or Infinity"),
        (_set("ts", -math.inf), "NaN or Infinity"),
        (_set("dur", math.nan, "step"), "(first: event 253, 'decode_step_1')"),
        (_set("ts", math.nan, "step"), "(first: event 253, 'decode_step_1')"),
        (_set("dur", math.inf, "step"), "(first: event 253, 'decode_step_1')"),
        (_set("dur", -5.0), "1 with a negative ts or dur"),
        (_set("dur", 1e308), "beyond 2^53 us"),
        (_set("ts", 1e308), "beyond 2^53 us"),
        (_set("dur", 10**400), "beyond 2^53 us"),
        (_set("dur", "12.5"), "without a number as ts or dur"),
        (_set("name", ["a"]), "a name that is not a string"),
        (_set("name", {"a": 1}), "a name that is not a string"),
        (_set("pid", {"a": 1}), "pid/tid"),
        (_set("tid", [1]), "pid/tid"),
    ],
)
def test_invalid_fields_refuse_a_verdict_with_count_and_first_event(tmp_path, capsys, sparse, change, fragment):
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "1 invalid event in the trace" in err and fragment in err and "--drop-invalid" in err


@pytest.mark.parametrize("field, value", [("correlation", 2**63), ("External id", 2**64 + 5), ("correlation", -7),
                                          ("External id", 1.5)])
def test_ids_outside_int64_are_invalid_not_a_traceback(tmp_path, capsys, sparse, field, value):
    def change(d):
        d["traceEvents"][_kernels(d)[0]]["args"][field] = value
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "an id outside [0, 2^63)" in err and "event 768" in err


def test_bare_nan_and_1e400_in_the_file_are_never_read_as_zero(tmp_path, capsys, sparse):
    text = json.dumps(sparse)
    first = sparse["traceEvents"][KERNEL_EVENT]
    needle = f'"dur": {json.dumps(first["dur"])}'
    assert needle in text
    for literal in ("NaN", "Infinity", "1e400", "-Infinity"):
        path = _write(tmp_path, None, text=text.replace(needle, f'"dur": {literal}', 1))
        err = _one_line_error(capsys, path)
        assert "event 768" in err


def test_drop_invalid_excludes_them_and_says_so_first(tmp_path, capsys, sparse):
    d = _mutated(sparse, _set("dur", math.nan))
    path = _write(tmp_path, d)
    assert main(["trace", str(path), "--drop-invalid"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  EXCLUDED (--drop-invalid): 1 invalid event in the trace: 1 with a NaN")
    assert "event 768" in lines[1] and "leaves them out" in lines[1]
    report = analyze(path, exclude_invalid=True)
    assert report.excluded["non-finite"].count == 1 and report.trace.count("kernel") == 41
    with pytest.raises(TypeError, match="exclude_invalid must be True or False"):
        analyze(path, exclude_invalid="yes")


def test_a_trace_appended_to_itself_is_refused_and_dropping_restores_the_original(tmp_path, capsys, sparse):
    d = copy.deepcopy(sparse)
    d["traceEvents"] = d["traceEvents"] + copy.deepcopy(d["traceEvents"])
    path = _write(tmp_path, d)
    err = _one_line_error(capsys, path)
    assert "exactly repeating an earlier event (a trace appended to itself?)" in err
    assert f"first: event {len(sparse['traceEvents']):,}, 'decode_step_0'" in err
    orig = analyze(recorded("sparse-eager")).phase("decode")
    dropped = analyze(path, exclude_invalid=True).phase("decode")
    assert dropped.gemm_us == pytest.approx(orig.gemm_us) and dropped.p == pytest.approx(orig.p)
    assert dropped.gemms == orig.gemms


def test_durations_scaled_by_1000_give_no_impossible_numbers(tmp_path, capsys, sparse):
    def change(d):
        for i in _kernels(d):
            d["traceEvents"][i]["dur"] *= 1000
    path = _write(tmp_path, _mutated(sparse, change))
    err = _one_line_error(capsys, path)
    assert "overlapping the previous GPU event on their stream" in err
    assert main(["trace", str(path), "--drop-invalid"]) == 0
    out = capsys.readouterr().out
    assert "EXCLUDED" in out.splitlines()[1]
    assert "infx" not in out and "nanx" not in out
    ps = [float(line.split("=")[-1]) for line in out.splitlines() if "eligible share p" in line]
    assert ps and all(0 <= p <= 1 for p in ps)


def test_a_kernel_beyond_its_step_is_invalid(tmp_path, capsys, sparse):
    """A kernel on its own stream that starts before its step's window (the previous step's GPU work)."""
    def change(d):
        ev = d["traceEvents"]
        step2 = ev[_step(d, "decode_step_2")]
        k = next(e for e in ev if e.get("cat") == "kernel" and e["ts"] > step2["ts"])
        k["ts"] = step2["ts"] - 5_000.0  # 5 ms early: inside step 1
        k["tid"] = 99  # alone on a stream, so not a stream overlap
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "reaching beyond the step that holds them" in err


def test_a_runtime_call_beyond_its_step_is_invalid(tmp_path, capsys, sparse):
    """A cudaLaunchKernel of 11 days would swallow every idle gap (the culprit verdict)."""
    def change(d):
        i = next(i for i, e in enumerate(d["traceEvents"]) if e.get("cat") == "cuda_runtime"
                 and e["ts"] > d["traceEvents"][_step(d)]["ts"])
        d["traceEvents"][i]["dur"] = 1e12
    path = _write(tmp_path, _mutated(sparse, change))
    err = _one_line_error(capsys, path)
    assert "reaching beyond the step that holds them" in err
    report = analyze(path, exclude_invalid=True)
    assert report.excluded["beyond step"].count == 1
    assert report.phase("decode").culprit == analyze(recorded("sparse-eager")).phase("decode").culprit


def test_a_kernel_that_starts_before_its_launch_is_invalid(tmp_path, capsys, sparse):
    def change(d):
        ev = d["traceEvents"]
        k = next(e for e in ev if e.get("cat") == "kernel" and e["ts"] > ev[_step(d, "decode_step_1")]["ts"] + 3000)
        k["ts"] -= 3000.0  # still inside its step, 3 ms before the call that launched it
        k["tid"] = 77
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "reaching beyond the step that holds them" in err


def test_gemms_overlapping_on_two_streams_are_refused_by_the_consistency_check(tmp_path, capsys, sparse):
    """Valid events, impossible accounting: GEMM time above GPU busy time. No verdict, one line."""
    def change(d):
        ev = d["traceEvents"]
        for i in _kernels(d):
            twin = copy.deepcopy(ev[i])
            twin["tid"] = 99  # the same GEMM again on another stream at the same time
            ev.append(twin)
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "exceeds the GPU busy time" in err and "contradict each other" in err


def test_a_gpu_trace_without_its_kernels_is_not_analysed_as_a_cpu_trace(tmp_path, capsys, sparse):
    def change(d):
        d["traceEvents"] = [e for e in d["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert "recorded on NVIDIA H200 but holds no GPU kernels" in err and "ProfilerActivity.CUDA" in err

    def no_props(d):
        change(d)
        del d["deviceProperties"]
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, no_props)))
    assert "CUDA runtime calls but holds no GPU kernels" in err


@pytest.mark.parametrize("props", ["H200", {"name": "H200"}, 5, [1, "x"], [{"name": "a"}, None]])
def test_device_properties_that_are_not_a_list_of_objects(tmp_path, capsys, sparse, props):
    def change(d):
        d["deviceProperties"] = props
    err = _one_line_error(capsys, _write(tmp_path, _mutated(sparse, change)))
    assert '"deviceProperties" must be a list of objects' in err


@pytest.mark.parametrize(
    "text",
    [
        '{"traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}",
        '{"deviceProperties": ' + "[" * 100_000 + "]" * 100_000 + ', "traceEvents": []}',
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": '
        + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}]}",
    ],
    ids=["in traceEvents", "in a top-level key", "in an event's args"],
)
def test_100k_deep_nesting_is_one_line(tmp_path, capsys, text):
    err = _one_line_error(capsys, _write(tmp_path, None, text=text))
    assert "nested too deeply" in err


def test_the_baseline_is_validated_too(tmp_path, capsys, sparse):
    dense = json.loads(gzip.decompress(recorded("dense-eager").read_bytes()))
    bad = _write(tmp_path, _mutated(dense, _set("dur", math.nan)), "dense.json")
    err = _one_line_error(capsys, recorded("sparse-eager"), "--compare", bad)
    assert "in the baseline" in err and "dense.json" in err


def test_paths_in_trace_messages_are_escaped(tmp_path, capsys, sparse):
    path = _write(tmp_path, _mutated(sparse, _set("dur", math.nan)), "t\x1b[31m.json")
    err = _one_line_error(capsys, path)
    assert "\x1b" not in err and "t\\x1b[31m.json" in err
    html = tmp_path / "r\x1b[2J.html"
    assert main(["trace", str(recorded("dense-eager")), "--html", str(html)]) == 0
    out, err = capsys.readouterr()
    assert html.exists() and "\x1b" not in err and "r\\x1b[2J.html" in err
    header = main(["trace", str(_write(tmp_path, sparse, "ok\x1b[5m.json"))])
    out, _ = capsys.readouterr()
    assert header == 0 and "\x1b" not in out and "ok\\x1b[5m.json" in out.splitlines()[0]


def test_no_limit_instead_of_infx():
    from twofour.dispatch.trace.report import fmt_bound, fmt_speedup

    assert fmt_bound(1.0) == "no limit (p = 1)" and fmt_bound(0.5) == "2.00x"
    assert fmt_speedup(math.nan) == "n/a" and fmt_speedup(math.inf) == "n/a" and fmt_speedup(1.234) == "1.23x"


def test_a_valid_trace_has_no_invalid_events():
    for name in ("dense-eager", "sparse-eager", "dense-graph", "sparse-graph"):
        tr = load(recorded(name))
        assert tr.invalid == {} and len(tr.index) == len(tr)
        r = analyze(tr)
        assert r.excluded == {}


def test_load_counts_what_it_left_out(tmp_path, sparse):
    tr = load(_write(tmp_path, _mutated(sparse, _set("dur", math.nan))))
    inv = tr.invalid["non-finite"]
    assert (inv.count, inv.first_event) == (1, KERNEL_EVENT) and inv.first_name.startswith("sm90_xmma_sparse_gemm")
    with pytest.raises(TraceError, match="1 invalid event in the trace"):
        analyze(tr)
