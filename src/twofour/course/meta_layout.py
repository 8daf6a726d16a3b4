"""Where each metadata word lands in PyTorch's CUTLASS layout, traced rather than described.

:func:`twofour.to_cutlass` reorders the metadata matrix (``[N, K/16]`` int16 for 16-bit weights)
before the sparse kernel reads it. :func:`cutlass_meta_slots` gives every metadata word a
distinct label, runs the real conversion, and reads back where each label went.

>>> import torch
>>> slots = cutlass_meta_slots(32, 64)          # 32 rows, K = 64: metadata is 32 x 4 int16
>>> slots[0].tolist(), slots[8].tolist()        # rows 0 and 8 sit side by side in memory
([0, 2, 64, 66], [1, 3, 65, 67])
"""

from __future__ import annotations

import torch

from ..packing import Packed, cutlass_constraints
from ..packing.cutlass import reorder_to_cutlass

__all__ = ["cutlass_meta_slots"]

# Dense columns described by one metadata word: 4 groups x 4 bits in int16, 8 groups in int32.
_COLUMNS_PER_WORD = {torch.int16: 16, torch.int32: 32}


def cutlass_meta_slots(rows: int, cols: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """Memory position of every metadata word after CUTLASS reordering, for a dense ``[rows, cols] = [N, K]``
    weight of ``dtype``: int64 ``[rows, K / columns_per_word]``, entry ``[r, c]`` the flat reordered index
    of the word describing row ``r``, columns ``c * columns_per_word ...``."""
    rules = cutlass_constraints(dtype)
    if rules["pattern"] != "2:4":
        raise ValueError(f"dtype must be float16, bfloat16 or int8 (2:4 metadata), got {dtype}")
    meta_dtype = rules["meta_dtype"]
    per_word = _COLUMNS_PER_WORD[meta_dtype]
    for name, value, multiple in (("rows", rows, rules["rows_multiple"]), ("cols", cols, 2 * per_word)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % multiple:
            raise ValueError(f"{name} must be a positive multiple of {multiple} for {dtype}, got {value!r}")
    words = cols // per_word
    labels = torch.arange(rows * words, dtype=torch.int64)
    if rows * words > torch.iinfo(meta_dtype).max:
        raise ValueError("rows * cols is too large to label every metadata word; use a smaller shape")
    # A Packed whose metadata words are their own labels (not valid 2:4 codes, and never unpacked:
    # to_cutlass only moves words around, which is all we want to watch).
    meta_bytes = labels.to(meta_dtype).view(rows, words).view(torch.uint8).contiguous()
    values = torch.zeros((rows, cols // 2), dtype=dtype)
    traced = Packed(values=values, meta=meta_bytes, shape=(rows, cols), dtype=dtype)
    _, reordered = reorder_to_cutlass(traced, check_meta=False)  # to_cutlass, less the 2:4 code check labels fail
    slots = torch.empty(rows * words, dtype=torch.int64)
    slots[reordered.flatten().to(torch.int64)] = torch.arange(rows * words)
    return slots.view(rows, words)
