"""Packing on odd but legal tensors: a contiguous slice of a flat buffer, and meta tensors.

``pack``/``unpack``/``to_cutlass`` reinterpret elements as machine words; a contiguous view whose
storage offset is not a whole number of words (``flat[1:].view(N, K)``) raised torch's "must be
divisible by 4 to view Half as Long" while ``check`` and ``prune`` worked. ``Packed`` accepted
meta tensors, and ``unpack`` then failed inside torch.
"""

from __future__ import annotations

import pytest
import torch

import twofour
from twofour.packing import Packed, pack, to_cutlass, unpack


def _nm(dtype):
    return (1, 2) if dtype == torch.float32 else (2, 4)  # float32 runs as 1:2 on sparse tensor cores


def _weight(dtype, N=64, K=128):
    g = torch.Generator().manual_seed(40)
    return twofour.prune(torch.randn(N, K, generator=g).to(dtype), *_nm(dtype))[0]


def _offset_view(t: torch.Tensor, offset: int) -> torch.Tensor:
    flat = torch.zeros(offset + t.numel(), dtype=t.dtype)
    flat[offset:] = t.flatten()
    v = flat[offset:].view(t.shape)
    assert v.is_contiguous() and v.storage_offset() == offset
    return v


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8, torch.float32])
@pytest.mark.parametrize("offset", [1, 2, 3])
def test_pack_unpack_and_cutlass_on_a_misaligned_slice_match_the_aligned_weight(dtype, offset):
    W = _weight(dtype)
    V = _offset_view(W, offset)
    p, q = pack(W, *_nm(dtype)), pack(V, *_nm(dtype))
    assert torch.equal(p.values, q.values) and torch.equal(p.meta, q.meta)
    assert torch.equal(unpack(q), W)
    shifted = Packed(_offset_view(p.values, offset), _offset_view(p.meta, offset), p.shape, p.dtype, p.n, p.m)
    assert torch.equal(unpack(shifted), W)
    ref = to_cutlass(p)
    got = to_cutlass(shifted)
    assert all(torch.equal(a, b) for a, b in zip(ref, got))


def test_packed_refuses_meta_tensors_by_name():
    p = pack(_weight(torch.float16))
    with pytest.raises(ValueError, match="Packed.values is on the meta device"):
        Packed(p.values.to("meta"), p.meta, p.shape, p.dtype)
    with pytest.raises(ValueError, match="Packed.meta is on the meta device"):
        Packed(p.values, p.meta.to("meta"), p.shape, p.dtype)
