"""Measurement hygiene in `twofour bench`: clocks around each point, flags by rule, the cuSPARSELt algorithm.

Everything here runs on a CPU: the GPU readers and PyTorch's conversion are replaced by fakes
that record how they were called; the GPU paths themselves are GPU-marked in tests/toolkit/bench/test_bench.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
import torch

from twofour.bench import (REQUIRED_PROVENANCE, Results, clocks, flag_points, load_results, recorded_results,
                           sparse_weight, summarize, sweep)
from twofour.bench import flags as flags_mod
from twofour.cli import main


# --- clocks -----------------------------------------------------------------------------------

@pytest.fixture
def fresh_readers(monkeypatch):
    monkeypatch.setattr(clocks, "_UNAVAILABLE", set())


def test_nvidia_smi_line_parsing():
    assert clocks.parse_smi_line("1980, 3201, 251.37, 45") == {
        "sm_clock_mhz": 1980.0, "mem_clock_mhz": 3201.0, "power_w": 251.37, "temperature_c": 45.0}
    assert clocks.parse_smi_line("1980, [N/A], [Not Supported], 45")["mem_clock_mhz"] is None
    assert clocks.parse_smi_line("[N/A], [N/A], [N/A], [N/A]") is None
    assert clocks.parse_smi_line("garbage") is None


def test_pynvml_first_when_it_is_importable(monkeypatch, fresh_readers):
    calls = []

    class NVMLError(Exception):
        pass

    fake = types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetHandleByIndex=lambda i: ("gpu", i),
        nvmlDeviceGetClockInfo=lambda h, which: (1755, 3201)[which],
        nvmlDeviceGetPowerUsage=lambda h: 412_500,  # milliwatts
        nvmlDeviceGetTemperature=lambda h, kind: (_ for _ in ()).throw(NVMLError("not supported")),
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    state = clocks.read_gpu_state(0)
    assert state == {"sm_clock_mhz": 1755.0, "mem_clock_mhz": 3201.0, "power_w": 412.5, "temperature_c": None,
                     "source": "pynvml"}
    assert calls == ["init", "shutdown"]


def test_nvidia_smi_when_pynvml_is_missing_and_none_when_neither_answers(monkeypatch, fresh_readers):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    seen = []

    def fake_run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout="1410, 1593, 95.02, 38\n", stderr="")

    monkeypatch.setattr(clocks.subprocess, "run", fake_run)
    state = clocks.read_gpu_state(2)
    assert state["source"] == "nvidia-smi" and state["sm_clock_mhz"] == 1410.0
    assert seen[0][:3] == clocks.SMI_QUERY and seen[0][-1] == "--id=2"

    def no_tool(cmd, **kw):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(clocks, "_UNAVAILABLE", set())
    monkeypatch.setattr(clocks.subprocess, "run", no_tool)
    assert clocks.read_gpu_state(0) is None  # never raises
    assert clocks._UNAVAILABLE == {"pynvml", "nvidia-smi"}  # and is not asked again in this process


def test_a_cpu_sweep_records_no_clocks():
    res = sweep([("toy", 64, 64)], Ms=[1], dtypes=["float32"], device="cpu", warmup=1, repeats=3, progress=False)
    assert "clocks" not in res.points[0] and res.flags() == []


# --- flags --------------------------------------------------------------------------------------

def _point(M, *, kernel=None, graph=None, lone=None, raw=None, clocks_=None, shape="s", dtype="float16"):
    def t(us, r=None):
        return {**summarize([us / 1e3]), **({"raw_ms": [x / 1e3 for x in r]} if r else {})}

    sides = lambda d: {"dense": d[0], "sparse": {"cuSPARSELt": d[1]}}  # noqa: E731
    p = {"M": M, "N": 1024, "K": 4096, "dtype": dtype, "shape": shape,
         "dense": t(lone[0], raw) if lone else t(100.0), "sparse": {"cuSPARSELt": t(lone[1]) if lone else t(100.0)}}
    modes = {}
    if kernel:
        modes["kernel"] = sides((t(kernel[0]), t(kernel[1])))
    if graph:
        modes["graph"] = sides((t(graph[0]), t(graph[1])))
    if modes:
        p["modes"] = modes
    if clocks_:
        p["clocks"] = clocks_
    return p


def test_the_clock_rule():
    fl = flag_points([_point(8192, kernel=(110.0, 50.0), graph=(100.0, 60.0), lone=(104.0, 200.0))])
    assert [(f["rule"], f["mode"], f["side"]) for f in fl] == [("clock", "kernel", "dense")]
    assert "kernel 110.0 µs > graph 100.0 / lone 104.0 µs" == fl[0]["evidence"]
    assert flag_points([_point(8192, kernel=(101.9, 50.0), graph=(100.0, 60.0))]) == []  # within 2%


def test_the_drift_rule():
    assert flags_mod.drifts([1.0, 1.01, 1.02, 1.04, 1.06])
    assert not flags_mod.drifts([1.0, 1.01, 1.02, 1.03, 1.04])  # rises, but < 5%
    assert not flags_mod.drifts([1.0, 1.2, 1.1, 1.3, 1.4])  # not every step
    assert not flags_mod.drifts([1.0, 1.1, 1.2])  # too few
    fl = flag_points([_point(1, lone=(100.0, 200.0), raw=[100, 101, 103, 104, 107])])
    assert [(f["rule"], f["mode"], f["side"]) for f in fl] == [("drift", "lone", "dense")]


def test_the_graph_outlier_rules():
    # against its own kernel time: more than 15 µs and 25% over
    fl = flag_points([_point(1, kernel=(10.0, 30.0), graph=(36.0, 40.0))])
    assert [(f["rule"], f["side"]) for f in fl] == [("graph-outlier", "dense")]
    assert flag_points([_point(1, kernel=(10.0, 30.0), graph=(24.0, 40.0))]) == []  # 14 µs over: no
    # without a kernel time (bf16): the dense replay against the fastest at a larger M of the same weight
    series = [_point(1, graph=(30.0, 60.0)), _point(2, graph=(15.6, 55.0)), _point(4, graph=(16.0, 50.0))]
    fl = flag_points(series)
    assert [(f["M"], f["rule"], f["side"]) for f in fl] == [(1, "graph-outlier", "dense")]
    assert "vs 15.6 µs at a larger M" in fl[0]["evidence"]


def test_the_clock_drop_rule():
    c = {"graph": {"before": {"sm_clock_mhz": 1980.0}, "after": {"sm_clock_mhz": 1700.0}},
         "kernel": {"before": {"sm_clock_mhz": 1980.0}, "after": {"sm_clock_mhz": 1960.0}},
         "lone": {"before": None, "after": None}}
    fl = flag_points([_point(1, kernel=(10.0, 30.0), graph=(18.0, 40.0), clocks_=c)])
    assert [(f["rule"], f["mode"]) for f in fl] == [("clock-drop", "graph")]
    assert fl[0]["evidence"] == "SM clock 1980 MHz before, 1700 MHz after"


def test_flags_of_the_recorded_h200_run():
    """Computed from the files, never written into them: 23 (point, mode) pairs, the examples below among them."""
    recorded = recorded_results("gpu")
    pairs = {key for res in recorded for key in res.flagged()}
    assert len(pairs) == 23
    fl = [f for res in recorded for f in res.flags()]
    assert {f["rule"] for f in fl} == {"clock", "drift", "graph-outlier"}
    assert any(f["rule"] == "clock" and f["M"] == 16384 and f["shape"] == "Llama-3-8B q_proj/o_proj" for f in fl)
    assert any(f["rule"] == "graph-outlier" and f["M"] == 1 and f["dtype"] == "bfloat16" and "k_proj" in f["shape"]
               for f in fl)
    assert not any(f["M"] == 1 and f["dtype"] == "float16" and f["mode"] == "kernel" for f in fl)
    for res in recorded:  # the data files hold no flags of their own
        assert "flags" not in json.loads(open(res.path).read())
    rows = [r for res in recorded for r in res.gpu_points("kernel") if r["flagged"]]
    assert rows and all("clock" in r["flagged"] for r in rows)


def test_results_write_flags_and_older_files_read_with_the_method_they_were_timed_by(tmp_path):
    res = Results({**{k: None for k in REQUIRED_PROVENANCE}, "gpu_name": "NVIDIA H200", "device": "cuda"},
                  points=[_point(8192, kernel=(110.0, 50.0), graph=(100.0, 60.0), lone=(104.0, 200.0))])
    path = res.save(tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert data["schema"] == "twofour-bench/5" and data["flags"][0]["rule"] == "clock"
    assert load_results(path).flags() == data["flags"]
    old = dict(data, schema="twofour-bench/2")
    del old["flags"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    older = load_results(tmp_path / "old.json")
    assert older.flags() == data["flags"]  # judged the same way
    # the files of 2026-11-30: written flush, idle-device replay; their rows say so
    assert older.timing_method("graph")["flush"] == "write"
    assert {r["method"] for r in older.gpu_points("graph")} == {"graph/1"}


# --- the cuSPARSELt algorithm -------------------------------------------------------------------

class _FakeSemi:
    _FORCE_CUTLASS = False
    _DEFAULT_ALG_ID = 0


def _fake_torch_sparse(monkeypatch, *, takes_alg_id: bool, honours: bool = True):
    calls = []

    def convert(W, **kw):
        calls.append((kw, _FakeSemi._DEFAULT_ALG_ID, _FakeSemi._FORCE_CUTLASS))
        alg = kw.get("alg_id", _FakeSemi._DEFAULT_ALG_ID) if honours else 0
        return types.SimpleNamespace(alg_id_cusparselt=alg)

    if takes_alg_id:
        def to_sparse_semi_structured(original_tensor, transposed=False, alg_id=0):
            return convert(original_tensor, alg_id=alg_id) if alg_id else convert(original_tensor)
    else:
        def to_sparse_semi_structured(original_tensor, transposed=False):
            return convert(original_tensor)
    fake = types.SimpleNamespace(SparseSemiStructuredTensor=_FakeSemi, to_sparse_semi_structured=to_sparse_semi_structured)
    monkeypatch.setitem(sys.modules, "torch.sparse", fake)
    monkeypatch.setattr(_FakeSemi, "_DEFAULT_ALG_ID", 0)
    return calls


def test_alg_id_goes_through_the_argument_where_torch_has_it(monkeypatch):
    calls = _fake_torch_sparse(monkeypatch, takes_alg_id=True)
    assert sparse_weight(torch.zeros(8, 8), alg_id=3).alg_id_cusparselt == 3
    assert calls == [({"alg_id": 3}, 0, False)]
    assert _FakeSemi._DEFAULT_ALG_ID == 0  # nothing left changed


def test_alg_id_goes_through_the_class_default_on_older_torch(monkeypatch):
    calls = _fake_torch_sparse(monkeypatch, takes_alg_id=False)
    assert sparse_weight(torch.zeros(8, 8), alg_id=5).alg_id_cusparselt == 5
    assert calls == [({}, 5, False)]  # set for the conversion ...
    assert _FakeSemi._DEFAULT_ALG_ID == 0  # ... and restored
    assert sparse_weight(torch.zeros(8, 8), "CUTLASS").alg_id_cusparselt == 0
    assert calls[-1] == ({}, 0, True) and _FakeSemi._FORCE_CUTLASS is False


def test_alg_id_that_torch_ignores_is_an_error_not_a_silent_alg_0(monkeypatch):
    _fake_torch_sparse(monkeypatch, takes_alg_id=False, honours=False)
    with pytest.raises(RuntimeError, match="does not take the algorithm"):
        sparse_weight(torch.zeros(8, 8), alg_id=2)


def test_alg_id_arguments_are_checked():
    with pytest.raises(ValueError, match="alg_id must be an int >= 0"):
        sparse_weight(torch.zeros(8, 8), alg_id=-1)
    with pytest.raises(ValueError, match="alg_id must be an int >= 0"):
        sparse_weight(torch.zeros(8, 8), alg_id=True)
    with pytest.raises(ValueError, match="backend 'CUTLASS' has none"):
        sparse_weight(torch.zeros(8, 8), "CUTLASS", alg_id=1)
    with pytest.raises(ValueError, match="needs an NVIDIA GPU"):
        sweep([("t", 8, 8)], Ms=[1], dtypes=["float32"], device="cpu", progress=False, alg_id=1)


def test_bench_alg_id_on_cpu_says_why(capsys):
    assert main(["bench", "--alg-id", "1", "--quick", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--alg-id 1" in err and "2:4 kernels need an NVIDIA GPU" in err and "recorded_alg_search" in err
    assert main(["bench", "--alg-id", "-2", "--quick", "--no-progress"]) == 2
    assert "must be a cuSPARSELt algorithm number >= 0" in capsys.readouterr().err
    assert main(["bench", "--alg-id", "0", "--decode"]) == 2
    assert "not used with --decode" in capsys.readouterr().err


def test_bench_alg_id_gpu_path_control_flow(monkeypatch, capsys):
    """With a fake GPU environment: the range check against the library's maximum, and what reaches sweep()."""

    env = types.SimpleNamespace(cuda_available=True, backends=("cuSPARSELt",), gpu_name="NVIDIA H200",
                                capability_str="9.0", reason="ok")
    monkeypatch.setattr("twofour.device.environment", lambda: env)
    monkeypatch.setattr(torch.backends.cusparselt, "get_max_alg_id", lambda: 7, raising=False)
    seen = {}

    def fake_sweep(shapes, **kw):
        seen.update(kw)
        raise ValueError("stop here")

    monkeypatch.setattr("twofour.bench.sweep", fake_sweep)
    # torch's maximum is not the library's: an ID above it is tried (the library refuses it if it must)
    assert main(["bench", "--alg-id", "9", "--quick", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "get_max_alg_id() says 7; trying --alg-id 9 anyway" in err and "stop here" in err and seen["alg_id"] == 9
    assert main(["bench", "--alg-id", "3", "--quick", "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert "cuSPARSELt algorithm 3, set through PyTorch's own path" in out and "stop here" in err
    assert seen["alg_id"] == 3 and seen["backends"] == ("cuSPARSELt",) and seen["device"] == "cuda"
    env.backends = ("CUTLASS",)
    assert main(["bench", "--alg-id", "3", "--quick", "--no-progress"]) == 2
    assert "needs PyTorch's cuSPARSELt backend" in capsys.readouterr().err


def test_bench_lists_the_flags_it_raised(capsys):
    from twofour.cli import bench as cli_bench

    cli_bench._print_flags(Results({}, points=[_point(8192, kernel=(110.0, 50.0), graph=(100.0, 60.0))]))
    out = capsys.readouterr().out
    assert "flagged (1; kept out of any fit" in out and "clock         [kernel] s M=8192 float16 dense" in out
    cli_bench._print_flags(Results({}, points=[_point(1)]))
    assert capsys.readouterr().out == ""
