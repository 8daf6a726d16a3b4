"""``--compare`` checks the operand shapes of both runs' GEMMs when the traces carry them.

The traces here are small synthetic Chrome-trace files in the layout ``torch.profiler`` writes
with ``record_shapes=True`` (``"Input Dims"`` and ``"Input type"`` in each ``cpu_op``'s args):
a 2:4 run issues each GEMM as ``aten::linear`` > ``aten::mm`` > ``aten::_cslt_sparse_mm`` (the
last one with the compressed weight's shape), its dense baseline as ``aten::linear`` > ``aten::mm``.
Then the attacks on what was built: NaN and Infinity durations, empty traces, duplicated events,
mismatched files, an output path equal to an input (directly or through a symlink), FIFOs.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

from twofour.cli import main
from twofour.dispatch.trace import TraceError, analyze, load
from twofour.dispatch.trace.shapes import describe, signature

sys.path.insert(0, str(Path(__file__).resolve().parent))  # --import-mode=importlib: the helper by its file name
from trace_cli_errors import one_line_error as _one_line_error  # noqa: E402

sys.path.pop(0)

SPARSE_K = ("sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_warpgroupsize2x1x1_"
            "execute_segment_k_off_kernel_5x_cusparselt")
DENSE_K = "nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_TNT"
HALF = "c10::Half"
# The three GEMM calls of one step: activations [16, K] times weights [N, K], no bias.
CALLS = [[[16, 4096], [6144, 4096], []], [[16, 4096], [4096, 4096], []], [[16, 4096], [28672, 4096], []]]


def _trace(*, sparse=False, steps=3, calls=CALLS, types=(HALF, HALF, ""), record_shapes=True, direct=False,
           graph=False, gemm_us=None, change=None):
    """A GPU trace of ``steps`` decode steps, one GEMM per entry of ``calls`` (the dims of its aten::linear).

    ``direct``: the 2:4 run calls ``aten::_cslt_sparse_mm`` itself (no aten::linear around it);
    ``graph``: the kernels are replayed from a CUDA graph (no operator launches them);
    ``change(step, call, args)`` may edit one call's args.
    """
    gemm_us = gemm_us if gemm_us is not None else (15.0 if sparse else 20.0)
    events, ids = [], iter(range(1000, 10**6))
    t = gpu_free = 1_000_000.0

    def ev(cat, name, ts, dur, pid=10, tid=10, **args):
        events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args})
        return events[-1]

    def shape_args(dims, kinds):
        return {"Input Dims": dims, "Input type": list(kinds)} if record_shapes else {}

    for s in range(steps):
        t0 = t
        step_ext = next(ids)
        t += 2.0
        for c, dims in enumerate(calls):
            corr = next(ids)
            if graph:
                ev("cuda_runtime", "cudaGraphLaunch", t, 4.0, correlation=corr)
            else:
                if sparse and direct:
                    nest = [("aten::_cslt_sparse_mm", [[dims[1][0] * dims[1][1] * 9 // 16], [dims[0][1], dims[0][0]]])]
                elif sparse:
                    nest = [("aten::linear", dims), ("aten::mm", [dims[0], dims[1][::-1]]),
                            ("aten::_cslt_sparse_mm", [[dims[1][0] * dims[1][1] * 9 // 16], [dims[0][1], dims[0][0]]])]
                else:
                    nest = [("aten::linear", dims), ("aten::mm", [dims[0], dims[1][::-1]])]
                exts = []
                for depth, (name, op_dims) in enumerate(nest):
                    ext = next(ids)
                    exts.append(ext)
                    kinds = list(types)[: len(op_dims)] + [""] * max(0, len(op_dims) - len(types))
                    args = {"External id": ext, **shape_args(op_dims, kinds)}
                    if depth == 0 and change is not None:
                        change(s, c, args)
                    ev("cpu_op", name, t + depth, 30.0 - 2 * depth, **args)
                ev("cuda_runtime", "cudaLaunchKernel", t + 10, 4.0, correlation=corr, **{"External id": exts[-1]})
            start = max(t + 16.0, gpu_free)
            ev("kernel", SPARSE_K if sparse else DENSE_K, start, gemm_us, pid=0, tid=7, correlation=corr,
               **({} if graph else {"External id": exts[-1]}))
            gpu_free = start + gemm_us
            t += 32.0
        sync_end = max(t, gpu_free) + 5.0
        ev("cuda_runtime", "cudaDeviceSynchronize", t, sync_end - t, correlation=next(ids))
        ev("user_annotation", f"decode_step_{s}", t0, sync_end - t0 + 1.0, **{"External id": step_ext})
        t = sync_end + 20.0
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": events}


def _write(tmp_path, data, name):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _pair(tmp_path, sparse=None, dense=None):
    return (_write(tmp_path, sparse if sparse is not None else _trace(sparse=True), "sparse.json"),
            _write(tmp_path, dense if dense is not None else _trace(), "dense.json"))


# -- the reader keeps the shapes ---------------------------------------------------------------


def test_the_reader_keeps_each_operators_shapes_once(tmp_path):
    tr = load(_write(tmp_path, _trace(sparse=True), "sparse.json"))
    assert tr.has_shapes
    linear = tr.names.index("aten::linear")
    sigs = {tr.shapes[s] for s in tr.shape[tr.name == linear].tolist()}
    assert sigs == {signature(c, [HALF, HALF, ""]) for c in CALLS}
    assert len(tr.shapes) == 3 * 3  # linear, mm, _cslt_sparse_mm for 3 calls; 3 steps share them
    assert (tr.shape[tr.kind != 0] == -1).all()  # only operators carry shapes
    assert not load(_write(tmp_path, _trace(record_shapes=False), "plain.json")).has_shapes


def test_signature_accepts_what_the_profiler_writes():
    # aten::cat of a tensor list, scalars, a None input: from a real record_shapes=True trace
    sig = signature([[[8, 128], [8, 128]], []], ["TensorList", "Scalar"])
    assert sig == ((((8, 128), (8, 128)), ()), ("TensorList", "Scalar"))
    assert describe(sig) == "[[8, 128], [8, 128]] TensorList, [] Scalar"
    assert signature(None, ["float"]) == ((), ("float",)) and signature([], []) == ((), ())
    assert describe(signature([[16, 4096]] * 100, None), limit=40).endswith("...")


# -- the comparison ---------------------------------------------------------------------------


def test_same_shapes_are_compared_and_said(tmp_path, capsys):
    sparse, dense = _pair(tmp_path)
    ph = analyze(sparse, baseline=dense).phase("decode")
    assert ph.comparison.shapes == "9 of 9 GEMMs' calls match in shapes and types"
    assert ph.comparison.gemm_speedup == pytest.approx(20 / 15)
    assert main(["trace", str(sparse), "--compare", str(dense)]) == 0
    out = capsys.readouterr().out
    assert "    operand shapes: 9 of 9 GEMMs' calls match in shapes and types" in out
    assert "not compared" not in out


def test_a_different_shape_in_the_baseline_is_refused_naming_both_files_and_the_op(tmp_path, capsys):
    def wider(step, call, args):
        if (step, call) == (1, 1):
            args["Input Dims"] = [[32, 4096], [4096, 4096], []]

    sparse, dense = _pair(tmp_path, dense=_trace(change=wider))
    err = _one_line_error(capsys, sparse, "--compare", dense)
    assert (f"{dense}: decode step 1 ('decode_step_1'), GEMM 2 of 3: aten::linear got [16, 4096] c10::Half, "
            f"[4096, 4096] c10::Half, [] in the trace ({sparse}) and [32, 4096] c10::Half, [4096, 4096] c10::Half, [] "
            f"in the baseline ({dense}): the runs did not do the same work") in err
    with pytest.raises(TraceError, match="GEMM 2 of 3: aten::linear got"):
        analyze(sparse, baseline=dense)


def test_a_different_dtype_is_a_different_shape(tmp_path, capsys):
    sparse, dense = _pair(tmp_path, dense=_trace(types=("float", "float", "")))
    err = _one_line_error(capsys, sparse, "--compare", dense)
    assert "GEMM 1 of 3: aten::linear got [16, 4096] c10::Half" in err and "[16, 4096] float" in err


def test_the_same_gemms_in_another_order_are_refused(tmp_path, capsys):
    sparse, dense = _pair(tmp_path, dense=_trace(calls=CALLS[::-1]))
    assert "decode step 0 ('decode_step_0'), GEMM 1 of 3" in _one_line_error(capsys, sparse, "--compare", dense)


@pytest.mark.parametrize("which, expected", [
    ("baseline", "not compared: the baseline (dense.json) carries none (recorded without "
                 "torch.profiler.profile(record_shapes=True)); only the GEMM counts per step were checked"),
    ("trace", "not compared: the trace (sparse.json) carries none (recorded without "
              "torch.profiler.profile(record_shapes=True)); only the GEMM counts per step were checked"),
    ("both", "not compared: neither trace carries them (recorded without torch.profiler.profile(record_shapes=True)); "
             "only the GEMM counts per step were checked"),
])
def test_a_trace_without_shapes_is_said_plainly(tmp_path, capsys, which, expected):
    sparse, dense = _pair(tmp_path, sparse=_trace(sparse=True, record_shapes=which == "baseline"),
                          dense=_trace(record_shapes=which == "trace"))
    assert analyze(sparse, baseline=dense).phase("decode").comparison.shapes == expected
    assert main(["trace", str(sparse), "--compare", str(dense)]) == 0
    out = capsys.readouterr().out
    assert f"    operand shapes: {expected}" in out
    assert f"    - GEMM operand shapes {expected}: the speedup assumes both runs multiplied the same shapes" in out


def test_gemms_called_through_other_operators_or_by_a_graph_are_counted_as_not_compared(tmp_path):
    sparse, dense = _pair(tmp_path, sparse=_trace(sparse=True, direct=True))
    ph = analyze(sparse, baseline=dense).phase("decode")
    assert any(v.startswith("GEMM operand shapes not compared: 9 called through") for v in ph.verdicts())
    assert ph.comparison.shapes == (
        "not compared: 9 called through different operators (aten::_cslt_sparse_mm in the trace, aten::linear in the "
        "baseline; a 2:4 operand is stored compressed)")
    sparse, dense = _pair(tmp_path, sparse=_trace(sparse=True, graph=True))
    # the graph replay carries no operators, hence no shapes at all
    assert analyze(sparse, baseline=dense).phase("decode").comparison.shapes.startswith(
        "not compared: the trace (sparse.json) carries none")

    def no_shapes_on_call_0(step, call, args):
        if call == 0:
            del args["Input Dims"], args["Input type"]

    sparse, dense = _pair(tmp_path, dense=_trace(change=no_shapes_on_call_0))
    assert analyze(sparse, baseline=dense).phase("decode").comparison.shapes == (
        "6 of 9 GEMMs' calls match in shapes and types; not compared: 3 launched by no operator (a CUDA-graph replay) "
        "or by one without shapes")


# -- hostile shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("dims, types", [
    ("16x4096", None), ([16, 4096], None), ([[16, -1]], None), ([[True, 4]], None), ([[1.5, 4]], None), ([[[[[1]]]]], None),
    ([[2**70]], None), ({"a": 1}, None), ([[16, 4096]], ["float", "float"]), ([[16, 4096]], [3]),
    ([[16, 4096]], "float"), ([[16, 4096]], ["x" * 300]), ([[1]] * 70000, None),
])
def test_malformed_shapes_are_invalid_events_counted_and_refused(tmp_path, capsys, dims, types):
    def bad(step, call, args):
        if (step, call) == (0, 0):
            args["Input Dims"] = dims
            if types is not None:
                args["Input type"] = types

    path = _write(tmp_path, _trace(change=bad), "bad.json")
    err = _one_line_error(capsys, path)
    assert ("1 invalid event in the trace" in err and 'with an "Input Dims" or "Input type" that is not a list of sizes'
            in err and "'aten::linear'" in err), err
    assert main(["trace", str(path), "--drop-invalid"]) == 0
    assert "EXCLUDED (--drop-invalid): 1 invalid event" in capsys.readouterr().out


def test_an_integer_of_5000_digits_in_the_dims_is_one_line(tmp_path, capsys):
    text = json.dumps(_trace()).replace("[6144, 4096]", "[6144, 4" + "0" * 5000 + "]", 1)
    path = tmp_path / "huge.json"
    path.write_text(text)
    err = _one_line_error(capsys, path)
    assert "a number of more than 4,300 digits in event 0 of traceEvents" in err, err


# -- attacks on the comparison as a whole ------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -5.0])
def test_nan_inf_and_negative_durations_in_a_shaped_trace_are_refused(tmp_path, capsys, value):
    data = _trace()
    next(e for e in data["traceEvents"] if e["name"] == "aten::linear")["dur"] = value
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps(data))  # json writes NaN / Infinity bare, as Python's reader accepts
    sparse = _write(tmp_path, _trace(sparse=True), "sparse.json")
    err = _one_line_error(capsys, sparse, "--compare", dense)
    assert "invalid event in the baseline" in err


def test_an_empty_baseline_and_an_empty_trace(tmp_path, capsys):
    sparse, dense = _pair(tmp_path, dense={"traceEvents": []})
    assert "dense.json: the baseline holds no CPU operators or GPU kernels" in _one_line_error(
        capsys, sparse, "--compare", dense)
    (tmp_path / "zero.json").write_bytes(b"")
    assert "the file is empty" in _one_line_error(capsys, sparse, "--compare", tmp_path / "zero.json")


def test_a_baseline_appended_to_itself_is_refused(tmp_path, capsys):
    data = _trace()
    data["traceEvents"] = data["traceEvents"] * 2
    sparse, dense = _pair(tmp_path, dense=data)
    assert "exactly repeating an earlier event" in _one_line_error(capsys, sparse, "--compare", dense)


def test_mismatched_runs_are_refused(tmp_path, capsys):
    sparse, dense = _pair(tmp_path, dense=_trace(steps=4))
    assert "the trace has 3 steps, the baseline 4" in _one_line_error(capsys, sparse, "--compare", dense)
    sparse, dense = _pair(tmp_path, dense=_trace(calls=CALLS[:2]))
    assert "ran 3 GEMMs in the trace and 2 in the baseline" in _one_line_error(capsys, sparse, "--compare", dense)
    sparse, dense = _pair(tmp_path, dense=_trace(sparse=True, gemm_us=16.0))
    assert "it is not a dense run" in _one_line_error(capsys, sparse, "--compare", dense)
    sparse, dense = _pair(tmp_path, dense=_trace(gemm_us=60.0))  # 4x: past any 2:4 kernel
    assert "past the" in _one_line_error(capsys, sparse, "--compare", dense)


def test_outputs_equal_to_an_input_fifos_and_symlinks(tmp_path, capsys):
    sparse, dense = _pair(tmp_path)
    before = sparse.read_bytes(), dense.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(sparse)
    hard = tmp_path / "hard.json"
    os.link(dense, hard)
    for out in (sparse, dense, link, hard):
        err = _one_line_error(capsys, sparse, "--compare", dense, "--html", out)
        assert "--html" in err, err
    assert (sparse.read_bytes(), dense.read_bytes()) == before
    assert "same trace as FILE" in _one_line_error(capsys, sparse, "--compare", link)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "--html" in _one_line_error(capsys, sparse, "--compare", dense, "--html", fifo)
    assert "is not a regular file" in _one_line_error(capsys, fifo)
    assert "is not a regular file" in _one_line_error(capsys, sparse, "--compare", fifo)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    assert "no such file" in _one_line_error(capsys, sparse, "--compare", dangling)
    html = tmp_path / "r.html"
    assert main(["trace", str(sparse), "--compare", str(dense), "--html", str(html)]) == 0
    assert "operand shapes: 9 of 9 GEMMs&#x27; calls match" in html.read_text()


def test_fuzzed_shape_fields_give_a_signature_or_one_clear_refusal(tmp_path):
    """Random values where the profiler writes shapes: a signature, or a ValueError (an invalid event); nothing else."""
    import random

    rng = random.Random(40)
    atoms = [0, 1, 4096, -1, 2**62, 2**62 + 1, 2**80, True, None, 1.5, float("nan"), "16", "", [], {}]

    def value(depth=0):
        if depth > 4 or rng.random() < 0.4:
            return rng.choice(atoms)
        return [value(depth + 1) for _ in range(rng.randrange(4))]

    accepted = refused = 0
    for _ in range(2000):
        dims = value() if rng.random() < 0.9 else None
        types = rng.choice([None, ["float"], ["c10::Half", ""], [1], "float", [value()], ["x" * 201]])
        try:
            sig = signature(dims, types)
        except ValueError as exc:
            assert "\n" not in str(exc) and ("Input Dims" in str(exc) or "Input type" in str(exc)), exc
            refused += 1
            continue
        accepted += 1
        hash(sig)  # kept in a dict: must be hashable
        assert all(type(t) is str for t in sig[1]) and isinstance(describe(sig), str)
    assert accepted > 100 and refused > 100, (accepted, refused)
    # and through the reader: every fuzzed trace loads (shapes kept or counted invalid), never a traceback
    for k in range(20):
        def mutate(step, call, args, k=k):
            if call == k % 3:
                args["Input Dims"], args["Input type"] = value(), rng.choice([None, ["float"], [value()]])
        tr = load(_write(tmp_path, _trace(change=mutate), f"f{k}.json"))
        assert tr.invalid.keys() <= {"malformed shapes"}


def test_a_real_profiler_trace_with_record_shapes(tmp_path):
    """torch.profiler's own export (CPU): the shapes are read as recorded, and a run of another M is refused."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from twofour._common.stderr import without_profiler_chatter

    W = torch.randn(64, 128)

    def run(path, M):
        x = torch.randn(M, 128)
        with without_profiler_chatter(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            for i in range(3):
                with record_function(f"decode_step_{i}"):
                    torch.nn.functional.linear(x, W)
        prof.export_chrome_trace(str(path))
        return path

    a, b = run(tmp_path / "a.json", 8), run(tmp_path / "b.json", 16)
    tr = load(a)
    assert tr.has_shapes
    linear = tr.names.index("aten::linear")
    assert {tr.shapes[s] for s in tr.shape[tr.name == linear].tolist()} == {signature([[8, 128], [64, 128], []],
                                                                                     ["float", "float", ""])}
    with pytest.raises(TraceError, match=r"decode step 0 \('decode_step_0'\), GEMM 1 of 1: aten::linear got \[16, 128\] "
                                         r"float, \[64, 128\] float, \[\] in the trace .* and \[8, 128\] float"):
        analyze(b, baseline=a)


# -- a dense-only trace: the 2:4 GEMM step predicted for its own shapes, never assumed ---------------


def test_a_dense_trace_with_shapes_gets_the_kernel_models_prediction_not_the_ceiling(tmp_path):
    from twofour.roofline import predict

    ph = analyze(_write(tmp_path, _trace(), "dense.json")).phase("decode")
    kernel = ph.funnel()[2]
    # the kernel model for the trace's own GEMMs (M = 16, fp16, on the H100 its deviceProperties name)
    preds = [predict(16, dims[1][0], 4096, "fp16", "H100", scenario="kernel") for dims in CALLS]
    want = sum(p.dense_us for p in preds) / sum(p.sparse_us for p in preds)
    assert (kernel.key, kernel.how) == ("kernel", "predicted")
    assert kernel.speedup == pytest.approx(want) and kernel.speedup != pytest.approx(ph.ceiling)
    assert "kernel model" in kernel.explains and "M = 16" in kernel.explains and "H100" in kernel.explains


def test_without_shapes_or_a_known_gpu_the_2_4_gemm_step_is_unknown(tmp_path):
    ph = analyze(_write(tmp_path, _trace(record_shapes=False), "dense.json")).phase("decode")
    assert [s.how for s in ph.funnel()][2:] == ["unknown"] * 3 and math.isnan(ph.funnel()[2].speedup)
    data = _trace()
    data["deviceProperties"][0]["name"] = "NVIDIA GeForce GTX 1080"
    ph = analyze(_write(tmp_path, data, "other-gpu.json")).phase("decode")
    assert ph.funnel()[2].how == "unknown" and "GTX 1080" in ph.funnel()[2].explains
