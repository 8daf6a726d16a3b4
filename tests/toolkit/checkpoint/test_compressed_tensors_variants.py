"""Every compressed-tensors 2:4 variant a published model uses, in folders written by compressed-tensors 0.14.0.

``scripts/make_ct_fixtures.py`` wrote each folder with the library's own ``ModelCompressor``
(``sparse-bitmask``; ``pack-quantized`` W4A16, symmetric and asymmetric; ``int-quantized`` W8A8
and ``float-quantized`` FP8 with ``sparsity_structure: "2:4"``); ``sparse-bitmask-fp16.expected``
is its own decompression. The library is not needed to run these tests.
"""

from __future__ import annotations

import shutil
from importlib.resources import files

import pytest
import torch
from safetensors.torch import load_file, save_file

from twofour import checkpoint
from twofour.checkpoint.compressed import unpack_ints
from twofour.cli.main import main
from twofour.dispatch import audit, hypothetical_gpu

FIXTURES = files("twofour") / "data" / "compressed-tensors"
H100 = hypothetical_gpu((9, 0), name="H100")
LAYERS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
          "mlp.up_proj", "mlp.down_proj")


def _audit(name):
    with checkpoint.open(str(FIXTURES / name)) as r:
        return audit(r, target=H100)


@pytest.mark.parametrize("name,form", [("sparse-bitmask-fp16", "sparse-bitmask"), ("w4a16-24", "pack-quantized"),
                                       ("w4a16-asym-24", "pack-quantized"), ("w8a8-24", "dense"), ("fp8-24", "dense")])
def test_each_variant_is_audited_as_24_in_its_stored_form(name, form):
    # Before: pack-quantized was "NOT SPARSE: 0 of 0 linear weights"; sparse-bitmask was refused as damaged.
    report = _audit(name)
    rows = {r.name: r for r in report.rows}
    for layer in LAYERS:
        row = rows[f"model.layers.0.{layer}.weight"]
        assert row.stored == form and row.fraction_valid == 1.0 and row.n_bad_groups == 0, row
    assert report.checkpoint_line().startswith(f"2:4 CHECKPOINT: 7 of 7 linear weights are 2:4 along K (stored {form}: 7)")
    assert rows["lm_head.weight"].kept_dense


def test_sparse_bitmask_converts_bit_for_bit_as_the_library_decompresses(tmp_path):
    out = tmp_path / "dense.safetensors"
    result = checkpoint.convert(str(FIXTURES / "sparse-bitmask-fp16"), out)
    expected = load_file(str(FIXTURES / "sparse-bitmask-fp16.expected.safetensors"))
    got = load_file(str(out))
    assert result.n_rebuilt == 7
    for name, want in expected.items():
        assert torch.equal(got[name].view(torch.int16), want.view(torch.int16)), name


@pytest.mark.parametrize("name", ["w4a16-24", "w4a16-asym-24"])
@pytest.mark.parametrize("layout", ["dense", "packed"])
def test_pack_quantized_convert_is_a_one_line_refusal(tmp_path, capsys, name, layout):
    # Before: `convert --layout packed` exited 0 having packed nothing.
    code = main(["convert", str(FIXTURES / name), str(tmp_path / "o.safetensors"), "--layout", layout])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pack-quantized (int4, weight-only)" in err[0]
    assert not (tmp_path / "o.safetensors").exists()


def test_pack_quantized_asymmetric_zeros_are_where_the_zero_point_is():
    # The asymmetric fixture's zeros are stored as the zero point, not as 0: read as 0 they would all look non-zero.
    folder = FIXTURES / "w4a16-asym-24"
    tensors = {}
    for shard in folder.iterdir():
        if shard.name.endswith(".safetensors"):
            tensors.update(load_file(str(shard)))
    packed = tensors["model.layers.0.mlp.up_proj.weight_packed"]
    N, K = (int(v) for v in tensors["model.layers.0.mlp.up_proj.weight_shape"])
    q = unpack_ints(packed, 4, N, K)
    assert int((q == 0).sum()) < N * K // 2  # zeros are not the integer 0 here


def test_a_pack_quantized_weight_breaking_24_is_refused_against_its_config(tmp_path, capsys):
    src = tmp_path / "w4a16"
    shutil.copytree(FIXTURES / "w4a16-24", src)
    shard = next(p for p in src.iterdir() if p.name.endswith(".safetensors"))
    tensors = load_file(str(shard))
    name = "model.layers.0.mlp.up_proj.weight_packed"
    words = tensors[name].clone()
    words[0, 0] = torch.tensor(0x11111111 - (1 << 32) if 0x11111111 >= (1 << 31) else 0x11111111, dtype=torch.int32)
    tensors[name] = words  # eight values of -7: the first two groups keep four
    save_file(tensors, str(shard), metadata={"format": "pt"})
    code = main(["audit", str(src)])
    err = capsys.readouterr().err
    assert code == 2 and "claims sparsity_structure 2:4" in err and "up_proj" in err


def test_part_names_without_a_layer_are_ordinary_tensors(tmp_path):
    # A stored form replaces <layer>.weight; top-level tensors that merely share its part names name no layer.
    # Before: they were read as the parts of a layer named "" and the reader failed with a KeyError.
    path = tmp_path / "m.safetensors"
    save_file({"compressed": torch.zeros(2, 4), "bitmask": torch.zeros(2, 1, dtype=torch.uint8),
               "shape": torch.tensor([[2], [8]])}, str(path))
    with checkpoint.open(path) as r:
        assert sorted(r.names()) == ["bitmask", "compressed", "shape"]
        assert {r.stored(n).form for n in r.names()} == {"dense"}
