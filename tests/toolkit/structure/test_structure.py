"""twofour.structure: check / prune / nonzeros_per_group."""

import math
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import twofour
from twofour import check, nonzeros_per_group, prune

FLOAT_DTYPES = [torch.float32, torch.float16, torch.bfloat16]
FLOAT8 = [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]


def weights(rows=st.integers(1, 6), groups=st.integers(1, 6), m=4):
    """Random float32 weights with many exact zeros (and some -0.0)."""

    @st.composite
    def build(draw):
        r, g = draw(rows), draw(groups)
        vals = draw(
            st.lists(
                st.sampled_from([0.0, -0.0, 1.0, -2.5, 0.125, 3.0, -7.0]),
                min_size=r * g * m,
                max_size=r * g * m,
            )
        )
        return torch.tensor(vals, dtype=torch.float32).reshape(r, g * m)

    return build()


# ---------------------------------------------------------------------------- check


def test_valid_24_weight():
    W = torch.tensor([[1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 5.0]])
    r = check(W)
    assert r.valid and r.num_bad_groups == 0 and r.num_groups == 2
    assert r.fraction_bad == 0.0 and r.fraction_valid == 1.0
    assert r.nonzero_fraction == pytest.approx(3 / 8)
    assert "valid 2:4" in str(r)


def test_invalid_groups_are_located_with_values():
    W = torch.zeros(3, 12)
    W[1, 4:8] = torch.tensor([1.0, 2.0, 3.0, 0.0])  # row 1, group 1: 3 non-zeros
    W[2, 8:12] = torch.tensor([1.0, 2.0, 3.0, 4.0])  # row 2, group 2: 4 non-zeros
    r = check(W)
    assert not r.valid
    assert r.num_bad_groups == 2 and r.num_groups == 9
    assert r.bad_groups_per_row.tolist() == [0, 1, 1]
    assert r.bad_locations.tolist() == [[1, 1], [2, 2]]
    assert r.bad_rows.tolist() == [1, 2]
    assert r.locations_complete
    first = r.examples[0]
    assert (first.row, first.group, first.nonzeros, first.columns) == (1, 1, 3, (4, 8))
    assert first.values == (1.0, 2.0, 3.0, 0.0)
    text = str(r)
    assert "NOT 2:4" in text and "2 of 9 groups" in text and "row 1, group 1 (columns 4-7)" in text
    assert "<table>" in r._repr_html_()


def test_negative_zero_counts_as_zero_and_nan_inf_as_nonzero():
    W = torch.tensor([[-0.0, -0.0, 1.0, -0.0], [float("nan"), float("inf"), 1.0, 0.0]])
    r = check(W)
    assert r.bad_locations.tolist() == [[1, 0]]
    assert nonzeros_per_group(W).tolist() == [[1], [3]]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int8] + FLOAT8)
def test_check_every_dtype(dtype):
    W = torch.tensor([[1, 0, 2, 0, 1, 1, 1, 0]], dtype=torch.float32).to(dtype)
    r = check(W)
    assert r.num_bad_groups == 1 and r.bad_locations.tolist() == [[0, 1]]
    assert r.dtype == dtype


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16] + FLOAT8)
def test_negative_zero_bits_in_low_precision(dtype):
    W = torch.tensor([[-0.0, -0.0, -0.0, 1.0]]).to(dtype)
    assert check(W).valid
    assert nonzeros_per_group(W).tolist() == [[1]]


def test_other_patterns():
    W = torch.tensor([[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    assert not check(W, 1, 2).valid
    assert check(W, 4, 8).valid
    assert check(W, 2, 8).valid


def test_locations_cap_is_reported_not_hidden():
    W = torch.ones(4, 16)
    r = check(W, max_locations=5, max_examples=2)
    assert r.num_bad_groups == 16
    assert r.bad_locations.shape == (5, 2)
    assert not r.locations_complete
    assert len(r.examples) == 2
    assert r.bad_groups_per_row.tolist() == [4, 4, 4, 4]


@pytest.mark.parametrize("target", [64, 16, 8])  # 64: several rows per block; 16, 8: rows cut into column blocks
def test_check_blocks_agree_with_whole(monkeypatch, target):
    torch.manual_seed(0)
    W = torch.randn(50, 64)
    W[torch.rand_like(W) < 0.5] = 0
    whole = check(W)
    import twofour._passes.tensors as tensors

    original = tensors.blocks
    monkeypatch.setattr(
        "twofour.structure.blocks", lambda r, c, unit=1, target_elems=None: original(r, c, unit=unit, target_elems=target)
    )
    blocked = check(W)
    assert blocked.num_bad_groups == whole.num_bad_groups > 0
    assert torch.equal(blocked.bad_locations, whole.bad_locations)
    assert torch.equal(blocked.bad_groups_per_row, whole.bad_groups_per_row)
    assert blocked.nonzero_fraction == whole.nonzero_fraction


def test_check_does_not_modify_input():
    W = torch.randn(8, 16)
    before = W.clone()
    check(W)
    prune(W)
    assert torch.equal(W, before)


@given(weights())
@settings(max_examples=60, deadline=None)
def test_check_matches_definition(W):
    r = check(W)
    groups = (W != 0).reshape(W.shape[0], -1, 4).sum(-1)
    assert r.num_bad_groups == int((groups > 2).sum())
    assert r.valid == bool((groups <= 2).all())


# ---------------------------------------------------------------------------- prune


def test_prune_keeps_largest_magnitudes():
    W = torch.tensor([[0.1, -3.0, 2.0, 0.5, 4.0, 1.0, -5.0, 0.0]])
    Wp, mask = prune(W)
    assert Wp.tolist() == [[0.0, -3.0, 2.0, 0.0, 4.0, 0.0, -5.0, 0.0]]
    assert mask.sum().item() == 4


def test_prune_ties_keep_lower_index():
    W = torch.ones(2, 8)
    _, mask = prune(W)
    assert mask[0].tolist() == [True, True, False, False] * 2


def test_prune_with_scores():
    W = torch.tensor([[4.0, 3.0, 2.0, 1.0]])
    scores = torch.tensor([[0.0, 0.0, 1.0, 1.0]])
    Wp, mask = prune(W, scores=scores)
    assert Wp.tolist() == [[0.0, 0.0, 2.0, 1.0]]


def test_prune_int8_minus_128_is_largest():
    W = torch.tensor([[-128, 1, 127, 2]], dtype=torch.int8)
    Wp, _ = prune(W)
    assert Wp.tolist() == [[-128, 0, 127, 0]]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int8] + FLOAT8)
def test_prune_every_dtype(dtype):
    torch.manual_seed(1)
    W = (torch.randn(8, 32) * 4).to(dtype)
    Wp, mask = prune(W)
    assert Wp.dtype == dtype
    assert check(Wp).valid
    assert mask.reshape(8, -1, 4).sum(-1).eq(2).all()


def test_prune_nan_is_an_error():
    W = torch.tensor([[1.0, float("nan"), 0.0, 2.0]])
    with pytest.raises(ValueError, match="NaN.*row 0, column 1"):
        prune(W)


@given(weights(), st.sampled_from([(2, 4), (1, 4), (1, 2), (4, 8), (3, 4)]))
@settings(max_examples=80, deadline=None)
def test_prune_properties(W, nm):
    n, m = nm
    if W.shape[1] % m:
        W = torch.nn.functional.pad(W, (0, m - W.shape[1] % m))
    Wp, mask = prune(W, n, m)
    assert check(Wp, n, m).valid
    per_group = mask.reshape(W.shape[0], -1, m).sum(-1)
    assert per_group.eq(n).all()  # exactly n kept slots in every group
    nonzero_before = (W != 0).reshape(W.shape[0], -1, m).sum(-1)
    nonzero_after = (Wp != 0).reshape(W.shape[0], -1, m).sum(-1)
    # a group with >= n non-zeros keeps exactly n of them; a sparser group keeps all of its own
    assert torch.equal(nonzero_after, torch.clamp(nonzero_before, max=n))
    # kept values are unchanged; dropped positions are zero
    assert torch.equal(Wp[mask], W[mask])
    assert (Wp[~mask] == 0).all()
    # no dropped value is larger in magnitude than a kept one within a group
    a = W.abs().reshape(W.shape[0], -1, m)
    mk = mask.reshape(W.shape[0], -1, m)
    kept_min = torch.where(mk, a, torch.full_like(a, math.inf)).min(-1).values
    drop_max = torch.where(~mk, a, torch.full_like(a, -math.inf)).max(-1).values
    assert (drop_max <= kept_min).all()


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "W, exc, pattern",
    [
        ([[1.0, 0.0, 0.0, 0.0]], TypeError, r"W must be a torch.Tensor.*got list"),
        (torch.zeros(8), ValueError, r"W must be 2-D.*1-D.*reshape\(1, -1\)"),
        (torch.zeros(2, 2, 8), ValueError, r"3-D shape \(2, 2, 8\).*reshape"),
        (torch.zeros(2, 6), ValueError, r"6 columns.*not a multiple of the group size m=4.*Pad 2 zero column"),
        (torch.zeros(0, 8), ValueError, r"W is empty"),
        (torch.zeros(2, 8, dtype=torch.bool), TypeError, r"dtype bool: bool is a mask, not a weight"),
        (torch.zeros(2, 8, dtype=torch.complex64), TypeError, r"dtype complex64: complex64 is complex"),
    ],
)
def test_bad_weights(W, exc, pattern):
    for fn in (check, prune, twofour.pack):
        with pytest.raises(exc, match=pattern):
            fn(W)


@pytest.mark.parametrize(
    "n, m, pattern",
    [(2, 2, r"1 <= n < m"), (0, 4, r"1 <= n < m"), (5, 4, r"1 <= n < m"), (1, 1, r"m must be at least 2"), (2.0, 4, r"n must be an int")],
)
def test_bad_nm(n, m, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        check(torch.zeros(2, 8), n, m)
    with pytest.raises((ValueError, TypeError), match=pattern):
        prune(torch.zeros(2, 8), n, m)


def test_bad_scores():
    W = torch.zeros(2, 8)
    with pytest.raises(ValueError, match=r"scores must have W's shape \(2, 8\).*\(2, 4\)"):
        prune(W, scores=torch.zeros(2, 4))
    with pytest.raises(TypeError, match="scores must be a torch.Tensor"):
        prune(W, scores=[[0.0] * 8] * 2)
    with pytest.raises(TypeError, match="real numbers"):
        prune(W, scores=torch.zeros(2, 8, dtype=torch.complex64))


def test_bad_check_options():
    with pytest.raises(ValueError, match="max_examples must be a non-negative int"):
        check(torch.zeros(2, 8), max_examples=-1)


def test_sparse_layout_is_refused():
    with pytest.raises(TypeError, match="dense \\(strided\\)"):
        check(torch.zeros(2, 8).to_sparse())


# ---- nested tensors and tensor subclasses are refused by name ----------------------------


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


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.int8, torch.uint8])
def test_integer_weights_and_scores_are_ranked_as_integers(dtype):
    # float32 rounds past 2^24: int32 [2^30+1, 2^30, 2^30+3, 2^30+2] all read as 2^30 and the tie kept columns 0, 1
    big = {torch.int32: 2**30, torch.int16: 2**14, torch.int8: 100, torch.uint8: 200}[dtype]
    row = [big + 1, big, big + 3, big + 2] if dtype != torch.int8 else [-(big + 1), big, -(big + 3), big + 2]
    W = torch.tensor([row], dtype=dtype)
    assert prune(W)[1].tolist() == [[False, False, True, True]]
    assert prune(torch.ones(1, 4), scores=W)[1].tolist() == [[False, False, True, True]]
    assert prune(torch.ones(1, 4), scores=W.to(torch.int64) * 2**31)[1].tolist() == [[False, False, True, True]]
