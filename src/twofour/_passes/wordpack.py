"""2:4 pack and unpack of 8- and 16-bit weights with integer arithmetic on whole groups.

A group of four 16-bit elements is one 64-bit word, four 8-bit elements one 32-bit word.
Packing a block then takes a fixed handful of vectorised integer operations and no gather:

* the group's non-zero pattern ``p = b0 + 2 b1 + 4 b2 + 8 b3``: its four flag bytes read as one
  int32, multiplied by ``0x01020408``;
* the kept positions ``a < b``: two bits per pattern in two 32-bit lookup words built from
  ``twofour.packing``'s own pattern table (so both paths choose the same positions), read with
  one variable shift each (``(LUT >> 2p) & 3``);
* the kept values ``(word >> a*bits) & lane`` and ``(word >> (b-1)*bits) & (lane << bits)``,
  OR-ed into one word that is exactly the packed pair.

Unpacking runs the same steps backwards: ``(v0 << a*bits) | (v1 << b*bits)`` is the group.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from .groupcount import Scratch, const, lane_flags

__all__ = ["supports", "position_luts", "pack_block", "unpack_block"]

_GROUP_WORD = {1: torch.int32, 2: torch.int64}  # element bytes -> one group of 4 as an integer
_PAIR_WORD = {1: torch.int16, 2: torch.int32}  # element bytes -> the two kept values as an integer


def supports(dtype: torch.dtype, n: int, m: int, K: int) -> bool:
    """True when :func:`pack_block` / :func:`unpack_block` handle this weight (2:4, 1 or 2 bytes, K % 8 == 0)."""
    return (n, m) == (2, 4) and torch.empty((), dtype=dtype).element_size() in _GROUP_WORD and K % 8 == 0


@lru_cache(maxsize=None)
def position_luts(codes: tuple[int, ...]) -> tuple[int, int, int]:
    """Three 32-bit lookup words from the 16 pattern codes of 2:4 (``-1``: too many non-zeros).

    Bits ``2p, 2p+1`` of the first hold kept position ``a`` of pattern ``p``, of the second
    ``b - 1`` (``b`` is 1 to 3); bit ``p`` of the third is 1 when pattern ``p`` is refused.

    >>> [hex(w) for w in position_luts((14, 14, 14, 14, 14, 8, 9, -1, 14, 12, 13, -1, 14, -1, -1, -1))]
    ['0x21212aa', '0x22a16aa', '0xe880']
    """
    a_lut = bm1_lut = bad_lut = 0
    for pattern, code in enumerate(codes):
        if code < 0:
            bad_lut |= 1 << pattern
            continue
        a_lut |= (code & 3) << (2 * pattern)
        bm1_lut |= ((code >> 2 & 3) - 1) << (2 * pattern)
    return a_lut, bm1_lut, bad_lut


def pack_block(block, values_out, meta_out, luts: tuple[int, int, int], scratch: Scratch) -> int:
    """Pack a contiguous ``[r, k]`` 2:4 block into ``values_out [r, k/2]`` and ``meta_out [r, k/8]``;
    returns the number of groups holding more than two non-zeros (not 0: nothing useful written)."""
    dev = scratch.device
    rows, k = block.shape
    shape = (rows, k // 4)
    i32 = torch.int32
    flags = lane_flags(block, scratch).view(i32)  # [r, G]: one flag byte per element
    pattern = scratch.get("w_pattern", i32, shape)
    torch.mul(flags, const(0x01020408, i32, dev), out=pattern).bitwise_right_shift_(const(24, i32, dev))
    a_lut, bm1_lut, bad_lut = luts
    work = scratch.get("w_work", i32, shape)
    torch.bitwise_right_shift(const(bad_lut, i32, dev), pattern, out=work).bitwise_and_(const(1, i32, dev))
    n_bad = int(work.sum(dtype=torch.int32))
    if n_bad:
        return n_bad
    pattern.add_(pattern)  # 2p: two bits per pattern in the position lookups
    pos_a = scratch.get("w_a", i32, shape)
    pos_bm1 = scratch.get("w_bm1", i32, shape)
    three = const(3, i32, dev)
    torch.bitwise_right_shift(const(a_lut, i32, dev), pattern, out=pos_a).bitwise_and_(three)
    torch.bitwise_right_shift(const(bm1_lut, i32, dev), pattern, out=pos_bm1).bitwise_and_(three)
    # The metadata: nibble ``a | b << 2`` per group, two groups per byte (the first in the low nibble).
    i16 = torch.int16
    code = work  # the position lookup's work buffer, free again
    torch.bitwise_left_shift(pos_bm1, const(2, i32, dev), out=code).bitwise_or_(pos_a).add_(const(4, i32, dev))
    code8 = scratch.get("w_code8", torch.uint8, shape)
    code8.copy_(code)
    pairs = code8.view(i16)  # [r, G/2]: byte 0 = first group's code, byte 1 = second's
    nibbles = scratch.get("w_nibbles", i16, pairs.shape)
    torch.bitwise_right_shift(pairs, const(4, i16, dev), out=nibbles).bitwise_or_(pairs)
    meta_out.copy_(nibbles)  # low byte: c0 | c1 << 4 (both codes < 16)
    # The two kept values of every group, as one word: ``x_a | x_b << bits``.
    size = block.element_size()
    word = _GROUP_WORD[size]
    bits = 8 * size
    groups = _aligned(block, word).view(word)  # [r, G]
    shift = scratch.get("w_shift", word, shape)
    first = scratch.get("w_first", word, shape)
    second = scratch.get("w_second", word, shape)
    lane = (1 << bits) - 1
    to_bits = const(bits.bit_length() - 1, word, dev)
    shift.copy_(pos_a).bitwise_left_shift_(to_bits)
    torch.bitwise_right_shift(groups, shift, out=first).bitwise_and_(const(lane, word, dev))
    shift.copy_(pos_bm1).bitwise_left_shift_(to_bits)  # (b - 1) * bits: x_b lands in the upper lane
    torch.bitwise_right_shift(groups, shift, out=second).bitwise_and_(const(lane << bits, word, dev))
    _write_words(values_out, _PAIR_WORD[size], first.bitwise_or_(second))
    return 0


def _aligned(t: torch.Tensor, word: torch.dtype) -> torch.Tensor:
    """``t``, or a copy when its storage offset is not a whole number of ``word``s (a slice of a
    flat buffer): reinterpreting elements as words needs the offset aligned."""
    per_word = word.itemsize // t.element_size()
    return t if per_word <= 1 or t.storage_offset() % per_word == 0 else t.clone()


def _write_words(out: torch.Tensor, word: torch.dtype, words: torch.Tensor) -> None:
    """``out`` viewed as ``word``s takes ``words``; through a temporary when ``out`` is not word-aligned."""
    if _aligned(out, word) is out:
        out.view(word).view(words.shape).copy_(words)
    else:
        out.copy_(words.view(out.dtype).view(out.shape))


def unpack_block(values, meta, out, scratch: Scratch) -> int:
    """Rebuild a 2:4 block: ``values [r, k/2]`` and ``meta [r, k/8]`` into contiguous ``out [r, k]``;
    returns the number of groups whose positions are not strictly increasing (not 0: ``out`` is garbage)."""
    dev = scratch.device
    rows, half = values.shape
    shape = (rows, half // 2)
    size = values.element_size()
    i16, i32 = torch.int16, torch.int32
    wide = scratch.get("u_wide", i16, meta.shape)
    wide.copy_(meta)
    nibbles = scratch.get("u_nibbles", i16, meta.shape)
    torch.bitwise_left_shift(wide, const(4, i16, dev), out=nibbles).bitwise_or_(wide)
    nibbles.bitwise_and_(const(0x0F0F, i16, dev))  # byte 0: first group's code, byte 1: second's
    code = scratch.get("u_code", i32, shape)
    code.copy_(nibbles.view(torch.uint8).view(shape))
    pos_a = scratch.get("u_a", i32, shape)
    pos_b = scratch.get("u_b", i32, shape)
    torch.bitwise_and(code, const(3, i32, dev), out=pos_a)
    torch.bitwise_right_shift(code, const(2, i32, dev), out=pos_b)
    torch.sub(pos_a, pos_b, out=code).bitwise_right_shift_(const(31, i32, dev)).add_(const(1, i32, dev))
    n_bad = int(code.sum(dtype=torch.int32))  # 1 where a >= b
    if n_bad:
        return n_bad
    word, pair_word = _GROUP_WORD[size], _PAIR_WORD[size]
    bits = 8 * size
    to_bits = const(bits.bit_length() - 1, word, dev)
    pair = _aligned(values, pair_word).view(pair_word).view(shape)
    lane = (1 << bits) - 1
    first = scratch.get("u_first", word, shape)
    second = scratch.get("u_second", word, shape)
    shift = scratch.get("u_shift", word, shape)
    first.copy_(pair).bitwise_and_(const(lane, word, dev))
    torch.bitwise_right_shift(pair, const(bits, pair_word, dev), out=second).bitwise_and_(const(lane, word, dev))
    shift.copy_(pos_a).bitwise_left_shift_(to_bits)
    first.bitwise_left_shift_(shift)
    shift.copy_(pos_b).bitwise_left_shift_(to_bits)
    second.bitwise_left_shift_(shift)
    _write_words(out, word, first.bitwise_or_(second))
    return 0
