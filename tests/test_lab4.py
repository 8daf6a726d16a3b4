"""Lab 4 checkers: right answers pass, typical mistakes get the matching hint, stubs say 'not done yet'."""

import pytest
import torch

from twofour.bench import Results, summarize
from twofour.hardware import get_gpu
from twofour.course.labs import lab4
from twofour.course.labs._common import CheckFailed
from twofour.packing import packed_bytes
from twofour.roofline import DEFAULT_EFFICIENCY, crossover_m


def decode_speedup(N, K, gpu, *, overhead=True, pad=8, activations=True, packed=True):
    e = DEFAULT_EFFICIENCY
    bw = get_gpu(gpu).mem_bw_gbs * 1e9

    def t(weight, rows, eff, oh):
        io = (rows * K * 2 + rows * N * 2) if activations else 0
        return (weight + io) / (bw * eff) + (oh * 1e-6 if overhead else 0)

    sparse_w = packed_bytes((N, K), torch.float16) if packed else N * K
    return t(N * K * 2, 1, e.dense_memory, e.dense_overhead_us) / t(sparse_w, pad, e.sparse_memory, e.sparse_overhead_us)


def find_crossover(speedup, m_max):
    return next((M for M in range(1, m_max + 1) if speedup(M) > 1), None)


def measured_crossover(rows):
    wins = [r["M"] for r in rows if r["sparse_ms"] < r["dense_ms"]]
    return min(wins) if wins else None


def test_solutions_pass(capsys):
    assert lab4.check_decode_speedup(decode_speedup).passed is True
    assert lab4.check_find_crossover(find_crossover).passed is True
    assert lab4.check_measured_crossover(measured_crossover).passed is True
    assert capsys.readouterr().out.count("passed:") == 3


@pytest.mark.parametrize(
    "kwargs, hint",
    [
        ({"overhead": False}, "per-call overheads are missing"),
        ({"pad": 1}, "pads x to a multiple of 8"),
        ({"activations": False}, "only the weight bytes"),
        ({"packed": False}, "2-bit metadata"),
    ],
)
def test_decode_mistakes_get_specific_hints(kwargs, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab4.check_decode_speedup(lambda N, K, gpu: decode_speedup(N, K, gpu, **kwargs))
    with pytest.raises(CheckFailed, match="upside down"):
        lab4.check_decode_speedup(lambda N, K, gpu: 1 / decode_speedup(N, K, gpu))
    with pytest.raises(CheckFailed, match="return a float"):
        lab4.check_decode_speedup(lambda N, K, gpu: "fast")


def test_find_crossover_mistakes():
    with pytest.raises(CheckFailed, match="equal to 1 is not a win"):
        lab4.check_find_crossover(lambda f, m: next((M for M in range(1, m + 1) if f(M) >= 1), None))
    with pytest.raises(CheckFailed, match="smaller M"):
        # last win instead of first
        lab4.check_find_crossover(lambda f, m: max((M for M in range(1, m + 1) if f(M) > 1), default=None))
    with pytest.raises(CheckFailed, match="return None"):
        lab4.check_find_crossover(lambda f, m: find_crossover(f, m) or m)
    with pytest.raises(CheckFailed, match="return an int"):
        lab4.check_find_crossover(lambda f, m: 37.0)


def test_measured_crossover_mistakes():
    with pytest.raises(CheckFailed, match="not sorted"):
        lab4.check_measured_crossover(lambda rows: next((r["M"] for r in rows if r["sparse_ms"] < r["dense_ms"]), None))
    with pytest.raises(CheckFailed, match="equal is not a win"):
        lab4.check_measured_crossover(lambda rows: min((r["M"] for r in rows if r["sparse_ms"] <= r["dense_ms"]), default=None))


def test_measured_crossover_on_results_data():
    t = summarize
    res = Results({"gpu_name": "NVIDIA H200"}, points=[
        {"M": M, "N": 64, "K": 64, "dtype": "float16", "shape": "s", "dense": t([d]),
         "sparse": {"cuSPARSELt": {**t([s]), "check": {"passed": True}}}}
        for M, d, s in ((1, 0.01, 0.03), (64, 0.05, 0.04), (16, 0.02, 0.025))
    ])
    assert lab4.check_measured_crossover(measured_crossover, results=[res]).passed is True
    with pytest.raises(CheckFailed, match="recorded data"):
        calls = {"n": 0}

        def wrong_on_data(rows):
            calls["n"] += 1
            return measured_crossover(rows) if calls["n"] <= 5 else 16
        lab4.check_measured_crossover(wrong_on_data, results=[res])


def test_stubs_are_not_done_yet(capsys):
    def stub(*a):
        raise NotImplementedError

    assert lab4.check_decode_speedup(stub).passed is False
    assert lab4.check_find_crossover(stub).passed is False
    assert lab4.check_measured_crossover(stub).passed is False
    assert capsys.readouterr().out.count("not done yet") == 3


def test_check_prediction():
    want = crossover_m(4096, 4096, "fp16", "H100")
    assert lab4.check_prediction(want, 4096, 4096, "H100").passed is True
    assert lab4.check_prediction(None, 4096, 4096, "H100").passed is False
    with pytest.raises(CheckFailed, match="differs from the model"):
        lab4.check_prediction(want + 1, 4096, 4096, "H100")


def test_compare_with_data():
    assert "never won" in lab4.compare_with_data(10, None, "x")
    assert lab4.compare_with_data(None, 5, "x") == "model: no crossover up to the search limit; x: M = 5."
