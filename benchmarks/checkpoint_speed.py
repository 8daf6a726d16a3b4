"""Per decoder layer: ``cat`` of the bytes, compressed-tensors' decompress, ``twofour`` audit and convert (CPU s).

Issue 52's table, on a generated folder shaped like one Llama-3.1-8B decoder layer in bf16,
stored ``sparse-24-bitmask`` as compressed-tensors writes it (``<layer>.compressed`` values,
``<layer>.bitmask``, ``<layer>.shape``; ``config.json`` with its ``quantization_config``): q and
o 4096 x 4096, k and v 1024 x 4096, gate and up 14336 x 4096, down 4096 x 14336 (about 245 MB
stored, 436 MB dense). Each round, interleaved, with the page cache warm:

* **cat**: ``cat`` the folder's safetensors file into ``/dev/null`` (its CPU time, from ``wait4``);
* **ct decompress**: compressed-tensors 0.14.0's own ``Sparse24BitMaskCompressor.decompress`` of
  the folder, timed inside a separate interpreter that has it (``--ct-python``, default
  ``/tmp/ctvenv/bin/python`` when it exists; the column is left out otherwise: it is not a
  dependency of twofour);
* **audit**: the audit of the opened folder for a compute capability 9.0 GPU, in this process;
* **convert**: ``convert`` of the folder to a dense safetensors file, in this process.

CPU time is user + system of the whole process (all threads), the steady figure on a shared
machine; the median of ``--rounds`` is printed. Run it against another checkout's code with
``PYTHONPATH=OTHER/src`` (it uses the old reader API when ``twofour.checkpoint`` is absent), on
the same machine in the same minutes, to compare before and after.

    .venv/bin/python benchmarks/checkpoint_speed.py [--dir /tmp/ckpt-speed] [--rounds 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

SHAPES = {"self_attn.q_proj": (4096, 4096), "self_attn.k_proj": (1024, 4096), "self_attn.v_proj": (1024, 4096),
          "self_attn.o_proj": (4096, 4096), "mlp.gate_proj": (14336, 4096), "mlp.up_proj": (14336, 4096),
          "mlp.down_proj": (4096, 14336)}
CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
          "quantization_config": {"quant_method": "compressed-tensors", "version": "0.14.0",
                                  "sparsity_config": {"format": "sparse-24-bitmask", "sparsity_structure": "2:4",
                                                      "targets": ["Linear"], "ignore": ["lm_head"],
                                                      "global_sparsity": 0.5, "registry_requires_subclass": False}}}
_CT_SNIPPET = """
import json, sys, time
from compressed_tensors import ModelCompressor
folder = sys.argv[1]
config = json.load(open(folder + "/config.json"))["quantization_config"]
sc = ModelCompressor.from_compression_config(config).sparsity_compressor
start = time.process_time()
n = 0
for name, tensor in sc.decompress(folder):
    n += tensor.numel()
print(time.process_time() - start, n)
"""


def _patterns() -> torch.Tensor:
    """The six nibbles that keep two of four."""
    return torch.tensor([n for n in range(16) if bin(n).count("1") == 2], dtype=torch.uint8)


def make_folder(folder: str, seed: int = 0) -> str:
    """One Llama-3.1-8B-shaped decoder layer, bf16, stored sparse-24-bitmask; returns the folder."""
    from safetensors.torch import save_file

    os.makedirs(folder, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    tensors = {}
    for part, (N, K) in SHAPES.items():
        nibbles = _patterns()[torch.randint(0, 6, (N, K // 4), generator=g)]
        bits = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).contiguous()
        head = f"model.layers.0.{part}"
        tensors[f"{head}.compressed"] = (torch.randn(N, K // 2, generator=g) * 0.02).to(torch.bfloat16)
        tensors[f"{head}.bitmask"] = bits
        tensors[f"{head}.shape"] = torch.tensor([[N], [K]], dtype=torch.int64)
    for norm in ("input_layernorm", "post_attention_layernorm"):
        tensors[f"model.layers.0.{norm}.weight"] = torch.ones(4096, dtype=torch.bfloat16)
    save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=1)
    return folder


def _child_cpu(argv, **kw) -> float:
    """CPU seconds (user + system) of a child process, from the kernel's accounting."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise RuntimeError(f"{argv[0]} failed ({status})")
    return usage.ru_utime + usage.ru_stime


def time_cat(folder: str) -> float:
    return _child_cpu(["cat", os.path.join(folder, "model.safetensors")])


def time_ct(folder: str, python: str) -> float:
    out = subprocess.run([python, "-c", _CT_SNIPPET, folder], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def _readers():
    """(open a folder, audit, convert) from this checkout's twofour (new API or the one before it)."""
    from twofour.dispatch import audit, hypothetical_gpu

    try:
        from twofour.checkpoint import convert, open as open_checkpoint
    except ImportError:  # the code before twofour.checkpoint
        from twofour.cli.audit import open_source as open_checkpoint
        from twofour.dispatch.convert import convert
    target = hypothetical_gpu((9, 0), name="H100")
    return (lambda folder: _audit(open_checkpoint, audit, target, folder)), convert


def _audit(open_checkpoint, audit, target, folder):
    with open_checkpoint(folder) as reader:
        return audit(reader, target=target)


def _cpu(fn, *args) -> float:
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", help="where the generated folder lives (kept between runs with --keep)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated folder for the next run")
    parser.add_argument("--ct-python", default="/tmp/ctvenv/bin/python",
                        help="an interpreter with compressed-tensors 0.14.0 (its column is skipped if absent)")
    args = parser.parse_args(argv)
    root = args.dir or tempfile.mkdtemp(prefix="ckpt-speed-")
    folder = os.path.join(root, "llama-3.1-8b-layer")
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        print(f"writing one Llama-3.1-8B-shaped bf16 layer, stored sparse-24-bitmask, to {folder} ...", file=sys.stderr)
        make_folder(folder)
    has_ct = os.path.exists(args.ct_python)
    audit_folder, convert = _readers()
    out = os.path.join(root, "dense.safetensors")
    audit_folder(folder)  # warm: page cache, imports
    times: dict[str, list[float]] = {"cat": [], "ct decompress": [], "audit": [], "convert": []}
    for i in range(args.rounds):
        times["cat"].append(time_cat(folder))
        if has_ct:
            times["ct decompress"].append(time_ct(folder, args.ct_python))
        times["audit"].append(_cpu(audit_folder, folder))
        times["convert"].append(_cpu(convert, folder, out))
        print(f"round {i + 1} of {args.rounds}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items() if v),
              file=sys.stderr)
    stored = os.path.getsize(os.path.join(folder, "model.safetensors"))
    print(f"per decoder layer ({stored / 1e6:.0f} MB stored, {os.path.getsize(out) / 1e6:.0f} MB dense), "
          f"CPU seconds, median of {args.rounds} rounds, page cache warm, torch threads {torch.get_num_threads()}:")
    print("| step | CPU s |\n|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v):.2f} |" if v else f"| {k} | (compressed-tensors not at {args.ct_python}) |")
    os.remove(out)
    if not args.keep and not args.dir:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
