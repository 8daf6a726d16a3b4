"""twofour.dispatch: rules read from torch, probe, explain, kernel classification, audit.

CPU tests judge hypothetical GPUs; tests marked ``gpu`` check every verdict against what
PyTorch actually does on the GPU in this machine (skipped without CUDA).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass

import twofour
from twofour.dispatch import audit, classify, explain, hypothetical_gpu, kernels, probe
from twofour.dispatch.audit import weight_kind
from twofour.dispatch import rules
from twofour.checkpoint.file import flatten_state_dict, open_checkpoint
from twofour.dispatch.kernels import OpRecord, summarize
from twofour.dispatch.rules import (
    backend_rules,
    cusparselt_version_str,
    default_backend,
    is_packed,
    packed_backend,
)

A100 = hypothetical_gpu((8, 0), name="A100")
H100 = hypothetical_gpu((9, 0), name="H100")
T4 = hypothetical_gpu((7, 5), name="T4")
CPU_ONLY = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only verdicts of this machine")
BASE = torch.sparse.SparseSemiStructuredTensor


def pruned(N, K, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    W, _ = twofour.prune(torch.randn(N, K, generator=g))
    return W.to(dtype)


# ------------------------------------------------------------------------------------------
# rules


def test_rules_are_read_from_the_installed_classes(monkeypatch):
    cls = torch.sparse.SparseSemiStructuredTensorCUSPARSELT
    rules = backend_rules("cusparselt")
    assert set(rules.shapes) == set(cls._DTYPE_SHAPE_CONSTRAINTS)
    for dtype, rule in cls._DTYPE_SHAPE_CONSTRAINTS.items():
        assert rules.shapes[dtype].sparse_min_rows == rule.sparse_min_rows
        assert rules.shapes[dtype].dense_min_rows == rule.dense_min_rows
    # A torch with other constraints is described by them, with no code change.
    changed = dict(cls._DTYPE_SHAPE_CONSTRAINTS)
    changed[torch.float32] = changed[torch.float16]
    monkeypatch.setattr(cls, "_DTYPE_SHAPE_CONSTRAINTS", changed)
    assert torch.float32 in backend_rules("cusparselt").shapes
    assert "torch.sparse.SparseSemiStructuredTensorCUSPARSELT" in rules.source


def test_default_backend_follows_force_cutlass(monkeypatch):
    monkeypatch.setattr(BASE, "_FORCE_CUTLASS", False)
    assert default_backend() == "cusparselt"
    monkeypatch.setattr(BASE, "_FORCE_CUTLASS", True)
    assert default_backend() == "cutlass"


@pytest.mark.parametrize(
    "backend, cc, version, ok",
    [
        ("cusparselt", (7, 5), None, False),
        ("cutlass", (7, 5), None, False),
        ("cusparselt", (8, 0), None, True),
        ("cutlass", (8, 6), None, True),
        ("cutlass", (9, 0), None, False),
        ("cusparselt", (9, 0), 602, True),
        ("cusparselt", (9, 0), 502, False),
        ("cutlass", (12, 0), None, False),
        ("cusparselt", (10, 0), 700, False),  # PyTorch moved to 0.7.1 for Blackwell (pytorch PR #155232)
        ("cusparselt", (10, 0), 701, True),
        ("cusparselt", (12, 0), 801, True),
        ("cusparselt", (12, 0), None, True),  # version unknown: not held against the GPU
    ],
)
def test_capability_rules(backend, cc, version, ok):
    problem = backend_rules(backend).capability_problem(cc, version)
    assert (problem is None) == ok
    if not ok:
        assert f"{cc[0]}.{cc[1]}" in problem or "0.5.2" in problem


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="torch without float8")
@pytest.mark.parametrize(
    "cc, version, fragment",
    [
        ((8, 0), 801, "8.9 or newer"),  # no fp8 tensor cores on Ampere
        ((8, 6), None, "8.9 or newer"),
        ((8, 9), 701, "0.8.0"),  # fp8 2:4 on Ada arrived with cuSPARSELt 0.8.0
        ((8, 9), 800, None),
        ((8, 9), None, None),
        ((9, 0), 602, None),  # Hopper had fp8 2:4 before
        ((10, 0), 801, None),
    ],
)
def test_fp8_needs_sm89_and_on_ada_cusparselt_080(cc, version, fragment):
    problem = backend_rules("cusparselt").dtype_problem(torch.float8_e4m3fn, cc, version)
    assert (problem is None) == (fragment is None)
    if fragment:
        assert fragment in problem
    assert backend_rules("cusparselt").dtype_problem(torch.float16, cc, version) is None


def test_torch_cusparselt_pins_agree_with_the_version_rules():
    def key(v):
        return tuple(int(x) for x in v.split("."))

    pins = sorted(rules.TORCH_CUSPARSELT_PINS.items(), key=lambda kv: key(kv[0]))
    as_int = {t: key(v)[1] * 100 + key(v)[2] for t, v in pins}  # "0.7.1" -> 701, torch's encoding
    first_blackwell = next(t for t, v in pins if as_int[t] >= rules.MIN_CUSPARSELT_FOR_BLACKWELL)
    first_fp8_ada = next(t for t, v in pins if as_int[t] >= rules.MIN_CUSPARSELT_FOR_FP8_SM89)
    assert (first_blackwell, first_fp8_ada) == ("2.8.0", "2.11.0")
    assert all(a <= b for a, b in zip(list(as_int.values()), list(as_int.values())[1:]))  # never downgraded


def test_int8_runs_but_plain_linear_returns_saturated_int8():
    W = pruned(64, 128, torch.float32).to(torch.int8)
    v = explain(W, 64, target=A100, backend="cutlass")
    assert v.if_packed == "sparse-cutlass"  # it runs ...
    dtype_check = [c for c in v.checks if c.topic == "dtype"][0]
    assert dtype_check.status == "wrong" and "[-128, 127]" in dtype_check.message  # ... and clamps
    assert "_cslt_sparse_mm" in dtype_check.message and "out_dtype" in dtype_check.message
    assert [c for c in explain(pruned(64, 128), 64, target=A100).checks if c.topic == "dtype"][0].status == "ok"


def test_pattern_and_version_helpers():
    assert backend_rules("cutlass").pattern(torch.float32) == (1, 2)
    assert backend_rules("cutlass").pattern(torch.bfloat16) == (2, 4)
    assert cusparselt_version_str(602) == "0.6.2"
    assert cusparselt_version_str(None) == "unknown"
    assert cusparselt_version_str(800) == cusparselt_version_str("800") == "0.8.0"  # a results file's provenance
    assert cusparselt_version_str("n/a") == "n/a"
    # a lying provenance value is shown as given, not rounded or wrapped into another version
    for odd, shown in ((1.5, "1.5"), (float("inf"), "inf"), (float("nan"), "nan"), (-1, "-1"), (True, "True")):
        assert cusparselt_version_str(odd) == shown


def test_bad_backend_name():
    with pytest.raises(ValueError, match="backend must be one of"):
        backend_rules("cusparse")


def test_is_packed_on_a_cpu_cutlass_tensor():
    W = pruned(64, 128)
    assert not is_packed(W) and packed_backend(W) is None
    Wp = cpu_cutlass_packed(W)
    assert is_packed(Wp) and packed_backend(Wp) == "cutlass"


def cpu_cutlass_packed(W):
    """A real SparseSemiStructuredTensorCUTLASS built on the CPU (PyTorch's conversion runs there)."""
    values, meta = sparse_semi_structured_from_dense_cutlass(W)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse.SparseSemiStructuredTensorCUTLASS(W.shape, values, meta, None, None, None)


# ------------------------------------------------------------------------------------------
# probe


@CPU_ONLY
def test_probe_on_this_cpu_machine():
    p = probe(try_kernels=True)  # ignored without CUDA
    assert p.usable_backends == () and p.live == ()
    assert all("CUDA" in b.why for b in p.backends)
    text = str(p)
    assert "NOT usable" in text and "default backend" in text
    assert "<table" in p._repr_html_()


@pytest.mark.parametrize(
    "cc, kwargs, usable",
    [
        ((7, 5), {}, ()),
        ((8, 0), {}, ("cusparselt", "cutlass")),
        ((8, 9), {"cusparselt_available": False}, ("cutlass",)),
        ((9, 0), {}, ("cusparselt",)),
        ((9, 0), {"cusparselt_version": 502}, ()),
        ((9, 0), {"cusparselt_available": False}, ()),
    ],
)
def test_hypothetical_gpus(cc, kwargs, usable):
    p = hypothetical_gpu(cc, **kwargs)
    assert p.usable_backends == usable
    assert p.hypothetical and "hypothetical" in str(p)
    assert p.status("cutlass").dtypes == backend_rules("cutlass").dtypes


def test_hypothetical_gpu_bad_input():
    with pytest.raises(TypeError, match="capability"):
        hypothetical_gpu("9.0")
    with pytest.raises(TypeError, match="capability"):
        hypothetical_gpu((9, True))
    with pytest.raises(ValueError, match="backend must be one of"):
        A100.status("cusparse")


# ------------------------------------------------------------------------------------------
# explain: one test per verdict and per reason


def test_dense_tensor_with_2_4_zeros_runs_dense_everywhere():
    W = pruned(256, 512)
    for target in (A100, H100, T4):
        v = explain(W, (128, 512), target=target)
        assert v.path == "dense" and not v.sparse
        assert v.checks[0].topic == "packed" and v.checks[0].status == "dense"


def test_a100_fp16_would_run_cusparselt_and_cutlass_when_forced(monkeypatch):
    monkeypatch.setattr(BASE, "_FORCE_CUTLASS", False)
    W = pruned(256, 512)
    assert explain(W, 128, target=A100).if_packed == "sparse-cusparselt"
    assert explain(W, 128, target=A100, backend="cutlass").if_packed == "sparse-cutlass"
    monkeypatch.setattr(BASE, "_FORCE_CUTLASS", True)
    v = explain(W, 128, target=A100)
    assert v.if_packed == "sparse-cutlass" and v.would_be_sparse


def test_forcing_cutlass_on_hopper_is_an_error():
    v = explain(pruned(256, 512), 128, target=H100, backend="cutlass")
    assert v.if_packed == "error" and "capability" in v.topics
    assert "8.x" in " ".join(v.reasons)


def test_t4_has_no_sparse_tensor_cores():
    v = explain(pruned(256, 512), 128, target=T4)
    assert v.if_packed == "error" and "capability" in v.topics
    assert "8.0" in " ".join(v.reasons)


@CPU_ONLY
def test_cpu_target_explains_the_cuda_only_error():
    v = explain(pruned(256, 512, torch.float32), 128)
    assert v.path == "dense" and v.if_packed == "error" and "device" in v.topics
    assert "CUDA" in " ".join(v.reasons)


def test_no_cusparselt_in_the_build():
    gpu = hypothetical_gpu((8, 0), cusparselt_available=False)
    v = explain(pruned(256, 512), 128, target=gpu)
    assert v.if_packed == "error" and "backend" in v.topics
    assert explain(pruned(256, 512), 128, target=gpu, backend="cutlass").if_packed == "sparse-cutlass"


def test_float32_is_refused_by_cusparselt_and_needs_1_2_on_cutlass():
    W = pruned(256, 512, torch.float32)
    v = explain(W, 128, target=A100, backend="cusparselt")
    assert v.if_packed == "error" and "dtype" in v.topics and "CUTLASS takes it" in " ".join(v.reasons)
    v = explain(W, 128, target=A100, backend="cutlass")
    assert "structure" in v.topics and "1:2" in " ".join(v.reasons)
    W12, _ = twofour.prune(W, 1, 2)
    v = explain(W12, 128, target=A100, backend="cutlass")
    assert v.if_packed == "sparse-cutlass" and v.problems("wrong") == ()


def test_explain_follows_a_changed_dtype_table(monkeypatch):
    cls = torch.sparse.SparseSemiStructuredTensorCUSPARSELT
    changed = dict(cls._DTYPE_SHAPE_CONSTRAINTS)
    changed[torch.float32] = changed[torch.float16]
    monkeypatch.setattr(cls, "_DTYPE_SHAPE_CONSTRAINTS", changed)
    W, _ = twofour.prune(torch.randn(64, 64), 1, 2)
    assert explain(W, 64, target=A100, backend="cusparselt").if_packed == "sparse-cusparselt"


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="torch without float8")
def test_float8_packs_but_plain_mm_is_refused():
    W = pruned(64, 64, torch.float32).to(torch.float8_e4m3fn)
    v = explain(W, 64, target=H100, backend="cusparselt")
    assert v.if_packed == "error" and "_scaled_mm" in " ".join(v.reasons)
    assert "dtype" in v.topics  # the refusal is reported under the dtype it is about


@pytest.mark.parametrize("backend", ["cusparselt", "cutlass"])
def test_shape_below_the_minimum(backend):
    rule = backend_rules(backend).shapes[torch.float16]
    W = pruned(rule.sparse_min_rows // 2, rule.sparse_min_cols * 2)
    v = explain(W, 64, target=A100, backend=backend)
    assert v.if_packed == "error" and "shape" in v.topics
    assert f"multiple of {rule.sparse_min_rows}" in " ".join(v.reasons)
    W = pruned(rule.sparse_min_rows, rule.sparse_min_cols + 4)  # not a multiple of the columns rule
    assert "shape" in explain(W, 64, target=A100, backend=backend).topics


def test_non_contiguous_weight():
    W = pruned(512, 256).t()  # a transposed view: 256 x 512, strides (1, 256)
    v = explain(W, 64, target=A100)
    assert v.if_packed == "error" and "contiguous" in v.topics
    assert "contiguous" not in explain(W.contiguous(), 64, target=A100).topics


def test_structure_reasons_unstructured_and_wrong_axis():
    g = torch.Generator().manual_seed(1)
    dense = torch.randn(256, 512, generator=g).half()
    v = explain(dense, 128, target=A100)
    assert v.if_packed == "sparse-cusparselt" and v.problems("wrong")  # runs, but computes something else
    unstructured = dense * (torch.rand(256, 512, generator=g) < 0.5)
    assert "unstructured" in " ".join(explain(unstructured, 128, target=A100).reasons)
    wrong_axis = pruned(512, 256).t().contiguous()
    assert "wrong axis" in " ".join(explain(wrong_axis, 128, target=A100).reasons)
    assert explain(pruned(256, 512), 128, target=A100).problems("wrong") == ()


@pytest.mark.parametrize("M, padded, status", [(1, 8, "slow"), (13, 16, "slow"), (64, 64, "slow"), (2048, 2048, "ok")])
def test_padding_of_M_uses_the_dense_multiple(M, padded, status):
    mult = backend_rules("cusparselt").shapes[torch.float16].dense_min_rows
    v = explain(pruned(256, 512), (M, 512), target=A100, backend="cusparselt")
    assert v.M == M and v.M_padded == -(-M // mult) * mult == padded
    assert [c.status for c in v.checks if c.topic == "padding"] == [status]


def test_batch_seq_len_shape_is_flattened():
    v = explain(pruned(256, 512), (4, 3, 512), target=A100)
    assert v.M == 12


def test_x_that_does_not_fit():
    W = pruned(256, 512)
    assert explain(W, (8, 256), target=A100).path == "error"
    v = explain(W, (8, 512), x_dtype=torch.bfloat16, target=A100)
    assert v.path == "error" and v.if_packed == "error" and "x" in v.topics


def test_meta_tensor_answers_shape_questions_without_values():
    W = torch.empty(4096, 14336, dtype=torch.float16, device="meta")
    v = explain(W, 1, target=H100)
    assert v.if_packed == "sparse-cusparselt"
    assert any(c.topic == "structure" and c.status == "info" for c in v.checks)


def test_packed_weight_verdicts():
    Wp = cpu_cutlass_packed(pruned(64, 128))
    v = explain(Wp, 64, target=A100)
    assert v.packed and v.path == v.if_packed == "sparse-cutlass" and v.sparse
    v = explain(Wp, 64, target=H100)
    assert v.path == "error" and "capability" in v.topics
    with pytest.raises(ValueError, match="already packed"):
        explain(Wp, 64, target=A100, backend="cusparselt")


def test_verdict_text_lists_every_check():
    v = explain(pruned(8, 64), 1, target=H100)
    text = str(v)
    for c in v.checks:
        assert c.topic in text
    assert "ERROR" in text and "DENSE" in text
    assert "<table>" in v._repr_html_()


def test_structure_report_is_reused():
    W = pruned(256, 512)
    report = twofour.check(W)
    v = explain(W, 128, target=A100, structure=report)
    assert v.problems("wrong") == ()


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        (([[1.0]],), {}, TypeError, "W must be a torch.Tensor"),
        ((torch.zeros(2, 3, 4),), {}, ValueError, "2-D"),
        ((torch.zeros(8, 8), "8"), {}, TypeError, "x_shape"),
        ((torch.zeros(8, 8), (8,)), {}, ValueError, "at least 2"),
        ((torch.zeros(8, 8), 0), {}, ValueError, "tokens"),
        ((torch.zeros(8, 8), True), {}, TypeError, "x_shape"),
        ((torch.zeros(8, 8),), {"backend": "cusparse"}, ValueError, "backend must be one of"),
        ((torch.zeros(8, 8),), {"target": "H100"}, TypeError, "target must be"),
        ((torch.zeros(8, 8),), {"x_dtype": "float16"}, TypeError, "x_dtype"),
    ],
)
def test_explain_bad_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        explain(*args, **kwargs)


_DTYPES = [torch.float16, torch.bfloat16, torch.int8, torch.float32]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 6).map(lambda k: 8 * k),
    cols=st.integers(1, 6).map(lambda k: 16 * k),
    dtype=st.sampled_from(_DTYPES),
    backend=st.sampled_from(["cusparselt", "cutlass"]),
    cc=st.sampled_from([(7, 5), (8, 0), (8, 6), (9, 0)]),
)
def test_property_verdict_matches_the_rules(rows, cols, dtype, backend, cc):
    """if_packed is sparse exactly when capability, dtype and the class's shape rule all allow it."""
    W = torch.zeros(rows, cols, dtype=dtype)  # all-zero is valid N:M for every pattern
    v = explain(W, 64, target=hypothetical_gpu(cc), backend=backend)
    rules = backend_rules(backend)
    rule = rules.shapes.get(dtype)
    allowed = (
        rules.capability_problem(cc, None) is None
        and rule is not None
        and rules.mm_problem(dtype) is None
        and rows >= rule.sparse_min_rows
        and rows % rule.sparse_min_rows == 0
        and cols >= rule.sparse_min_cols
        and cols % rule.sparse_min_cols == 0
    )
    assert v.if_packed == (f"sparse-{backend}" if allowed else "error")
    assert v.path == "dense"


# ------------------------------------------------------------------------------------------
# kernels: classification by name, attribution, a real CPU profile

CUSPARSELT_NAMES = [
    "sm80_xmma_sparse_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x64_stage3_warpsize2x2x1_sptensor16x8x32",
    "sm86_xmma_sparse_gemm_i8i8_i8i32_f32_tn_n_tilesize64x128x128",
    "void cusparseLt::execute_split_k_kernel_cusparse<int>",
    "aten::_cslt_sparse_mm",
    "semi_structured::cusparselt_mm",
]
CUTLASS_SPARSE_NAMES = [
    "cutlass_tensorop_h16832spgemm_256x128_64x3_nn_align8",
    "void cutlass::Kernel<cutlass::gemm::kernel::SparseGemm<...>>(...)",
    "aten::_sparse_semi_structured_mm",
    "aten::_sparse_semi_structured_addmm",
    "semi_structured::cutlass_mm",
]
DENSE_NAMES = [
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_cgasize1x2x1_warpgroupsize1x1x1",
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT",
    "void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_relu_f16_64x64_32x6_nn_align8>",
    "volta_sgemm_128x64_nn",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false>",
    "cublasLt::splitKreduce_kernel",
    "aten::mm",
    "aten::addmm",
    "aten::linear",
    "aten::matmul",
    "aten::bmm",
]
GENERAL_SPARSE_NAMES = ["aten::_sparse_mm", "aten::_sparse_addmm", "aten::_sparse_csr_mm", "aten::sspaddmm"]
OTHER_NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>",
    "aten::constant_pad_nd",
    "aten::copy_",
    "aten::_cslt_compress",
    "Memcpy HtoD (Pageable -> Device)",
    "aten::t",
]


@pytest.mark.parametrize(
    "names, cls",
    [
        (CUSPARSELT_NAMES, "sparse-cusparselt"),
        (CUTLASS_SPARSE_NAMES, "sparse-cutlass"),
        (DENSE_NAMES, "dense-gemm"),
        (GENERAL_SPARSE_NAMES, "sparse-general"),
        (OTHER_NAMES, "other"),
    ],
)
def test_classify_names(names, cls):
    assert [classify(n) for n in names] == [cls] * len(names)


def test_classify_bad_input():
    with pytest.raises(TypeError, match="name must be"):
        classify(None)


def test_summarize_gpu_kernels_count_device_time_only():
    recs = [
        OpRecord("aten::linear", "cpu", 30.0),
        OpRecord("aten::_cslt_sparse_mm", "cpu", 20.0, parent=0),
        OpRecord("sm90_xmma_sparse_gemm_f16f16", "cuda", 100.0, parent=1),
        OpRecord("aten::constant_pad_nd", "cpu", 5.0, parent=0),
        OpRecord("void at::native::pad_kernel", "cuda", 7.0, parent=3),
    ]
    r = summarize(recs, calls=2)
    assert r.device == "cuda" and r.sparse_ran and r.gemm_class == "sparse-cusparselt"
    assert r.time_us == {"sparse-cusparselt": 100.0, "other": 7.0}
    assert r.time_ms_per_call("sparse-cusparselt") == pytest.approx(0.05)
    assert r.ran == ("sparse-cusparselt", "other")


def test_summarize_kernel_launched_by_a_sparse_op_takes_its_backend():
    recs = [
        OpRecord("aten::_sparse_semi_structured_mm", "cpu", 10.0),
        OpRecord("void cutlass::Kernel<some_future_name>", "cuda", 50.0, parent=0),  # looks dense by name
        OpRecord("aten::mm", "cpu", 10.0),
        OpRecord("void cutlass::Kernel<cutlass_80_tensorop_s16816gemm>", "cuda", 40.0, parent=2),
    ]
    r = summarize(recs)
    assert r.time_us == {"sparse-cutlass": 50.0, "dense-gemm": 40.0}


def test_summarize_unfamiliar_kernel_from_a_dense_gemm_op():
    recs = [
        OpRecord("aten::mm", "cpu", 10.0),
        OpRecord("Kernel2", "cuda", 40.0, parent=0),
        OpRecord("void at::native::vectorized_elementwise_kernel<4>", "cuda", 3.0, parent=0),
    ]
    assert summarize(recs).time_us == {"dense-gemm": 40.0, "other": 3.0}


def test_the_dispatch_and_the_trace_read_one_list_of_non_gemm_kernels():
    """A name on the list is a GEMM operator's helper for summarize and "other" (not "unclassified") in a trace."""
    from twofour.dispatch.kernels import NON_GEMM_MARKERS
    from twofour.dispatch.trace.classify import trace_class

    names = ["triton_red_fused_rms_norm_3", "void at::native::transpose_kernel<2>", "Memset (Device)"]
    recs = [OpRecord("aten::mm", "cpu", 10.0), *(OpRecord(n, "cuda", 2.0, parent=0) for n in names)]
    assert summarize(recs).time_us == {"other": 6.0}
    assert [trace_class(n, "other") for n in names] == ["other"] * 3
    assert trace_class("Kernel2", "other") == "unclassified"  # on neither list
    assert len(set(NON_GEMM_MARKERS)) == len(NON_GEMM_MARKERS)


def test_summarize_cpu_sparse_ancestor_and_index_children():
    recs = [
        OpRecord("aten::_sparse_mm", "cpu", 1.0),
        OpRecord("aten::addmm", "cpu", 90.0, parent=0),
        OpRecord("aten::matmul", "cpu", 1.0),
        OpRecord("aten::mm", "cpu", 2.0, parent=2),
        OpRecord("aten::addmm", "cpu", 80.0, parent=3),
        OpRecord("aten::crow_indices", "cpu", 1.0, parent=4),
        OpRecord("aten::linear", "cpu", 1.0),
        OpRecord("aten::addmm", "cpu", 50.0, parent=6),
    ]
    r = summarize(recs)
    assert r.device == "cpu" and not r.sparse_ran
    assert r.time_us == {"sparse-general": 175.0, "dense-gemm": 51.0}
    assert "aten::addmm" in r.table() and "no 2:4 sparse kernel ran" in str(r)


def test_summarize_bad_calls():
    with pytest.raises(ValueError, match="calls"):
        summarize([], calls=0)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-operator profile")
def test_kernels_on_cpu_dense_and_csr():
    g = torch.Generator().manual_seed(0)
    W, x = torch.randn(128, 256, generator=g), torch.randn(64, 256, generator=g)
    r = kernels(torch.nn.functional.linear, x, W, calls=2)
    assert r.device == "cpu" and r.gemm_class == "dense-gemm" and r.time_ms_per_call("dense-gemm") > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        W_csr = W.to_sparse_csr()
    r = kernels(lambda: torch.sparse.mm(W_csr, x.t()))
    assert r.gemm_class == "sparse-general" and not r.sparse_ran
    assert "<table>" in r._repr_html_()


def test_kernels_bad_input():
    with pytest.raises(TypeError, match="callable"):
        kernels(42)
    with pytest.raises(ValueError, match="calls"):
        kernels(lambda: None, calls=0)
    with pytest.raises(ValueError, match="warmup"):
        kernels(lambda: None, warmup=-1)
    with pytest.raises(ValueError, match="cls must be"):
        summarize([]).time_ms_per_call("sparse")


# ------------------------------------------------------------------------------------------
# audit


def tiny_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Embedding(100, 64),
        torch.nn.Linear(64, 128),
        torch.nn.ReLU(),
        torch.nn.Linear(128, 64, bias=False),
        torch.nn.LayerNorm(64),
    ).half()
    with torch.no_grad():
        model[1].weight.copy_(twofour.prune(model[1].weight)[0])
    return model


def test_audit_module_rows_and_summary():
    report = audit(tiny_model(), (2, 64), target=A100)
    rows = {r.name: r for r in report.rows}
    assert list(rows) == ["0.weight", "1.weight", "3.weight"]
    assert rows["0.weight"].kind == "embedding" and rows["0.weight"].topics == ("lookup",)
    assert rows["1.weight"].verdict == "sparse-cusparselt" and rows["1.weight"].fraction_valid == 1.0
    assert rows["3.weight"].verdict == "dense" and "structure" in rows["3.weight"].topics
    assert rows["3.weight"].fraction_valid < 0.1
    assert report.n_sparse == 1
    assert report.bytes_saved == 128 * 64 * 2 - twofour.packed_bytes((128, 64), torch.float16)
    assert {why for _, why in report.skipped} == {"1-D (bias or norm scale): not a matmul weight"}
    assert "PARTLY SPARSE: 1 of 2" in report.summary()
    assert "structure (1)" in str(report) and "<table>" in report._repr_html_()


def test_audit_state_dict_and_checkpoint_agree(tmp_path):
    from safetensors.torch import save_file

    sd = {k: v.contiguous() for k, v in tiny_model().state_dict().items()}
    path = tmp_path / "m.safetensors"
    save_file(sd, str(path))
    a = audit(sd, 128, target=H100)
    with open_checkpoint(path) as ckpt:
        b = audit(ckpt, 128, target=H100)
    key = lambda rep: sorted((r.name, r.verdict, r.fraction_valid, r.topics) for r in rep.rows)  # noqa: E731
    assert key(a) == key(b)
    assert b.n_bytes_read == sum(r.dense_bytes for r in b.rows) == sum(
        t.numel() * t.element_size() for t in sd.values() if t.dim() == 2
    )


def test_audit_tied_weights_once_and_not_a_tensor_entries():
    lin = torch.nn.Linear(64, 64)
    model = torch.nn.ModuleDict({"a": lin, "b": lin})
    assert [r.name for r in audit(model, target=A100).rows] == ["a.weight"]
    report = audit({"fc.weight": torch.zeros(32, 64), "step": 3, "conv.weight": torch.zeros(4, 3, 3, 3)}, target=A100)
    reasons = dict(report.skipped)
    assert reasons["step"] == "not a tensor (int)" and "4-D" in reasons["conv.weight"]


def test_audit_json_roundtrip():
    import json

    data = json.loads(audit(tiny_model(), 64, target=A100).to_json())
    assert data["target"].startswith("A100") and len(data["rows"]) == 3 and data["summary"].startswith("PARTLY")


def test_weight_kind():
    assert weight_kind("transformer.wte.weight", (50257, 768)) == "embedding"
    assert weight_kind("h.0.attn.c_attn.weight", (768, 2304)) == "linear"
    assert weight_kind("h.0.attn.c_attn.bias", (2304,)) is None


def test_flatten_state_dict_nested():
    tensors, skipped, notes = flatten_state_dict({"model": {"a": torch.zeros(1)}, "opt": [torch.zeros(2)], "cfg": "x"})
    assert list(tensors) == ["model.a", "opt.0"] and skipped == [("cfg", "not a tensor (str)")] and notes == []


@pytest.mark.parametrize(
    "arg, kwargs, exc, match",
    [
        ([1, 2], {}, TypeError, "model_or_state_dict"),
        ({}, {"example_input_shape": 0}, ValueError, "positive"),
        ({}, {"example_input_shape": "x"}, TypeError, "example_input_shape"),
        ({}, {"example_input_shape": True}, TypeError, "example_input_shape"),
    ],
)
def test_audit_bad_input(arg, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        audit(arg, **kwargs)


# ------------------------------------------------------------------------------------------
# GPU: every prediction against what PyTorch actually does (skipped without CUDA)


def _actual(W, x, backend):
    """What really happens: "error", or the kernel class that ran for F.linear(x, packed W)."""
    from twofour.dispatch.kernels import kernels as profile_kernels

    saved = BASE._FORCE_CUTLASS
    BASE._FORCE_CUTLASS = backend == "cutlass"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Ws = torch.sparse.to_sparse_semi_structured(W)
            y = torch.nn.functional.linear(x, Ws)
            torch.cuda.synchronize()
        report = profile_kernels(torch.nn.functional.linear, x, Ws)
        return report.gemm_class, y, Ws
    except (RuntimeError, NotImplementedError, ValueError) as exc:
        return "error", exc, None
    finally:
        BASE._FORCE_CUTLASS = saved


def _gpu_cases():
    cases = []
    for backend in ("cusparselt", "cutlass"):
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.int8):
            cases.append((backend, dtype, (256, 512), 128, "ok"))
        cases.append((backend, torch.float16, (8, 64), 64, "too-small"))
        cases.append((backend, torch.float16, (256, 512), 1, "M=1"))
        cases.append((backend, torch.float16, (512, 256), 64, "non-contiguous"))
        cases.append((backend, torch.float16, (256, 512), 64, "x-bf16"))
    return cases


@pytest.mark.gpu
@pytest.mark.parametrize("backend, dtype, shape, M, case", _gpu_cases(), ids=lambda v: str(v).replace("torch.", ""))
def test_gpu_verdict_matches_pytorch(backend, dtype, shape, M, case):
    dev = torch.device("cuda")
    N, K = shape
    W = pruned(N, K, torch.float32).to(dev)
    W = W.to(dtype) if dtype != torch.float32 else twofour.prune(W, 1, 2)[0]
    x_dtype = torch.bfloat16 if case == "x-bf16" else dtype
    if case == "non-contiguous":
        W = W.t()  # 256 x 512 view
        K = W.shape[1]
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(M, K, device=dev, generator=g).to(x_dtype)
    if dtype == torch.int8:
        x = torch.randint(-4, 4, (M, K), device=dev, generator=g, dtype=torch.int8)
    predicted = explain(W, tuple(x.shape), x_dtype=x_dtype, backend=backend)
    cls, out, Ws = _actual(W, x, backend)
    assert predicted.if_packed == ("error" if cls == "error" else cls), (
        f"explain said {predicted.if_packed}, PyTorch did {cls}: {out if cls == 'error' else ''}\n{predicted}"
    )
    if cls != "error":
        assert explain(Ws, tuple(x.shape), x_dtype=x_dtype).path == cls
        if dtype in (torch.float16, torch.bfloat16):
            ref = torch.nn.functional.linear(x, W)
            assert out.shape == ref.shape
            assert torch.allclose(out.float(), ref.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_gpu_dense_with_zeros_runs_a_dense_gemm():
    dev = torch.device("cuda")
    W = pruned(1024, 1024).to(dev)
    x = torch.randn(512, 1024, device=dev, dtype=torch.float16)
    assert explain(W, tuple(x.shape)).path == "dense"
    r = kernels(torch.nn.functional.linear, x, W)
    assert r.device == "cuda" and r.gemm_class == "dense-gemm" and not r.sparse_ran


@pytest.mark.gpu
def test_gpu_probe_live_checks_agree_with_the_prediction():
    saved = BASE._FORCE_CUTLASS
    p = probe(try_kernels=True)
    assert {c.backend for c in p.live} == {"cusparselt", "cutlass"}
    for c in p.live:
        assert c.ok == p.status(c.backend).usable, str(p)
    assert BASE._FORCE_CUTLASS == saved  # the probe restores torch's backend flag


@pytest.mark.gpu
def test_gpu_audit_of_a_packed_module():
    dev = torch.device("cuda")
    lin = torch.nn.Linear(512, 256, bias=False).half().to(dev)
    with torch.no_grad():
        lin.weight.copy_(twofour.prune(lin.weight)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin.weight = torch.nn.Parameter(torch.sparse.to_sparse_semi_structured(lin.weight), requires_grad=False)
    row = audit(lin, 128).rows[0]
    assert row.packed and row.verdict == f"sparse-{default_backend()}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU profile")
def test_kernels_keeps_other_stderr_output(capfd):
    import os as _os

    def noisy():
        _os.write(2, b"a real warning from a library\n")
        return torch.ones(2) + 1

    kernels(noisy, warmup=0)
    err = capfd.readouterr().err
    assert "a real warning from a library" in err and "USDT:" not in err


def test_committed_diagram_is_the_generated_one():
    from pathlib import Path

    from twofour.course.figures.dispatch_path import HIGHLIGHTS, path_svg

    asset = Path(__file__).resolve().parents[3] / "docs" / "assets" / "dispatch-path.svg"
    assert asset.read_text() == path_svg(), "regenerate with: .venv/bin/python -m twofour.course.figures.dispatch_path"
    for h in HIGHLIGHTS:
        assert path_svg(h).count("<svg") == 1
    with pytest.raises(ValueError, match="highlight must be one of"):
        path_svg("fast")


def test_audit_prefetches_a_window_of_bytes_ahead(tmp_path, monkeypatch):
    """Each tensor is prefetched once, before it is read, and never more than the window ahead."""
    import importlib

    from safetensors.torch import save_file

    audit_module = importlib.import_module("twofour.dispatch.audit")
    from twofour.checkpoint.file import Checkpoint

    names = [f"l{i}.weight" for i in range(6)]
    save_file({n: torch.zeros(64, 64, dtype=torch.float16) for n in names}, str(tmp_path / "m.safetensors"))  # 8 KiB each
    monkeypatch.setattr(audit_module, "_PREFETCH_BYTES", 2 * 8192)
    events = []
    monkeypatch.setattr(Checkpoint, "prefetch", lambda self, name: events.append(("prefetch", name)))
    original = Checkpoint.tensor
    monkeypatch.setattr(Checkpoint, "tensor", lambda self, name: events.append(("read", name)) or original(self, name))
    with open_checkpoint(tmp_path / "m.safetensors") as ckpt:
        audit(ckpt, target=hypothetical_gpu((9, 0)))
    prefetched = [n for kind, n in events if kind == "prefetch"]
    assert prefetched == names  # each once, in file order
    for i, name in enumerate(names):
        at = events.index(("read", name))
        assert ("prefetch", name) in events[:at]  # asked for before it is read
        ahead = [n for kind, n in events[:at] if kind == "prefetch"]
        assert len(ahead) <= i + 1 + 2  # the current one and at most two (16 KiB) ahead
