"""Lab 1 and lab 2 checkers: right answers pass, each typical mistake gets its specific hint,
stubs print "not done yet", and the exercise notebooks stay in sync with their solutions."""

from __future__ import annotations

import doctest

import pytest
import torch

import twofour
from twofour.course.labs import _common, lab1, lab2
from twofour.course.labs._common import CheckFailed



# ---- reference answers (what the solutions notebooks contain) -------------------------------


def find_bad_groups(W):
    N, K = W.shape
    per_group = (W != 0).reshape(N, K // 4, 4).sum(dim=-1)
    return [tuple(p) for p in torch.nonzero(per_group > 2).tolist()]


def prune_2to4(W):
    N, K = W.shape
    groups = W.reshape(N, K // 4, 4)
    keep = groups.abs().topk(2, dim=-1).indices
    mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True)
    return torch.where(mask, groups, torch.zeros_like(groups)).reshape(N, K)


def packed_nbytes(shape, dtype):
    kept = shape[0] * shape[1] // 2
    return kept * (torch.empty((), dtype=dtype).element_size() * 8 + 2) // 8


def pack_2to4(W):
    N, K = W.shape
    groups = W.reshape(N, K // 4, 4)
    chosen = torch.sort((groups != 0).to(torch.uint8), dim=-1, descending=True, stable=True).indices[..., :2]
    indices = chosen.sort(dim=-1).values
    return torch.gather(groups, -1, indices).reshape(N, K // 2), indices


def encode_meta(indices):
    nibbles = indices[..., 0] | (indices[..., 1] << 2)
    return (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).to(torch.uint8)


def unpack_2to4(values, indices, K):
    N = values.shape[0]
    out = torch.zeros(N, K // 4, 4, dtype=values.dtype)
    out.scatter_(-1, indices, values.reshape(N, K // 4, 2))
    return out.reshape(N, K)


def stub(*args, **kwargs):
    raise NotImplementedError


# ---- convention ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [lab1.check_find_bad_groups, lab1.check_prune_2to4, lab2.check_packed_nbytes, lab2.check_pack_2to4,
     lab2.check_encode_meta, lab2.check_unpack_2to4],
)
def test_stub_prints_not_done_yet(check, capsys):
    assert check(stub).passed is False
    assert capsys.readouterr().out.startswith("not done yet:")


@pytest.mark.parametrize("check", [lab1.check_find_bad_groups, lab2.check_packed_nbytes])
def test_passing_the_result_instead_of_the_function_is_a_clear_error(check):
    with pytest.raises(TypeError, match="pass your function"):
        check([(0, 1)])


def test_right_answers_pass(capsys):
    assert lab1.check_find_bad_groups(find_bad_groups)
    assert lab1.check_prune_2to4(prune_2to4)
    assert lab2.check_packed_nbytes(packed_nbytes)
    assert lab2.check_pack_2to4(pack_2to4)
    assert lab2.check_encode_meta(encode_meta)
    assert lab2.check_unpack_2to4(unpack_2to4)
    out = capsys.readouterr().out
    assert out.count("passed:") == 6


def test_weights_are_reproducible_and_as_described():
    a, b = lab1.weights(), lab1.weights()
    assert all(torch.equal(a[k], b[k]) for k in a)
    verdicts = {name: twofour.check(W).valid for name, W in a.items()}
    assert verdicts == {
        "valid": True, "transposed": False, "three_in_a_few": False, "negative_zeros": True,
        "unstructured_half": False, "fp16_few_nonzeros": True,
    }
    assert twofour.check(a["three_in_a_few"]).num_bad_groups == 3
    assert bool(torch.signbit(a["negative_zeros"][a["negative_zeros"] == 0]).all())
    assert float((a["unstructured_half"] == 0).float().mean()) == 0.5


# ---- lab 1 hints --------------------------------------------------------------------------


def test_hint_for_grouping_along_dim_0():
    def along_rows(W):
        if W.shape[0] % 4:
            return []
        return [(g, r) for r, g in find_bad_groups(W.T.contiguous())]

    with pytest.raises(CheckFailed, match=r"grouped 4 consecutive \*rows\*"):
        lab1.check_find_bad_groups(along_rows)


def test_hint_names_a_missed_group_and_its_count():
    def misses_planted(W):
        bad = find_bad_groups(W)
        return [p for p in bad if p != (12, 7)] if len(bad) == 3 else bad

    with pytest.raises(CheckFailed, match=r"'three_in_a_few': you missed group \(12, 7\): it has 3 non-zeros"):
        lab1.check_find_bad_groups(misses_planted)


def test_hint_for_counting_negative_zero_bits():
    def by_bits(W):
        N, K = W.shape
        bits = W.view(torch.int16 if W.element_size() == 2 else torch.int32)
        per_group = (bits != 0).reshape(N, K // 4, 4).sum(-1)
        return [tuple(p) for p in torch.nonzero(per_group > 2).tolist()]

    with pytest.raises(CheckFailed, match=r"'negative_zeros'.*holds -0\.0, which is zero"):
        lab1.check_find_bad_groups(by_bits)


def test_hint_for_flagging_groups_with_two_nonzeros():
    with pytest.raises(CheckFailed, match="2 or fewer is fine"):
        lab1.check_find_bad_groups(lambda W: [(0, 0)] + find_bad_groups(W))


def test_hint_for_out_of_range_groups():
    with pytest.raises(CheckFailed, match="is not a group of W"):
        lab1.check_find_bad_groups(lambda W: find_bad_groups(W) + [(999, 0)])


def test_hint_for_returning_a_verdict():
    with pytest.raises(CheckFailed, match="not a verdict"):
        lab1.check_find_bad_groups(lambda W: True)


def test_find_bad_groups_must_not_modify_W():
    def zeroes_input(W):
        result = find_bad_groups(W)
        W.zero_()
        return result

    with pytest.raises(CheckFailed, match="changed W"):
        lab1.check_find_bad_groups(zeroes_input)


def test_prune_hints():
    with pytest.raises(CheckFailed, match=r"largest \*values\*"):
        def by_value(W):
            N, K = W.shape
            groups = W.reshape(N, K // 4, 4)
            keep = groups.topk(2, dim=-1).indices
            mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, keep, True)
            return torch.where(mask, groups, torch.zeros_like(groups)).reshape(N, K)

        lab1.check_prune_2to4(by_value)
    with pytest.raises(CheckFailed, match="along the rows' direction"):
        lab1.check_prune_2to4(lambda W: prune_2to4(W.T.contiguous()).T.contiguous())
    with pytest.raises(CheckFailed, match="still has 4 non-zeros"):
        lab1.check_prune_2to4(lambda W: W.clone())
    with pytest.raises(CheckFailed, match="value changed"):
        lab1.check_prune_2to4(lambda W: prune_2to4(W) * 2)
    with pytest.raises(CheckFailed, match="dropped a value whose magnitude is larger"):
        def keeps_first_two(W):
            N, K = W.shape
            groups = W.reshape(N, K // 4, 4).clone()
            groups[..., 2:] = 0
            return groups.reshape(N, K)

        lab1.check_prune_2to4(keeps_first_two)
    with pytest.raises(CheckFailed, match="changed its input"):
        def in_place(W):
            W.copy_(prune_2to4(W))
            return W

        lab1.check_prune_2to4(in_place)
    with pytest.raises(CheckFailed, match="shape"):
        lab1.check_prune_2to4(lambda W: prune_2to4(W).flatten())


# ---- lab 2 hints --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda s, d: twofour.dense_bytes(s, d), "dense size"),
        (lambda s, d: twofour.dense_bytes(s, d) // 2, "kept values alone"),
        (lambda s, d: packed_nbytes(s, d) * 8, "bits, not bytes"),
        (lambda s, d: s[0] * s[1] // 2 * (torch.empty((), dtype=d).element_size() * 8 + 4) // 8, "needs 2 bits"),
        (lambda s, d: packed_nbytes(s, d) + 1, "off by \\+1 bytes"),
        (lambda s, d: "many", "whole number of bytes"),
    ],
)
def test_packed_nbytes_hints(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab2.check_packed_nbytes(wrong)


def test_packed_nbytes_hint_never_prints_the_expected_number():
    expected = f"{twofour.packed_bytes((4096, 4096), torch.float16):,}"
    with pytest.raises(CheckFailed) as err:
        lab2.check_packed_nbytes(lambda s, d: 12345)
    assert expected not in str(err.value) and str(twofour.packed_bytes((4096, 4096), torch.float16)) not in str(err.value)


def test_pack_hints():
    with pytest.raises(CheckFailed, match="tuple"):
        lab2.check_pack_2to4(lambda W: pack_2to4(W)[0])
    with pytest.raises(CheckFailed, match=r"values must be \[N, K/2\]"):
        lab2.check_pack_2to4(lambda W: (pack_2to4(W)[0].float().double(), pack_2to4(W)[1]))
    with pytest.raises(CheckFailed, match="increase within a group"):
        lab2.check_pack_2to4(lambda W: (pack_2to4(W)[0], pack_2to4(W)[1].flip(-1)))
    with pytest.raises(CheckFailed, match="not the positions of that group's two non-zeros"):
        def first_two_positions(W):
            values, indices = pack_2to4(W)
            return values, torch.tensor([0, 1]).expand_as(indices).contiguous()

        lab2.check_pack_2to4(first_two_positions)
    with pytest.raises(CheckFailed, match="copied bit for bit"):
        lab2.check_pack_2to4(lambda W: (pack_2to4(W)[0].flip(-1), pack_2to4(W)[1]))


def test_pack_hint_for_dropping_fill_values_in_sparse_groups():
    def zero_fill_wrong(W):
        values, indices = pack_2to4(W)
        if (W != 0).reshape(W.shape[0], -1, 4).sum(-1).lt(2).any():
            values = values.clone()
            values[0, 2:4] = 7.0  # a filled slot must hold a zero
        return values, indices

    with pytest.raises(CheckFailed, match="does not come back"):
        lab2.check_pack_2to4(zero_fill_wrong)


def test_encode_meta_hints():
    with pytest.raises(CheckFailed, match="groups of each byte are swapped"):
        lab2.check_encode_meta(lambda idx: encode_meta(idx)[:, :].clone().apply_(lambda b: ((b >> 4) | (b << 4)) & 0xFF))
    with pytest.raises(CheckFailed, match="positions inside each group are swapped"):
        lab2.check_encode_meta(lambda idx: encode_meta(idx.flip(-1)))
    with pytest.raises(CheckFailed, match="uint8 tensor"):
        lab2.check_encode_meta(lambda idx: encode_meta(idx).to(torch.int64))
    with pytest.raises(CheckFailed, match="each group is 4 bits"):
        lab2.check_encode_meta(lambda idx: encode_meta(idx) ^ 1)


def test_unpack_hints():
    with pytest.raises(CheckFailed, match="comes back wrong"):
        lab2.check_unpack_2to4(lambda v, i, K: unpack_2to4(v, i.flip(-1), K))
    with pytest.raises(CheckFailed, match="shape"):
        lab2.check_unpack_2to4(lambda v, i, K: unpack_2to4(v, i, K).T)


# ---- notebooks ----------------------------------------------------------------------------

def test_doctests_of_lab_modules():
    for module in (_common, lab1, lab2):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__
