"""twofour: tools and lessons for NVIDIA 2:4 structured sparsity.

"Half the weights are zero. Why did serving not get faster?" The answer has six stages
(structure, representation, dispatch, kernel speed, quality, Amdahl; stage N is chapter N); this package gives each one a real,
checkable tool. The core names are re-exported here:

>>> import torch, twofour
>>> W, mask = twofour.prune(torch.randn(8, 16))
>>> twofour.check(W).valid
True
>>> twofour.unpack(twofour.pack(W)).equal(W)
True
"""

from .packing import Packed, pack, unpack, packed_bytes, dense_bytes, packed_ratio, to_cutlass, explain_group
from .structure import StructureReport, check, nonzeros_per_group, prune

__version__ = "0.1.0"

__all__ = [
    "StructureReport",
    "check",
    "prune",
    "nonzeros_per_group",
    "Packed",
    "pack",
    "unpack",
    "to_cutlass",
    "packed_bytes",
    "dense_bytes",
    "packed_ratio",
    "explain_group",
    "__version__",
]
