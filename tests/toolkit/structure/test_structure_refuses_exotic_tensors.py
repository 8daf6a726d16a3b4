"""check, prune and pack under hostile tensors: nested tensors and subclasses with their own dispatch are refused by name."""

from __future__ import annotations

import warnings

import pytest
import torch

import twofour


# ---- one-line errors for nested tensors -------------------------------------------------


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
