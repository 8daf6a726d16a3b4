"""twofour.funnel: the five steps from the data sheet to the request."""

from __future__ import annotations

import pytest

from twofour.amdahl import speedup
from twofour.course.figures.funnel import plot_funnel
import twofour.funnel
from twofour.funnel import FunnelStep, funnel, funnel_dict
from twofour.models import LLAMA_3_8B
from twofour.request import Assumptions, Machine, Workload, estimate

TOY = Machine("toy", dense_flops=1e15, sparse_flops=2e15, bandwidth=2e12)
KEYS = ["datasheet", "roofline_ceiling", "kernel", "eligible_fraction", "request"]


def test_decode_bs1_funnel_narrows_from_two():
    est = estimate(Workload(LLAMA_3_8B, 1, 512, 128), TOY, gemm_speedup=1.6,
                   assumptions=Assumptions(step_overhead_s=5e-4))
    stages = funnel(est, "decode")
    assert [s.key for s in stages] == KEYS
    values = [s.speedup for s in stages]
    assert values[0] == 2.0
    assert values[1] == pytest.approx(1 / 0.5625, rel=1e-3)  # bytes ceiling of bf16
    assert values[2] == pytest.approx(1.6)
    assert values == sorted(values, reverse=True)  # each stage loses something here
    assert values[-1] == pytest.approx(est.speedup("tpot"))


def test_eligible_stage_is_amdahl_over_gpu_work():
    est = estimate(Workload(LLAMA_3_8B, 4, 2048, 64), "H100", assumptions=Assumptions(step_overhead_s=1e-3))
    stage = funnel(est, "prefill")[3]
    ph = est.prefill
    p_work = ph.eligible_dense_s / (ph.dense_s - ph.overhead_s)
    assert stage.speedup == pytest.approx(speedup(p_work, ph.gemm_speedup), rel=1e-12)


def test_without_overheads_the_last_two_stages_agree():
    est = estimate(Workload(LLAMA_3_8B, 4, 2048, 64), "H100")
    stages = funnel(est)
    assert stages[3].speedup == pytest.approx(stages[4].speedup, rel=1e-12)
    assert stages[4].speedup == pytest.approx(est.speedup("request"), rel=1e-12)


def test_nothing_pruned_gives_ones_after_the_datasheet():
    est = estimate(Workload(LLAMA_3_8B, 1, 16, 4, pruned=()), "H100")
    assert [s.speedup for s in funnel(est)][1:] == [1.0, 1.0, 1.0, 1.0]


def test_funnel_dict_and_plot():
    est = estimate(Workload(LLAMA_3_8B, 1, 16, 4), "H100")
    rows = funnel_dict(est, "decode")
    assert [r["key"] for r in rows] == KEYS and all(set(r) == {"key", "label", "speedup", "explains"} for r in rows)
    ax = plot_funnel(funnel(est), title="t")
    assert len(ax.patches) == 5 and ax.get_title() == "t"


def test_bad_input():
    est = estimate(Workload(LLAMA_3_8B, 1, 16, 4), "H100")
    with pytest.raises(ValueError, match="scope must be one of"):
        funnel(est, "tpot")
    with pytest.raises(TypeError, match="est must be a RequestEstimate"):
        funnel({"p": 0.5})
    with pytest.raises(ValueError, match="stages must be a non-empty list of FunnelStep"):
        plot_funnel([])
    with pytest.raises(ValueError, match="stages must be"):
        plot_funnel([FunnelStep("a", "a", 1.0, "x"), 2.0])
    with pytest.raises(ValueError, match="kernel_role must be one of"):
        plot_funnel(funnel(est), kernel_role="guessed")


def test_steps_are_numbered_and_titled_as_speedups():
    est = estimate(Workload(LLAMA_3_8B, 1, 512, 64), "H100")
    for scope, last in (("decode", "per-token speedup"), ("request", "end-to-end speedup")):
        steps = funnel(est, scope)
        assert [s.step for s in steps] == [1, 2, 3, 4, 5]
        assert all(s.title.startswith(f"step {s.step}: ") and "speedup" in s.title for s in steps)
        assert steps[-1].title == f"step 5: {last}"
    assert not hasattr(twofour.funnel, "FunnelStage")  # one name for one funnel step, no deprecated alias
    # the short labels are what the site's calculator mirrors: unchanged
    assert [s.label for s in funnel(est, "request")] == ["data sheet", "roofline ceiling", "2:4 GEMM",
                                                           "eligible fraction", "end to end"]


def test_a_trace_funnel_and_a_request_funnel_are_one_class():
    from twofour.dispatch.trace import analyze, recorded

    steps = analyze(recorded("sparse-eager"), baseline=recorded("dense-eager")).phase("decode").funnel()
    assert all(type(s) is FunnelStep for s in steps) and [s.how for s in steps][2:] == ["measured"] * 3
    assert all(s.how == "predicted" for s in funnel(estimate(Workload(LLAMA_3_8B, 1, 16, 4), "H100")))
    assert all("how" not in row for row in funnel_dict(estimate(Workload(LLAMA_3_8B, 1, 16, 4), "H100")))
