"""Turn a compressed-tensors 2:4 checkpoint into one plain safetensors file PyTorch's 2:4 path can take.

:func:`convert` reads a model folder (or index, or file) one weight at a time and streams one
safetensors file:

* ``layout="dense"``: every ``sparse-24-bitmask`` weight rebuilt as its dense 2:4
  ``<layer>.weight`` (bit for bit what compressed-tensors 0.14.0 decompresses; fp8 and int8
  stay so, their ``weight_scale`` copied beside them); every other tensor copied.
* ``layout="packed"``: each weight that is 2:4 along K stored as ``twofour.pack``'s
  ``<layer>.weight.values`` and ``<layer>.weight.meta``; ``layout="cutlass"``: as
  ``to_cutlass`` lays them out. Weights that are not 2:4 (the LM head, embeddings) are copied
  dense. The dense shape is kept in the file's metadata.

Every stored 2:4 weight is checked once on the way (a config that claims 2:4 for a dense weight
is held to it); the output is renamed into place only when complete. ``marlin-24`` is refused.

>>> import os, tempfile
>>> from importlib.resources import files
>>> src = str(files("twofour") / "data" / "compressed-tensors" / "sparse24-fp16")
>>> out = os.path.join(tempfile.mkdtemp(), "dense.safetensors")
>>> result = convert(src, out)
>>> result.n_rebuilt, result.n_tensors
(7, 12)
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import torch

from .._common.atomic import OutputError, check_output, write_with
from .._common.text import printable, show_path
from .file import SAFETENSORS_DTYPES, CheckpointError
from .._passes.bits import SUPPORTED_DTYPES
from .compressed import CompressedError, as_reader, check_claim, weight_kind
from .folder import open_model

__all__ = ["convert", "ConvertResult", "LAYOUTS"]

LAYOUTS = ("dense", "packed", "cutlass")
_CODES = {dtype: code for code, dtype in SAFETENSORS_DTYPES.items()}


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert` wrote: tensors, weights rebuilt from bitmasks, weights packed, bytes read and written."""

    out: str
    layout: str
    n_tensors: int
    n_rebuilt: int
    n_packed: int
    bytes_read: int
    bytes_written: int

    def __str__(self) -> str:
        return (f"wrote {printable(self.out, 200)}: {self.n_tensors} tensors ({self.layout}); {self.n_rebuilt} weights "
                f"rebuilt from their bitmasks, {self.n_packed} packed; {self.bytes_read:,} bytes read, "
                f"{self.bytes_written:,} written")


def _planned(view, layout: str):
    """(output name, shape, dtype, make) for every output tensor, in input order; validated shapes only."""
    ct = view.ct
    plan = []
    rebuilt = packed = 0
    for name in view.names():
        st = view.stored(name)
        if st.form in ("marlin-24", "pack-quantized"):
            how = ("marlin-24 (int4 packed for the Marlin kernel); twofour does not unpack it" if st.form == "marlin-24"
                   else f"pack-quantized ({printable(str(view.dtype(name)).split()[0], 20)}, weight-only); twofour "
                   "does not dequantize it")
            raise CompressedError(f"{printable(name, 120)} is stored {how}, so it cannot convert this checkpoint"
                                  + (" (`twofour audit` reads its 2:4 structure)" if st.form == "pack-quantized" else ""))
        shape, dtype = view.shape(name), view.dtype(name)
        _check_writable(name, dtype)
        rebuilt += st.form in ("sparse-24-bitmask", "sparse-bitmask")
        is_24 = st.form == "sparse-24-bitmask"
        kind = weight_kind(name, tuple(shape))
        layer = name.removesuffix(".weight")
        claimed = ct is not None and ct.claims_24 and kind is not None and ct.covers(layer, kind)
        if layout != "dense" and len(shape) == 2 and shape[1] % 4 == 0 and (is_24 or claimed):
            if dtype not in SUPPORTED_DTYPES or dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz):
                raise CheckpointError(
                    f"{printable(name, 120)}: dtype {str(dtype).replace('torch.', '')} cannot be packed ({layout} takes "
                    "float16, bfloat16, float32, float8, int8, uint8, int16 or int32); --layout dense copies it as it is"
                )
            N, K = shape
            meta_cols = -(-K // 8)  # a 4-bit code per group of four
            plan.append((f"{name}.values", (N, K // 2), dtype, (name, "values")))
            known = layout == "packed"  # to_cutlass's metadata shape is read off its first result instead
            plan.append((f"{name}.meta", (N, meta_cols) if known else None, torch.uint8 if known else None, (name, "meta")))
            packed += 1
        else:
            plan.append((name, tuple(shape), dtype, (name, "tensor", claimed)))
    for sk_name, _ in view.skipped:  # quantization scales: copied unchanged
        if view.has_raw(sk_name):
            raw = view.files
            _check_writable(sk_name, raw.dtype(sk_name))
            plan.append((sk_name, tuple(raw.shape(sk_name)), raw.dtype(sk_name), (sk_name, "raw")))
    return plan, rebuilt, packed


def _check_writable(name: str, dtype) -> None:
    if not isinstance(dtype, torch.dtype) or dtype not in _CODES:
        raise CheckpointError(f"{printable(name, 120)}: dtype {printable(str(dtype), 40)} cannot be written to safetensors")


def _load(view, name: str, claimed: bool, buffer=None):
    """The dense weight, checked once; a weight the config claims 2:4 must be 2:4 (a bitmask already is)."""
    if view.stored(name).form == "sparse-24-bitmask":
        return view.tensor(name, out=buffer)
    W = view.tensor(name)
    if claimed and W.dim() == 2 and W.shape[1] % 4 == 0 and W.dtype != torch.bool:
        from ..structure import check

        try:
            s = check(W, 2, 4, max_examples=0, max_locations=0)
        except (TypeError, ValueError):
            return W
        check_claim(view.ct, name, "linear", s.num_groups, s.num_bad_groups, view.path)
    return W


def convert(src, out, layout: str = "dense", progress=None) -> ConvertResult:
    """Convert the checkpoint ``src`` (folder, index or safetensors file) into the safetensors file ``out``;
    ``progress(done, total, name)``, when given, is called after each output tensor is written."""
    from ..packing import pack, to_cutlass

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    files = open_model(src)
    try:
        inputs = list(files.files) + [os.path.join(files.root, n) for n in ("config.json", "model.safetensors.index.json")]
        try:
            check_output(out, inputs)
        except OutputError as exc:
            raise CheckpointError(f"OUT {exc}") from None
        # An output inside the folder it reads: a second *.safetensors there (with no index) leaves it unreadable.
        out_dir = os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(out))))
        if files.kind == "folder" and out_dir == os.path.realpath(files.root):
            raise CheckpointError(
                f"OUT {show_path(out)} is inside the model folder it converts; a second .safetensors "
                "file there makes the folder unreadable (a loader finds two weight files and no index): write it elsewhere"
            )
        view = as_reader(files)
        plan, rebuilt, n_packed = _planned(view, layout)
        cache: dict[str, tuple] = {}
        largest = max((math.prod(view.shape(n)) * view.dtype(n).itemsize for n in view.names()
                       if view.stored(n).form == "sparse-24-bitmask"), default=0)
        buffer = torch.empty(largest, dtype=torch.uint8)  # every rebuilt weight lands here, one after the other

        def produce(key):
            name, what = key[0], key[1]
            if what == "raw":
                return view.raw(name)
            if what == "tensor":
                return _load(view, name, key[2], buffer)
            if name not in cache:
                W = _load(view, name, True, buffer)
                try:
                    p = pack(W)
                    parts = to_cutlass(p) if layout == "cutlass" else (p.values, p.meta)
                except (TypeError, ValueError) as exc:
                    raise CheckpointError(f"{printable(name, 120)}: cannot be written as --layout {layout} ({printable(str(exc), 160)})") from None
                cache.clear()
                cache[name] = parts
            return cache[name][0] if what == "values" else cache[name][1]

        # Shapes of cutlass metadata depend on the backend's layout: computed from the first weight's result.
        header, order, offset = {}, [], 0
        for out_name, shape, dtype, key in plan:
            if shape is None or dtype is None:
                t = produce(key)
                shape, dtype = tuple(t.shape), t.dtype
            size = math.prod(shape) * dtype.itemsize
            header[out_name] = {"dtype": _CODES[dtype], "shape": list(shape), "data_offsets": [offset, offset + size]}
            order.append((out_name, key, size))
            offset += size
        header["__metadata__"] = {"format": "pt", "twofour_layout": layout,
                                  "source": printable(os.path.basename(os.path.abspath(src)), 120)}
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * ((-len(blob)) % 8)
        def fill(f):
            f.write(len(blob).to_bytes(8, "little"))
            f.write(blob)
            for i, (out_name, key, size) in enumerate(order):
                if progress is not None:
                    progress(i, len(order), out_name)
                t = produce(key)
                data = memoryview(t.contiguous().reshape(-1).view(torch.uint8).numpy())
                if len(data) != size:
                    raise CheckpointError(f"{printable(out_name, 120)}: produced {len(data)} bytes, planned {size}")
                f.write(data)

        try:
            write_with(out, fill, inputs=inputs)
        except OutputError as exc:
            raise CheckpointError(f"OUT {exc}") from None
        except OSError as exc:  # a folder it cannot write, a full disk: nothing left behind, one line
            raise CheckpointError(f"OUT {show_path(out)}: cannot write ({exc.strerror or exc}); "
                                  "nothing was written") from None
    finally:
        files.close()
    read = sum(os.path.getsize(p) for p in files.files if os.path.exists(p))  # a shard gone since counts 0
    return ConvertResult(os.fspath(out), layout, len(order), rebuilt, n_packed, read, 8 + len(blob) + offset)
