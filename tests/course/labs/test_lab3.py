"""Lab 3 checkers: right answers pass, typical mistakes get a hint that names the suspect, stubs say 'not done yet'."""

from __future__ import annotations


import pytest
import torch
import torch.nn.functional as F

import twofour
from twofour.dispatch import backend_rules, default_backend, explain, kernels
from twofour.course.labs import lab3
from twofour.course.labs._common import CheckFailed



def diagnose(suspect):
    v = explain(suspect.W, suspect.x_shape, target=lab3.target())
    for topic, reason in (("dtype", "dtype"), ("contiguous", "not-contiguous"), ("shape", "too-small")):
        if topic in v.topics:
            return reason
    if "structure" in v.topics:
        return "wrong-axis" if twofour.check(suspect.W.t().contiguous()).valid else "not-2:4"
    if v.M_padded is not None and v.M_padded > v.M:
        return "padding"
    return "not-packed"


def make_packable(W, *, cast=True, contiguous=True, pad=True, prune="if-needed"):
    if cast and W.dtype not in (torch.float16, torch.bfloat16):
        W = W.to(torch.float16)
    if contiguous:
        W = W.contiguous()
    rule = backend_rules(default_backend()).shapes.get(W.dtype)
    if pad and rule is not None:
        N, K = W.shape
        rows = max(rule.sparse_min_rows, -(-N // rule.sparse_min_rows) * rule.sparse_min_rows)
        cols = max(rule.sparse_min_cols, -(-K // rule.sparse_min_cols) * rule.sparse_min_cols)
        W = F.pad(W, (0, cols - K, 0, rows - N))
    else:
        W = W.clone()
    if prune == "always" or (prune == "if-needed" and W.shape[1] % 4 == 0 and not twofour.check(W.contiguous()).valid):
        W = twofour.prune(W.contiguous())[0]
    return W


def proof(fn):
    report = kernels(fn)
    return report.gemm_class, report.time_ms_per_call(report.gemm_class)


def test_suspects_are_as_described():
    s = lab3.suspects()
    assert len(s) == len(lab3.REASONS) == 7
    assert {lab3.reference_diagnose(v) for v in s.values()} == set(lab3.REASONS)
    assert not s["F: the tied projection"].W.is_contiguous()
    assert s["B: the float32 layer"].W.dtype == torch.float32
    assert twofour.check(s["C: the transposed export"].W.t().contiguous()).valid
    assert not twofour.check(s["C: the transposed export"].W).valid
    assert "Suspect(" in repr(s["A: the pruned MLP"])


def test_reference_matches_the_answers():
    for name, suspect in lab3.suspects().items():
        assert lab3.reference_diagnose(suspect) == lab3._ANSWERS[name][0]


def where_did_the_2x_go(ph):
    if ph.sparse_gemms == 0:
        return "dispatch"
    if ph.comparison.end_to_end < 0.5 * ph.comparison.amdahl:
        return "host"
    return "kernel"


def test_solutions_pass(capsys):
    assert lab3.check_diagnose(diagnose).passed is True
    assert lab3.check_make_packable(make_packable).passed is True
    assert lab3.check_proof(proof).passed is True
    assert lab3.check_where(where_did_the_2x_go).passed is True
    assert capsys.readouterr().out.count("passed:") == 4


def test_stubs_are_not_done_yet(capsys):
    def stub(*args):
        raise NotImplementedError

    assert lab3.check_diagnose(stub).passed is False
    assert lab3.check_make_packable(stub).passed is False
    assert lab3.check_proof(stub).passed is False
    assert lab3.check_where(stub).passed is False
    assert capsys.readouterr().out.count("not done yet") == 4


@pytest.mark.parametrize(
    "wrong, match",
    [
        (lambda s: "slow", "return one of"),
        (lambda s: "not-packed", "suspect 'B: the float32 layer'.*dtype row"),
        (lambda s: "not-2:4" if "C:" in s.name else diagnose(s), "suspect 'C: the transposed export'.*W.t()"),
        (lambda s: "wrong-axis" if "D:" in s.name else diagnose(s), "suspect 'D: the 50% layer'"),
        (lambda s: "not-packed" if "G:" in s.name else diagnose(s), "suspect 'G: the decode step'.*padding row"),
    ],
)
def test_diagnose_hints(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        lab3.check_diagnose(wrong)


def test_diagnose_hints_never_give_the_answer():
    # A hint may name the row of explain() to read ("the dtype row"), never the code to return.
    for code, hint in lab3._ANSWERS.values():
        assert f"'{code}'" not in hint and f'"{code}"' not in hint
        if "-" in code or ":" in code:
            assert code not in hint


def _nonzero_padding(W):
    N = W.shape[0]
    W_ready = F.pad(make_packable(W), (0, 0, 0, 16))
    W_ready[N:, ::4] = 1  # still 2:4, but the extra rows are not zero
    return W_ready


def _in_place(W):
    W.add_(1)
    return make_packable(W)


@pytest.mark.parametrize(
    "wrong, match",
    [
        (lambda W: W, "float16 or bfloat16"),
        (lambda W: make_packable(W, contiguous=False), "contiguous"),
        (lambda W: make_packable(W, pad=False), "shape"),
        (lambda W: make_packable(W, prune="never"), "structure"),
        (lambda W: twofour.prune(make_packable(W), 1, 4)[0], "already 2:4"),
        (lambda W: make_packable(W)[:4], "pad, never crop"),
        (lambda W: make_packable(W) * 2, "changed values"),
        (_nonzero_padding, "padding must be zeros"),
        (_in_place, "in place"),
        (lambda W: "W", "not a tensor"),
    ],
)
def test_make_packable_hints(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        lab3.check_make_packable(wrong)


def test_make_packable_must_keep_the_largest_values():
    def keep_smallest(W):
        W = make_packable(W, prune="never")
        if twofour.check(W).valid:
            return W
        return twofour.prune(W, scores=(W.float().abs() + 1e-3).reciprocal())[0]  # ranks by |score|: small |W| first

    with pytest.raises(CheckFailed, match="2 largest"):
        lab3.check_make_packable(keep_smallest)


@pytest.mark.parametrize(
    "wrong, match",
    [
        (lambda fn: "dense-gemm", "tuple"),
        (lambda fn: ("fast", 1.0), "not a class"),
        (lambda fn: ("other", 1.0), "not the class that ran"),
        (lambda fn: (kernels(fn).gemm_class, 0), "positive number"),
        (lambda fn: (kernels(fn).gemm_class, kernels(fn).time_us[kernels(fn).gemm_class] * 1000), "microseconds"),
    ],
)
def test_proof_hints(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        lab3.check_proof(wrong)


def test_trace_cases_are_what_the_lab_says():
    cases = lab3.trace_cases()
    eager, graph, unpacked = (cases[k] for k in ("eager 2:4 decode", "graph-replayed 2:4 decode", "the checkpoint nobody packed"))
    assert eager.sparse_gemms == graph.sparse_gemms == 42 and unpacked.sparse_gemms == 0
    assert eager.comparison.end_to_end < 0.1 < 0.4 < graph.comparison.end_to_end
    assert graph.comparison.gemm_speedup < 1 and eager.comparison.gemm_speedup < 1  # both lose in the kernel
    assert unpacked.comparison.gemm_speedup == pytest.approx(1.0)


@pytest.mark.parametrize(
    "wrong, match",
    [
        (lambda ph: "slow", "return one of"),
        (lambda ph: "kernel" if ph.sparse_gemms else "dispatch", "case 'eager 2:4 decode'.*end_to_end"),
        (lambda ph: "host" if ph.sparse_gemms else "dispatch", "case 'graph-replayed 2:4 decode'.*gemm_speedup"),
        (lambda ph: "host" if ph.idle_fraction > 0.5 else "kernel", "case 'the checkpoint nobody packed'.*sparse_gemms"),
    ],
)
def test_where_hints(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        lab3.check_where(wrong)


def test_where_hints_never_give_the_answer():
    for _, _, answer, hint in lab3._TRACES.values():
        assert answer not in hint.replace("ph.", "")


def _rebuild_reference(values, bitmask, shape):
    N, K = (int(v) for v in shape.flatten())
    bits = torch.tensor([1 << i for i in range(8)], dtype=torch.uint8)
    mask = (bitmask.unsqueeze(-1) & bits).ne(0).reshape(N, -1)[:, :K]
    raw = values.view(torch.uint8) if values.element_size() == 1 else values
    out = torch.zeros((N, K), dtype=raw.dtype)
    out[mask] = raw.reshape(-1)
    return out.view(values.dtype)


def test_rebuild_passes_and_its_stub_is_not_done(capsys):
    assert lab3.check_rebuild(_rebuild_reference).passed is True

    def stub(values, bitmask, shape):
        raise NotImplementedError

    assert lab3.check_rebuild(stub).passed is False


def _big_endian(values, bitmask, shape):
    N, K = (int(v) for v in shape.flatten())
    bits = torch.tensor([1 << (7 - i) for i in range(8)], dtype=torch.uint8)
    mask = (bitmask.unsqueeze(-1) & bits).ne(0).reshape(N, -1)[:, :K]
    out = torch.zeros((N, K), dtype=values.dtype if values.element_size() > 1 else torch.uint8)
    if int(mask.sum()) != values.numel():
        return out.view(values.dtype)
    out[mask] = (values if values.element_size() > 1 else values.view(torch.uint8)).reshape(-1)
    return out.view(values.dtype)


@pytest.mark.parametrize("wrong, match", [
    (lambda v, b, s: v, "the dense shape is what the .shape tensor holds"),
    (lambda v, b, s: _rebuild_reference(v, b, s).float(), "keep the dtype of the stored values"),
    (_big_endian, "little-endian"),
])
def test_rebuild_hints(wrong, match):
    with pytest.raises(CheckFailed, match=match):
        lab3.check_rebuild(wrong)
