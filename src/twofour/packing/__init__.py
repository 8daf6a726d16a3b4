"""Stage 2 of the answer: is the weight stored packed?

A dense tensor whose elements are half zeros occupies exactly as many bytes as before. Only a
*packed* form saves memory: for N:M sparsity it keeps the ``n`` chosen values of every group of
``m`` (``values``, shape ``[N, K*n/m]``, same dtype) plus, for each kept value, its position in
the group (``meta``, ``ceil(log2 m)`` bits each: 2 bits for 2:4). For 16-bit weights that is
``1/2 + 2/(2*16) = 0.5625`` of the dense bytes; for 8-bit weights ``0.625``.

One file per concern: :mod:`.packed` packs and unpacks exactly (never dropping a value
silently), :mod:`.nbytes` counts bytes, :mod:`.cutlass` converts to the layout PyTorch's
CUTLASS backend feeds to the sparse tensor-core kernel, and :mod:`.explain` takes one group
apart for teaching. This package re-exports their public names.

>>> import torch
>>> W = torch.tensor([[0.0, 1.5, 0.0, -2.0, 3.0, 0.0, 0.0, 4.0]])
>>> p = pack(W)
>>> p.values.tolist(), p.indices().tolist()
([[1.5, -2.0, 3.0, 4.0]], [[[1, 3], [0, 3]]])
>>> unpack(p).equal(W)
True
"""

from .cutlass import cutlass_constraints, to_cutlass
from .explain import GroupExplanation, explain_group
from .nbytes import dense_bytes, index_bits, packed_bytes, packed_ratio
from .packed import Packed, pack, unpack

__all__ = [
    "Packed",
    "pack",
    "unpack",
    "to_cutlass",
    "cutlass_constraints",
    "dense_bytes",
    "packed_bytes",
    "packed_ratio",
    "index_bits",
    "explain_group",
    "GroupExplanation",
]
