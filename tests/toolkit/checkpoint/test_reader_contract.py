"""One way in (``twofour.checkpoint.open``), one reader protocol, and an audit that says what a checkpoint is.

The compressed-tensors fixtures were written by compressed-tensors 0.14.0 itself
(``scripts/make_ct_fixtures.py``); other folders here are built by the tests in the same layout.
"""

from __future__ import annotations

import inspect
import json
import shutil
from importlib.resources import files

import pytest
import torch
from safetensors.torch import save_file

from twofour import checkpoint, prune
from twofour.checkpoint._bitmask import check_bitmask, decompress, pack_bitmask
from twofour.checkpoint.compressed import CompressedError
from twofour.cli.main import main
from twofour.dispatch import audit, hypothetical_gpu
from twofour.dispatch import audit as audit_module

FIXTURES = files("twofour") / "data" / "compressed-tensors"
H100 = hypothetical_gpu((9, 0), name="H100")


def _two_four(N, K, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return prune(torch.randn(N, K, generator=g).to(dtype))[0]


def _ct_folder(tmp_path, tensors, ignore=(), targets=("Linear",), extra=None, name="m"):
    d = tmp_path / name
    d.mkdir()
    save_file(tensors, str(d / "model.safetensors"))
    config = {"model_type": "llama", "quantization_config": {
        "quant_method": "compressed-tensors", "version": "0.14.0",
        "sparsity_config": {"format": "dense", "sparsity_structure": "2:4", "targets": list(targets),
                            "ignore": list(ignore)}}}
    config.update(extra or {})
    (d / "config.json").write_text(json.dumps(config))
    return str(d)


# -- one way in, one protocol -----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["folder", "file", "pt"])
def test_open_reads_a_folder_a_file_and_a_pt_as_one_protocol(tmp_path, kind):
    W = _two_four(8, 16)
    if kind == "pt":
        path = tmp_path / "m.pt"
        torch.save({"model": {"fc.weight": W}}, path)
        name = "model.fc.weight"
    else:
        save_file({"fc.weight": W}, str(tmp_path / "model.safetensors"))
        path = tmp_path if kind == "folder" else tmp_path / "model.safetensors"
        name = "fc.weight"
    with checkpoint.open(path) as r:
        assert isinstance(r, checkpoint.Reader)
        assert r.names() == [name] and r.stored(name).form == "dense" and torch.equal(r.tensor(name), W)
        assert audit(r, target=H100).rows[0].fraction_valid == 1.0


def test_the_audit_does_not_probe_readers_for_capabilities():
    # Before: dispatch/audit.py recognised readers with callable(getattr(...)) and getattr(source, "ct" | "stored" ...).
    source = inspect.getsource(audit_module)
    assert "getattr(source" not in source and "getattr(model_or_state_dict" not in source


# -- what the checkpoint is, on any machine --------------------------------------------------------------
def test_a_valid_24_folder_audited_on_a_cpu_says_it_is_24_never_not_sparse(capsys):
    # Before: "NOT SPARSE: 0 of 7 linear weights would run a 2:4 sparse kernel on CPU (no CUDA GPU)".
    code = main(["audit", str(FIXTURES / "sparse24-fp16"), "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0 and "NOT SPARSE" not in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("2:4 CHECKPOINT: 7 of 7 linear weights are 2:4 along K (stored sparse-24-bitmask: 7)")
    assert "--capability 9.0" in out  # and it says how to ask about a GPU


def test_the_report_separates_the_checkpoint_from_the_machine():
    with checkpoint.open(str(FIXTURES / "sparse24-bf16")) as r:
        report = audit(r, target=H100)
    assert report.checkpoint_line().startswith("2:4 CHECKPOINT: 7 of 7")
    assert report.machine_line().startswith("SPARSE-READY: 7 of 7") and report.summary() == report.machine_line()
    payload = json.loads(report.to_json())
    assert payload["checkpoint"] == report.checkpoint_line() and payload["machine"] == report.machine_line()


@pytest.mark.parametrize("pattern", [r"re:.*mlp\.gate$", "model.layers.0.mlp.gate", r"re:.*\.gate"])
def test_a_router_the_recipe_ignores_is_kept_dense_and_named_a_router(tmp_path, pattern):
    # Before: with "re:.*mlp\.gate$" the verdict fell to "PARTLY SPARSE: 3 of 4" and the router was called
    # "the output head and embeddings".
    tensors = {f"model.layers.0.mlp.experts.{i}.up_proj.weight": _two_four(16, 32, seed=i) for i in range(3)}
    tensors["model.layers.0.mlp.gate.weight"] = torch.randn(8, 32).half()
    d = _ct_folder(tmp_path, tensors, ignore=[pattern, "lm_head"])
    with checkpoint.open(d) as r:
        report = audit(r, target=H100)
    router = next(row for row in report.rows if row.name.endswith("mlp.gate.weight"))
    assert router.kept_dense == "a MoE router, in the recipe's ignore list" and router.verdict == "dense"
    assert report.summary().startswith("SPARSE-READY: 3 of 3")
    assert "a MoE router" in report.text() and "the output head and embeddings" not in report.text()


def test_a_vision_tower_outside_the_recipes_targets_is_kept_dense(tmp_path):
    tensors = {"language_model.layers.0.mlp.up_proj.weight": _two_four(16, 32),
               "vision_tower.blocks.0.attn.qkv.weight": torch.randn(16, 32).half()}
    d = _ct_folder(tmp_path, tensors, targets=[r"re:language_model\..*"])
    with checkpoint.open(d) as r:
        rows = {row.name: row for row in audit(r, target=H100).rows}
    assert rows["vision_tower.blocks.0.attn.qkv.weight"].kept_dense == "the vision tower, not in the recipe's targets"


# -- Hugging Face Conv1D (GPT-2): [in, out], judged along in_features -----------------------------------
def test_a_gpt2_conv1d_weight_is_judged_along_in_features(tmp_path):
    # Before: checked along the stored rows' last dimension (out_features): a valid GPT-2 was "NOT SPARSE".
    along_in = _two_four(96, 32).t().contiguous()  # stored [in=32, out=96], 2:4 along in_features
    along_out = _two_four(32, 96, seed=1)  # stored [in=32, out=96], 2:4 along out_features only
    d = tmp_path / "gpt2"
    d.mkdir()
    save_file({"transformer.h.0.attn.c_attn.weight": along_in, "transformer.h.0.mlp.c_fc.weight": along_out},
              str(d / "model.safetensors"))
    (d / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with checkpoint.open(d) as r:
        report = audit(r, target=H100)
    rows = {row.name: row for row in report.rows}
    assert rows["transformer.h.0.attn.c_attn.weight"].fraction_valid == 1.0
    assert rows["transformer.h.0.attn.c_attn.weight"].shape == (96, 32)
    assert rows["transformer.h.0.mlp.c_fc.weight"].fraction_valid < 1.0
    assert any("Conv1D" in n for n in report.notes)


# -- near the file read: what the audit does not read ------------------------------------------------------
def test_a_bitmask_layer_is_audited_from_its_bitmask_and_an_embedding_is_not_read(monkeypatch):
    # Before: every value was read and every weight rebuilt to check it; the embedding was read and never checked.
    read = []
    with checkpoint.open(str(FIXTURES / "sparse24-fp16")) as r:
        real = r.files.tensor
        monkeypatch.setattr(r.files, "tensor", lambda name: read.append(name) or real(name))
        report = audit(r, target=H100)
    assert report.checkpoint_line().startswith("2:4 CHECKPOINT: 7 of 7")
    assert not [n for n in read if n.endswith(".compressed")]
    assert "model.embed_tokens.weight" not in read


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8, torch.float8_e4m3fn, torch.float32])
@pytest.mark.parametrize("K", [4, 12, 64, 68, 200])
def test_the_table_rebuild_is_bit_for_bit_the_elementwise_one(dtype, K):
    g = torch.Generator().manual_seed(K)
    N = 300  # more than one block of rows
    keep = torch.rand(N, K // 4, 4, generator=g).argsort(-1)[..., :2]
    mask = torch.zeros(N, K // 4, 4, dtype=torch.bool).scatter_(-1, keep, True).reshape(N, K)
    values = (torch.randn(N, K, generator=g) * 8).to(dtype)[mask].reshape(N, K // 2)
    bits = pack_bitmask(mask)
    expected = torch.zeros(N, K, dtype=torch.uint8 if dtype.itemsize == 1 else dtype)
    expected[mask] = values.reshape(-1).view(expected.dtype)  # row-major order of the set bits, bit for bit
    buffer = torch.empty(N * K * 8, dtype=torch.uint8)
    for out in (None, buffer):
        got = decompress(values, bits, (N, K), "fc", out=out)
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8), expected.view(torch.uint8))


@pytest.mark.parametrize("K", [64, 68])  # whole 64-bit words per row, and bytes
def test_the_bitmask_check_finds_a_group_keeping_three(K):
    mask = torch.zeros(5, K, dtype=torch.bool)
    mask[:, 0::4] = mask[:, 1::4] = True
    check_bitmask("fc", pack_bitmask(mask), K)
    mask[3, K - 2] = True  # the last group of row 3 keeps three
    with pytest.raises(CompressedError, match=f"keeps 3 of 4 in row 3, group {K // 4 - 1}"):
        check_bitmask("fc", pack_bitmask(mask), K)


def test_the_bitmask_check_refuses_set_padding_bits():
    mask = torch.zeros(2, 12, dtype=torch.bool)
    mask[:, 0::4] = mask[:, 1::4] = True
    bits = pack_bitmask(mask)
    bits[1, -1] |= 0x80
    with pytest.raises(CompressedError):
        check_bitmask("fc", bits, 12)


def test_the_checkpoint_room_is_what_the_callers_import(tmp_path):
    src = tmp_path / "copy"
    shutil.copytree(FIXTURES / "sparse24-int8", src)
    result = checkpoint.convert(str(src), tmp_path / "o.safetensors")
    assert result.n_rebuilt == 7
    assert checkpoint.weight_kind("lm_head.weight", (8, 8)) == "linear"
