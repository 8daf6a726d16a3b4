"""The Python API under hostile input, second round (issue 28): bounded work, one-line errors, honest docs.

Each case failed before: ``crossover_m(..., m_max=10**9)`` scanned a billion Ms, ``gemm_speedup(10**400, ...)``
and nested tensors gave tracebacks, ``to_cutlass`` accepted metadata ``unpack`` rejects,
``amdahl.speedup(1, 1e-320)`` returned 0.0 and a request estimate infinite times, the audit's
rows were not in file order for safetensors, and ``to_cutlass`` claimed bit-identity with
PyTorch even for NaNs.
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import pytest
import torch
from safetensors.torch import save_file

import twofour
from twofour import amdahl, request, roofline
from twofour.models import LLAMA_3_8B


# ---- 4. bounded work -----------------------------------------------------------------------


def test_crossover_m_refuses_a_huge_m_max_at_once():
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"m_max must be at most 65,536 .* got 1,000,000,000"):
        roofline.crossover_m(4096, 4096, "fp16", "H100", m_max=10**9)
    assert time.monotonic() - start < 1


def test_crossover_m_is_still_the_smallest_winning_m():
    m = roofline.crossover_m(4096, 4096, "fp16", "H100")
    assert roofline.gemm_speedup(m, 4096, 4096) > 1
    assert all(roofline.gemm_speedup(M, 4096, 4096) <= 1 for M in range(1, m))
    assert roofline.crossover_m(4096, 4096, "fp16", "H100", m_max=roofline.model.MAX_CROSSOVER_M) == m


@pytest.mark.parametrize("dims", [(10**400, 4096, 4096), (16, 10**400, 4096), (16, 4096, 4 * 10**30), (2**63, 8, 8)])
def test_gemm_sizes_beyond_an_int64_are_one_line(dims):
    with pytest.raises(ValueError, match=r"must be an int from 1 to 9,223,372,036,854,775,807 \(a GEMM dimension\)"):
        roofline.gemm_speedup(*dims)


def test_a_request_with_huge_but_valid_counts_still_runs():
    w = request.Workload(LLAMA_3_8B, 2**31 - 1, 2**31 - 1, 2)  # prefill M = batch x prompt passes 2^31
    assert request.estimate(w, "H200").total_dense_s > 0


# ---- 5. one-line errors for nested tensors -------------------------------------------------


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
@pytest.mark.parametrize("fn", [twofour.check, twofour.prune, twofour.pack])
def test_nested_tensors_are_refused_by_name(fn, layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "nested tensors are a prototype"
        nt = torch.nested.nested_tensor([torch.randn(4, 8), torch.randn(2, 8)], layout=layout)
    with pytest.raises(TypeError, match=r"W is a nested tensor \(torch\.nested"):
        fn(nt)


def test_tensor_subclasses_with_their_own_dispatch_are_refused_by_name():
    from torch.masked import masked_tensor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "MaskedTensor is a prototype"
        W = masked_tensor(torch.zeros(4, 8), torch.ones(4, 8, dtype=torch.bool))
        with pytest.raises(TypeError, match=r"W is a MaskedTensor \(a tensor subclass with its own dispatch\)"):
            twofour.check(W)
        nested = torch.nested.nested_tensor([torch.randn(4, 8)])
    with pytest.raises(TypeError, match="scores must be a dense"):
        twofour.prune(torch.randn(4, 8), scores=nested)
    assert twofour.check(torch.nn.Parameter(torch.zeros(4, 8))).valid


def test_wave_efficiency_and_amdahl_refuse_what_would_divide_by_zero_or_overflow():
    with pytest.raises(ValueError, match="sms must be a positive number"):
        roofline.wave_efficiency(1, 1, 0)
    with pytest.raises(ValueError, match="s must be a positive finite speedup"):
        amdahl.speedup(0.5, 2**1024)


# ---- 6. to_cutlass ---------------------------------------------------------------------------


def _corrupted(dtype=torch.float16):
    W, _ = twofour.prune(torch.randn(64, 128).to(dtype))
    p = twofour.pack(W)
    meta = p.meta.clone()
    meta[3, 5] = 0x5E  # second group of the byte: positions (1, 1), repeated
    return dataclasses.replace(p, meta=meta)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8])
def test_to_cutlass_refuses_metadata_that_unpack_refuses(dtype):
    bad = _corrupted(dtype)
    with pytest.raises(ValueError) as unpacked:
        twofour.unpack(bad)
    with pytest.raises(ValueError) as cutlass:
        twofour.to_cutlass(bad)
    assert str(cutlass.value) == str(unpacked.value)
    assert "packed.meta is corrupt" in str(cutlass.value) and "positions [1, 1]" in str(cutlass.value)


def test_to_cutlass_docstring_says_when_it_is_bit_identical():
    from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass as reference

    doc = twofour.to_cutlass.__doc__
    assert "0xffff" in doc and "NaN" in doc
    W = torch.zeros(32, 64, dtype=torch.bfloat16)
    W.view(torch.int16)[3, 1] = 0x7FC0  # a bf16 NaN
    values, meta = twofour.to_cutlass(twofour.pack(W))
    ref_values, ref_meta = reference(twofour.unpack(twofour.pack(W)))
    assert torch.equal(meta, ref_meta)  # metadata: always identical
    ours, theirs = values.view(torch.int16), ref_values.view(torch.int16)
    assert (ours != theirs).sum() == 1 and int(ours[3, 0]) & 0xFFFF == 0x7FC0 and int(theirs[3, 0]) & 0xFFFF == 0xFFFF


# ---- 6. Amdahl and the request model at the edge of the doubles ----------------------------


@pytest.mark.parametrize("s", [1e-320, 5e-324, 1e-310])
def test_a_denormal_speedup_is_refused_not_zero(s):
    with pytest.raises(ValueError, match=r"s must be at least 2\.2250738585072014e-308 \(the smallest normal double"):
        amdahl.speedup(1, s)
    with pytest.raises(ValueError, match=r"speedups\[0\] must be at least"):
        amdahl.combined_speedup([0.5], [s])
    assert amdahl.speedup(1, amdahl.MIN_SPEEDUP) > 0


@pytest.mark.parametrize("gemm_speedup", [1e-320, {"decode": 5e-324}])
def test_a_request_estimate_never_holds_infinite_times(gemm_speedup):
    w = request.Workload(LLAMA_3_8B, 1, 512, 256)
    with pytest.raises(ValueError, match="must be at least 2.2250738585072014e-308"):
        request.estimate(w, "H200", gemm_speedup=gemm_speedup)


def test_an_overflowing_estimate_is_refused():
    w = request.Workload(LLAMA_3_8B, 2**31 - 1, 2**31 - 1, 2**31 - 1)
    with pytest.raises(ValueError, match=r"out of range: ttft_sparse_s would be inf"):
        request.estimate(w, "H200", gemm_speedup=1e-300)


def test_golden_amdahl_errors_hold_the_denormal_case():
    """The parity test (tests/site/test_calculators.py) checks JS refuses these with the same message."""
    import random

    from twofour.cli.golden import amdahl_table

    errors = amdahl_table(random.Random(0))["errors"]
    assert any(e["input"].get("s") == 1e-320 and "smallest normal double" in e["message"] for e in errors)


# ---- 6. audit rows in file order ---------------------------------------------------------------


def test_audit_rows_and_names_follow_the_file(tmp_path):
    from twofour.dispatch import audit
    from twofour.dispatch.checkpoint import open_checkpoint

    path = tmp_path / "m.safetensors"
    save_file({"a.weight": torch.zeros(32, 32, dtype=torch.float16), "b.weight": torch.zeros(32, 32),
               "c.weight": torch.zeros(32, 32, dtype=torch.float16)}, str(path))
    # the safetensors writer puts the float32 tensor first; safe_open lists names sorted
    with open_checkpoint(path) as ckpt:
        assert ckpt.names() == ["b.weight", "a.weight", "c.weight"]
        assert [r.name for r in audit(ckpt, None).rows] == ckpt.names()
    pt = tmp_path / "m.pt"
    torch.save({f"l{i}.weight": torch.zeros(32, 32, dtype=torch.float16) for i in (0, 1, 2, 10, 3)}, pt)
    with open_checkpoint(pt) as ckpt:
        assert ckpt.names() == ["l0.weight", "l1.weight", "l2.weight", "l10.weight", "l3.weight"]
        assert [r.name for r in audit(ckpt, None).rows] == ckpt.names()
