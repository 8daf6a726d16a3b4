"""Write small compressed-tensors model folders, made by compressed-tensors 0.14.0 itself.

Not part of the toolkit and not a test dependency: the folders it writes are committed under
``src/twofour/data/compressed-tensors/`` and the tests read them without the library. Run it in
a separate environment that has compressed-tensors 0.14.0 (the last release that writes the
Sparse24 formats; later ones refuse them) and transformers::

    python3 -m venv /tmp/ct-venv
    /tmp/ct-venv/bin/pip install compressed-tensors==0.14.0 transformers
    /tmp/ct-venv/bin/python scripts/make_ct_fixtures.py [OUT_DIR]

Each folder is a one-layer Llama-style model (hidden 64, MLP 128, vocabulary 64) whose seven
projection weights were pruned 2:4 by compressed-tensors' own mask (the two largest magnitudes
of every four along K), then written by ``ModelCompressor.compress`` and
``model.save_pretrained`` (sharded, with ``model.safetensors.index.json``), with
``config.json`` completed by ``ModelCompressor.update_config``. ``lm_head`` and the embeddings
stay dense, as the published Sparse-Llama recipes keep them.

Beside each folder, ``<name>.expected.safetensors`` holds what compressed-tensors' own sparsity
decompressor (``Sparse24BitMaskCompressor.decompress``) returns for every weight, so a test can
compare ``twofour convert`` with it bit for bit without the library.

Folders (all deterministic, seed 0):

* ``sparse24-fp16``, ``sparse24-bf16``: ``sparse-24-bitmask`` of float16 / bfloat16 weights;
* ``sparse24-fp8``: FP8 (e4m3) weights with one scale per tensor (the ``FP8`` preset), stored
  ``sparse-24-bitmask`` (values are the fp8 bytes, ``weight_scale`` beside them);
* ``sparse24-int8``: int8 weights (the ``W8A8`` preset's weights, per-channel scales), stored
  ``sparse-24-bitmask``;
* ``dense-24``: the same 2:4 fp16 weights stored ``dense`` (``sparsity_config.format``
  ``dense``, structure ``2:4``);
* ``marlin24-int4``: int4 weights, group size 128, packed for the Marlin 2:4 kernel (quantization
  format ``marlin-24``; ``sparsity_config`` ``dense`` with structure ``2:4``), if this
  compressed-tensors can write it on this machine (the script says when it cannot);
* ``sparse-bitmask-fp16``: the fp16 2:4 weights stored ``sparse-bitmask`` (``BitmaskConfig``: 1-D
  ``compressed`` values, ``bitmask``, ``shape``, ``row_offsets``), with its expected decompression;
* ``w4a16-24``, ``w4a16-asym-24``: W4A16 (symmetric, and asymmetric with ``weight_zero_point``),
  group 128, ``pack-quantized`` (``weight_packed`` int32, ``weight_scale``, ``weight_shape``) with
  ``sparsity_config`` ``dense``, structure ``2:4`` (LLM Compressor's 2:4 W4A16 recipe);
* ``w8a8-24``, ``fp8-24``: int8 (``int-quantized``) and FP8 (``float-quantized``) weights with
  ``sparsity_config`` ``dense``, structure ``2:4``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import torch

SEED = 0
TARGETS = ["Linear"]
IGNORE = ["lm_head"]


def _model(dtype, hidden=64, inter=128):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    cfg = LlamaConfig(
        vocab_size=64, hidden_size=hidden, intermediate_size=inter, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(cfg).to(dtype)
    from compressed_tensors.compressors.sparse_compressors.sparse_24_bitmask import get_24_bytemasks

    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, torch.nn.Linear) and name != "lm_head":
                w = mod.weight
                mod.weight.copy_(w * get_24_bytemasks(w.float()).to(w.dtype))
    return model


def _quantize(model, preset):
    """Attach the preset's scheme and set per-channel weight scales from the weights (calibration-free)."""
    from compressed_tensors.quantization import (
        QuantizationConfig, QuantizationStatus, apply_quantization_config, preset_name_to_scheme,
    )
    from compressed_tensors.quantization.utils import calculate_qparams

    scheme = preset_name_to_scheme(preset, TARGETS)
    qcfg = QuantizationConfig(config_groups={"group_0": scheme}, ignore=IGNORE,
                              quantization_status=QuantizationStatus.FROZEN)
    apply_quantization_config(model, qcfg)
    for name, mod in model.named_modules():
        if getattr(mod, "quantization_scheme", None) is None:
            continue
        args = mod.quantization_scheme.weights
        w = mod.weight.float()
        if args.strategy == "group":
            g = args.group_size
            wg = w.reshape(w.shape[0], -1, g)
            lo, hi = wg.amin(-1), wg.amax(-1)
        elif args.strategy == "tensor":
            lo, hi = w.amin().reshape(1), w.amax().reshape(1)
        else:
            lo, hi = w.amin(1, keepdim=True), w.amax(1, keepdim=True)
        scale, zp = calculate_qparams(torch.minimum(lo, torch.zeros_like(lo)), torch.maximum(hi, torch.zeros_like(hi)), args)
        with torch.no_grad():
            mod.weight_scale.data = scale.to(mod.weight_scale.dtype).reshape(mod.weight_scale.shape)
            if hasattr(mod, "weight_zero_point"):
                mod.weight_zero_point.data = zp.to(mod.weight_zero_point.dtype).reshape(mod.weight_zero_point.shape)
    return model


def _write(model, out, sparsity, quantization_format=None, shard="40KB"):
    from compressed_tensors import ModelCompressor

    if os.path.exists(out):
        shutil.rmtree(out)
    compressor = ModelCompressor.from_pretrained_model(
        model, sparsity_config_or_format=sparsity, quantization_format=quantization_format
    )
    state = compressor.compress(model)
    model.save_pretrained(out, state_dict=state, max_shard_size=shard, safe_serialization=True)
    compressor.update_config(out)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(out, extra)):
            os.remove(os.path.join(out, extra))
    return compressor


def _expected(compressor, folder, path):
    """compressed-tensors' own decompression of every sparse weight in ``folder`` (fp8 stays fp8)."""
    from safetensors.torch import save_file

    sc = compressor.sparsity_compressor
    params = None
    if compressor.quantization_compressor is not None:
        params = next(iter(compressor.quantization_compressor.values())).compression_param_names
    dense = {}
    for name, tensor in sc.decompress(folder, params_to_skip_load=params):
        if name.endswith(".weight") and tensor.dim() == 2:
            dense[name] = tensor.contiguous()
    save_file(dense, path)


def main(out_root: str) -> int:
    import compressed_tensors
    from compressed_tensors import Sparse24BitMaskConfig
    from compressed_tensors.config import DenseSparsityConfig

    if compressed_tensors.__version__.split(".")[:2] != ["0", "14"]:
        print(f"compressed-tensors {compressed_tensors.__version__}: need 0.14.x (the last that writes Sparse24)")
        return 2
    os.makedirs(out_root, exist_ok=True)
    made = []

    def s24():
        return Sparse24BitMaskConfig(targets=TARGETS, ignore=IGNORE, sparsity_structure="2:4")

    for tag, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        name = f"sparse24-{tag}"
        folder = os.path.join(out_root, name)
        comp = _write(_model(dtype), folder, s24())
        _expected(comp, folder, os.path.join(out_root, f"{name}.expected.safetensors"))
        made.append(name)
    for name, preset in (("sparse24-fp8", "FP8"), ("sparse24-int8", "W8A8")):
        folder = os.path.join(out_root, name)
        model = _quantize(_model(torch.float16), preset)
        comp = _write(model, folder, s24())
        _expected(comp, folder, os.path.join(out_root, f"{name}.expected.safetensors"))
        made.append(name)
    folder = os.path.join(out_root, "dense-24")
    _write(_model(torch.float16), folder,
           DenseSparsityConfig(targets=TARGETS, ignore=IGNORE, sparsity_structure="2:4"))
    made.append("dense-24")
    try:
        folder = os.path.join(out_root, "marlin24-int4")
        model = _quantize(_model(torch.float16, hidden=128, inter=256), "W4A16")
        _write(model, folder, DenseSparsityConfig(targets=TARGETS, ignore=IGNORE, sparsity_structure="2:4"),
               quantization_format="marlin-24", shard="200KB")
        made.append("marlin24-int4")
    except Exception as exc:  # noqa: BLE001 - report and go on: the other folders stand alone
        shutil.rmtree(os.path.join(out_root, "marlin24-int4"), ignore_errors=True)
        print(f"marlin-24 not written: {type(exc).__name__}: {exc}")
    from compressed_tensors import BitmaskConfig

    folder = os.path.join(out_root, "sparse-bitmask-fp16")
    comp = _write(_model(torch.float16), folder, BitmaskConfig(targets=TARGETS, ignore=IGNORE))
    _expected(comp, folder, os.path.join(out_root, "sparse-bitmask-fp16.expected.safetensors"))
    made.append("sparse-bitmask-fp16")
    dense24 = lambda: DenseSparsityConfig(targets=TARGETS, ignore=IGNORE, sparsity_structure="2:4")  # noqa: E731
    for name, preset, fmt in (("w4a16-24", "W4A16", "pack-quantized"), ("w4a16-asym-24", "W4A16_ASYM", "pack-quantized"),
                              ("w8a8-24", "W8A8", "int-quantized"), ("fp8-24", "FP8", "float-quantized")):
        folder = os.path.join(out_root, name)
        model = _quantize(_model(torch.float16, hidden=128, inter=256), preset)
        _write(model, folder, dense24(), quantization_format=fmt, shard="200KB")
        made.append(name)
    with open(os.path.join(out_root, "MADE_BY.json"), "w") as f:
        json.dump({"compressed_tensors": compressed_tensors.__version__, "torch": torch.__version__,
                   "script": "scripts/make_ct_fixtures.py", "folders": made}, f, indent=1)
        f.write("\n")
    for name in made:
        size = sum(os.path.getsize(os.path.join(out_root, name, f)) for f in os.listdir(os.path.join(out_root, name)))
        print(f"{name}: {size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src/twofour/data/compressed-tensors"))
