"""Lab 4 checkers: right answers pass, typical mistakes get the matching hint, stubs say 'not done yet'."""

import math

import pytest

from twofour.bench import Results, recorded_alg_search, summarize
from twofour.course.labs import lab4
from twofour.course.labs._common import CheckFailed
from twofour.roofline import crossover_m, predict


def ctas(M, N, K, tile, sms, cta_target, max_split, min_k_iters, *, split=True, k_limit=True, target0=True, ceil=True):
    if ceil:
        tiles = math.ceil(N / tile[0]) * math.ceil(M / tile[1])
    else:
        tiles = max(1, (N // tile[0]) * (M // tile[1]))
    if not split:
        return tiles
    target = (cta_target or sms) if target0 else cta_target
    return tiles * max(1, min(max_split, target // tiles, K // (64 * min_k_iters) if k_limit else max_split))


def fastest_algorithm(configs):
    ok = [c for c in configs if "error" not in c and c["rel_err"] < 1e-2]
    return min(ok, key=lambda c: c["ms"])["alg_id"]


def find_crossover(speedup, m_max):
    return next((M for M in range(1, m_max + 1) if speedup(M) > 1), None)


def measured_crossover(rows):
    wins = [r["M"] for r in rows if r["sparse_ms"] < r["dense_ms"]]
    return min(wins) if wins else None


def test_solutions_pass(capsys):
    assert lab4.check_ctas(ctas).passed is True
    assert lab4.check_find_crossover(find_crossover).passed is True
    assert lab4.check_measured_crossover(measured_crossover).passed is True
    assert lab4.check_fastest_algorithm(fastest_algorithm, recorded_alg_search()).passed is True
    assert capsys.readouterr().out.count("passed:") == 4


@pytest.mark.parametrize(
    "kwargs, hint",
    [
        ({"split": False}, "that is the number of tiles"),
        ({"k_limit": False}, "min_k_iters steps of 64"),
        ({"target0": False}, "cta_target 0 means the GPU's SM count"),
        ({"ceil": False}, "a partial tile is still a tile"),
    ],
)
def test_cta_mistakes_get_specific_hints(kwargs, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab4.check_ctas(lambda *a: ctas(*a, **kwargs))
    with pytest.raises(CheckFailed, match="not always max_split"):
        lab4.check_ctas(lambda M, N, K, tile, sms, t, ms, it: math.ceil(N / tile[0]) * math.ceil(M / tile[1]) * ms)
    with pytest.raises(CheckFailed, match="return an int"):
        lab4.check_ctas(lambda *a: float(ctas(*a)))


def test_the_cta_cases_are_what_the_model_launches():
    from twofour.roofline import kernel_time

    for M, N, K, family, gpu in lab4.CTA_CASES:
        Mp, tile, sms, fam = lab4._case_args(M, N, K, family, gpu)
        assert ctas(Mp, N, K, tile, sms, fam.cta_target, fam.max_split, fam.min_k_iters) == kernel_time(
            M, N, K, "fp16", gpu, family).ctas


def test_fastest_algorithm_mistakes():
    with pytest.raises(CheckFailed, match="did not run"):
        lab4.check_fastest_algorithm(lambda cs: min((c for c in cs if "ms" in c or c["alg_id"] == 1),
                                                    key=lambda c: c.get("ms", 0.0))["alg_id"])
    with pytest.raises(CheckFailed, match="a wrong answer is not a speedup"):
        lab4.check_fastest_algorithm(lambda cs: min((c for c in cs if "error" not in c), key=lambda c: c["ms"])["alg_id"])
    with pytest.raises(CheckFailed, match="recorded sweep"):
        calls = {"n": 0}

        def wrong_on_data(cs):
            calls["n"] += 1
            return fastest_algorithm(cs) if calls["n"] <= 3 else 7
        lab4.check_fastest_algorithm(wrong_on_data, recorded_alg_search())


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

    assert lab4.check_ctas(stub).passed is False
    assert lab4.check_find_crossover(stub).passed is False
    assert lab4.check_measured_crossover(stub).passed is False
    assert lab4.check_fastest_algorithm(stub).passed is False
    assert capsys.readouterr().out.count("not done yet") == 4


def test_check_prediction():
    want = crossover_m(4096, 4096, "fp16", "H100")
    assert lab4.check_prediction(want, 4096, 4096, "H100").passed is True
    assert lab4.check_prediction(None, 4096, 4096, "H100").passed is False
    with pytest.raises(CheckFailed, match="differs from the model"):
        lab4.check_prediction(want + 1, 4096, 4096, "H100")


def test_compare_with_data():
    assert "never won" in lab4.compare_with_data(10, None, "x")
    assert lab4.compare_with_data(None, 5, "x") == "model: no crossover up to the search limit; x: M = 5."
    assert lab4.compare_with_data(513, 2048, "x", gpu="H200").startswith("model (H200): M = 513; x: M = 2048")


def test_measurements_are_one_per_gpu_run_and_say_so():
    """The last step once printed the same H200 line once per results file; one run is one line."""
    from twofour.bench import recorded_results

    recorded = recorded_results("gpu")
    found = lab4.measurements(recorded, 4096, 4096)
    assert len(found) == 1 and found[0].gpu == "H200"
    assert "H200, measured 2026-11-30" in found[0].source and "2 results files" in found[0].source
    fp16_rows = [p for r in recorded for p in r.gpu_points("graph") if (p["N"], p["K"], p["dtype"]) == (4096, 4096, "float16")]
    assert len(found[0].rows) == len(fp16_rows) and len({p["M"] for p in fp16_rows}) < len(fp16_rows)  # two files, one curve
    assert lab4.measurements(recorded + recorded, 4096, 4096) == found  # a file given twice adds nothing
    assert lab4.measurements(recorded, 123, 456) == []
    # the prediction it is held against is the same GPU's, in the bench's conditions
    same_gpu = find_crossover(lambda M: predict(M, 4096, 4096, "fp16", found[0].gpu, scenario="cached", l2="flushed").speedup,
                              16384)
    assert same_gpu == crossover_m(4096, 4096, "fp16", "H200", scenario="cached", l2="flushed")


def tile_math_us(tile, K, split, sm_tflops, *, whole_tile=True, halve=False, use_split=True):
    flops = 2 * tile[0] * (tile[1] if whole_tile else 1) * (K / split if use_split else K)
    return flops / (1 if not halve else 2) / (sm_tflops * 1e12) * 1e6


def test_tile_math_counts_every_token_column_of_the_tile(capsys):
    assert lab4.check_tile_math_us(tile_math_us).passed is True
    for mistake, hint in (({"whole_tile": False}, "all tile_m token columns"), ({"halve": True}, "2 FLOPs"),
                          ({"use_split": False}, "K / split")):
        with pytest.raises(CheckFailed, match=hint):
            lab4.check_tile_math_us(lambda t, K, s, tf, m=mistake: tile_math_us(t, K, s, tf, **m))
    assert lab4.check_tile_math_us(lambda *a: (_ for _ in ()).throw(NotImplementedError)).passed is False
