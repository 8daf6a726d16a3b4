"""Count N:M groups of a view whose elements share storage (``expand``, stride 0, ``as_strided``).

``w.expand(N, K)`` has row stride 0: a checkpoint of a few kilobytes can declare a
billion-element weight this way. Here the work is proportional to the storage the view
covers, not to its element count:

* flags and group counts are computed once per storage position (a group starting at
  position ``p`` holds the elements at ``p, p + s1, ..., p + (m-1) s1``);
* row ``r``'s groups start at ``r s0 + i D`` with ``D = m s1``: an arithmetic progression, so
  its sum is a difference of two prefix sums along the storage with step ``D``.

>>> import torch
>>> row = torch.tensor([1.0, 0.0, 2.0, 3.0])  # one group with 3 non-zeros
>>> W = row.expand(1000, 4)
>>> bad_per_row, nonzeros = count_by_storage(W, 2, 4)
>>> overlaps(W), int(bad_per_row.sum()), nonzeros
(True, 1000, 3000)
"""

from __future__ import annotations

import torch

from .groupcount import Scratch, lane_flags
from .tensors import blocks

__all__ = ["overlaps", "storage_span", "count_by_storage", "MAX_SPAN"]

# Storage positions a view may cover and still be counted this way (about 17 bytes of temporaries
# each: 70 MB); a larger one is refused, not expanded. ``w.expand(N, K)`` of a row reaches K.
MAX_SPAN = 1 << 22


def storage_span(W: torch.Tensor) -> int:
    """How many consecutive storage elements the view ``W`` reaches (its first to its last)."""
    return 0 if W.numel() == 0 else 1 + sum((size - 1) * stride for size, stride in zip(W.shape, W.stride()))


def overlaps(W: torch.Tensor) -> bool:
    """True when ``W`` has more elements than storage positions it reaches (some are shared)."""
    return W.numel() > 0 and storage_span(W) < W.numel()


def _progression_sums(values: torch.Tensor, starts: torch.Tensor, step: int, count: int) -> torch.Tensor:
    """``sum(values[s + i*step] for i < count)`` for every ``s`` in ``starts`` (int64)."""
    if step == 0:
        return values[starts].to(torch.int64) * count
    length = values.numel()
    rows = -(-length // step)
    padded = torch.zeros(rows * step, dtype=torch.int32, device=values.device)
    padded[:length] = values
    # prefix[q*step + c]: sum of class c up to q; int32 holds it (values <= 255, length <= MAX_SPAN)
    prefix = padded.view(rows, step).cumsum(dim=0, dtype=torch.int32).view(-1)
    del padded
    last = starts + (count - 1) * step
    before = starts - step
    total = prefix[last].to(torch.int64)
    total -= torch.where(before >= 0, prefix[before.clamp(min=0)], 0).to(torch.int64)
    return total


def count_by_storage(W: torch.Tensor, n: int, m: int) -> tuple[torch.Tensor, int]:
    """``(bad groups per row [N] int64, total non-zeros)`` of a 2-D view, in time ~ its storage span;
    ``ValueError`` when the view reaches more than ``MAX_SPAN`` storage positions."""
    N, K = W.shape
    s0, s1 = W.stride()
    if s0 == 0 and N > 1:
        # every row is the same storage (``w.expand(N, K)``): count one row; the per-row counts are
        # that row's, expanded (no memory per row: a tiny file can declare 10**9 rows)
        one, nonzeros = count_by_storage(W[:1], n, m)
        return one.expand(N), nonzeros * N
    G = K // m
    span = storage_span(W)
    if span > MAX_SPAN:
        raise ValueError(
            f"W is a view that reuses its storage (strides {tuple(W.stride())}) over {span:,} storage elements, "
            f"more than the {MAX_SPAN:,} this check handles without expanding it; pass W.contiguous() to check "
            "the expanded weight element by element"
        )
    base = torch.as_strided(W, (span,), (1,), W.storage_offset())
    flags = torch.empty(span, dtype=torch.uint8, device=W.device)  # non-zero, per storage position
    scratch = Scratch(W.device)
    for _, _, c0, c1 in blocks(1, span):
        flags[c0:c1] = lane_flags(base[c0:c1].contiguous().view(1, -1), scratch).view(-1)
    starts_last = (N - 1) * s0 + (G - 1) * m * s1  # the last group's first position
    length = starts_last + 1
    counts = torch.zeros(length, dtype=torch.int32, device=W.device)
    for j in range(m):
        counts += flags[j * s1 : j * s1 + length]
    bad = (counts > n).to(torch.int32)
    starts = torch.arange(N, device=W.device, dtype=torch.int64) * s0
    bad_per_row = _progression_sums(bad, starts, m * s1, G)
    nonzeros = int(_progression_sums(counts, starts, m * s1, G).sum())
    return bad_per_row.cpu(), nonzeros
