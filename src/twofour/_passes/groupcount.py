"""Non-zeros per group of ``m``, counted with integer arithmetic on whole words.

``twofour.check`` and the audit spend their time here. Comparisons and reductions over a tiny
innermost dimension are slow in PyTorch on a CPU (``x != 0``: 10-20x an in-place integer add),
so a block goes through three cheap steps instead:

1. **lane flags** (:func:`lane_flags`): on the elements' bits as signed integers, clear the
   sign bit where ``-0.0`` is zero, add ``0x7F..F``: the top bit is now set exactly when the
   element is non-zero (integers and fnuz floats also OR in their own bits). Shifted down: one
   byte, 0 or 1, per element.
2. **group words**: the ``m`` flag bytes of a group are one 2-, 4- or 8-byte integer; one
   multiply by ``0x01..01`` adds them into the top byte: the group's count, with no reduction.
3. ``(count + 511 - n) >> 9`` is 1 exactly when a group holds more than ``n``.

Every operation writes into buffers allocated once per pass (:class:`Scratch`), with 0-d tensor
constants: PyTorch's vectorised in-place paths, no page fault per block.

>>> W = torch.tensor([[0.0, -0.0, 1.0, 2.0, 1.0, 2.0, 3.0, 0.0]], dtype=torch.float16)
>>> block_counts(W, 4, Scratch(W.device)).tolist()
[[2, 3]]
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from .bits import sign_bit_counts, signed_int_view

__all__ = ["Scratch", "contiguous", "const", "lane_flags", "block_counts", "bad_from_counts", "WORD_OF_M"]

# A group of m one-byte flags read as one integer word.
WORD_OF_M = {2: torch.int16, 4: torch.int32, 8: torch.int64}


class Scratch:
    """Buffers reused by every block of one pass, so each is allocated (and faulted in) once; views
    are cached by name, dtype and shape (a pass's blocks have one or two shapes).

    >>> s = Scratch(torch.device("cpu"))
    >>> s.get("a", torch.int32, (2, 3)).shape
    torch.Size([2, 3])
    """

    def __init__(self, device=None):
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self._buffers: dict[str, torch.Tensor] = {}
        self._views: dict[tuple, torch.Tensor] = {}

    def get(self, name: str, dtype: torch.dtype, shape) -> torch.Tensor:
        key = (name, dtype, tuple(shape))
        view = self._views.get(key)
        if view is not None:
            return view
        numel = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != dtype or buf.numel() < numel:
            buf = torch.empty(max(numel, 1), dtype=dtype, device=self.device)
            self._buffers[name] = buf
            self._views = {k: v for k, v in self._views.items() if k[0] != name}
        view = buf[:numel].view(shape)
        self._views[key] = view
        return view


def contiguous(block: torch.Tensor, scratch: Scratch) -> torch.Tensor:
    """``block`` itself when contiguous, else a copy in a reused buffer (a transposed view, a slice)."""
    return block if block.is_contiguous() else scratch.get("copy", block.dtype, block.shape).copy_(block)


@lru_cache(maxsize=None)
def const(value: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A 0-d integer tensor (a 0-d operand keeps PyTorch on its vectorised path); bits above the sign wrap."""
    bits = torch.empty((), dtype=dtype).element_size() * 8
    if value >= 1 << (bits - 1):  # the same bits as a signed number
        value -= 1 << bits
    return torch.tensor(value, dtype=dtype, device=device)


def lane_flags(block: torch.Tensor, scratch: Scratch) -> torch.Tensor:
    """uint8 tensor of the contiguous ``block``'s shape: 1 where the element is non-zero (by the bits)."""
    lanes = signed_int_view(block)
    dtype, dev = lanes.dtype, scratch.device
    bits = lanes.element_size() * 8
    flags = scratch.get("flags", torch.uint8, block.shape)
    work = flags.view(torch.int8) if bits == 8 else scratch.get("lanes", dtype, block.shape)
    low = const((1 << (bits - 1)) - 1, dtype, dev)
    torch.bitwise_and(lanes, low, out=work)
    work.add_(low)  # wraps: the top bit is set exactly when some low bit was
    if sign_bit_counts(block.dtype):
        work.bitwise_or_(lanes)
    work.bitwise_right_shift_(const(bits - 1, dtype, dev))  # 0 or -1
    work.neg_()
    if bits != 8:
        flags.copy_(work)
    return flags


def block_counts(block: torch.Tensor, m: int, scratch: Scratch) -> torch.Tensor:
    """Non-zeros per group of ``m`` along the last dim of a contiguous 2-D block: ``[rows, k // m]``
    integers, in ``scratch`` (overwritten by the next block)."""
    rows, k = block.shape
    flags = lane_flags(block, scratch)
    word = WORD_OF_M.get(m)
    if word is None:
        return flags.view(rows, k // m, m).sum(dim=-1, dtype=torch.int32)
    words = flags.view(word)
    counts = scratch.get("counts", word, words.shape)
    bits = 8 * m
    ones = sum(1 << (8 * i) for i in range(m))
    torch.mul(words, const(ones, word, scratch.device), out=counts)  # all bytes summed into the top one
    counts.bitwise_right_shift_(const(bits - 8, word, scratch.device))
    return counts


def bad_from_counts(counts: torch.Tensor, n: int) -> torch.Tensor:
    """In place: 1 where a count exceeds ``n``, else 0 (counts below 256)."""
    counts.add_(const(511 - n, counts.dtype, counts.device))
    return counts.bitwise_right_shift_(const(9, counts.dtype, counts.device))
