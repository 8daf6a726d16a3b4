"""The sparse-24-bitmask form: pack, check and rebuild, at about the speed of copying the bytes.

The kept values ``[N, K/2]`` are in row-major order of the bitmask's set bits; element ``k`` of a
row is bit ``k % 8`` of byte ``k // 8``, so each group of four along K is one nibble.

* :func:`check_bitmask` decides 2:4 validity from the bitmask alone, 64 bits at a time (a SWAR
  popcount per nibble: ``0x2222...``). No value is read.
* :func:`decompress` rebuilds the dense weight with a 16-entry table: a nibble names the two
  positions its values go to, so a group of four 16-bit values is one 64-bit word
  ``first << 16a | second << 16b`` (8-bit values: a 32-bit word), 256 rows at a time into
  reused buffers. 4- and 8-byte dtypes take a plain elementwise path.

>>> mask = torch.tensor([[1, 1, 0, 0, 0, 1, 0, 1]], dtype=torch.bool)
>>> bits = pack_bitmask(mask); bits
tensor([[163]], dtype=torch.uint8)
>>> decompress(torch.tensor([[1., 2., 3., 4.]], dtype=torch.float16), bits, (1, 8), "fc").tolist()
[[1.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 4.0]]
"""

from __future__ import annotations

import numpy as np
import torch

from .._common.text import printable
from .file import CheckpointError

__all__ = ["CompressedError", "BITMASK_PARTS", "pack_bitmask", "unpack_bitmask", "check_sizes", "check_mask",
           "check_bitmask", "decompress"]

BITMASK_PARTS = ("compressed", "bitmask", "shape")
_ROWS = 256  # rows per block: a block's buffers stay in cache


class CompressedError(CheckpointError):
    """A compressed-tensors config or stored weight that is inconsistent; the message is one line."""


_BITS = torch.tensor([1 << i for i in range(8)], dtype=torch.uint8)


def unpack_bitmask(bits: torch.Tensor, K: int) -> torch.Tensor:
    """``[N, ceil(K/8)]`` uint8 -> ``[N, K]`` bool, bit ``k % 8`` of byte ``k // 8`` being element ``k``."""
    return (bits.unsqueeze(-1) & _BITS).ne(0).reshape(bits.shape[0], -1)[:, :K]


def pack_bitmask(mask: torch.Tensor) -> torch.Tensor:
    """``[N, K]`` bool -> ``[N, ceil(K/8)]`` uint8, the inverse of :func:`unpack_bitmask` (padding bits 0)."""
    N, K = mask.shape
    pad = (-K) % 8
    m = torch.nn.functional.pad(mask.to(torch.uint8), (0, pad)).reshape(N, -1, 8)
    return (m * _BITS).sum(-1, dtype=torch.int64).to(torch.uint8)


def check_sizes(layer: str, N: int, K: int, values_shape, bits_shape) -> None:
    """Refuse a stored 2:4 weight whose values or bitmask disagree with its dense shape ``N x K``."""
    name = printable(layer, 120)
    if K % 4:
        raise CompressedError(f"{name}: K = {K} is not a multiple of 4, so it cannot be 2:4 along K")
    if tuple(bits_shape) != (N, (K + 7) // 8):
        raise CompressedError(
            f"{name}: the bitmask is {'x'.join(map(str, bits_shape))}, but a {N}x{K} weight needs {N}x{(K + 7) // 8} "
            "(one bit per element); the shape and the bitmask disagree"
        )
    if tuple(values_shape) != (N, K // 2):
        raise CompressedError(
            f"{name}: the values are {'x'.join(map(str, values_shape))}, but 2:4 of a {N}x{K} weight keeps {N}x{K // 2}; "
            "the shape and the values disagree"
        )


_INT_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def check_mask(layer: str, bits: torch.Tensor, K: int) -> None:
    """Refuse a bitmask that does not keep exactly two of every four along K (or sets padding bits)."""
    N = bits.shape[0]
    # Each group of four is one nibble (bits 0-3 of a byte: columns 8j..8j+3, bits 4-7: the next).
    nibbles = torch.stack((bits & 0x0F, bits >> 4), dim=-1).reshape(N, -1)[:, : K // 4]
    counts = (nibbles & 1) + (nibbles >> 1 & 1) + (nibbles >> 2 & 1) + (nibbles >> 3)
    bad = counts.ne(2)
    if bool(bad.any()):
        n_bad = int(bad.sum())
        row, group = (int(v) for v in torch.nonzero(bad)[0])
        raise CompressedError(
            f"{printable(layer, 120)}: the bitmask keeps {int(counts[row, group])} of 4 in row {row}, group {group} "
            f"(columns {4 * group}-{4 * group + 3}); {n_bad:,} of {N * K // 4:,} groups do not keep exactly 2, so it is "
            "not a 2:4 bitmask"
        )
    if K % 8 and bool((bits[:, -1] >> (K % 8)).any()):
        raise CompressedError(f"{printable(layer, 120)}: the bitmask sets bits past column {K - 1}; it is damaged")


def _scatter(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Zeros of ``mask``'s shape with ``values`` (row-major) at its set elements, moved as integers of their size."""
    raw = values.reshape(-1)
    raw = raw.view(_INT_VIEW[raw.element_size()]) if raw.element_size() in _INT_VIEW else raw
    out = torch.zeros(mask.shape, dtype=raw.dtype)
    out[mask] = raw
    return out.view(values.dtype)


def _nibble_table(lane: int, word):
    """Shift of a group's first and second value, by nibble (two set bits; other nibbles never reach it)."""
    first, second = np.zeros(16, word), np.zeros(16, word)
    for n in range(16):
        pos = [j for j in range(4) if n >> j & 1]
        if len(pos) == 2:
            first[n], second[n] = lane * pos[0], lane * pos[1]
    return first, second


# itemsize -> (a pair of values as one integer, a group of four as one integer, shift tables)
_WORDS = {2: (np.uint32, np.uint64, _nibble_table(16, np.uint64)), 1: (np.uint16, np.uint32, _nibble_table(8, np.uint32))}
_PAIR_TORCH = {2: torch.int32, 1: torch.int16}
_M55, _M33, _M22 = 0x5555555555555555, 0x3333333333333333, 0x2222222222222222


def _nibble_counts(x: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """Per nibble of ``x`` (unsigned ints), its count of set bits, in place of ``x`` (``tmp``: same shape)."""
    t = x.dtype.type
    np.right_shift(x, t(1), out=tmp)
    np.bitwise_and(tmp, t(_M55 & np.iinfo(t).max), out=tmp)
    np.subtract(x, tmp, out=x)
    np.right_shift(x, t(2), out=tmp)
    np.bitwise_and(tmp, t(_M33 & np.iinfo(t).max), out=tmp)
    np.bitwise_and(x, t(_M33 & np.iinfo(t).max), out=x)
    np.add(x, tmp, out=x)
    return x


def check_bitmask(layer: str, bits: torch.Tensor, K: int) -> None:
    """Refuse a ``[N, ceil(K/8)]`` bitmask that does not keep exactly two of every four along K.

    About 10 ms for a 14336 x 4096 weight's 7 MB; on a bad mask :func:`check_mask` names the first bad group.

    >>> check_bitmask("fc", torch.tensor([[0b1010_0011]], dtype=torch.uint8), 8)
    >>> check_bitmask("fc", torch.tensor([[0b1110_0011]], dtype=torch.uint8), 8)
    Traceback (most recent call last):
    ...
    twofour.checkpoint._bitmask.CompressedError: fc: the bitmask keeps 3 of 4 in row 0, group 1 (columns 4-7); 1 of 2 groups do not keep exactly 2, so it is not a 2:4 bitmask
    """
    b = bits.contiguous().numpy()
    N, B = b.shape
    expected = np.full(B, 0x22, np.uint8)
    if K % 8:
        expected[-1] = 0x02  # the last byte holds one group; its upper bits are padding
    word = np.uint64 if B % 8 == 0 else np.uint8
    want = expected.view(word)
    rows = max(1, (_ROWS * 512) // max(B, 1))
    tmp = np.empty((min(rows, N), B // np.dtype(word).itemsize), word)
    buf = np.empty_like(tmp)
    for r0 in range(0, N, rows):
        r1 = min(N, r0 + rows)
        x = buf[: r1 - r0]
        np.copyto(x, b[r0:r1].view(word))
        if not np.array_equal(_nibble_counts(x, tmp[: r1 - r0]), np.broadcast_to(want, x.shape)):
            check_mask(layer, bits, K)
            raise CompressedError(f"{printable(layer, 120)}: the bitmask is not a 2:4 bitmask")  # not reached


def decompress(values: torch.Tensor, bits: torch.Tensor, shape: tuple[int, int], layer: str,
               out: torch.Tensor | None = None) -> torch.Tensor:
    """The dense ``shape`` weight: zeros, with ``values`` (row-major) at the bitmask's set bits.

    Checks sizes and the 2:4 mask first. Byte-exact for every dtype (values moved as integers).
    ``out``: a contiguous uint8 buffer of at least the dense weight's bytes, reused from one weight
    to the next (its pages are not faulted in again); the result is a view of it.
    """
    N, K = shape
    check_sizes(layer, N, K, tuple(values.shape), tuple(bits.shape))
    check_bitmask(layer, bits, K)
    size = values.element_size()
    if size not in _WORDS or values.dtype == torch.bool:  # 4- and 8-byte dtypes, bool: elementwise
        return _scatter(values, unpack_bitmask(bits, K))
    pair, word, (first_shift, second_shift) = _WORDS[size]
    lane = np.dtype(word).type(8 * size)
    low_mask = np.dtype(word).type((1 << (8 * size)) - 1)
    if out is None or out.dtype != torch.uint8 or out.numel() < N * K * size or not out.is_contiguous():
        out = torch.empty(N * K * size, dtype=torch.uint8)
    result = out.view(-1)[: N * K * size].view(values.dtype).view(N, K)
    dense = result.view(torch.int64 if size == 2 else torch.int32).numpy().view(word)  # [N, K/4] groups
    v = values.contiguous().view(_PAIR_TORCH[size]).numpy().view(pair)  # [N, K/4]: a group's two values
    b = bits.contiguous().numpy()
    G, B = K // 4, b.shape[1]
    rows = min(N, _ROWS)
    nib = np.empty((rows, 2 * B), np.uint8)
    lo, hi = np.empty((rows, G), word), np.empty((rows, G), word)
    for r0 in range(0, N, rows):
        r1 = min(N, r0 + rows)
        n = r1 - r0
        nb = nib[:n]
        np.bitwise_and(b[r0:r1], np.uint8(15), out=nb[:, 0::2])
        np.right_shift(b[r0:r1], np.uint8(4), out=nb[:, 1::2])
        groups = nb[:, :G]
        L, H = lo[:n], hi[:n]
        np.copyto(L, v[r0:r1])
        np.right_shift(L, lane, out=H)
        np.bitwise_and(L, low_mask, out=L)
        np.left_shift(L, first_shift[groups], out=L)
        np.left_shift(H, second_shift[groups], out=H)
        np.bitwise_or(L, H, out=dense[r0:r1])
    return result


def decompress_unstructured(values: torch.Tensor, bits: torch.Tensor, shape: tuple[int, int], layer: str) -> torch.Tensor:
    """The dense weight of a ``sparse-bitmask`` layer: 1-D ``values`` (row-major) at the bitmask's set bits.

    Any pattern (the audit checks what comes out); there must be one value per set bit (the parts'
    shapes and dtypes are checked when the checkpoint is opened).

    >>> mask = torch.tensor([[1, 0, 1, 1, 0, 0, 0, 0]], dtype=torch.bool)
    >>> decompress_unstructured(torch.tensor([1., 2., 3.]), pack_bitmask(mask), (1, 8), "fc").tolist()
    [[1.0, 0.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0]]
    """
    N, K = shape
    name = printable(layer, 120)
    if K % 8 and bool((bits[:, -1] >> (K % 8)).any()):
        raise CompressedError(f"{name}: the bitmask sets bits past column {K - 1}; it is damaged")
    mask = unpack_bitmask(bits, K)
    kept = int(mask.sum())
    if kept != values.numel():
        raise CompressedError(f"{name}: the bitmask keeps {kept:,} values but {values.numel():,} are stored; "
                              "the parts disagree")
    return _scatter(values, mask)
