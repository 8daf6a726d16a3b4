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

from ._common.lazy import lazy_exports

__version__ = "0.1.0"

# Imported on first use (``twofour.prune``, ``from twofour import pack``): ``import twofour`` alone
# does not import PyTorch, so code that reads only tables of numbers (the site's hooks) stays quick.
__getattr__, __dir__ = lazy_exports(__name__, {
    **dict.fromkeys(("Packed", "pack", "unpack", "packed_bytes", "dense_bytes", "packed_ratio", "to_cutlass",
                     "explain_group"), ".packing"),
    **dict.fromkeys(("StructureReport", "check", "nonzeros_per_group", "prune"), ".structure"),
})

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
