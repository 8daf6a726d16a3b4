"""Stage 1 of the answer: is the weight really N:M (2:4) along K?

A weight ``W`` of an ``nn.Linear`` has shape ``[out_features, in_features] = [N, K]`` and the
layer computes ``y = x @ W.T``. Sparse tensor cores need the *reduction* dimension K to be
sparse: every run of ``m`` consecutive elements of a row (a *group*) may hold at most ``n``
non-zeros (2:4 is ``n=2, m=4``); half the elements being zero is not enough.

PyTorch does not check this before packing a weight (its CUTLASS conversion silently drops the
extra non-zeros of a bad group), so :func:`check` is the careful first step. ``-0.0`` counts
as zero, NaN and inf as non-zero, decided on each dtype's bits (``twofour._passes.bits``).

>>> import torch, twofour
>>> W = torch.tensor([[1.0, 0.0, 2.0, 0.0], [1.0, 2.0, 3.0, 0.0]])
>>> twofour.check(W).valid
False
>>> W2, mask = twofour.prune(W)
>>> twofour.check(W2).valid
True
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import torch

from ._passes.groupcount import Scratch, bad_from_counts, block_counts, contiguous
from ._passes.overlap import count_by_storage, overlaps
from ._passes.tensors import blocks, dtype_name, nonzero_mask, require_nm, require_weight, same_size_int_view
from ._passes.threads import map_blocks, one_thread

__all__ = ["StructureReport", "GroupViolation", "check", "prune", "nonzeros_per_group"]

@dataclass(frozen=True)
class GroupViolation:
    """One group that breaks N:M: where it is, how many non-zeros it holds, and its values."""

    row: int
    group: int
    m: int
    nonzeros: int
    values: tuple

    @property
    def columns(self) -> tuple[int, int]:
        """Half-open column range ``[start, stop)`` of the group in ``W``."""
        return self.group * self.m, (self.group + 1) * self.m

    def __str__(self) -> str:
        start, stop = self.columns
        vals = ", ".join(_fmt(v) for v in self.values)
        return f"row {self.row}, group {self.group} (columns {start}-{stop - 1}): {self.nonzeros} non-zeros [{vals}]"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if v != 0 or str(v)[0] != "-" else "-0.0"
    return str(v)


@dataclass(frozen=True)
class StructureReport:
    """Result of :func:`check`: is the weight N:M along its last dimension, and if not, where not.

    Attributes:
        valid: True when every group holds at most ``n`` non-zeros.
        n, m: the pattern checked (``n`` non-zeros allowed per group of ``m``).
        shape, dtype: of the weight checked.
        num_groups: groups in the weight (``rows * K / m``).
        num_bad_groups: groups holding more than ``n`` non-zeros.
        bad_groups_per_row: int64 tensor ``[rows]``, offending groups in each row.
        bad_locations: int64 tensor ``[k, 2]`` of ``(row, group)`` of offending groups, in row-major
            order; capped at ``max_locations`` (see ``locations_complete``).
        examples: the first few offending groups with their values.
        nonzero_fraction: fraction of all elements that are non-zero (``-0.0`` is zero).
    """

    valid: bool
    n: int
    m: int
    shape: tuple[int, int]
    dtype: torch.dtype
    num_groups: int
    num_bad_groups: int
    bad_groups_per_row: torch.Tensor = field(repr=False)
    bad_locations: torch.Tensor = field(repr=False)
    examples: tuple[GroupViolation, ...] = field(repr=False)
    nonzero_fraction: float = 0.0

    @property
    def fraction_bad(self) -> float:
        """Fraction of groups that break N:M (0.0 for a valid weight)."""
        return self.num_bad_groups / self.num_groups

    @property
    def fraction_valid(self) -> float:
        """Fraction of groups that satisfy N:M."""
        return 1.0 - self.fraction_bad

    @property
    def locations_complete(self) -> bool:
        """False when more groups broke N:M than ``bad_locations`` holds."""
        return self.bad_locations.shape[0] == self.num_bad_groups

    @property
    def bad_rows(self) -> torch.Tensor:
        """Indices of rows with at least one offending group."""
        return torch.nonzero(self.bad_groups_per_row, as_tuple=False).flatten()

    def summary(self) -> str:
        """One line: the verdict and the counts."""
        pattern = f"{self.n}:{self.m}"
        shape = "x".join(map(str, self.shape))
        if self.valid:
            return (
                f"valid {pattern}: all {self.num_groups:,} groups of {shape} {dtype_name(self.dtype)} "
                f"hold at most {self.n} non-zeros ({self.nonzero_fraction:.1%} of elements non-zero)"
            )
        per_row = self.bad_groups_per_row
        # Rows that are all one stored row (stride 0) of an invalid report: that row breaks N:M, so every row does.
        rows = per_row.shape[0] if _repeated(per_row) else int((per_row > 0).sum())
        return (
            f"NOT {pattern}: {self.num_bad_groups:,} of {self.num_groups:,} groups "
            f"({self.fraction_bad:.2%}) hold more than {self.n} non-zeros, in {rows:,} of {self.shape[0]:,} rows "
            f"of {shape} {dtype_name(self.dtype)}"
        )

    def __str__(self) -> str:
        lines = [self.summary()]
        if not self.valid:
            lines.append(f"first offending groups (of {self.num_bad_groups:,}):")
            lines += [f"  {v}" for v in self.examples]
            lines.append("fix: twofour.prune(W) keeps the n largest-magnitude values of every group")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colour = "#1b7f3b" if self.valid else "#b3261e"
        head = f'<p><strong style="color:{colour}">{html.escape(self.summary())}</strong></p>'
        if self.valid:
            return head
        rows = []
        for v in self.examples:
            cells = "".join(
                f'<td style="padding:2px 6px;{"background:#f6d5d2;" if x != 0 else ""}">{html.escape(_fmt(x))}</td>'
                for x in v.values
            )
            start, stop = v.columns
            rows.append(
                f"<tr><td>{v.row}</td><td>{v.group}</td><td>{start}&ndash;{stop - 1}</td><td>{v.nonzeros}</td>{cells}</tr>"
            )
        header_vals = "".join(f"<th>k+{i}</th>" for i in range(self.m))
        table = (
            "<table><thead><tr><th>row</th><th>group</th><th>columns</th><th>non-zeros</th>"
            f"{header_vals}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        more = self.num_bad_groups - len(self.examples)
        return head + table + (f"<p>&hellip; and {more:,} more offending groups.</p>" if more > 0 else "")


def _repeated(per_row: torch.Tensor) -> bool:
    """Whether per-row counts are one row's, expanded (stride 0): every row is row 0, never expanded here."""
    return per_row.dim() == 1 and per_row.shape[0] > 1 and per_row.stride(0) == 0


def _bad(counts: torch.Tensor, n: int, m: int) -> torch.Tensor:
    return bad_from_counts(counts, n) if m < 256 else counts > n


def nonzeros_per_group(W: torch.Tensor, m: int = 4) -> torch.Tensor:
    """Count the non-zeros in every group of ``m`` consecutive elements along the last dimension.

    Returns an integer tensor of shape ``[rows, K // m]`` (uint8 for ``m < 256``), handy for a
    heatmap of where a weight breaks N:M.

    >>> nonzeros_per_group(torch.tensor([[1.0, 0.0, 2.0, 3.0]])).tolist()
    [[3]]
    """
    require_nm(1, m)
    W = require_weight(W, m)
    rows, K = W.shape
    out = torch.empty((rows, K // m), dtype=torch.uint8 if m < 256 else torch.int64, device=W.device)

    def count(block, scratch):
        r0, r1, c0, c1 = block
        out[r0:r1, c0 // m : c1 // m] = block_counts(contiguous(W[r0:r1, c0:c1], scratch), m, scratch)

    map_blocks(count, blocks(rows, K, unit=m), state=lambda: Scratch(W.device), device=W.device)
    return out


# Elements per block of check()'s count: its per-block cost is mostly fixed, so larger
# blocks than pack's are faster.
_COUNT_BLOCK = 1 << 20


def _count_blocks(W: torch.Tensor, n: int, m: int):
    """``(bad groups per row, total non-zeros, the blocks holding bad groups)`` of a non-overlapping ``W``."""
    rows, K = W.shape
    items = list(blocks(rows, K, unit=m, target_elems=min(max(rows * K // 16, 1 << 16), _COUNT_BLOCK)))

    def count(block, scratch):
        r0, r1, c0, c1 = block
        counts = block_counts(contiguous(W[r0:r1, c0:c1], scratch), m, scratch)
        nonzeros = int(counts.sum(dtype=torch.int32))  # a block holds at most 2**21 elements
        per_row = _bad(counts, n, m).sum(dim=1, dtype=torch.int32)
        return nonzeros, per_row, int(per_row.sum())

    results = map_blocks(count, items, state=lambda: Scratch(W.device), device=W.device)
    nonzeros = sum(nz for nz, _, _ in results)
    bad_per_row = torch.zeros(rows, dtype=torch.int64, device=W.device)
    for (r0, r1, _, _), (_, per_row, _) in zip(items, results):
        bad_per_row[r0:r1] += per_row
    return bad_per_row, nonzeros, [item for item, (_, _, bad) in zip(items, results) if bad]


# Elements check() reads at most to list the bad groups of a self-overlapping view
# (whose element count can dwarf its storage).
_OVERLAP_LOCATION_BUDGET = 1 << 24


def _locations(W, n: int, m: int, candidates, max_locations: int, budget: float) -> list[torch.Tensor]:
    """``(row, group)`` of the first ``max_locations`` bad groups, reading again (in order, at most
    ``budget`` elements) only the candidate blocks that counting found bad groups in."""
    locations: list[torch.Tensor] = []
    n_locations = 0
    scratch = Scratch(W.device)
    for r0, r1, c0, c1 in candidates:
        if n_locations >= max_locations or budget <= 0:
            break
        counts = block_counts(contiguous(W[r0:r1, c0:c1], scratch), m, scratch)
        budget -= (r1 - r0) * (c1 - c0)
        where = torch.nonzero(_bad(counts, n, m), as_tuple=False)[: max_locations - n_locations]
        where += torch.tensor([r0, c0 // m], device=where.device)
        locations.append(where)
        n_locations += where.shape[0]
    return locations


def _bad_row_runs(per_row: torch.Tensor):
    """``(r0, r1)`` runs of consecutive rows with a bad group, in order; identical rows (stride 0)
    are one run, never expanded into an index list.

    >>> list(_bad_row_runs(torch.tensor([0, 2, 1, 0, 0, 3])))
    [(1, 3), (5, 6)]
    """
    if _repeated(per_row):
        if int(per_row[0]):
            yield 0, per_row.shape[0]
        return
    rows = torch.nonzero(per_row).flatten()
    if rows.numel() == 0:
        return
    breaks = (torch.nonzero(rows[1:] - rows[:-1] != 1).flatten() + 1).tolist()
    starts, ends = [0, *breaks], [*breaks, rows.numel()]
    for a, b in zip(starts, ends):
        yield int(rows[a]), int(rows[b - 1]) + 1


# Elements per block when listing the bad groups of a self-overlapping view: whole runs of rows
# at a time, not one Python step per row (10-30 s for a million locations).
_OVERLAP_BLOCK_ELEMS = 1 << 16


def _overlap_candidates(K: int, m: int, bad_per_row: torch.Tensor):
    for r0, r1 in _bad_row_runs(bad_per_row):
        for b0, b1, c0, c1 in blocks(r1 - r0, K, unit=m, target_elems=_OVERLAP_BLOCK_ELEMS):
            yield r0 + b0, r0 + b1, c0, c1


def check(
    W: torch.Tensor,
    n: int = 2,
    m: int = 4,
    *,
    max_examples: int = 8,
    max_locations: int = 1_000_000,
) -> StructureReport:
    """Check that ``W`` is N:M sparse along its last dimension (K, ``in_features``).

    Every group of ``m`` consecutive elements of a row may hold at most ``n`` non-zeros (``-0.0`` is
    zero, NaN and inf are not). ``W`` is read in cache-sized blocks, never modified or copied whole;
    a transposed or sliced ``W`` is copied block by block, and a view that reuses its storage
    (``expand``, stride 0) is counted by its storage, in time proportional to what is stored.

    Args:
        W: 2-D weight ``[out_features, in_features]``, any supported dtype, CPU or CUDA.
        n: allowed non-zeros per group (2 for 2:4).
        m: group size (4 for 2:4).
        max_examples: offending groups kept with their values in the report.
        max_locations: cap on stored ``(row, group)`` locations (counts stay exact).

    Returns:
        A :class:`StructureReport`; ``report.valid`` is the verdict, ``print(report)`` explains it.

    >>> W = torch.tensor([[0.5, 0.0, 0.0, -1.0, 1.0, 2.0, 3.0, 0.0]])
    >>> r = check(W)
    >>> r.valid, r.num_bad_groups, r.examples[0].group
    (False, 1, 1)
    """
    require_nm(n, m)
    W = require_weight(W, m)
    for name, value in (("max_examples", max_examples), ("max_locations", max_locations)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    rows, K = W.shape
    if overlaps(W):
        with one_thread():
            bad_per_row, nonzeros = count_by_storage(W, n, m)
        candidates, budget = _overlap_candidates(K, m, bad_per_row), _OVERLAP_LOCATION_BUDGET
    else:
        bad_per_row, nonzeros, candidates = _count_blocks(W, n, m)
        budget = float("inf")
    num_bad = int(bad_per_row[0]) * rows if _repeated(bad_per_row) else int(bad_per_row.sum())
    locations = []
    if num_bad and max_locations:
        with one_thread():
            locations = _locations(W, n, m, candidates, max_locations, budget)
    bad_locations = torch.cat(locations).cpu() if locations else torch.zeros((0, 2), dtype=torch.int64)
    examples = tuple(_violation(W, int(r), int(g), m) for r, g in bad_locations[:max_examples].tolist())
    return StructureReport(
        valid=num_bad == 0,
        n=n,
        m=m,
        shape=(rows, K),
        dtype=W.dtype,
        num_groups=rows * (K // m),
        num_bad_groups=num_bad,
        bad_groups_per_row=bad_per_row.cpu(),
        bad_locations=bad_locations,
        examples=examples,
        nonzero_fraction=nonzeros / W.numel(),
    )


def _violation(W: torch.Tensor, row: int, group: int, m: int) -> GroupViolation:
    vals = W[row, group * m : (group + 1) * m]
    nz = int(nonzero_mask(vals).sum())
    if vals.dtype.is_floating_point and vals.element_size() == 1:
        vals = vals.float()  # float8 has no .tolist() on some builds
    return GroupViolation(row=row, group=group, m=m, nonzeros=nz, values=tuple(vals.cpu().tolist()))


def _scores_for_ranking(t: torch.Tensor) -> torch.Tensor:
    """|t| in a dtype where abs is exact and sortable: integers as int64 (float32 would round past
    2^24; |-2^63| is taken as 2^63 - 1), float8 widened.

    >>> _scores_for_ranking(torch.tensor([2**30 + 1, 2**30, -(2**30 + 3), 2**30 + 2], dtype=torch.int32)).tolist()
    [1073741825, 1073741824, 1073741827, 1073741826]
    """
    if not t.is_floating_point():
        return t.to(torch.int64).clamp(min=-torch.iinfo(torch.int64).max).abs()
    return (t if t.element_size() > 1 else t.to(torch.float32)).abs()


def prune(
    W: torch.Tensor,
    n: int = 2,
    m: int = 4,
    scores: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Prune ``W`` to N:M along its last dimension; return ``(W_pruned, mask)``.

    In every group of ``m`` consecutive elements of a row, the ``n`` elements with the largest
    ``|score|`` are kept and the others set to ``+0.0``. ``scores=None`` means magnitude pruning;
    pass any tensor of ``W``'s shape for another criterion, for example the activation-aware
    score ``W.abs() * x_norm`` (Wanda-style, ``x_norm[k]`` the L2 norm of input feature ``k``).

    Among equal scores the lower column is kept, so the result is deterministic on every device.
    ``mask`` is a bool tensor of ``W``'s shape with exactly ``n`` True per group. ``W`` is not
    modified; the result is a new tensor of the same dtype and device.

    Args:
        W: 2-D weight ``[out_features, in_features]``.
        n, m: keep ``n`` of every ``m`` (2:4 by default).
        scores: optional ranking scores, same shape as ``W``; must not contain NaN.

    >>> W = torch.tensor([[0.1, -3.0, 2.0, 0.5]])
    >>> Wp, mask = prune(W)
    >>> Wp.tolist(), mask.tolist()
    ([[0.0, -3.0, 2.0, 0.0]], [[False, True, True, False]])
    """
    require_nm(n, m)
    W = require_weight(W, m)
    if scores is not None:
        if not isinstance(scores, torch.Tensor):
            raise TypeError(f"scores must be a torch.Tensor of W's shape {tuple(W.shape)}, got {type(scores).__name__}")
        if scores.is_nested or scores.layout != torch.strided:
            raise TypeError(f"scores must be a dense (strided) tensor of W's shape {tuple(W.shape)}, got "
                            f"{'a nested tensor' if scores.is_nested else f'layout {scores.layout}'}")
        if scores.shape != W.shape:
            raise ValueError(
                f"scores must have W's shape {tuple(W.shape)} (one score per weight), got {tuple(scores.shape)}"
            )
        if scores.is_complex() or scores.dtype == torch.bool:
            raise TypeError(f"scores must be real numbers, got dtype {scores.dtype}")
        if scores.device != W.device:
            raise ValueError(f"scores is on {scores.device} but W is on {W.device}; move one of them")
    source = W if scores is None else scores.detach()
    rows, K = W.shape
    mask = torch.empty((rows, K), dtype=torch.bool, device=W.device)
    bits = same_size_int_view(W)
    pruned_bits = torch.empty((rows, K), dtype=bits.dtype, device=W.device)
    zero = torch.zeros((), dtype=bits.dtype, device=W.device)

    def prune_block(block, _state):
        r0, r1, c0, c1 = block
        rank_by = _scores_for_ranking(source[r0:r1, c0:c1])
        if rank_by.is_floating_point():
            nan = torch.isnan(rank_by)
            if bool(nan.any()):
                where = torch.nonzero(nan)[0].tolist()
                return where[0] + r0, where[1] + c0  # reported in order below
        groups = rank_by.reshape(r1 - r0, (c1 - c0) // m, m)
        # A stable descending sort keeps the lower index first among equal scores.
        order = torch.sort(groups, dim=-1, descending=True, stable=True).indices[..., :n]
        block_mask = torch.zeros_like(groups, dtype=torch.bool).scatter_(-1, order, True).view(r1 - r0, c1 - c0)
        mask[r0:r1, c0:c1] = block_mask
        # Select on the integer view: exact for every dtype (float8 included) and yields +0.0.
        torch.where(block_mask, bits[r0:r1, c0:c1], zero, out=pruned_bits[r0:r1, c0:c1])
        return None

    nans = map_blocks(prune_block, blocks(rows, K, unit=m), state=lambda: None, device=W.device)
    first_nan = next((where for where in nans if where is not None), None)
    if first_nan is not None:
        what = "W" if scores is None else "scores"
        raise ValueError(
            f"{what} contains NaN (first at row {first_nan[0]}, column {first_nan[1]}); "
            "a NaN has no magnitude to rank, so fix or mask it before pruning"
        )
    return pruned_bits.view(W.dtype), mask
