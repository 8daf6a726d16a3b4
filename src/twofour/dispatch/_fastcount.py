"""A fast 2:4 group count for audits of large checkpoints (8- and 16-bit weights).

``twofour.check`` is the reference: general N:M, examples, locations. An audit only needs
counts per weight (groups with more than 2 non-zeros, and non-zeros in total). Profiling an
audit showed most of its time in ``check``'s reduction over groups of 4 (a reduction over a
tiny innermost dimension is slow in PyTorch on CPU). Plain integer arithmetic on whole words
avoids both that reduction and any comparison. A 16-bit group of 4 is two 32-bit words, an
8-bit group one word, and each step handles every lane of a word at once:

* clear each lane's sign bit (so ``-0.0`` counts as zero) and add ``0x7FFF`` per lane: the
  lane's top bit is now set exactly when the lane was non-zero, and no carry crosses lanes;
  integer dtypes also OR in the original bits, so ``-128`` / ``-32768`` count as non-zero;
* shift those top bits down to one bit per lane and add the lanes: the group's count;
* ``(count + 1) >> 2`` is 1 exactly when the count is 3 or 4: a group that breaks 2:4.

Words are int32, not int64: AVX2 has no 64-bit arithmetic shift, so int64 shifts run scalar.
The count runs on one thread (see the comment in :func:`fast_check_2_4`).
Tested against ``twofour.check`` on random data with ``±0.0``, NaN and inf in
``tests/test_dispatch.py``; ``benchmarks/audit_throughput.py`` measures the speed.
"""

from __future__ import annotations

import torch

from .._tensors import row_chunks
from ..structure import StructureReport

__all__ = ["fast_check_2_4", "supports"]


def supports(W) -> bool:
    """True when :func:`fast_check_2_4` handles ``W`` (otherwise use ``twofour.check``)."""
    return (
        isinstance(W, torch.Tensor)
        and W.dim() == 2
        and W.layout == torch.strided
        and W.dtype != torch.bool
        and not W.dtype.is_complex
        and W.element_size() in (1, 2)
        and W.shape[1] % 4 == 0
        and W.numel() > 0
        and W.is_contiguous()
        and W.device.type == "cpu"
    )


def _const(value: int) -> torch.Tensor:
    """An int32 0-d tensor (a 0-d tensor operand takes PyTorch's vectorised path)."""
    if value >= 1 << 31:
        value -= 1 << 32
    return torch.tensor(value, dtype=torch.int32)


def _lanes(pattern: int, lane_bits: int, lanes: int) -> int:
    return sum(pattern << (lane_bits * i) for i in range(lanes))


def fast_check_2_4(W: torch.Tensor) -> StructureReport:
    """The counts of ``twofour.check(W, 2, 4, max_examples=0, max_locations=0)``, computed faster.

    The report has no examples or locations (``locations_complete`` is False when the weight
    is invalid); call ``twofour.check(W)`` for those.

    >>> W = torch.tensor([[0.0, -0.0, 1.0, 2.0, 1.0, 2.0, 3.0, 0.0]], dtype=torch.float16)
    >>> r = fast_check_2_4(W)
    >>> r.num_bad_groups, r.nonzero_fraction, r.valid
    (1, 0.625, False)
    """
    if not supports(W):
        raise ValueError(
            "fast_check_2_4 takes a contiguous CPU 2-D weight with a 1- or 2-byte dtype and K divisible by 4, "
            f"got {W.dtype if isinstance(W, torch.Tensor) else type(W).__name__}; use twofour.check(W) instead"
        )
    lane_bits = 8 * W.element_size()
    lanes = 32 // lane_bits  # lanes per int32 word: 4 (8-bit) or 2 (16-bit)
    words_per_group = 4 // lanes
    is_int = not W.dtype.is_floating_point
    rows, K = W.shape
    groups = K // 4
    n_words = groups * words_per_group
    words = W.view(torch.int8 if lane_bits == 8 else torch.int16).view(torch.int32).view(rows, n_words)
    bad_per_row = torch.empty(rows, dtype=torch.int64)
    # One thread: each step is a short memory-bound pass over a cache-sized chunk, and PyTorch's
    # fork-join per operation costs more than it saves; on a busy 2-core machine two threads
    # measured 0.02 GB/s against 0.54 GB/s for one (benchmarks/audit_throughput.py).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        nonzeros = _count(words, rows, groups, n_words, lane_bits, lanes, words_per_group, is_int, bad_per_row)
    finally:
        torch.set_num_threads(threads)
    num_bad = int(bad_per_row.sum())
    return StructureReport(
        valid=num_bad == 0,
        n=2,
        m=4,
        shape=(rows, K),
        dtype=W.dtype,
        num_groups=rows * groups,
        num_bad_groups=num_bad,
        bad_groups_per_row=bad_per_row,
        bad_locations=torch.zeros((0, 2), dtype=torch.int64),
        examples=(),
        nonzero_fraction=nonzeros / W.numel(),
    )


def _count(words, rows, groups, n_words, lane_bits, lanes, words_per_group, is_int, bad_per_row) -> int:
    """Fill ``bad_per_row``; return the number of non-zeros."""
    low = _const(_lanes((1 << (lane_bits - 1)) - 1, lane_bits, lanes))  # 0x7F or 0x7FFF per lane
    top = _const(_lanes(1 << (lane_bits - 1), lane_bits, lanes))  # 0x80 or 0x8000 per lane
    ones = _const(_lanes(1, lane_bits, lanes))
    seven, one, two = _const(7), _const(1), _const(2)
    nonzeros = 0
    # 256 Ki words (1 MiB) per chunk: temporaries stay near the caches.
    for start, stop in row_chunks(rows, n_words, target_elems=1 << 18):
        w = words[start:stop]
        t = torch.bitwise_and(w, low).add_(low)
        if is_int:
            t.bitwise_or_(w)
        t.bitwise_and_(top)
        t = torch.bitwise_right_shift(t, lane_bits - 1).bitwise_and_(ones)  # one bit per non-zero lane
        t.add_(torch.bitwise_right_shift(t, lane_bits))
        if lanes == 4:
            t.add_(torch.bitwise_right_shift(t, 2 * lane_bits))
        t.bitwise_and_(seven)  # non-zeros in each word
        if words_per_group == 2:
            pair = t.view(stop - start, groups, 2)
            t = pair[..., 0] + pair[..., 1]  # non-zeros in each group
        nonzeros += int(t.sum(dtype=torch.int64))
        bad = t.add_(one).bitwise_right_shift_(two)  # 1 when the group holds 3 or 4 non-zeros
        bad_per_row[start:stop] = bad.sum(dim=1)
    return nonzeros
