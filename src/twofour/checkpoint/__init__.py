"""Checkpoints as practitioners hold them, read as data, one weight at a time.

* :func:`open`: a model folder, a shard index, a ``.safetensors`` file or a ``torch.save`` file,
  as one :class:`Reader`, compressed-tensors 2:4 forms seen as their dense weights
  (:mod:`.compressed`); files are read with ``pread`` copies (:mod:`.file`).
* :func:`convert`: such a checkpoint as one plain safetensors file (dense 2:4, packed or CUTLASS).
* :func:`weight_kind`: what a tensor's name and shape say it is.

Every failure is a :class:`CheckpointError` with one line. The audit
(:func:`twofour.dispatch.audit`) judges what a reader holds.

>>> from importlib.resources import files
>>> with open(str(files("twofour") / "data" / "compressed-tensors" / "sparse24-fp16")) as r:
...     r.stored("model.layers.0.mlp.up_proj.weight").form
'sparse-24-bitmask'
"""

from .compressed import Reader, as_reader, open, weight_kind
from .convert import ConvertResult, convert
from .file import CheckpointError, open_checkpoint

__all__ = ["open", "Reader", "as_reader", "convert", "ConvertResult", "CheckpointError", "open_checkpoint",
           "weight_kind"]
