"""twofour.packing: pack / unpack, byte accounting, the CUTLASS layout, the group explainer."""

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from twofour import check, prune
from twofour.packing import (
    Packed,
    cutlass_constraints,
    dense_bytes,
    explain_group,
    index_bits,
    pack,
    packed_bytes,
    packed_ratio,
    to_cutlass,
    unpack,
)
from torch.sparse import _semi_structured_conversions as torch_conv

FLOAT8 = [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]


def bits(t):
    """Tensor bits as an integer tensor, so -0.0 and NaN compare exactly."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def nm_sparse(rows, cols, n=2, m=4, dtype=torch.float32, seed=0, extra_zeros=0.3):
    """A random N:M weight whose groups hold 0..n non-zeros (some -0.0 among the zeros)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int8:
        W = torch.randint(-127, 128, (rows, cols), generator=g, dtype=torch.int8)
        W[W == 0] = 1
    else:
        W = (torch.randn(rows, cols, generator=g) + 0.01).to(dtype)
    W, _ = prune(W, n, m)
    W[torch.rand(rows, cols, generator=g) < extra_zeros] = 0
    if dtype.is_floating_point:
        neg_zero = (torch.rand(rows, cols, generator=g) < 0.2) & (W.float() == 0)
        W[neg_zero] = -0.0
    return W


@st.composite
def sparse_weights(draw):
    n, m = draw(st.sampled_from([(2, 4), (1, 2), (4, 8), (1, 4), (3, 4), (2, 8)]))
    rows = draw(st.integers(1, 5))
    groups = draw(st.integers(1, 7))
    dtype = draw(st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.int8]))
    seed = draw(st.integers(0, 10_000))
    zeros = draw(st.sampled_from([0.0, 0.3, 0.8, 1.0]))
    return nm_sparse(rows, groups * m, n, m, dtype, seed, zeros), n, m


# ---------------------------------------------------------------------------- pack / unpack


@given(sparse_weights())
@settings(max_examples=150, deadline=None)
def test_round_trip_is_exact(case):
    W, n, m = case
    p = pack(W, n, m)
    back = unpack(p)
    assert back.dtype == W.dtype and back.shape == W.shape
    assert torch.equal(back, W)
    # Bit for bit, except -0.0 at a dropped position, which comes back as +0.0.
    kept = torch.zeros(W.shape[0], W.shape[1] // m, m, dtype=torch.bool)
    kept.scatter_(-1, p.indices(), True)
    kept = kept.view(W.shape)
    assert torch.equal(bits(back)[kept], bits(W)[kept])
    assert (bits(back)[~kept] == 0).all()
    # Each row's metadata is padded to whole bytes; with whole-byte rows it is exactly the formula.
    meta_bits_per_row = W.shape[1] // m * n * index_bits(m)
    assert p.meta.shape == (W.shape[0], -(-meta_bits_per_row // 8))
    if meta_bits_per_row % 8 == 0:
        assert p.n_bytes == packed_bytes(W.shape, W.dtype, n, m, meta_bits_per_value=index_bits(m))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_round_trip_float8(dtype):
    W = nm_sparse(4, 32, dtype=torch.float32).to(dtype)
    p = pack(W)
    back = unpack(p)
    assert torch.equal(back.float(), W.float())
    kept = torch.zeros(4, 8, 4, dtype=torch.bool).scatter_(-1, p.indices(), True).view(4, 32)
    assert torch.equal(bits(back)[kept], bits(W)[kept])


def test_packed_values_and_meta_layout():
    W = torch.tensor([[0.0, 1.5, 0.0, -2.0, 3.0, 0.0, 0.0, 4.0]])
    p = pack(W)
    assert p.values.tolist() == [[1.5, -2.0, 3.0, 4.0]]
    # group 0 keeps positions (1, 3): nibble 0b1101; group 1 keeps (0, 3): 0b1100; low nibble first
    assert p.meta.tolist() == [[0b1100_1101]]
    assert p.indices().tolist() == [[[1, 3], [0, 3]]]


def test_underfilled_groups_use_positions_2_then_3():
    W = torch.tensor([[0.0, 0.0, 0.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0, 7.0, 0.0]])
    assert pack(W).indices().tolist() == [[[2, 3], [0, 2], [1, 2], [2, 3]]]


def test_pack_keeps_negative_zero_bits_when_kept():
    W = torch.tensor([[0.0, 0.0, -0.0, 1.0]], dtype=torch.float16)
    p = pack(W)
    assert p.indices().tolist() == [[[2, 3]]]
    assert bits(p.values).tolist() == [[bits(torch.tensor(-0.0, dtype=torch.float16)).item(), bits(W)[0, 3].item()]]


def test_pack_refuses_invalid_weight_and_says_how_many():
    W = torch.zeros(4, 8)
    W[2, 0:4] = torch.tensor([1.0, 2.0, 3.0, 0.0])
    W[3, 4:8] = 1.0
    with pytest.raises(ValueError, match=r"not 2:4 sparse: 2 of 8 groups.*row 2, group 0.*twofour.check.*twofour.prune"):
        pack(W)


def test_pack_does_not_modify_input():
    W = nm_sparse(8, 16)
    before = W.clone()
    pack(W)
    assert torch.equal(bits(W), bits(before))


def test_packed_parts_must_agree():
    p = pack(nm_sparse(4, 16))
    with pytest.raises(ValueError, match="values has shape"):
        Packed(values=p.values[:, :4], meta=p.meta, shape=p.shape, dtype=p.dtype)
    with pytest.raises(ValueError, match="values dtype"):
        Packed(values=p.values, meta=p.meta, shape=p.shape, dtype=torch.float16)
    with pytest.raises(ValueError, match="meta must be uint8 of shape"):
        Packed(values=p.values, meta=p.meta.to(torch.int16), shape=p.shape, dtype=p.dtype)
    with pytest.raises(ValueError, match="multiple of m=4"):
        Packed(values=p.values, meta=p.meta, shape=(4, 15), dtype=p.dtype)
    with pytest.raises(TypeError, match="twofour.Packed"):
        unpack((p.values, p.meta))


def test_corrupt_meta_is_an_error():
    p = pack(nm_sparse(2, 8))
    bad = p.meta.clone()
    bad[0, 0] = 0b0101_0101  # positions (1, 1): a repeated position
    with pytest.raises(ValueError, match=r"packed.meta is corrupt: .*row 0, group 0, positions \[1, 1\]"):
        unpack(Packed(values=p.values, meta=bad, shape=p.shape, dtype=p.dtype))


def test_pack_large_m_refused():
    with pytest.raises(ValueError, match="m <= 16"):
        pack(torch.zeros(1, 32), 1, 32)


# ---------------------------------------------------------------------------- bytes


@pytest.mark.parametrize(
    "dtype, ratio",
    [(torch.float16, 0.5625), (torch.bfloat16, 0.5625), (torch.int8, 0.625)] + [(d, 0.625) for d in FLOAT8],
)
def test_ratio_matches_pytorch_docs(dtype, ratio):
    # PyTorch docs (sparse.rst): compressed / dense = 1/2 + 1/bits_per_element for 2:4.
    element_bits = torch.empty((), dtype=dtype).element_size() * 8
    assert packed_ratio(dtype) == ratio == 0.5 + 1 / element_bits
    shape = (4096, 14336)
    assert packed_bytes(shape, dtype) == int(ratio * dense_bytes(shape, dtype))


def test_ratio_fp32_and_fp4():
    assert packed_ratio(torch.float32, 1, 2) == 0.5625  # hardware writes 4 bits per kept fp32
    assert packed_ratio(4, 4, 8, meta_bits_per_value=1) == 0.625  # FP4 paired 4:8
    assert packed_ratio(4) == 0.75  # FP4 with element-wise 2:4 would keep 2 bits per 4-bit value
    assert packed_ratio(torch.float32) == 0.53125  # a 2:4 fp32 packing with 2-bit indices


def test_packed_object_bytes_match_accounting():
    W = nm_sparse(32, 64, dtype=torch.float16)
    p = pack(W)
    assert p.n_bytes == packed_bytes(W.shape, W.dtype)
    assert p.n_bytes / p.dense_n_bytes == 0.5625
    assert p.dense_n_bytes == dense_bytes(W.shape, W.dtype) == W.element_size() * W.numel()


def test_index_bits():
    assert [index_bits(m) for m in (2, 4, 8, 16)] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: dense_bytes((0, 4), torch.float16), ValueError, "positive sizes"),
        (lambda: dense_bytes(4, torch.float16), TypeError, "shape must be a tuple of ints.*got int 4"),
        (lambda: packed_bytes((4, 6), torch.float16), ValueError, "multiple of m=4"),
        (lambda: packed_ratio(torch.bool), TypeError, "no N:M packed form"),
        (lambda: packed_ratio("fp16"), TypeError, "torch.dtype or a positive bit width"),
        (lambda: packed_bytes((4, 8), torch.float16, meta_bits_per_value=-1), ValueError, "non-negative"),
        (lambda: packed_bytes((4, 8), torch.float16, meta_bits_per_value=True), ValueError,
         r"^meta_bits_per_value must be a non-negative int, got True$"),
        (lambda: packed_bytes((4, 8), torch.float16, meta_bits_per_value=2.0), ValueError,
         r"^meta_bits_per_value must be a non-negative int, got 2\.0$"),
    ],
)
def test_bytes_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ---------------------------------------------------------------------------- CUTLASS layout


def torch_cutlass(W):
    return torch_conv.sparse_semi_structured_from_dense_cutlass(W)


CUTLASS_SHAPES = {
    torch.float16: [(32, 32), (32, 64), (64, 96), (96, 128), (128, 256), (160, 320), (256, 512)],
    torch.bfloat16: [(32, 32), (64, 64), (96, 160), (224, 128)],
    torch.int8: [(16, 64), (32, 128), (48, 192), (80, 64), (128, 256)],
    torch.float32: [(32, 32), (64, 64), (96, 96), (128, 160)],
}


@pytest.mark.parametrize(
    "dtype, shape", [(d, s) for d, shapes in CUTLASS_SHAPES.items() for s in shapes]
)
@pytest.mark.parametrize("zeros", [0.0, 0.4, 1.0])
def test_to_cutlass_bit_identical_to_pytorch(dtype, shape, zeros):
    n, m = (1, 2) if dtype == torch.float32 else (2, 4)
    W = nm_sparse(*shape, n=n, m=m, dtype=dtype, seed=shape[0] * 7 + shape[1], extra_zeros=zeros)
    ours_values, ours_meta = to_cutlass(pack(W, n, m))
    ref_values, ref_meta = torch_cutlass(W)
    assert ours_meta.dtype == ref_meta.dtype and ours_meta.shape == ref_meta.shape
    assert torch.equal(ours_meta, ref_meta)
    assert torch.equal(bits(ours_values), bits(ref_values))


def test_to_cutlass_every_group_pattern():
    # Every valid 2:4 pattern (0, 1 or 2 non-zeros) in every group position of a 32x64 block.
    patterns = [p for p in itertools.product([0, 1], repeat=4) if sum(p) <= 2]
    g = torch.Generator().manual_seed(3)
    choice = torch.randint(len(patterns), (32, 16), generator=g)
    W = torch.tensor(patterns, dtype=torch.float16)[choice].reshape(32, 64) * torch.randn(32, 64, generator=g).half()
    assert len(patterns) == 11
    ours = to_cutlass(pack(W))
    ref = torch_cutlass(W)
    assert torch.equal(ours[1], ref[1]) and torch.equal(bits(ours[0]), bits(ref[0]))


def test_docs_example_all_zero_groups_meta_is_minus_4370():
    # PyTorch's docs: all-[0, 0, 1, 1] groups give int16 metadata -4370 (0xEEEE) everywhere.
    W = torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=torch.float16).repeat(32, 16)
    _, meta = to_cutlass(pack(W))
    assert (meta == -4370).all()


@pytest.mark.parametrize(
    "dtype, shape, torch_error",
    [
        (torch.float16, (16, 64), "divisible by 32"),  # rows not a multiple of 32
        (torch.float16, (32, 40), "divisible by 16"),  # cols not a multiple of 16
        (torch.float16, (32, 16), "out of bounds"),  # one metadata column: PyTorch's scatter overruns
        (torch.float16, (64, 48), "out of bounds"),  # three metadata columns
        (torch.int8, (32, 32), "out of bounds"),  # one int32 metadata column
        (torch.int8, (8, 64), "divisible by 16"),
    ],
)
def test_shapes_pytorch_cannot_convert_are_refused_clearly(dtype, shape, torch_error):
    W = nm_sparse(*shape, dtype=dtype)
    with pytest.raises(RuntimeError, match=torch_error):
        torch_cutlass(W)
    with pytest.raises(ValueError, match=r"does not fit PyTorch's CUTLASS layout"):
        to_cutlass(pack(W))


def test_to_cutlass_wrong_pattern_or_dtype():
    with pytest.raises(ValueError, match=r"use pack\(W, n=1, m=2\)"):
        to_cutlass(pack(nm_sparse(32, 32)))
    with pytest.raises(ValueError, match="float16, bfloat16, int8 and float32"):
        to_cutlass(pack(nm_sparse(32, 32).double()))
    with pytest.raises(TypeError, match="twofour.Packed"):
        to_cutlass(nm_sparse(32, 32))
    assert cutlass_constraints(torch.int8)["meta_dtype"] == torch.int32


# ---------------------------------------------------------------------------- explain_group


def test_explain_group():
    g = explain_group([0.0, 1.5, 0.0, -2.0])
    assert g.kept == (1, 3) and g.kept_values == (1.5, -2.0)
    assert g.index_bits == ("01", "11") and g.meta_bits == "1101" and g.nibble == 13
    assert "metadata bits 1101" in str(g) and "<table>" in g._repr_html_()
    assert explain_group([0.0, 0.0, 0.0, 0.0]).meta_bits == "1110"


def test_explain_group_refuses_invalid():
    with pytest.raises(ValueError, match="not 2:4"):
        explain_group([1.0, 2.0, 3.0, 0.0])
    with pytest.raises(ValueError, match="one group of m=4"):
        explain_group([1.0, 2.0])


# ---------------------------------------------------------------------------- -0.0, shapes, types

SIGNED_ZERO_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]


@pytest.mark.parametrize("dtype", SIGNED_ZERO_DTYPES + [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz], ids=str)
def test_every_group_of_plus_zero_minus_zero_and_values(dtype):
    """All 81 groups over {+0, -0 code, 1.5}: check, pack and unpack agree on what -0 is.

    Where ``-0.0`` is zero, it never counts (check) and comes back as +0 unless pack keeps its
    position: the one documented canonicalisation. In the fnuz formats the same code is NaN: it
    counts, it is kept, and it survives bit for bit.
    """
    size = torch.empty((), dtype=dtype).element_size()
    int_type = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[size]
    sign = torch.tensor(1 << (8 * size - 1)).to(int_type)
    value_bits = bits(torch.tensor(1.5).to(dtype))
    choices = torch.stack([torch.zeros((), dtype=int_type), sign, value_bits])
    combos = torch.tensor(list(itertools.product(range(3), repeat=4)))  # [81, 4]
    W = choices[combos].reshape(1, -1).view(dtype)
    minus_zero_is_zero = dtype not in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
    counts = (combos == 2).sum(-1) + (0 if minus_zero_is_zero else (combos == 1).sum(-1))
    report = check(W)
    assert report.bad_groups_per_row.item() == int((counts > 2).sum())
    valid = counts <= 2
    W_ok = choices[combos[valid]].reshape(1, -1).view(dtype)
    p = pack(W_ok)
    back = bits(unpack(p)).view(-1, 4)
    kept = torch.zeros(int(valid.sum()), 4, dtype=torch.bool).scatter_(-1, p.indices()[0], True)
    original = bits(W_ok).view(-1, 4)
    assert torch.equal(back[kept], original[kept])  # kept: bit for bit, -0 and NaN included
    assert (back[~kept] == 0).all()  # not kept: +0
    if minus_zero_is_zero:
        assert ((original[~kept] == 0) | (original[~kept] == sign)).all()  # only zeros are ever dropped
    else:
        assert (original[~kept] == 0).all()  # the fnuz NaN is never dropped


def _pytorch_converts(W) -> bool:
    try:
        torch_cutlass(W)
    except (RuntimeError, IndexError):
        return False
    return True


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8, torch.float32], ids=str)
def test_to_cutlass_takes_exactly_the_shapes_pytorch_converts(dtype):
    n, m = (1, 2) if dtype == torch.float32 else (2, 4)
    accepted = 0
    for rows in range(8, 129, 8):
        for cols in range(8, 257, 8):
            W = nm_sparse(rows, cols, n, m, dtype=dtype, seed=rows * 1000 + cols)
            if _pytorch_converts(W):
                accepted += 1
                values, meta = to_cutlass(pack(W, n, m))
                ref_values, ref_meta = torch_cutlass(W)
                assert torch.equal(meta, ref_meta) and torch.equal(bits(values), bits(ref_values)), (rows, cols)
            else:
                with pytest.raises(ValueError, match=r"packed.shape .* does not fit PyTorch's CUTLASS layout"):
                    to_cutlass(pack(W, n, m))
    assert accepted > 10


def test_to_cutlass_float32_1_2_with_16_columns():
    W = nm_sparse(32, 16, 1, 2)
    values, meta = to_cutlass(pack(W, 1, 2))
    ref_values, ref_meta = torch_cutlass(W)
    assert torch.equal(meta, ref_meta) and torch.equal(bits(values), bits(ref_values))


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        ({"values": [[1.0]]}, TypeError, r"Packed.values must be a torch.Tensor, got list"),
        ({"meta": b"\x00"}, TypeError, r"Packed.meta must be a torch.Tensor, got bytes"),
        ({"dtype": "float16"}, TypeError, r"Packed.dtype must be a torch.dtype such as torch.float16, got str"),
        ({"dtype": torch.complex64}, TypeError, r"Packed.dtype complex64 has no packed N:M form"),
        ({"shape": "4x16"}, TypeError, r"Packed.shape must be a tuple of ints"),
        ({"shape": (4.0, 16)}, TypeError, r"Packed.shape must hold ints, got float 4.0"),
        ({"shape": (4, 16, 1)}, ValueError, r"Packed.shape must be \(N, K\), two sizes"),
        ({"n": 2.0}, TypeError, r"n must be an int"),
        ({"values": torch.zeros(4, 2, 4)}, ValueError, r"Packed.values must be a dense 2-D tensor"),
    ],
)
def test_packed_validates_its_inputs_types(kwargs, exc, pattern):
    p = pack(nm_sparse(4, 16))
    args = {"values": p.values, "meta": p.meta, "shape": p.shape, "dtype": p.dtype, **kwargs}
    with pytest.raises(exc, match=pattern):
        Packed(**args)


def test_packed_accepts_numpy_and_torch_sizes():
    import numpy as np

    p = pack(nm_sparse(4, 16))
    q = Packed(p.values, p.meta, (np.int64(4), torch.tensor(16)), p.dtype)
    assert q.shape == (4, 16) and type(q.shape[0]) is int
    assert packed_bytes((np.int32(4096), 14336), torch.float16) == packed_bytes((4096, 14336), torch.float16)


@pytest.mark.parametrize(
    "shape, exc, pattern",
    [
        ("4096x14336", TypeError, "shape must be a tuple of ints.*got str"),
        ((4.5, 8), TypeError, "shape must hold ints, got float 4.5"),
        ((True, 8), TypeError, "shape must hold ints, got bool True"),
        (("8", 8), TypeError, "shape must hold ints, got str '8'"),
        ((), ValueError, "non-empty"),
    ],
)
def test_byte_counts_validate_shape_types(shape, exc, pattern):
    with pytest.raises(exc, match=pattern):
        packed_bytes(shape, torch.float16)
    with pytest.raises(exc, match=pattern):
        dense_bytes(shape, torch.float16)


@pytest.mark.parametrize("dtype", [torch.float4_e2m1fn_x2, torch.float8_e8m0fnu, torch.quint8], ids=str)
def test_byte_counts_refuse_dtypes_without_an_element_form(dtype):
    with pytest.raises(TypeError, match="has no N:M packed form"):
        packed_ratio(dtype)
    assert packed_ratio(4, 4, 8, meta_bits_per_value=1) == 0.625  # FP4 is counted by its bit width


def test_pack_handles_transposed_and_sliced_views():
    W = nm_sparse(64, 32, dtype=torch.float16)
    for view in (W.t().contiguous().t(), torch.cat([W, W], dim=1)[:, 32:]):
        assert not view.is_contiguous()
        p = pack(view)
        assert torch.equal(unpack(p), view)
        assert torch.equal(bits(p.values), bits(pack(view.contiguous()).values))
