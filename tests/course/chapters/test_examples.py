"""twofour.course.examples: the trained weight is reproducible and really trained; the half-zero weights
are exactly half zeros and only the K-wise one is 2:4."""

from __future__ import annotations

import doctest

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import twofour
from twofour.course import examples
from twofour.course.examples import half_zero_weights, prune_unstructured, trained_example


@pytest.fixture(scope="module")
def small_example():
    return trained_example(seed=3, in_features=64, hidden=32, out_features=4, informative=8, steps=150)


def test_trained_example_is_deterministic_and_learns(small_example):
    again = trained_example(seed=3, in_features=64, hidden=32, out_features=4, informative=8, steps=150)
    assert torch.equal(small_example.W, again.W)
    assert small_example.loss_end < 0.5 * small_example.loss_start
    assert small_example.W.shape == (32, 64)
    assert abs(small_example.loss_with(small_example.W) - small_example.loss_end) < 1e-6


def test_trained_example_leaves_global_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    threads = torch.get_num_threads()
    trained_example(seed=0, in_features=16, hidden=8, out_features=2, informative=4, steps=2)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_trained_weight_emphasises_informative_inputs(small_example):
    column_norms = small_example.W.norm(dim=0)
    informative = torch.zeros(64, dtype=torch.bool)
    informative[small_example.informative] = True
    assert column_norms[informative].mean() > 1.5 * column_norms[~informative].mean()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seed": -1}, "seed must be a non-negative int"),
        ({"hidden": 0}, "hidden must be a positive int"),
        ({"steps": 2.5}, "steps must be a positive int"),
        ({"informative": 300}, "informative must be at most in_features=256"),
    ],
)
def test_trained_example_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        trained_example(**kwargs)


def test_loss_with_rejects_wrong_shape(small_example):
    with pytest.raises(ValueError, match=r"W must be a tensor of the trained weight's shape \(32, 64\)"):
        small_example.loss_with(torch.zeros(64, 32))


def test_half_zero_weights():
    W = torch.randn(32, 64, generator=torch.Generator().manual_seed(0))
    weights = half_zero_weights(W)
    for name, w in weights.items():
        assert float((w == 0).float().mean()) == 0.5, name
        kept = w != 0
        assert torch.equal(w[kept], W[kept]), name  # kept values untouched
    assert [n for n, w in weights.items() if twofour.check(w).valid] == ["2:4 along K"]
    assert twofour.check(weights["2:4 along N (wrong dim)"].T.contiguous()).valid


def test_half_zero_weights_needs_rows_divisible_by_4():
    with pytest.raises(ValueError, match="rows must be a multiple of 4"):
        half_zero_weights(torch.randn(6, 8))


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 6), groups=st.integers(1, 6), sparsity=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_prune_unstructured_keeps_the_largest(rows, groups, sparsity, seed):
    W = torch.randn(rows, 4 * groups, generator=torch.Generator().manual_seed(seed))
    Wp, mask = prune_unstructured(W, sparsity)
    n_drop = round(sparsity * W.numel())
    assert int((~mask).sum()) == n_drop
    if 0 < n_drop < W.numel():
        assert W[mask].abs().min() >= W[~mask].abs().max()
    assert torch.equal(Wp[mask], W[mask]) and bool((Wp[~mask] == 0).all())


@pytest.mark.parametrize("sparsity", [-0.1, 1.5, "half", True])
def test_prune_unstructured_bad_sparsity(sparsity):
    with pytest.raises(ValueError, match="sparsity must be a number in"):
        prune_unstructured(torch.randn(4, 4), sparsity)


def test_prune_unstructured_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        prune_unstructured(torch.tensor([[1.0, float("nan"), 2.0, 3.0]]))


@pytest.mark.slow  # the examples train the chapters' weight; tests/toolkit/package/test_doctests.py leaves them to this test
def test_doctests():
    result = doctest.testmod(examples)
    assert result.failed == 0 and result.attempted > 0
