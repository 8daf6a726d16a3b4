"""The timing harness on CPU: records, provenance, results round-trip, CLI; GPU path marked."""

import json

import pytest
import torch

from twofour.bench import (
    REQUIRED_PROVENANCE,
    Results,
    cpu_roofline,
    load_results,
    measure_point,
    model_shapes,
    parse_shape,
    recorded_results,
    summarize,
    sweep,
    time_callable,
)
from twofour.cli import main


def _tiny(**kw):
    return sweep([("toy", 64, 128)], Ms=[1, 16], dtypes=["float32"], device="cpu", warmup=1, repeats=3,
                 progress=False, command="pytest", **kw)


def test_cpu_sweep_records_dense_and_says_why_no_sparse():
    res = _tiny()
    assert [p["M"] for p in res.points] == [1, 16]
    for p in res.points:
        assert p["dense"]["n"] == 3 and len(p["dense"]["raw_ms"]) == 3
        assert p["dense"]["min_ms"] <= p["dense"]["median_ms"] <= p["dense"]["max_ms"]
        assert "sparse" not in p and "compute capability >= 8.0" in p["sparse_skipped"]
    assert res.settings["timer"] == "time.perf_counter" and res.settings["flush_l2"] is False


def test_provenance_fields_present():
    res = _tiny()
    for key in REQUIRED_PROVENANCE:
        assert key in res.provenance
    assert res.provenance["device"] == "cpu" and res.provenance["command"] == "pytest"
    assert res.provenance["torch"] == torch.__version__


def test_results_round_trip(tmp_path):
    res = _tiny()
    path = res.save(tmp_path / "sub" / "bench-cpu.json")
    back = load_results(path)
    assert back.to_dict() == json.loads(json.dumps(res.to_dict()))
    assert back.path == str(path)
    assert [r.path for r in recorded_results("cpu", folder=tmp_path / "sub")] == [str(path)]
    assert recorded_results("gpu", folder=tmp_path / "sub") == []


def test_older_files_call_the_lone_call_mode_lone(tmp_path):
    """Files before schema /5 named the lone-call mode "eager"; read back, they use today's word."""
    data = json.loads(json.dumps(_tiny().to_dict()))
    data["schema"] = "twofour-bench/4"
    data["settings"].update(modes=["eager"], methods={"eager": {"id": "eager/2"}})
    (tmp_path / "old.json").write_text(json.dumps(data))
    back = load_results(tmp_path / "old.json")
    assert back.settings["modes"] == ["lone"] and back.settings["methods"] == {"lone": {"id": "eager/2"}}
    old = [r for r in recorded_results("gpu") if r.schema == "twofour-bench/2"][0]
    assert old.settings["modes"][0] == "lone" and old.gpu_points("lone")


def test_load_rejects_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_results(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_results(bad)
    bad.write_text(json.dumps({"schema": "other"}))
    with pytest.raises(ValueError, match="expected one of .*'twofour-bench/2'"):
        load_results(bad)
    bad.write_text(json.dumps({"schema": "twofour-bench/1", "provenance": {"device": "cpu"}, "points": []}))
    with pytest.raises(ValueError, match=r"provenance lacks fields \['capability', 'command'"):
        load_results(bad)
    good_prov = {k: "x" for k in REQUIRED_PROVENANCE}
    bad.write_text(json.dumps({"schema": "twofour-bench/2", "provenance": good_prov,
                               "points": [{"M": 0, "N": 8, "K": 8, "dtype": "float32", "dense": {"median_ms": 1.0}}]}))
    with pytest.raises(ValueError, match="points/0/M: 0 is less than the minimum of 1"):
        load_results(bad)
    bad.write_text(json.dumps({"schema": "twofour-bench/2", "provenance": good_prov,
                               "points": [{"M": 1, "N": 8, "K": 8, "dtype": "float32"}]}))
    with pytest.raises(ValueError, match=r"points/0 lacks fields \['dense'\]"):
        load_results(bad)


def test_gpu_points_and_problems_from_a_synthetic_gpu_record():
    t = summarize([1.0, 1.0, 1.0])
    res = Results({"gpu_name": "NVIDIA H200"}, points=[
        {"M": 1, "N": 64, "K": 64, "dtype": "float16", "dense": t,
         "sparse": {"cuSPARSELt": {**summarize([2.0]), "check": {"passed": True, "rel_err": 0, "tol": 0.01}},
                    "CUTLASS": {"error": "RuntimeError: only 8.x"}}},
        {"M": 2, "N": 64, "K": 64, "dtype": "float16", "dense": t,
         "sparse": {"cuSPARSELt": {**summarize([0.5]), "check": {"passed": False, "rel_err": 0.5, "tol": 0.01}}}},
    ])
    rows = res.gpu_points()
    assert [(r["M"], r["backend"], r["sparse_ms"], r["gpu"]) for r in rows] == [(1, "cuSPARSELt", 2.0, "NVIDIA H200"), (2, "cuSPARSELt", 0.5, "NVIDIA H200")]
    probs = res.problems()
    assert len(probs) == 2 and "only 8.x" in probs[0] and "check failed" in probs[1]


def test_cpu_roofline():
    r = cpu_roofline(_tiny())
    assert r["best_gflops"] == max(p["gflops"] for p in r["points"]) > 0
    assert r["points"][0]["intensity"] < r["points"][1]["intensity"]


def test_shapes():
    shapes = model_shapes(["Llama-3-8B", "Llama-3-70B"])
    assert len(shapes) == 8 and shapes[0][0] == "Llama-3-8B q_proj/o_proj"
    assert (28672, 8192) in [(n, k) for _, n, k in shapes]
    assert parse_shape("4096x14336") == [("4096x14336", 4096, 14336)]
    with pytest.raises(ValueError, match="multiple of 4"):
        parse_shape("64x66")
    with pytest.raises(ValueError, match="neither NxK"):
        parse_shape("gpt-5")


def test_bad_inputs():
    with pytest.raises(ValueError, match="only dtype float32 is timed"):
        sweep([("t", 8, 8)], Ms=[1], dtypes=["float16"], device="cpu", progress=False)
    with pytest.raises(ValueError, match="dtype must be one of"):
        measure_point(1, 8, 8, "int4", device="cpu")
    with pytest.raises(ValueError, match="M must be a positive int"):
        measure_point(0, 8, 8, "float32", device="cpu")
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        time_callable(lambda: None, device="cpu", repeats=0)
    with pytest.raises(ValueError, match="at least one timing"):
        summarize([])
    with pytest.raises(ValueError, match="kind must be"):
        recorded_results("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="torch sees no CUDA GPU"):
            sweep([("t", 8, 8)], Ms=[1], dtypes=["float32"], device="cuda", progress=False)


def test_cli_cpu_run(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["bench", "--shapes", "64x128", "--m", "1", "4", "--repeats", "2", "--out", str(out), "--no-progress"])
    text = capsys.readouterr().out
    if torch.cuda.is_available():
        pytest.skip("CPU message test")
    assert rc == 0 and "2:4 sparse kernels need an NVIDIA GPU" in text and "GFLOP/s" in text
    assert load_results(out).provenance["device"] == "cpu"


def test_cli_errors(capsys):
    assert main(["bench", "--shapes", "nonsense", "--no-progress"]) == 2
    assert "--shapes" in capsys.readouterr().err
    assert main(["bench", "--m", "0", "--no-progress"]) == 2
    assert main(["bench", "--repeats", "0", "--no-progress"]) == 2


@pytest.mark.gpu
def test_gpu_point_times_dense_and_sparse_with_check():
    from twofour.device import environment

    env = environment()
    if not env.sparse_ok:
        pytest.skip(env.reason)
    rec = measure_point(8, 4096, 4096, "float16", device="cuda", backends=env.backends, warmup=2, repeats=5)
    assert rec["dense"]["n"] == 5
    for backend in env.backends:
        entry = rec["sparse"][backend]
        assert "error" not in entry, entry
        assert entry["check"]["passed"], entry["check"]
        assert entry["median_ms"] > 0


@pytest.mark.gpu
def test_gpu_sweep_provenance_clocks_and_flags(tmp_path):
    from twofour.device import environment

    env = environment()
    if not env.sparse_ok:
        pytest.skip(env.reason)
    res = sweep([("q", 4096, 4096)], Ms=[1, 64, 1024, 4096], dtypes=["float16"], device="cuda",
                warmup=2, repeats=5, progress=False, command="pytest gpu", modes=("lone", "graph", "kernel"))
    p = res.provenance
    assert p["gpu_name"] and p["capability"] and p["cuda"] and p["device"] == "cuda"
    assert res.settings["flush_l2"] is True and res.settings["alg_id"] is None
    assert res.problems() == []
    back = load_results(res.save(tmp_path / "g.json"))
    assert back.schema == "twofour-bench/5" and len(back.gpu_points()) == 4 * len(env.backends)
    assert back.flags() == res.flags() == json.loads((tmp_path / "g.json").read_text())["flags"]
    # the clocks, where this machine exposes them (nvidia-smi is part of every NVIDIA driver install)
    readings = [c for pt in back.points for c in (pt.get("clocks") or {}).values()]
    if readings:
        assert all(r["before"] is None or r["before"]["sm_clock_mhz"] > 0 for r in readings)


@pytest.mark.gpu
def test_gpu_alg_id_through_pytorchs_path():
    from twofour.bench import sparse_weight
    from twofour.device import environment
    from twofour.structure import prune

    env = environment()
    if not env.sparse_ok or "cuSPARSELt" not in env.backends:
        pytest.skip(env.reason)
    W = prune(torch.randn(1024, 4096, device="cuda", dtype=torch.float16))[0]
    Ws = sparse_weight(W, alg_id=1)
    assert Ws.alg_id_cusparselt == 1
    x = torch.randn(8, 4096, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(torch.nn.functional.linear(x, Ws), torch.nn.functional.linear(x, W), rtol=1e-2, atol=1e-2)
    res = sweep([("k", 1024, 4096)], Ms=[1, 16], dtypes=["float16"], device="cuda", warmup=2, repeats=5,
                progress=False, alg_id=1)
    assert res.settings["alg_id"] == 1 and all(p["sparse"]["cuSPARSELt"]["alg_id"] == 1 for p in res.points)


def test_modes_beyond_lone_need_a_gpu_and_are_validated():
    with pytest.raises(ValueError, match="need a CUDA GPU"):
        measure_point(1, 8, 8, "float32", device="cpu", modes=("lone", "graph"))
    with pytest.raises(ValueError, match="modes must start with 'lone'"):
        sweep([("t", 8, 8)], Ms=[1], dtypes=["float32"], device="cpu", modes=("graph",), progress=False)
    with pytest.raises(ValueError, match="modes must start with 'lone'"):
        measure_point(1, 8, 8, "float32", device="cpu", modes=("lone", "warp"))


def test_gpu_points_per_mode_and_mode_errors_are_problems():
    ok = {"median_ms": 1.0}
    res = Results({"gpu_name": "NVIDIA H200"}, points=[
        {"M": 1, "N": 8, "K": 8, "dtype": "float16", "shape": "s", "dense": {"median_ms": 2.0},
         "sparse": {"cuSPARSELt": {"median_ms": 4.0, "check": {"passed": True, "rel_err": 0, "tol": 1e-2}}},
         "modes": {"graph": {"dense": {"median_ms": 1.5}, "sparse": {"cuSPARSELt": ok}},
                   "kernel": {"dense": {"error": "RuntimeError: no CUPTI"}, "sparse": {"cuSPARSELt": ok}}}},
    ])
    assert [(r["dense_ms"], r["sparse_ms"]) for r in res.gpu_points()] == [(2.0, 4.0)]
    assert [(r["dense_ms"], r["sparse_ms"], r["mode"], r["check_passed"]) for r in res.gpu_points("graph")] == [(1.5, 1.0, "graph", True)]
    assert res.gpu_points("kernel") == [] and res.gpu_points("stream") == []
    assert res.problems() == ["s M=1 float16 dense [kernel]: RuntimeError: no CUPTI"]
    with pytest.raises(ValueError, match="mode must be one of"):
        res.gpu_points("warm")


@pytest.mark.gpu
def test_gpu_modes_graph_stream_kernel():
    from twofour.device import environment

    env = environment()
    if not env.sparse_ok:
        pytest.skip(env.reason)
    rec = measure_point(16, 4096, 4096, "float16", device="cuda", backends=env.backends, warmup=2, repeats=5,
                        modes=("lone", "graph", "stream", "kernel"))
    for mode in ("graph", "stream", "kernel"):
        block = rec["modes"][mode]
        for entry in [block["dense"], *block["sparse"].values()]:
            assert "error" not in entry, (mode, entry)
            assert entry["median_ms"] > 0
    # the kernel time of a call cannot exceed the lone time of the same call
    assert rec["modes"]["kernel"]["dense"]["median_ms"] <= rec["dense"]["median_ms"]
    names = rec["modes"]["kernel"]["sparse"][env.backends[0]]["kernels"]
    from twofour.dispatch import classify

    assert any(classify(n).startswith("sparse-") for n in names), names
