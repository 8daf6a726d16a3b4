"""What a lossy step did to a weight: how much of it survived, and how far the layer's output moved.

Pruning (on purpose): :func:`mass_kept`. Packing an invalid weight with PyTorch's CUTLASS conversion
(by accident): :func:`silent_drop` measures what :func:`pytorch_cutlass_roundtrip` silently dropped.

>>> import torch
>>> W = torch.tensor([[1.0, 2.0, 3.0, 0.0] * 16] * 32, dtype=torch.float16)  # 3 non-zeros per group
>>> # PyTorch keeps positions 0 and 1 of each group: the largest value, 3.0, is the one dropped
>>> report = silent_drop(W, torch.ones(2, 64))
>>> report.elements_dropped, round(report.mass_lost, 3)
(512, 0.5)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from .._passes.tensors import nonzero_mask, require_weight

__all__ = ["MassKept", "mass_kept", "relative_output_error", "pytorch_cutlass_roundtrip", "SilentDrop", "silent_drop"]


@dataclass(frozen=True)
class MassKept:
    """Fractions of a weight that survived a lossy step (1.0 = nothing lost): ``l1`` of its magnitude,
    ``sum|W_after| / sum|W|``, and ``l2`` of its energy, ``sum W_after**2 / sum W**2``.
    """

    l1: float
    l2: float


def _require_pair(W: torch.Tensor, W_after: torch.Tensor, after_name: str) -> None:
    require_weight(W, 1)
    require_weight(W_after, 1, arg=after_name)
    if W_after.shape != W.shape:
        raise ValueError(f"{after_name} must have W's shape {tuple(W.shape)}, got {tuple(W_after.shape)}")


def mass_kept(W: torch.Tensor, W_after: torch.Tensor) -> MassKept:
    """How much of ``W``'s magnitude and energy ``W_after`` (e.g. a pruned copy) kept (sums in float64).

    >>> W = torch.tensor([[3.0, -1.0, 0.0, 2.0]])
    >>> mass_kept(W, torch.tensor([[3.0, 0.0, 0.0, 2.0]]))
    MassKept(l1=0.8333333333333334, l2=0.9285714285714286)
    """
    _require_pair(W, W_after, "W_after")
    before, after = W.to(torch.float64), W_after.to(torch.float64)
    l1_total, l2_total = float(before.abs().sum()), float(before.pow(2).sum())
    if l1_total == 0:
        raise ValueError("W is all zeros, so no fraction of it can be kept or lost")
    return MassKept(l1=float(after.abs().sum()) / l1_total, l2=float(after.pow(2).sum()) / l2_total)


def relative_output_error(W: torch.Tensor, W_after: torch.Tensor, x: torch.Tensor) -> float:
    """``||x @ W_after.T - x @ W.T|| / ||x @ W.T||`` (Frobenius), in float32: 16-bit matmuls are slow on
    many CPUs and add their own rounding.

    >>> W = torch.eye(4)
    >>> relative_output_error(W, 0.5 * W, torch.ones(3, 4))
    0.5
    """
    _require_pair(W, W_after, "W_after")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != W.shape[1]:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a 2-D tensor [M, K] with K = W.shape[1] = {W.shape[1]}, got {got}")
    x32 = x.to(torch.float32)
    y = x32 @ W.to(torch.float32).T
    y_after = x32 @ W_after.to(torch.float32).T
    reference = float(torch.linalg.norm(y))
    if reference == 0:
        raise ValueError("x @ W.T is all zeros, so a relative error is undefined; use other x or W")
    return float(torch.linalg.norm(y_after - y)) / reference


def pytorch_cutlass_roundtrip(W: torch.Tensor) -> torch.Tensor:
    """Pack ``W`` with PyTorch's CUTLASS conversion and unpack it again, on ``W``'s device (CPU too). The
    conversion does not check the 2:4 pattern: a group with more than two non-zeros comes back with two.

    >>> W = torch.tensor([[1.0, 2.0, 3.0, 4.0] * 16] * 32, dtype=torch.float16)
    >>> pytorch_cutlass_roundtrip(W)[0, :4].tolist()   # no error, two values silently gone
    [1.0, 2.0, 0.0, 0.0]
    """
    # Imported here: a private module, so an import error should name this function.
    from torch.sparse._semi_structured_conversions import (
        sparse_semi_structured_from_dense_cutlass,
        sparse_semi_structured_to_dense_cutlass,
    )

    require_weight(W, 4)
    multiples = {torch.float16: (32, 64), torch.bfloat16: (32, 64), torch.int8: (16, 128)}
    if W.dtype not in multiples:
        raise TypeError(f"W must be float16, bfloat16 or int8 for PyTorch's 2:4 CUTLASS conversion, got {W.dtype}")
    rows_multiple, cols_multiple = multiples[W.dtype]
    if W.shape[0] % rows_multiple or W.shape[1] % cols_multiple:
        raise ValueError(
            f"W of shape {tuple(W.shape)} does not fit PyTorch's CUTLASS conversion for {W.dtype}: rows must be a "
            f"multiple of {rows_multiple} and columns a multiple of {cols_multiple}"
        )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*prototype.*", category=UserWarning)
        values, meta = sparse_semi_structured_from_dense_cutlass(W.contiguous())
        return sparse_semi_structured_to_dense_cutlass(values, meta)


@dataclass(frozen=True)
class SilentDrop:
    """What PyTorch's CUTLASS round trip did to a weight (:func:`silent_drop`): ``elements_dropped``,
    non-zeros of ``W`` that came back zero, in ``groups_hit`` of ``num_groups`` groups of 4; ``mass_lost``,
    ``energy_lost``: ``1 -`` :class:`MassKept`'s fractions; ``output_error``: relative error of
    ``x @ W_back.T``; ``exact``: W came back unchanged (``-0.0`` may become ``+0.0``)."""

    elements_dropped: int
    groups_hit: int
    num_groups: int
    mass_lost: float
    energy_lost: float
    output_error: float
    exact: bool

    def __str__(self) -> str:
        if self.exact:
            return "round trip exact: nothing was dropped"
        return (
            f"{self.elements_dropped:,} non-zeros silently dropped in {self.groups_hit:,} of {self.num_groups:,} "
            f"groups ({self.groups_hit / self.num_groups:.1%}); {self.mass_lost:.1%} of sum|W| and "
            f"{self.energy_lost:.1%} of sum W^2 lost; output x @ W.T off by {self.output_error:.1%} (relative)"
        )


def silent_drop(W: torch.Tensor, x: torch.Tensor) -> SilentDrop:
    """Round-trip ``W`` (as for :func:`pytorch_cutlass_roundtrip`) and measure what was silently lost;
    ``x``: ``[M, K]`` for the output error."""
    W_back = pytorch_cutlass_roundtrip(W)
    dropped = nonzero_mask(W) & ~nonzero_mask(W_back)
    N, K = W.shape
    kept = mass_kept(W, W_back)
    return SilentDrop(
        elements_dropped=int(dropped.sum()),
        groups_hit=int(dropped.view(N, K // 4, 4).any(-1).sum()),
        num_groups=N * K // 4,
        mass_lost=1.0 - kept.l1,
        energy_lost=1.0 - kept.l2,
        output_error=relative_output_error(W, W_back, x),
        exact=bool(torch.equal(W_back, W)),
    )
