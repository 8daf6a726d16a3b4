"""compressed-tensors' ``pack-quantized`` weights (W4A16, W8A16): their 2:4 structure, read from the packed integers.

A ``pack-quantized`` layer stores ``weight_packed`` (int32 ``[N, ceil(K * bits / 32)]``: each
value offset by ``2**(bits-1)`` to unsigned and packed lowest bits first, as compressed-tensors'
``pack_to_int32`` writes it), ``weight_shape`` (N, K), ``weight_scale`` and, when asymmetric,
``weight_zero_point`` packed the same way along N. A weight is zero where its quantized value
equals its zero point (0 when symmetric), so the 2:4 structure is read from the integers alone.

>>> q = torch.tensor([[0, 3, 0, -2, 0, 0, 1, 1]], dtype=torch.int8)
>>> packed = ((q.to(torch.int32) + 8) << (4 * torch.arange(8, dtype=torch.int32))).sum(-1, keepdim=True, dtype=torch.int32)
>>> unpack(packed, 4, 1, 8).tolist()
[[0, 3, 0, -2, 0, 0, 1, 1]]
>>> count_24(packed, (1, 8), None, "fc")
(2, 0)
"""

from __future__ import annotations

import torch

from .._common.text import printable
from ._bitmask import CompressedError

__all__ = ["bits_of", "unpack", "count_24"]


def bits_of(packed_cols: int, K: int) -> int | None:
    """The bits per value that make ``K`` values fill ``packed_cols`` int32 columns (4 or 8), or None."""
    return next((bits for bits in (4, 8) if packed_cols == -(-K * bits // 32)), None)


def unpack(packed: torch.Tensor, bits: int, rows: int, cols: int) -> torch.Tensor:
    """``[rows, cols]`` int8 signed values from int32 words packed along the last dimension."""
    per = 32 // bits
    shifts = torch.arange(per, dtype=torch.int32) * bits
    u = (packed.to(torch.int32).unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    return (u.reshape(packed.shape[0], -1)[:rows, :cols] - (1 << (bits - 1))).to(torch.int8)


def count_24(packed: torch.Tensor, shape, zero_point: torch.Tensor | None, layer: str) -> tuple[int, int]:
    """``(groups of four along K, groups with more than two non-zero weights)`` of a pack-quantized weight
    (``weight_packed``'s shape and dtype checked against ``shape`` when the checkpoint was opened)."""
    N, K = shape
    name = printable(layer, 120)
    bits = bits_of(packed.shape[1], K)
    if K % 4:
        raise CompressedError(f"{name}: K = {K} is not a multiple of 4, so it cannot be 2:4 along K")
    q = unpack(packed, bits, N, K)
    if zero_point is None:
        nonzero = q != 0
    else:
        if zero_point.dim() != 2 or zero_point.dtype != torch.int32 or zero_point.shape[1] < 1 or K % zero_point.shape[1]:
            raise CompressedError(f"{name}: weight_zero_point must be int32 [ceil(N*bits/32), groups] with K a multiple "
                                  f"of the groups, got {'x'.join(map(str, zero_point.shape))}")
        groups = zero_point.shape[1]
        zp = unpack(zero_point.t().contiguous(), bits, groups, N).t()  # packed along N
        nonzero = q != zp.repeat_interleave(K // groups, dim=1)
    counts = nonzero.reshape(N, K // 4, 4).sum(-1)
    return N * K // 4, int((counts > 2).sum())
