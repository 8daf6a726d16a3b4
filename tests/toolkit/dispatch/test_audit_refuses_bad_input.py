"""Hostile checkpoints and arguments: never a lie, a hang, a flood or a traceback.

Each class found by the adversarial sweep has a test here: what the command now does, and
that it does it in bounded time and memory. Commands that could hang are run in a real
process with a timeout; the rest call ``twofour.cli.main`` in-process.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import pytest
import torch
from safetensors.torch import save_file

import twofour
from twofour._common.text import printable
from twofour.cli import main
from twofour.dispatch import audit, hypothetical_gpu
from twofour.checkpoint._flatten import MAX_DEPTH, flatten_state_dict

H100 = hypothetical_gpu((9, 0), name="H100")


def run_audit(capsys, *args):
    code = main(["audit", *map(str, args), "--capability", "9.0"])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err, *, exit_code=2):
    assert code == exit_code, (out, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def run_process(args, timeout=60, **kwargs):
    """``python -m twofour ARGS`` in a real process (what a shell sees)."""
    return subprocess.run(
        [sys.executable, "-m", "twofour", *map(str, args)], capture_output=True, timeout=timeout, **kwargs
    )


# ------------------------------------------------------------------------------------------
# only regular files


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
def test_a_fifo_is_refused_at_once(tmp_path):
    path = tmp_path / "model.pt"
    os.mkfifo(path)
    result = run_process(["audit", path], timeout=60)  # in a real process: it used to block forever
    err = result.stderr.decode()
    assert result.returncode == 2 and "is a FIFO (named pipe)" in err and "Traceback" not in err


@pytest.mark.parametrize("path, expected", [(None, "a model folder needs model.safetensors.index.json"), ("/dev/zero", "is a character device")])
def test_directories_and_devices_are_refused(capsys, tmp_path, path, expected):
    err = one_line_error(*run_audit(capsys, path or tmp_path))
    assert expected in err


def test_a_path_swapped_after_the_check_is_not_reopened(tmp_path):
    """Reads go through the descriptor that was checked, not the path."""
    from twofour.checkpoint.file import open_checkpoint

    path = tmp_path / "m.safetensors"
    save_file({"fc.weight": torch.zeros(4, 8)}, str(path))
    with open_checkpoint(path) as ckpt:
        path.unlink()
        os.mkfifo(path)  # a reader of the path would now block
        assert ckpt.tensor("fc.weight").shape == (4, 8)


# ------------------------------------------------------------------------------------------
# every string from a file is escaped; long names are shortened; collisions kept


HOSTILE_NAMES = [
    "\x1b[2J\x1b]0;title\x07screen.weight",  # clear screen, retitle window, bell
    "row\nforged  4x8  float16  100.0%  yes  sparse-cutlass.weight",  # a newline forging a row
    "car\rriage.weight",
    "nul\x00byte.weight",
    "bidi\u202eoverride.weight",
    "c1\x9bcontrol.weight",
    "x" * 100_000 + ".weight",
]


def test_names_from_a_file_are_printed_escaped_and_short(capsys, tmp_path):
    path = tmp_path / "names.safetensors"
    save_file({name: torch.zeros(4, 8, dtype=torch.float16) for name in HOSTILE_NAMES}, str(path))
    code, out, err = run_audit(capsys, path, "--json", tmp_path / "a.json")
    assert code == 0
    for ch in "\x1b\r\x00\x07\u202e\x9b":
        assert ch not in out and ch not in err
    table = out.split("\n\n")[0].splitlines()
    assert len(table) == 2 + len(HOSTILE_NAMES)  # header, rule, one line per weight: no forged row
    assert all(len(line) < 200 for line in out.splitlines())
    assert "\\x1b[2J" in out and "row\\nforged" in out and "bidi\\u202eoverride" in out
    import json

    names = {row["name"] for row in json.loads((tmp_path / "a.json").read_text())["rows"]}
    assert names == set(HOSTILE_NAMES)  # the JSON keeps them exact (JSON escapes them itself)


def test_printable_escapes_everything_unprintable():
    for code in list(range(0x20)) + [0x7F] + list(range(0x80, 0xA0)) + [0x2028, 0x2029, 0x200B, 0xFEFF]:
        assert printable(chr(code)).isprintable() and printable(chr(code)) != chr(code)
    assert printable("a\\x1b") == "a\\\\x1b"  # a literal backslash cannot pose as an escape
    assert len(printable("y" * 10**7, 60)) == 60


def test_two_tensors_flattening_to_one_name_are_both_kept(capsys, tmp_path):
    path = tmp_path / "collide.pt"
    torch.save({"a.b.weight": torch.zeros(4, 8), "a": {"b.weight": torch.ones(4, 8)}}, path)
    code, out, err = run_audit(capsys, path)
    assert code == 0
    assert "a.b.weight#2" in out and "2 entries flatten to the name 'a.b.weight'" in out
    rows = [line for line in out.splitlines() if line.startswith("a.b.weight")]
    assert len(rows) == 2 and "100.0%" in rows[0] and "0.0%" in rows[1]  # zeros vs ones: not merged
    report = audit({1: torch.ones(4, 8), "1": torch.zeros(4, 8)}, target=H100)
    assert len(report.rows) == 0 and {n for n, _ in report.skipped} == {"1", "1#2"}
    assert any("keys print as '1'" in n for n in report.notes)


# ------------------------------------------------------------------------------------------
# tiny files that would take minutes or gigabytes


def test_an_expanded_tensor_is_checked_by_its_storage(capsys, tmp_path):
    path = tmp_path / "expand.pt"
    torch.save({"w.weight": torch.ones(1, dtype=torch.float16).expand(200_000, 200_000)}, path)
    assert path.stat().st_size < 10_000
    code, out, _ = run_audit(capsys, path)  # 40 G elements: element by element this took minutes
    assert code == 0 and "200000x200000" in out and "0.0%" in out


@pytest.mark.slow  # walks the whole 1,000,000-entry bound before refusing (seconds)
def test_shared_references_are_bounded(capsys, tmp_path):
    x = {"w.weight": torch.zeros(4, 8)}
    for _ in range(40):
        x = {"a": x, "b": x}  # 2**40 paths in a 2 kB file
    path = tmp_path / "fanout.pt"
    torch.save(x, path)
    err = one_line_error(*run_audit(capsys, path))
    assert "more than 1,000,000 entries" in err


def test_deep_and_self_referencing_dicts_are_one_line(capsys, tmp_path):
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        deep = torch.zeros(4, 8)
        for _ in range(3000):
            deep = {"k": deep}
        torch.save(deep, tmp_path / "deep.pt")
    finally:
        sys.setrecursionlimit(limit)
    err = one_line_error(*run_audit(capsys, tmp_path / "deep.pt"))
    assert f"nested more than {MAX_DEPTH} levels" in err
    looped = {"w.weight": torch.zeros(4, 8)}
    looped["self"] = looped
    torch.save(looped, tmp_path / "loop.pt")
    err = one_line_error(*run_audit(capsys, tmp_path / "loop.pt"))
    assert "contains itself" in err


def test_flatten_bounds_hold_without_a_file():
    deep = {}
    node = deep
    for _ in range(MAX_DEPTH + 5):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(ValueError, match="nested more than"):
        flatten_state_dict(deep)
    shared = [torch.zeros(1)] * 10
    tensors, _, _ = flatten_state_dict({"a": shared})
    assert len(tensors) == 10  # shared references are still listed, each under its own name


def test_a_compressed_zip_is_refused_before_it_unpacks(capsys, tmp_path):
    buf = io.BytesIO()
    torch.save({"w.weight": torch.zeros(4096, 4096)}, buf)  # 64 MiB of zeros
    buf.seek(0)
    path = tmp_path / "compressed.pt"
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    assert path.stat().st_size < 1_000_000
    err = one_line_error(*run_audit(capsys, path))
    assert "is compressed" in err and "refused" in err


# ------------------------------------------------------------------------------------------
# odd tensors: one clear line each


def test_empty_sparse_meta_and_odd_tensors_are_skipped_with_a_reason(capsys, tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = {
            "empty_rows.weight": torch.zeros(0, 8),
            "empty_cols.weight": torch.zeros(8, 0),
            "coo.weight": torch.zeros(8, 8).to_sparse(),
            "csr.weight": torch.zeros(8, 8).to_sparse_csr(),
            "meta.weight": torch.empty(8, 8, device="meta"),
            "quantized.weight": torch.quantize_per_tensor(torch.zeros(8, 8), 1.0, 0, torch.qint8),
            "complex.weight": torch.zeros(8, 8, dtype=torch.complex64),
            "fine.weight": torch.zeros(16, 16, dtype=torch.float16),
        }
        torch.save(state, tmp_path / "odd.pt")
    code, out, err = run_audit(capsys, tmp_path / "odd.pt", "--json", tmp_path / "odd.json")
    assert code == 0 and "Traceback" not in err
    import json

    skipped = {s["name"]: s["why"] for s in json.loads((tmp_path / "odd.json").read_text())["skipped"]}
    assert skipped["empty_rows.weight"].startswith("empty (0x8)")
    assert skipped["empty_cols.weight"].startswith("empty (8x0)")
    assert "sparse_coo layout" in skipped["coo.weight"] and "sparse_csr layout" in skipped["csr.weight"]
    assert "meta tensor" in skipped["meta.weight"]
    assert "quantized" in skipped["quantized.weight"] and "complex" in skipped["complex.weight"]
    assert "fine.weight" in out


def test_a_checkpoint_of_only_odd_tensors_says_why(capsys, tmp_path):
    torch.save({"w.weight": torch.zeros(0, 8)}, tmp_path / "empty.pt")
    err = one_line_error(*run_audit(capsys, tmp_path / "empty.pt"))
    assert "no 2-D weights found" in err and "empty (0x8)" in err


# ------------------------------------------------------------------------------------------
# closed pipes and full disks


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
def test_a_closed_pipe_ends_quietly(tmp_path):
    path = tmp_path / "many.safetensors"
    save_file({f"layer.{i}.weight": torch.zeros(16, 16, dtype=torch.float16) for i in range(3000)}, str(path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "twofour", "audit", str(path), "--capability", "9.0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == "", err


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_under_stdout_is_one_line(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"fc.weight": torch.zeros(16, 16, dtype=torch.float16)}, str(path))
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "twofour", "audit", str(path)], stdout=full, stderr=subprocess.PIPE, timeout=120
        )
    err = result.stderr.decode()
    assert result.returncode == 1 and "No space left on device" in err and "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ["audit", "{model}", "--json", "/dev/full"],
        ["bench", "--quick", "--m", "1", "--shapes", "64x64", "--repeats", "1", "--warmup", "0", "--out", "/dev/full"],
        ["quality", "--out", "/dev/full", "--sizes", "tiny"],
    ],
    ids=["audit --json", "bench --out", "quality --out"],
)
def test_devices_as_outputs_are_refused_before_any_work(capsys, tmp_path, args):
    model = tmp_path / "m.safetensors"
    save_file({"fc.weight": torch.zeros(16, 16, dtype=torch.float16)}, str(model))
    args = [a.replace("{model}", str(model)) for a in args]
    err = one_line_error(main(args), *capsys.readouterr())
    assert "/dev/full" in err and ("character device" in err or "must be a directory" in err)


@pytest.mark.parametrize("command", ["bench", "quality"])
def test_a_directory_as_out_is_refused_before_any_work(capsys, tmp_path, command):
    extra = ["--quick", "--no-progress"] if command == "bench" else ["--sizes", "tiny", "--no-progress"]
    err = one_line_error(main([command, "--out", str(tmp_path), *extra]), *capsys.readouterr())
    assert "is a directory; give a file name such as" in err


def test_bench_out_that_cannot_be_written_is_one_line(capsys, tmp_path, monkeypatch):
    from twofour.bench import Results

    def full_disk(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Results, "save", full_disk)
    args = ["bench", "--m", "1", "--shapes", "64x64", "--repeats", "1", "--warmup", "0", "--no-progress"]
    code = main([*args, "--out", str(tmp_path / "r.json")])
    out, err = capsys.readouterr()
    assert code == 2 and "cannot write (No space left on device)" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args, match",
    [
        (["bench", "--m", "0"], "--m: every M must be an int from 1 to"),
        (["bench", "--m", str(10**9)], "--m: every M must be an int from 1 to"),
        (["bench", "--shapes", "1048576x1048576"], "an operand would hold more than"),
        (["bench", "--repeats", str(10**9)], "--repeats must be from 1 to"),
        (["quality", "--out", "q.json", "--train-steps", str(10**9)], "--train-steps must be at most"),
        (["quality", "--out", "q.json", "--threads", str(10**6)], "--threads must be at most"),
    ],
)
def test_absurd_arguments_are_one_line_errors(capsys, args, match):
    err = one_line_error(main(args), *capsys.readouterr())
    assert match in err


# ------------------------------------------------------------------------------------------
# the API: the same classes, as exceptions that name the argument


def test_api_refuses_odd_tensors_by_name():
    with pytest.raises(ValueError, match="W is on the meta device"):
        twofour.check(torch.empty(8, 8, device="meta"))
    with pytest.raises(TypeError, match="W must be a dense"):
        twofour.pack(torch.zeros(8, 8).to_sparse())
    with pytest.raises(ValueError, match="W is empty"):
        twofour.prune(torch.zeros(0, 8))


# ---- audit rows in file order ---------------------------------------------------------------


def test_audit_rows_and_names_follow_the_file(tmp_path):
    from twofour.checkpoint.file import open_checkpoint

    path = tmp_path / "m.safetensors"
    save_file({"a.weight": torch.zeros(32, 32, dtype=torch.float16), "b.weight": torch.zeros(32, 32),
               "c.weight": torch.zeros(32, 32, dtype=torch.float16)}, str(path))
    # the safetensors writer puts the float32 tensor first; safe_open lists names sorted
    with open_checkpoint(path) as ckpt:
        assert ckpt.names() == ["b.weight", "a.weight", "c.weight"]
        assert [r.name for r in audit(ckpt, None).rows] == ckpt.names()
    pt = tmp_path / "m.pt"
    torch.save({f"l{i}.weight": torch.zeros(32, 32, dtype=torch.float16) for i in (0, 1, 2, 10, 3)}, pt)
    with open_checkpoint(pt) as ckpt:
        assert ckpt.names() == ["l0.weight", "l1.weight", "l2.weight", "l10.weight", "l3.weight"]
        assert [r.name for r in audit(ckpt, None).rows] == ckpt.names()
