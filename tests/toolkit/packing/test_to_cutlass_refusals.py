"""to_cutlass under hostile metadata: it refuses what unpack refuses, and its docstring says when it is bit-identical to PyTorch."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import twofour


# ---- to_cutlass ---------------------------------------------------------------------------


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
