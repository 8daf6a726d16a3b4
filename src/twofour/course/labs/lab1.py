"""Lab 1, "Find the broken groups": checkers for the learner's 2:4 validity check and pruner.

The learner writes ``find_bad_groups(W) -> list[(row, group)]`` and ``prune_2to4(W) -> Tensor``;
the checkers run them on :func:`weights` and compare with :func:`twofour.check` and :func:`twofour.prune`.

>>> from twofour.course.labs import lab1
>>> sorted(lab1.weights())[:2]
['fp16_few_nonzeros', 'negative_zeros']
"""

from __future__ import annotations

import torch

from ..._passes.tensors import same_size_int_view
from ...structure import check, nonzeros_per_group, prune
from ._common import CheckFailed, exercise_check

__all__ = ["weights", "check_find_bad_groups", "check_prune_2to4"]

SEED = 1234
# Where "three_in_a_few" gets a third non-zero: (row, group), fixed so the lab text can name one.
_PLANTED = ((3, 1), (12, 7), (29, 14))


def _gen(offset: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(SEED + offset)


def weights() -> dict[str, torch.Tensor]:
    """The lab's weights, ``[out, in] = [32, 64]`` unless noted, rebuilt identically on every call.

    * ``valid``: magnitude-pruned 2:4 along K.
    * ``transposed``: 2:4 along the *other* dimension (groups of 4 rows), then stored ``[out, in]``.
    * ``three_in_a_few``: valid except three groups that hold a third non-zero.
    * ``negative_zeros``: valid 2:4 whose zeros are all ``-0.0`` (as some checkpoints store them).
    * ``unstructured_half``: exactly half zeros, wherever the smallest magnitudes were.
    * ``fp16_few_nonzeros``: float16, groups with 0, 1 or 2 non-zeros (fewer than 2 is fine).
    """
    valid = prune(torch.randn(32, 64, generator=_gen(0)))[0]
    three = valid.clone()
    for row, group in _PLANTED:
        cols = range(4 * group, 4 * group + 4)
        zero_col = next(c for c in cols if three[row, c] == 0)
        three[row, zero_col] = 0.5 + torch.rand((), generator=_gen(2)).item()
    flat = torch.randn(32 * 64, generator=_gen(3))
    flat[flat.abs().sort(stable=True).indices[: flat.numel() // 2]] = 0.0
    few = prune(torch.randn(32, 64, generator=_gen(4)))[0]
    few = torch.where(torch.rand(32, 64, generator=_gen(5)) < 0.6, few, 0.0).to(torch.float16)
    return {
        "valid": valid,
        "transposed": prune(torch.randn(64, 32, generator=_gen(1)))[0].T.contiguous(),
        "three_in_a_few": three,
        "negative_zeros": torch.where(valid == 0, torch.full_like(valid, -0.0), valid),
        "unstructured_half": flat.view(32, 64),
        "fp16_few_nonzeros": few,
    }


def _as_locations(result, name: str) -> set[tuple[int, int]]:
    """The learner's answer as a set of (row, group) pairs, or a hint about its type."""
    if isinstance(result, torch.Tensor):
        if result.dim() == 2 and result.shape[1] == 2 and not result.is_floating_point():
            return {tuple(int(v) for v in pair) for pair in result.tolist()}
        raise CheckFailed(
            f"on weight {name!r}: got a tensor of shape {tuple(result.shape)} and dtype {result.dtype}; return a "
            "list of (row, group) pairs of ints (a [k, 2] integer tensor works too)"
        )
    if isinstance(result, (bool, int, float)) or result is None:
        raise CheckFailed(
            f"on weight {name!r}: got {result!r}; return the list of offending (row, group) pairs, not a verdict "
            "(an empty list means the weight is valid)"
        )
    try:
        return {(int(r), int(g)) for r, g in result}
    except (TypeError, ValueError):
        raise CheckFailed(
            f"on weight {name!r}: could not read the answer as (row, group) pairs; return e.g. [(3, 1), (12, 7)]"
        ) from None


def _bad_groups(W: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(r), int(g)) for r, g in check(W).bad_locations.tolist()}


@exercise_check("find_bad_groups")
def check_find_bad_groups(find_bad_groups) -> str:
    """Run the learner's ``find_bad_groups`` on every lab weight and explain the first mistake.

    >>> check_find_bad_groups(lambda W: [])   # "every weight is valid": wrong  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: on weight 'transposed': you missed group ...
    """
    cases = weights()
    for name, W in cases.items():
        before = W.clone()
        got = _as_locations(find_bad_groups(W), name)
        if not torch.equal(same_size_int_view(W), same_size_int_view(before)):  # bits: -0.0 must stay -0.0
            raise CheckFailed(f"on weight {name!r}: your function changed W; a check must only read it")
        want = _bad_groups(W)
        if got == want:
            continue
        counts = nonzeros_per_group(W)
        # what someone who grouped along dim 0 would report (the mistake the transposed case catches)
        along_dim_0 = set() if W.shape[0] % 4 else _bad_groups(W.T.contiguous())
        if got and (got == along_dim_0 or got == {(g, r) for r, g in along_dim_0}):
            raise CheckFailed(
                f"on weight {name!r}: you grouped 4 consecutive *rows* (dimension 0). W is [out, in] and the "
                "hardware needs the groups along in_features, K: 4 consecutive elements of one row"
            )
        missed = sorted(want - got)
        if missed:
            r, g = missed[0]
            raise CheckFailed(
                f"on weight {name!r}: you missed group ({r}, {g}): it has {int(counts[r, g])} non-zeros "
                f"(columns {4 * g}-{4 * g + 3} of row {r}); {len(missed)} group(s) missed in all"
            )
        r, g = min(got - want)
        n_groups = W.shape[1] // 4
        if not (0 <= r < W.shape[0] and 0 <= g < n_groups):
            raise CheckFailed(
                f"on weight {name!r}: ({r}, {g}) is not a group of W: rows run 0..{W.shape[0] - 1} and groups "
                f"0..{n_groups - 1} (group g covers columns 4g..4g+3)"
            )
        group = W[r, 4 * g : 4 * g + 4]
        has_negative_zero = bool(((group == 0) & torch.signbit(group)).any())
        hint = (
            " It holds -0.0, which is zero (-0.0 == 0 is True); a test on the raw bits counts it as non-zero."
            if has_negative_zero
            else " A group is bad only with more than 2 non-zeros; 2 or fewer is fine."
        )
        raise CheckFailed(
            f"on weight {name!r}: you flagged group ({r}, {g}), which has only {int(counts[r, g])} non-zero(s).{hint}"
        )
    n_valid = sum(check(W).valid for W in cases.values())
    return f"all {len(cases)} weights judged right: {n_valid} valid, {len(cases) - n_valid} not 2:4"


@exercise_check("prune_2to4")
def check_prune_2to4(prune_2to4) -> str:
    """Run the learner's ``prune_2to4`` on random weights and explain the first mistake.

    >>> check_prune_2to4(lambda W: W.clone())   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: on the random float32 weight: the result is not 2:4: group (0, 0) still has 4 non-zeros
    """
    cases = {
        "random float32": torch.randn(32, 64, generator=_gen(10)),
        "random float16": torch.randn(32, 64, generator=_gen(11)).to(torch.float16),
        "already 2:4": prune(torch.randn(32, 64, generator=_gen(12)))[0],
    }
    for name, W in cases.items():
        before = W.clone()
        got = prune_2to4(W)
        if not torch.equal(W, before):
            raise CheckFailed(f"on the {name} weight: your function changed its input; return a new tensor instead")
        if not isinstance(got, torch.Tensor):
            raise CheckFailed(f"on the {name} weight: return a torch.Tensor, got {type(got).__name__}")
        if got.shape != W.shape or got.dtype != W.dtype:
            raise CheckFailed(
                f"on the {name} weight: the result must keep W's shape {tuple(W.shape)} and dtype {W.dtype}, "
                f"got {tuple(got.shape)} {got.dtype}"
            )
        report = check(got)
        mask = prune(W)[1]
        if not report.valid:
            if check(got.T.contiguous()).valid:
                raise CheckFailed(
                    f"on the {name} weight: your result is 2:4 along the rows' direction (dimension 0). Groups "
                    "must be 4 consecutive elements of one row (along K, the last dimension)"
                )
            first = report.examples[0]
            raise CheckFailed(
                f"on the {name} weight: the result is not 2:4: group ({first.row}, {first.group}) still has "
                f"{first.nonzeros} non-zeros"
            )
        kept = got != 0
        changed = kept & (got != W)
        if bool(changed.any()):
            r, c = torch.nonzero(changed)[0].tolist()
            raise CheckFailed(
                f"on the {name} weight: element ({r}, {c}) was kept but its value changed; pruning only sets "
                "elements to zero"
            )
        if torch.equal(kept, mask):
            continue
        # prune() ranks by |score|; a positive shift of W ranks by signed value instead.
        signed = W.to(torch.float32)
        if torch.equal(kept, prune(W, scores=signed - signed.min() + 1)[1]):
            raise CheckFailed(
                f"on the {name} weight: you kept the 2 largest *values*; keep the 2 largest *magnitudes* "
                "(a weight of -3 matters more than one of 2)"
            )
        r, g = torch.nonzero((kept != mask).view(W.shape[0], -1, 4).any(-1))[0].tolist()
        raise CheckFailed(
            f"on the {name} weight: in row {r}, group {g} (columns {4 * g}-{4 * g + 3}) you dropped a value whose "
            "magnitude is larger than one you kept"
        )
    return f"prune_2to4 keeps the 2 largest magnitudes of every group on {len(cases)} weights"
