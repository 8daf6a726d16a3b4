"""twofour.course.damage: mass kept, output error, and PyTorch's silent CUTLASS drop, measured."""

from __future__ import annotations

import doctest

import pytest
import torch

import twofour
from twofour.course import damage
from twofour.course.damage import mass_kept, pytorch_cutlass_roundtrip, relative_output_error, silent_drop


def test_mass_kept_known_values():
    W = torch.tensor([[3.0, -4.0, 0.0, 0.0]])
    kept = mass_kept(W, torch.tensor([[0.0, -4.0, 0.0, 0.0]]))
    assert kept.l1 == pytest.approx(4 / 7) and kept.l2 == pytest.approx(16 / 25)


def test_mass_kept_errors():
    with pytest.raises(ValueError, match="W_after must have W's shape"):
        mass_kept(torch.ones(2, 4), torch.ones(4, 2))
    with pytest.raises(ValueError, match="all zeros"):
        mass_kept(torch.zeros(1, 4), torch.zeros(1, 4))


def test_relative_output_error():
    W = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(1))
    assert relative_output_error(W, W, x) == 0.0
    assert relative_output_error(W, torch.zeros_like(W), x) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"x must be a 2-D tensor \[M, K\] with K = W.shape\[1\] = 16"):
        relative_output_error(W, W, torch.ones(5, 8))
    with pytest.raises(ValueError, match="all zeros"):
        relative_output_error(W, W, torch.zeros(5, 16))


def test_roundtrip_is_exact_on_valid_2to4_and_lossy_otherwise():
    W = torch.randn(64, 128, generator=torch.Generator().manual_seed(0)).half()
    W24 = twofour.prune(W)[0]
    assert torch.equal(pytorch_cutlass_roundtrip(W24), W24)
    x = torch.randn(16, 128, generator=torch.Generator().manual_seed(1))
    report = silent_drop(W24, x)
    assert report.exact and report.elements_dropped == 0 and report.output_error == 0.0
    lossy = silent_drop(W, x)  # dense: every group has 4 non-zeros, PyTorch keeps 2
    assert not lossy.exact
    assert lossy.elements_dropped == W.numel() // 2
    assert lossy.groups_hit == lossy.num_groups == W.numel() // 4
    assert 0 < lossy.mass_lost < 1 and lossy.output_error > 0.1
    assert "silently dropped" in str(lossy)


def test_roundtrip_argument_errors():
    with pytest.raises(TypeError, match="float16, bfloat16 or int8"):
        pytorch_cutlass_roundtrip(torch.zeros(32, 64))
    with pytest.raises(ValueError, match="rows must be a multiple of 32"):
        pytorch_cutlass_roundtrip(torch.zeros(16, 64, dtype=torch.float16))


def test_doctests():
    result = doctest.testmod(damage)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.gpu
def test_gpu_conversion_holds_at_least_our_byte_count_and_multiplies_right():
    """What chapter 2's GPU cell shows, as a test: PyTorch's packed buffers hold at least
    values + metadata, and the sparse matmul matches the dense one."""
    import warnings

    from twofour.device import environment

    env = environment()
    if not env.sparse_ok:
        pytest.skip(f"no 2:4 sparse kernels on this GPU: {env.reason}")
    device = env.device
    W = twofour.prune(torch.randn(256, 512, generator=torch.Generator().manual_seed(0)).half())[0].to(device)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*prototype.*", category=UserWarning)
        W_sparse = torch.sparse.to_sparse_semi_structured(W)
    held = sum(t.numel() * t.element_size() for t in (W_sparse.packed, W_sparse.meta) if t is not None)
    assert held >= twofour.packed_bytes(tuple(W.shape), torch.float16)
    x = torch.randn(64, 512, dtype=torch.float16, device=device)
    y_sparse = torch.nn.functional.linear(x, W_sparse).float()
    y_dense = torch.nn.functional.linear(x, W).float()
    assert float(torch.linalg.norm(y_sparse - y_dense) / torch.linalg.norm(y_dense)) < 1e-2


@pytest.mark.gpu
def test_pytorch_cutlass_roundtrip_on_cuda_matches_cpu():
    from twofour.device import pick_device

    W = torch.randn(64, 128, generator=torch.Generator().manual_seed(0)).half()
    cpu = pytorch_cutlass_roundtrip(W)
    cuda = pytorch_cutlass_roundtrip(W.to(pick_device("cuda"))).cpu()
    assert torch.equal(cpu, cuda)
