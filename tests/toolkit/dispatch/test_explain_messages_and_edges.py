"""twofour.dispatch.explain: each hint shown exactly when it applies (mutation testing).

A hint with its condition inverted reads plausibly in every report, so each test here takes
a case where the hint must appear and one where it must not, and compares whole messages
through the public ``Verdict.checks`` (topic, status, message).
"""

from __future__ import annotations

import pytest
import torch

import twofour
from twofour.dispatch import explain, hypothetical_gpu

A100 = hypothetical_gpu((8, 0), name="A100")


def _pruned(N, K, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    W, _ = twofour.prune(torch.randn(N, K, generator=g))
    return W.to(dtype)


def _cutlass_packed(W):
    """W as a CUTLASS-packed tensor, built on the CPU from PyTorch's own conversion (no GPU needed)."""
    import warnings

    from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass

    values, meta = sparse_semi_structured_from_dense_cutlass(W)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse.SparseSemiStructuredTensorCUTLASS(W.shape, values, meta, None, None, None)


def _found(verdict, topic):
    """``[(status, message)]`` of the checks on one topic."""
    return [(c.status, c.message) for c in verdict.checks if c.topic == topic]


def test_the_other_backend_is_named_only_when_it_takes_the_dtype():
    # float32: cuSPARSELt refuses it, CUTLASS takes it (as 1:2).
    v = explain(_pruned(256, 512, torch.float32), 128, target=A100, backend="cusparselt")
    [(status, message)] = _found(v, "dtype")
    assert status == "error"
    assert "not float32; CUTLASS takes it; convert W (and x) to float16 or bfloat16" in message
    # float64: neither takes it, so no backend is offered.
    v = explain(torch.zeros(64, 64, dtype=torch.float64), 128, target=A100, backend="cusparselt")
    [(status, message)] = _found(v, "dtype")
    assert status == "error" and "takes it" not in message
    assert message.endswith("not float64; convert W (and x) to float16 or bfloat16")
    v = explain(torch.zeros(64, 64, dtype=torch.float64), 128, target=A100, backend="cutlass")
    assert "takes it" not in _found(v, "dtype")[0][1]


def test_an_explicit_backend_is_marked_only_when_it_is_not_the_default():
    W = _pruned(256, 512)
    assert _found(explain(W, 128, target=A100), "backend") == [
        ("info", "to_sparse_semi_structured would use cuSPARSELt")]
    assert _found(explain(W, 128, target=A100, backend="cusparselt"), "backend") == [
        ("info", "to_sparse_semi_structured would use cuSPARSELt")]
    assert _found(explain(W, 128, target=A100, backend="cutlass"), "backend") == [
        ("info", "to_sparse_semi_structured would use CUTLASS (asked for explicitly; torch's default is cuSPARSELt)")]


def test_wrong_axis_only_when_the_transpose_is_2_4():
    wrong_axis = _pruned(512, 256).t().contiguous()  # zeros run along out_features
    [(status, message)] = _found(explain(wrong_axis, 128, target=A100), "structure")
    assert status == "wrong"
    assert "; W.t() is 2:4: the zeros run along out_features (pruned along the wrong axis);" in message
    assert "unstructured" not in message
    # Half zeros, all in the right half of each row: not 2:4 either way round.
    W = torch.ones(256, 512).half()
    W[:, 256:] = 0
    [(status, message)] = _found(explain(W, 128, target=A100), "structure")
    assert "; 50% of W is zero, but not 2 in every 4 along K (unstructured);" in message
    assert "wrong axis" not in message
    # More than half non-zero: neither hint, only the count.
    [(_, message)] = _found(explain(torch.ones(64, 64).half(), 128, target=A100), "structure")
    assert message.startswith("1,024 of 1,024 groups (100.0%) break 2:4 along K; packing does not check it")


def test_float32_hint_says_whether_w_is_2_4():
    W24 = _pruned(64, 64, torch.float32)  # 2:4, but float32 needs 1:2
    [(status, message)] = _found(explain(W24, 64, target=A100, backend="cutlass"), "structure")
    assert status == "wrong"
    assert "hold 2 non-zeros; W is 2:4, but float32 is stored 1:2 (one non-zero per pair), which is stricter;" in message
    dense = torch.ones(64, 64)
    [(status, message)] = _found(explain(dense, 64, target=A100, backend="cutlass"), "structure")
    assert "2,048 of 2,048 pairs (100.0%) hold 2 non-zeros; float32 is stored 1:2 (one non-zero per pair);" in message
    assert "W is 2:4" not in message
    W12, _ = twofour.prune(torch.randn(64, 64), 1, 2)
    assert _found(explain(W12, 64, target=A100, backend="cutlass"), "structure") == [
        ("ok", "every group of 2 along K holds at most 1 non-zeros (float32 is stored as 1:2 pairs)")]


def test_consequence_depends_on_the_backend():
    dense = torch.ones(64, 64).half()
    [(_, cusparselt)] = _found(explain(dense, 128, target=A100, backend="cusparselt"), "structure")
    [(_, cutlass)] = _found(explain(dense, 128, target=A100, backend="cutlass"), "structure")
    assert cusparselt.endswith("; packing does not check it, so the sparse result differs from the dense layer")
    assert cutlass.endswith("; packing silently drops the extra non-zeros, so the sparse result differs from the dense layer")


def test_a_cpu_weight_is_judged_as_if_moved():
    v = explain(_pruned(256, 512), 128, target=A100)
    assert _found(v, "device") == [("info", "W is on cpu; judged as if moved with W.to('cuda') first")]
    meta = torch.empty(256, 512, dtype=torch.float16, device="meta")
    v = explain(meta, 128, target=A100)
    assert _found(v, "device") == [("ok", "CUDA")]
    assert _found(v, "structure") == [("info", "W is a meta tensor (no values): 2:4 validity not checked")]


@pytest.mark.parametrize("M, status, fragment", [
    (13, "slow", "x has M=13 rows; the sparse kernel zero-pads them to 16 (a multiple of 8), so 18.8% of its rows are padding"),
    (64, "slow", "M=64 tokens: no padding, but a GEMM this short is memory-bound"),
    (72, "ok", "M=72 is a multiple of 8: no padding"),
])
def test_padding_edges(M, status, fragment):
    [(got_status, message)] = _found(explain(_pruned(256, 512), M, target=A100), "padding")
    assert got_status == status and message.startswith(fragment)


def test_verdict_summary_and_path():
    W = _pruned(256, 512)
    v = explain(W, 128, target=A100)
    assert (v.path, v.if_packed, v.sparse, v.would_be_sparse) == ("dense", "sparse-cusparselt", False, True)
    assert v.summary() == "W 256x512 float16 (dense tensor) on A100 (compute capability 8.0): dense now, sparse-cusparselt if packed"
    bad_x = explain(W, (8, 256), target=A100)
    assert (bad_x.path, bad_x.if_packed) == ("error", "error")
    assert _found(bad_x, "x") == [("error", "x has K=256 columns but W has K=512 (in_features); F.linear raises a shape error")]


def test_a_dtype_without_a_check_says_so():
    v = explain(torch.zeros(64, 64, dtype=torch.complex64), 128, target=A100)
    assert _found(v, "structure") == [("info", "complex64 has no 2:4 check here")]


def test_html_colours_each_status():
    html = explain(_pruned(256, 512), 13, target=A100)._repr_html_()
    assert "<td style='color:#1b7f3b;font-weight:600'>ok</td>" in html
    assert "<td style='color:#8a5a00;font-weight:600'>slow</td>" in html
    assert "<td style='color:#b3261e;font-weight:600'>dense</td>" in html


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the verdict on a machine without a CUDA GPU")
def test_no_gpu_target_is_named_in_the_summary():
    v = explain(_pruned(256, 512), 128)
    assert v.target == "CPU (no CUDA GPU)"
    assert v.summary().endswith("on CPU (no CUDA GPU): dense now, error if packed")


def test_bad_arguments_say_what_to_pass():
    with pytest.raises(TypeError, match=r"got list; for a whole model use twofour.dispatch.audit\(model\)$"):
        explain([[1.0]], 1)
    with pytest.raises(ValueError, match=r"x_shape as an int is the number of tokens M and must be >= 1, got 0"):
        explain(_pruned(256, 512), 0, target=A100)
    with pytest.raises(ValueError, match=r"W must be 2-D \[out_features, in_features\], got shape \(4,\)"):
        explain(torch.zeros(4), 1, target=A100)


def test_shape_and_padding_checks_cite_their_sources():
    from twofour.dispatch.rules import backend_rules

    rules = backend_rules("cusparselt")
    v = explain(_pruned(8, 64), 13, target=A100)
    [shape] = [c for c in v.checks if c.topic == "shape"]
    assert shape.message == "cuSPARSELt float16: N=8 rows (out_features) must be >= and a multiple of 16 (pad W with zeros, slice the output)"
    assert shape.source == rules.source
    [padding] = [c for c in v.checks if c.topic == "padding"]
    assert padding.source == f"{rules.source}; pytorch#111339"


def test_int8_runs_but_returns_int8_and_cites_the_rule():
    from twofour.dispatch.rules import backend_rules

    v = explain(_pruned(64, 128, torch.int8), 64, target=A100, backend="cutlass")
    [dtype] = [c for c in v.checks if c.topic == "dtype"]
    assert dtype.status == "wrong" and dtype.message.startswith("int8 through a plain F.linear returns int8")
    assert dtype.source == backend_rules("cutlass").source


def test_a_packed_weight_is_summarised_as_packed():
    Wp = _cutlass_packed(_pruned(64, 128))
    v = explain(Wp, 64, target=A100)
    assert v.summary() == "W 64x128 float16 (packed) on A100 (compute capability 8.0): sparse-cutlass"


def test_float32_that_is_3_4_but_not_2_4_gets_no_2_4_hint():
    W = torch.zeros(64, 64)
    W[:, 0::4] = W[:, 1::4] = W[:, 2::4] = 1.0  # three non-zeros in every group of four
    [(_, message)] = _found(explain(W, 64, target=A100, backend="cutlass"), "structure")
    assert "; float32 is stored 1:2 (one non-zero per pair);" in message and "W is 2:4" not in message


def test_k_not_a_multiple_of_the_group_is_a_structure_error():
    v = explain(torch.ones(64, 66).half(), 128, target=A100)
    assert ("error", "K=66 is not a multiple of the group size 4") in _found(v, "structure")


def test_dense_message_in_full():
    v = explain(_pruned(256, 512), 128, target=A100)
    assert _found(v, "packed") == [("dense", "W is a dense tensor: F.linear runs the dense GEMM and multiplies every "
                                             "zero; only torch.sparse.to_sparse_semi_structured(W) makes it sparse")]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the verdict on a machine without a CUDA GPU")
def test_no_gpu_message_in_full():
    v = explain(_pruned(256, 512), 128)
    assert _found(v, "device") == [("error", "no CUDA GPU: to_sparse_semi_structured accepts CUDA tensors only and "
                                             "PyTorch has no 2:4 kernel for the CPU")]


def test_a_transposed_view_is_refused_with_its_strides_and_the_fix():
    W = _pruned(512, 256).t()  # a 256 x 512 view with strides (1, 256)
    [contiguous] = [c for c in explain(W, 128, target=A100).checks if c.topic == "contiguous"]
    assert (contiguous.status, contiguous.message) == (
        "error", "W is not contiguous (strides (1, 256), e.g. a transposed view); conversion raises: pass W.contiguous()")
    assert contiguous.source == "torch/sparse/semi_structured.py, _validate_device_dim_dtype_shape"
    assert _found(explain(W.contiguous(), 128, target=A100), "contiguous") == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the verdict on a machine without a CUDA GPU")
def test_no_gpu_cites_the_device_check():
    [device] = [c for c in explain(_pruned(256, 512), 128).checks if c.topic == "device"]
    assert device.source == "torch/sparse/semi_structured.py, _validate_device_dim_dtype_shape"


def test_a_short_gemm_warning_in_full_with_its_sources():
    [padding] = [c for c in explain(_pruned(256, 512), 64, target=A100).checks if c.topic == "padding"]
    assert padding.message == ("M=64 tokens: no padding, but a GEMM this short is memory-bound, where published runs "
                               "of PyTorch's sparse path were slower than dense")
    assert padding.source == "pytorch#111339; ao#1460"


def test_a_packed_weight_names_its_class_and_kernel():
    Wp = _cutlass_packed(_pruned(64, 128))
    assert _found(explain(Wp, 64, target=A100), "packed") == [
        ("ok", "W is a SparseSemiStructuredTensorCUTLASS: matmuls dispatch to the CUTLASS sparse kernel")]


def test_a_broken_pattern_cites_that_pytorch_does_not_check_it():
    [structure] = [c for c in explain(torch.ones(64, 64).half(), 128, target=A100).checks if c.topic == "structure"]
    assert structure.status == "wrong"
    assert structure.source == "PyTorch does not check the pattern: torch/sparse/_semi_structured_conversions.py"


def test_mixed_dtypes_message_in_full():
    v = explain(_pruned(256, 512), 128, x_dtype=torch.bfloat16, target=A100)
    [mixed] = [c for c in v.checks if c.topic == "x"]
    assert (mixed.status, mixed.message) == (
        "error", "x is bfloat16 but W is float16; F.linear needs one dtype (cuSPARSELt also refuses mixed dtypes)")
    assert mixed.source == "torch/sparse/semi_structured.py, _mm"
    assert (v.path, v.if_packed) == ("error", "error")


def test_packed_message_in_full():
    Wp = _cutlass_packed(_pruned(64, 128))
    v = explain(Wp, 64, target=A100)
    assert _found(v, "packed") == [
        ("ok", "W is a SparseSemiStructuredTensorCUTLASS: matmuls dispatch to the CUTLASS sparse kernel")]


# A caller's ``structure=`` report is trusted only for the question it answers: the same weight
# shape and dtype, and the pattern the dtype is stored in. One made for another weight or
# pattern is refused by name, never silently used (it would give another weight's verdict).


def test_a_structure_report_for_another_shape_dtype_or_pattern_is_refused_by_name():
    W = _pruned(256, 512)
    broken = torch.ones(256, 512, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"structure= is a report on a 128x512 weight, but W is 256x512"):
        explain(broken, 128, target=A100, structure=twofour.check(W[:128]))
    with pytest.raises(ValueError, match=r"structure= is a report on a float32 weight, but W is float16"):
        explain(broken, 128, target=A100, structure=twofour.check(W.float(), 1, 2))
    with pytest.raises(ValueError, match=r"structure= checked 1:2, but a float16 W is stored 2:4: "
                                         r"pass twofour.check\(W, 2, 4\) or omit structure"):
        explain(broken, 128, target=A100, structure=twofour.check(W, 1, 2))
    W32 = W.float()
    with pytest.raises(ValueError, match=r"structure= checked 2:4, but a float32 W is stored 1:2: "
                                         r"pass twofour.check\(W, 1, 2\) or omit structure"):
        explain(W32, 128, target=A100, structure=twofour.check(W32))
    with pytest.raises(TypeError, match=r"structure must be a twofour.check\(W\) report \(StructureReport\), got dict"):
        explain(W, 128, target=A100, structure={"valid": True})


def test_a_matching_structure_report_is_used_instead_of_checking_again(monkeypatch):
    import importlib

    explain_module = importlib.import_module("twofour.dispatch.explain")  # the module, not the function
    count = explain_module._count
    asked = []

    def counting(W, n, m):
        asked.append((tuple(W.shape), W.dtype, n, m))
        return count(W, n, m)

    monkeypatch.setattr(explain_module, "_count", counting)
    W = _pruned(256, 512)
    assert _found(explain(W, 128, target=A100, structure=twofour.check(W)), "structure") == [
        ("ok", "every group of 4 along K holds at most 2 non-zeros")]
    assert asked == []  # the report answered it
    assert _found(explain(W, 128, target=A100), "structure")[0][0] == "ok"
    assert asked == [((256, 512), torch.float16, 2, 4)]  # without one, W is checked
    asked.clear()
    W32 = W.float()  # 2:4 but not 1:2: the report says so; only the hints are counted anew
    pairs = twofour.check(W32, 1, 2)
    [(status, message)] = _found(explain(W32, 128, target=A100, structure=pairs), "structure")
    assert pairs.num_bad_groups > 0 and status == "wrong"
    assert message.startswith(f"{pairs.num_bad_groups:,} of 65,536 pairs ({pairs.fraction_bad:.1%}) hold 2 non-zeros; W is 2:4")
    assert ((256, 512), torch.float32, 1, 2) not in asked and ((256, 512), torch.float32, 2, 4) in asked
