"""Model folders and compressed-tensors checkpoints: audit, convert, and the files that lie.

The fixtures under ``twofour/data/compressed-tensors`` were written by compressed-tensors 0.14.0
itself (``scripts/make_ct_fixtures.py``); ``<name>.expected.safetensors`` is its own
decompression. compressed-tensors is not needed to run these tests.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from importlib.resources import files

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from twofour import pack
from twofour.cli.main import main
from twofour.dispatch import audit, hypothetical_gpu
from twofour.checkpoint import as_reader
from twofour.checkpoint.compressed import pack_bitmask, unpack_bitmask
from twofour.checkpoint.convert import convert
from twofour.checkpoint.folder import open_model
from twofour.packing import to_cutlass

FIXTURES = files("twofour") / "data" / "compressed-tensors"
SPARSE = ["sparse24-fp16", "sparse24-bf16", "sparse24-fp8", "sparse24-int8"]
H100 = hypothetical_gpu((9, 0), name="H100")
PRUNED = {f"model.layers.0.{p}.weight" for p in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                  "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}


def fixture(name: str) -> str:
    return str(FIXTURES / name)


def copy(name: str, tmp_path) -> str:
    dst = tmp_path / name
    shutil.copytree(fixture(name), dst)
    return str(dst)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv) -> str:
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8) if t.element_size() == 1 else t


def audit_folder(path: str):
    with as_reader(open_model(path)) as view:
        return audit(view, target=H100)


# -- what the format's own writer wrote ------------------------------------------------------------
@pytest.mark.parametrize("name", SPARSE)
def test_every_pruned_layer_is_valid_24_in_its_stored_form(name):
    report = audit_folder(fixture(name))
    rows = {r.name: r for r in report.rows}
    assert set(PRUNED) <= set(rows)
    for layer in PRUNED:
        r = rows[layer]
        assert r.stored == "sparse-24-bitmask" and r.fraction_valid == 1.0 and r.n_bad_groups == 0
        assert r.stored_bytes < r.shape[0] * r.shape[1] * 2  # smaller than dense fp16 on disk
    assert rows["lm_head.weight"].kept_dense and rows["lm_head.weight"].verdict == "dense"
    assert rows["model.embed_tokens.weight"].kept_dense
    assert not any(t == "structure" for t, _, _ in report.reason_counts())
    assert report.runners[0].startswith("vLLM >= 0.19: refuses") and "compressed-tensors > 0.14.0: refuses" in report.runners[1]
    assert "sparse-24-bitmask" in report.model and "ignoring lm_head" in report.model


def test_fp16_folder_is_sparse_ready_and_quantized_ones_name_their_scales():
    assert audit_folder(fixture("sparse24-fp16")).summary().startswith("SPARSE-READY: 7 of 7")
    report = audit_folder(fixture("sparse24-fp8"))
    scales = [n for n, why in report.skipped if "quantization parameter" in why]
    assert any(n.endswith("down_proj.weight_scale") for n in scales)
    assert {r.dtype for r in report.rows if r.name in PRUNED} == {"float8_e4m3fn"}
    assert any("fp8 e4m3" in line for line in report.runners)
    int8 = audit_folder(fixture("sparse24-int8"))
    assert {r.dtype for r in int8.rows if r.name in PRUNED} == {"int8"}


def test_dense_folder_is_checked_against_its_claim_and_marlin_is_named():
    rows = {r.name: r for r in audit_folder(fixture("dense-24")).rows}
    assert all(rows[n].stored == "dense" and rows[n].fraction_valid == 1.0 for n in PRUNED)
    marlin = audit_folder(fixture("marlin24-int4"))
    mrows = {r.name: r for r in marlin.rows}
    assert all(mrows[n].verdict == "marlin-24" and mrows[n].stored == "marlin-24" for n in PRUNED)
    assert mrows["model.layers.0.mlp.down_proj.weight"].shape == (128, 256)
    assert any("only a Marlin kernel runs it" in line for line in marlin.runners)


def test_cli_audits_a_folder_an_index_and_one_shard(capsys):
    code, out, _ = run(capsys, "audit", fixture("sparse24-fp16"), "--capability", "9.0")
    assert code == 0 and "sparse-24-bitmask" in out and "what can load and run it:" in out
    assert "on disk:" in out and "SPARSE-READY: 7 of 7" in out
    code, out2, _ = run(capsys, "audit", fixture("sparse24-fp16") + "/model.safetensors.index.json", "--capability", "9.0")
    assert code == 0 and out2 == out.replace(fixture("sparse24-fp16"), fixture("sparse24-fp16") + "/model.safetensors.index.json")
    code, out3, _ = run(capsys, "audit", fixture("sparse24-fp16") + "/model-00002-of-00002.safetensors", "--capability", "9.0")
    assert code == 0 and "sparse-24-bitmask" in out3


def test_the_bitmask_bit_order_is_numpys_little_endian_packbits():
    g = torch.Generator().manual_seed(0)
    for K in (4, 8, 12, 36, 64):
        mask = torch.rand(5, K, generator=g) > 0.5
        ours = pack_bitmask(mask)
        ref = torch.from_numpy(np.packbits(mask.numpy(), axis=-1, bitorder="little"))
        assert torch.equal(ours, ref)
        assert torch.equal(unpack_bitmask(ref, K), mask)


# -- the converter ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SPARSE)
def test_dense_output_equals_compressed_tensors_decompression_bit_for_bit(name, tmp_path):
    out = tmp_path / "dense.safetensors"
    result = convert(fixture(name), out)
    assert result.n_rebuilt == 7
    got, expected = load_file(str(out)), load_file(fixture(f"{name}.expected.safetensors"))
    assert set(PRUNED) <= set(expected)
    for key, want in expected.items():
        assert got[key].dtype == want.dtype and torch.equal(bits(got[key]), bits(want)), key
    with safe_open(str(out), "pt") as f:
        assert any(k.endswith("weight_scale") for k in f.keys()) == (name in ("sparse24-fp8", "sparse24-int8"))


@pytest.mark.parametrize("name", SPARSE)
@pytest.mark.parametrize("layout", ["packed", "cutlass"])
def test_packed_output_equals_twofour_pack_of_the_decompression(name, layout, tmp_path):
    out = tmp_path / "p.safetensors"
    if layout == "cutlass" and name == "sparse24-fp8":
        with pytest.raises(Exception, match="cannot be written as --layout cutlass"):
            convert(fixture(name), out, layout)
        assert not out.exists() and os.listdir(tmp_path) == []
        return
    convert(fixture(name), out, layout)
    got, expected = load_file(str(out)), load_file(fixture(f"{name}.expected.safetensors"))
    for key in PRUNED:
        p = pack(expected[key])
        values, meta = (p.values, p.meta) if layout == "packed" else to_cutlass(p)
        assert torch.equal(bits(got[f"{key}.values"]), bits(values)) and torch.equal(got[f"{key}.meta"].view(torch.uint8), meta.contiguous().view(torch.uint8))
    with open_model(fixture(name)) as m:  # not 2:4: copied dense
        assert torch.equal(got["lm_head.weight"], m.tensor("lm_head.weight"))


def test_convert_cli_refuses_output_equal_to_input_and_marlin(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    shard = os.path.join(src, "model-00001-of-00002.safetensors")
    before = open(shard, "rb").read()
    assert "is an input of this command" in refused(capsys, "convert", src, shard)
    assert open(shard, "rb").read() == before
    out = tmp_path / "m.safetensors"
    assert "stored marlin-24" in refused(capsys, "convert", fixture("marlin24-int4"), out)
    assert not out.exists()
    code, printed, _ = run(capsys, "convert", src, out, "--layout", "packed")
    assert code == 0 and "7 packed" in printed and out.exists()


# -- files that lie: one line, nothing written -------------------------------------------------------
def _rewrite(folder: str, shard: str, change):
    path = os.path.join(folder, shard)
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def _three_bits(t):
    bm = t["model.layers.0.mlp.up_proj.bitmask"].clone()
    bm[3, 1] |= 0x0F  # row 3, byte 1: its first group now keeps 4
    t["model.layers.0.mlp.up_proj.bitmask"] = bm


def _wrong_shape(t):
    t["model.layers.0.mlp.up_proj.shape"] = torch.tensor([[128], [72]])


def _wrong_values(t):
    t["model.layers.0.mlp.up_proj.compressed"] = t["model.layers.0.mlp.up_proj.compressed"][:, :30].contiguous()


def _no_shape(t):
    del t["model.layers.0.mlp.up_proj.shape"]


LIES = [
    (_three_bits, "the bitmask keeps 4 of 4 in row 3, group 2"),
    (_wrong_shape, "the shape and the bitmask disagree"),
    (_wrong_values, "the shape and the values disagree"),
    (_no_shape, "shape is missing"),
]


def _shard_of(folder: str, tensor: str) -> str:
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json")))
    return index["weight_map"][tensor]


@pytest.mark.parametrize("change, message", LIES, ids=[c.__name__ for c, _ in LIES])
def test_a_lying_stored_weight_is_refused_and_nothing_written(capsys, tmp_path, change, message):
    src = copy("sparse24-int8", tmp_path)
    shard = _shard_of(src, "model.layers.0.mlp.up_proj.bitmask")
    _rewrite(src, shard, change)
    if change is _no_shape:  # keep the index honest about what the shard holds
        ipath = os.path.join(src, "model.safetensors.index.json")
        index = json.load(open(ipath))
        del index["weight_map"]["model.layers.0.mlp.up_proj.shape"]
        json.dump(index, open(ipath, "w"))
    assert message in refused(capsys, "audit", src)
    out = tmp_path / "out"
    out.mkdir()
    assert message in refused(capsys, "convert", src, out / "x.safetensors", "--layout", "packed")
    assert os.listdir(out) == []


def test_a_config_claiming_24_for_a_dense_weight_is_refused(capsys, tmp_path):
    src = copy("dense-24", tmp_path)
    name = "model.layers.0.mlp.gate_proj.weight"
    _rewrite(src, _shard_of(src, name), lambda t: t.__setitem__(name, torch.randn(128, 64).half()))
    line = refused(capsys, "audit", src, "--capability", "9.0")
    assert "claims sparsity_structure 2:4 for model.layers.0.mlp.gate_proj.weight" in line
    assert "claims sparsity_structure 2:4" in refused(capsys, "convert", src, tmp_path / "o.safetensors")
    assert not (tmp_path / "o.safetensors").exists()


def _index(src):
    path = os.path.join(src, "model.safetensors.index.json")
    return path, json.load(open(path))


def test_missing_and_truncated_shards_are_refused(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    os.remove(os.path.join(src, "model-00002-of-00002.safetensors"))
    assert "shard model-00002-of-00002.safetensors is missing" in refused(capsys, "audit", src)
    src = copy("sparse24-bf16", tmp_path)
    shard = os.path.join(src, "model-00001-of-00002.safetensors")
    data = open(shard, "rb").read()
    open(shard, "wb").write(data[: len(data) // 2])
    assert "corrupt" in refused(capsys, "audit", src)
    assert "corrupt" in refused(capsys, "convert", src, tmp_path / "o.safetensors")
    assert not (tmp_path / "o.safetensors").exists()


@pytest.mark.parametrize("target", ["../outside.safetensors", "/etc/passwd", "sub/../../x.safetensors"])
def test_an_index_naming_a_file_outside_the_folder_is_refused(capsys, tmp_path, target):
    src = copy("sparse24-fp16", tmp_path)
    save_file({"x": torch.zeros(2)}, str(tmp_path / "outside.safetensors"))
    path, index = _index(src)
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = target
    json.dump(index, open(path, "w"))
    assert "not a file inside the folder" in refused(capsys, "audit", src)


def test_a_symlink_out_of_the_folder_is_refused(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    elsewhere = tmp_path / "elsewhere.safetensors"
    shard = os.path.join(src, "model-00002-of-00002.safetensors")
    shutil.move(shard, elsewhere)
    os.symlink(elsewhere, shard)
    assert "symlink that leads out of the folder" in refused(capsys, "audit", src)
    os.remove(shard)
    os.symlink(elsewhere, os.path.join(src, "model.safetensors"))  # no index: the single-file form
    os.remove(os.path.join(src, "model.safetensors.index.json"))
    assert "symlink that leads out of the folder" in refused(capsys, "audit", src)


def test_a_fifo_huge_or_hostile_config_is_refused(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    cfg = os.path.join(src, "config.json")
    os.remove(cfg)
    os.mkfifo(cfg)
    assert "config.json is not a regular file" in refused(capsys, "audit", src)
    os.remove(cfg)
    with open(cfg, "wb") as f:
        f.truncate(17 * 1024 * 1024)  # sparse: no disk used
    assert "more than 16,777,216" in refused(capsys, "audit", src)
    open(cfg, "w").write('{"a": 1, "a": 2}')
    assert "appears twice" in refused(capsys, "audit", src)
    open(cfg, "w").write("[" * 100 + "]" * 100)
    assert "nests deeper than 32 levels" in refused(capsys, "audit", src)
    open(cfg, "w").write(json.dumps({"quantization_config": {"quant_method": "compressed-tensors",
                                                             "sparsity_config": {"format": "exec-me"}}}))
    assert "is not one twofour reads" in refused(capsys, "audit", src)


def test_a_fifo_shard_and_a_huge_header_are_refused(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    shard = os.path.join(src, "model-00002-of-00002.safetensors")
    os.remove(shard)
    os.mkfifo(shard)
    assert "is a FIFO" in refused(capsys, "audit", src)
    os.remove(shard)
    with open(shard, "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{" + b" " * 64)
    assert "unknown format" in refused(capsys, "audit", src)


# -- the safetensors path: names, BOM ------------------------------------------------------------------
def test_a_name_must_end_in_dot_weight(capsys, tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"notaweight": torch.zeros(8, 8), "fc.weight": torch.zeros(8, 8)}, str(path))
    code, out, _ = run(capsys, "audit", path)
    assert code == 0
    table = out.split("\n\n")[0]
    assert "fc.weight" in table and "notaweight" not in table
    assert "does not end in .weight" in out


def test_a_safetensors_header_with_a_bom_is_corrupt_not_unknown(capsys, tmp_path):
    header = b'\xef\xbb\xbf{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    path = tmp_path / "bom.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\x00" * 4)
    line = refused(capsys, "audit", path)
    assert "corrupt safetensors file" in line and "byte-order mark" in line


def test_a_checkpoint_with_too_many_tensors_is_refused_at_once(capsys, tmp_path, monkeypatch):
    import importlib

    monkeypatch.setattr(importlib.import_module("twofour.dispatch.audit"), "MAX_TENSORS", 50)
    path = tmp_path / "many.safetensors"
    save_file({f"l{i}.weight": torch.zeros(4, 8) for i in range(51)}, str(path))
    line = refused(capsys, "audit", path)
    assert "holds 51 tensors, more than 50" in line


# -- bench --decode --checkpoint -------------------------------------------------------------------
@pytest.mark.slow  # builds two models and times decode steps under the profiler (5 s)
def test_bench_decode_times_the_folders_own_model(capsys, tmp_path):
    from twofour.serve.checkpoint import all_24, from_checkpoint

    model = from_checkpoint(fixture("sparse24-int8"))  # int8 values dequantized with their scales
    assert all_24(model) and model.cfg.kv_heads == 2 and model.lm_head.shape == (64, 64)
    out = tmp_path / "decode.json"
    code, printed, _ = run(capsys, "bench", "--decode", "--checkpoint", fixture("sparse24-fp16"), "--batch", "1",
                           "--prompt", "8", "--repeats", "1", "--warmup", "0", "--out", out)
    assert code == 0 and "built sparse24-fp16 float32 dense (the checkpoint's weights)" in printed
    results = json.loads(out.read_text())
    assert "sparse24-fp16" in json.dumps(results)


def test_bench_decode_checkpoint_refusals(capsys, tmp_path):
    src = copy("sparse24-fp16", tmp_path)
    assert "give one" in refused(capsys, "bench", "--decode", "--checkpoint", src, "--model", "tiny")
    os.remove(os.path.join(src, "config.json"))
    assert "--checkpoint: the folder has no config.json" in refused(capsys, "bench", "--decode", "--checkpoint", src)
    assert "only used with --decode" in refused(capsys, "bench", "--checkpoint", src)
