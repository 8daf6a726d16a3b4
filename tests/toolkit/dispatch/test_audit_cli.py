"""``twofour audit FILE``: formats, the safety of loading, and one-line errors."""

from __future__ import annotations

import errno
import json
import os
import pickle
import struct
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

import twofour
from twofour.cli import main


def _state_dict():
    g = torch.Generator().manual_seed(0)
    return {
        "model.embed_tokens.weight": torch.randn(100, 64, generator=g).half(),
        "model.layers.0.q_proj.weight": twofour.prune(torch.randn(128, 64, generator=g))[0].half(),
        "model.layers.0.o_proj.weight": torch.randn(64, 128, generator=g).half(),
        "model.norm.weight": torch.ones(64).half(),
    }


@pytest.fixture
def safetensors_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file(_state_dict(), str(path))
    return path


def run_cli(capsys, *args):
    code = main(["audit", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_safetensors_on_a_hypothetical_h100(capsys, safetensors_file):
    code, out, err = run_cli(capsys, safetensors_file, "--capability", "9.0", "--tokens", "1")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[-1].startswith("PARTLY SPARSE: 1 of 2 linear weights would run a 2:4 sparse kernel on hypothetical GPU (9.0)")
    assert any("model.layers.0.q_proj.weight" in line and "sparse-cusparselt" in line for line in lines)
    assert any("o_proj" in line and "dense" in line and "structure" in line for line in lines)
    assert "padding (2)" in out and "87.5%" in out  # 1 token padded to 8 rows
    assert "skipped 1 tensors" in out


def test_forcing_cutlass_on_h100_reports_the_capability(capsys, safetensors_file):
    code, out, _ = run_cli(capsys, safetensors_file, "--capability", "9.0", "--backend", "cutlass")
    assert code == 0 and "capability (2)" in out and out.strip().splitlines()[-1].startswith("NOT SPARSE")


def test_torch_checkpoints_zip_and_legacy(capsys, tmp_path):
    zip_path, legacy_path = tmp_path / "ckpt.pt", tmp_path / "legacy.bin"
    torch.save({"state_dict": _state_dict(), "epoch": 3}, zip_path)
    torch.save(_state_dict(), legacy_path, _use_new_zipfile_serialization=False)
    code, out, _ = run_cli(capsys, zip_path, "--capability", "8.0")
    assert code == 0 and "state_dict.model.layers.0.q_proj.weight" in out and "not a tensor (int)" in out
    code, out2, _ = run_cli(capsys, legacy_path, "--capability", "8.0")
    assert code == 0 and out2.strip().splitlines()[-1] == out.strip().splitlines()[-1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only default target")
def test_default_target_on_a_cpu_machine(capsys, safetensors_file):
    code, out, _ = run_cli(capsys, safetensors_file)
    assert code == 0 and "CPU (no CUDA GPU)" in out and "--capability" in out


def test_json_output(capsys, safetensors_file, tmp_path):
    out_path = tmp_path / "audit.json"
    code, out, err = run_cli(capsys, safetensors_file, "--capability", "8.0", "--json", out_path)
    assert code == 0 and f"wrote {out_path}" in err
    data = json.loads(out_path.read_text())
    assert [r["name"] for r in data["rows"]][0] == "model.embed_tokens.weight"
    assert data["summary"] == out.strip().splitlines()[-1]


def test_max_rows(capsys, safetensors_file):
    code, out, _ = run_cli(capsys, safetensors_file, "--capability", "8.0", "--max-rows", "1")
    assert code == 0 and "... 2 more rows" in out and out.strip().splitlines()[-1].startswith("PARTLY")


class _Payload:
    """A pickle that would create a file if it were ever unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _one_line_error(code, out, err):
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("twofour audit: error: ") and "Traceback" not in err
    return err


def test_malicious_pickle_is_refused_and_never_run(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    for name, save in (
        ("evil.pt", lambda p: torch.save({"w": torch.zeros(4, 4), "x": _Payload(str(marker))}, p)),
        ("evil.pkl", lambda p: p.write_bytes(pickle.dumps(_Payload(str(marker)), protocol=2))),
    ):
        path = tmp_path / name
        save(path)
        err = _one_line_error(*run_cli(capsys, path))
        assert "refused" in err and "weights_only=True" in err
        assert not marker.exists()


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
def test_malicious_pickle_in_a_real_process_exits_non_zero_without_traceback(tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.pt"
    torch.save({"x": _Payload(str(marker))}, path)
    proc = subprocess.run(
        # what the `twofour` console script runs (twofour.cli:main)
        [sys.executable, "-c", "import sys; from twofour.cli import main; sys.exit(main())", "audit", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("twofour audit: error:")]
    assert len(errors) == 1 and "refused" in errors[0] and "Traceback" not in proc.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d: d / "missing.safetensors", "no such file"),
        (lambda d: d, "a model folder needs model.safetensors.index.json or one model.safetensors"),
        (lambda d: _write(d / "empty.pt", b""), "the file is empty"),
        (lambda d: _write(d / "notes.txt", b"hello world, not weights"), "unknown format"),
        (lambda d: _write(d / "bad.safetensors", struct.pack("<Q", 20) + b'{"a": {"dtype": 1}}x'), "corrupt or unreadable safetensors"),
        (lambda d: _truncated(d), "corrupt"),
        (lambda d: _write(d / "zip.pt", b"PK\x03\x04" + b"\x00" * 60), "corrupt PyTorch checkpoint"),
    ],
)
def test_file_errors_are_one_line(capsys, tmp_path, make, match):
    err = _one_line_error(*run_cli(capsys, make(tmp_path)))
    assert match in err


def _write(path, data):
    path.write_bytes(data)
    return path


def _truncated(d):
    full = d / "full.safetensors"
    save_file(_state_dict(), str(full))
    return _write(d / "cut.safetensors", full.read_bytes()[:300])


def test_file_with_no_weights(capsys, tmp_path):
    path = tmp_path / "norms.safetensors"
    save_file({"norm.weight": torch.ones(8)}, str(path))
    err = _one_line_error(*run_cli(capsys, path))
    assert "no 2-D weights found" in err


@pytest.mark.parametrize(
    "args, match",
    [
        (["--capability", "nine"], "--capability must look like 8.0"),
        (["--capability", "0.5"], "real compute capability"),
        (["--capability", "9.0", "--device", "cpu"], "cannot be combined"),
        (["--tokens", "0"], "--tokens must be a positive"),
        (["--max-rows", "-1"], "--max-rows must be >= 0"),
    ],
)
def test_option_errors(capsys, safetensors_file, args, match):
    err = _one_line_error(*run_cli(capsys, safetensors_file, *args))
    assert match in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="asks for a GPU this machine lacks")
def test_device_cuda_without_a_gpu(capsys, safetensors_file):
    err = _one_line_error(*run_cli(capsys, safetensors_file, "--device", "cuda"))
    assert "sees no CUDA GPU" in err


def test_json_path_that_cannot_be_written(capsys, safetensors_file, tmp_path):
    code, out, err = run_cli(capsys, safetensors_file, "--capability", "8.0", "--json", tmp_path / "no" / "such" / "dir.json")
    # refused before the audit runs (it failed only after the whole audit), and nothing printed
    assert code == 2 and "the folder" in err and "does not exist" in err and err.count("\n") == 1 and out == ""


def test_help_shows_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--help"])
    assert exc.value.code == 0
    assert "twofour audit model.safetensors --capability 9.0" in capsys.readouterr().out


def test_unreadable_file(capsys, tmp_path, monkeypatch):
    # chmod 0 stops no one running as root (CI containers often do), so the permission error is
    # simulated: opening this one path fails as the kernel would fail it for another user.
    path = _write(tmp_path / "locked.safetensors", b"x" * 32)
    real_open = os.open

    def refuse(file, flags, *args, **kwargs):
        if os.fspath(file) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    err = _one_line_error(*run_cli(capsys, path))
    assert "cannot be read" in err and "Permission denied" in err and "locked.safetensors" in err


def test_safetensors_byte_ranges_match_the_tensors(safetensors_file):
    from twofour.checkpoint.file import open_checkpoint

    with open_checkpoint(safetensors_file) as ckpt:
        raw = safetensors_file.read_bytes()
        for name in ckpt.names():
            offset, length = ckpt._ranges[name]
            t = ckpt.tensor(name)
            assert length == t.numel() * t.element_size()
            assert raw[offset : offset + length] == t.contiguous().view(torch.uint8).numpy().tobytes()
            ckpt.prefetch(name)  # a hint: must not fail


def test_html_report_is_a_table_with_one_row_per_weight(capsys, safetensors_file, tmp_path):
    out_path = tmp_path / "audit.html"
    code, out, err = run_cli(capsys, safetensors_file, "--capability", "9.0", "--html", out_path)
    assert code == 0 and f"wrote {out_path}" in err
    page = out_path.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<title>twofour audit: model.safetensors</title>" in page
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = body.count("<tr>")
    assert rows == 3, body  # embedding, q_proj, o_proj; the 1-D norm is skipped
    assert "<td>model.layers.0.q_proj.weight</td>" in body and "<td>sparse-cusparselt</td>" in body
    assert out.strip().splitlines()[-1].split(":")[0] in page  # the same verdict as the terminal


def test_html_names_from_the_file_are_escaped(capsys, tmp_path):
    path = tmp_path / "evil.safetensors"
    save_file({"<script>alert(1)</script>.weight": torch.zeros(64, 64).half()}, str(path))
    out_path = tmp_path / "audit.html"
    code, _, _ = run_cli(capsys, path, "--capability", "9.0", "--html", out_path)
    page = out_path.read_text(encoding="utf-8")
    assert code == 0 and "<script>" not in page and "&lt;script&gt;" in page


def test_html_into_a_directory_is_refused_before_reading(capsys, safetensors_file, tmp_path):
    code, out, err = run_cli(capsys, safetensors_file, "--html", tmp_path)
    assert code == 2 and "--html" in err and "is a directory" in err and out == ""
