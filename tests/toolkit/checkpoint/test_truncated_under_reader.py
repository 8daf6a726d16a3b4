"""A checkpoint truncated while it is read: one clear error in a library call too, never a SIGBUS death.

The reads run in a child process: if a tensor were still memory-mapped, touching it after the
truncation would kill that child with SIGBUS (return code -7), not pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import save_file

from twofour.checkpoint import file as ckpt_module
from twofour.checkpoint.file import ShortRead, file_offsets, read_exact, view_span
from twofour.checkpoint.file import CheckpointError, open_checkpoint

_LIBRARY = """
import sys, torch
from twofour.checkpoint.file import open_checkpoint
for path in sys.argv[1:]:
    with open_checkpoint(path) as ckpt:
        t = ckpt.tensor("fc.weight")         # handed out, not yet read
        with open(path, "r+b") as f:
            f.truncate(0)                    # what a writer does mid-read
        print(path, float(t.sum()))          # touches every element
"""

_CLI_IN_PROCESS = """
import sys
from twofour.cli import main
from twofour.checkpoint.file import Checkpoint
path = sys.argv[1]
read = Checkpoint.tensor

def read_then_truncate(self, name):
    t = read(self, name)
    with open(path, "r+b") as f:         # the file shrinks while the audit works on this tensor
        f.truncate(0)
    return t

Checkpoint.tensor = read_then_truncate
code = main(["audit", path, "--capability", "9.0"])   # in-process: no forked child guards it
print("returned", code)
"""


def _run(script: str, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=110,
                          env=env)


def _two_four(rows: int = 512, cols: int = 512) -> torch.Tensor:
    w = torch.randn(rows, cols)
    w.view(rows, cols // 4, 4)[..., 2:] = 0
    return w


@pytest.mark.slow  # a child process that imports torch (seconds)
def test_a_tensor_handed_out_survives_its_file_being_truncated(tmp_path):
    w = _two_four()
    pt, st = tmp_path / "m.pt", tmp_path / "m.safetensors"
    torch.save({"fc.weight": w}, pt)
    save_file({"fc.weight": w}, st)
    proc = _run(_LIBRARY, pt, st)
    assert proc.returncode == 0, (proc.returncode, -signal.SIGBUS, proc.stderr[-2000:])
    sums = [float(line.split()[-1]) for line in proc.stdout.splitlines()]
    assert sums == pytest.approx([float(w.sum())] * 2, rel=1e-5)


@pytest.mark.slow  # a child process that imports torch and runs an audit (seconds)
def test_an_in_process_audit_of_a_file_truncated_mid_read_ends_with_one_line(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"a.weight": _two_four(), "b.weight": _two_four()}, path)
    proc = _run(_CLI_IN_PROCESS, path)
    assert proc.returncode == 0, (proc.returncode, -signal.SIGBUS, proc.stderr[-2000:])
    assert proc.stdout.strip().splitlines()[-1] == "returned 2"
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "the file changed while it was read" in err[0], err
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_a_file_that_shrinks_after_the_check_is_a_short_read_not_a_fault(tmp_path, monkeypatch, fmt):
    """The size check before a read can be raced; the read itself (pread) then comes back short."""
    path = tmp_path / f"m.{fmt}"
    tensors = {"a.weight": _two_four(64, 64), "b.weight": _two_four(64, 64)}
    torch.save(tensors, path) if fmt == "pt" else save_file(tensors, path)
    with open_checkpoint(path) as ckpt:
        stamp = ckpt_module._stamp(ckpt._fd)
        monkeypatch.setattr(ckpt_module, "_stamp", lambda fd: stamp)  # the truncation lands after the check
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
        with pytest.raises(CheckpointError, match=r"the file changed while it was read \(tensor 'b.weight': .* the "
                                                  r"file ends there\); no report"):
            ckpt.tensor("b.weight")


def test_a_truncation_before_a_read_is_caught_by_the_size_check(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"a.weight": _two_four(64, 64)}, path)
    with open_checkpoint(path) as ckpt:
        with open(path, "r+b") as f:
            f.truncate(100)
        with pytest.raises(CheckpointError, match="the file changed while it was read"):
            ckpt.tensor("a.weight")


def test_copies_keep_every_view_and_read_only_the_span_a_view_covers(tmp_path):
    base = torch.arange(64 * 8, dtype=torch.float32).view(64, 8)
    saved = {"slice.weight": base[10:20, 2:6], "expand.weight": torch.arange(4.0).expand(10**6, 4),
             "t.weight": base.t(), "empty.weight": base[:0], "half.weight": base.half(), "scalar": torch.tensor(3.0),
             "flags": torch.tensor([True, False, True])}
    path = tmp_path / "m.pt"
    torch.save(saved, path)
    with open_checkpoint(path) as ckpt:
        assert set(ckpt._offsets) == set(saved)  # every one read with pread (the empty view reads 0 bytes)
        for name, ref in saved.items():
            got = ckpt.tensor(name)
            assert got.dtype == ref.dtype and got.shape == ref.shape and got.stride() == ref.stride(), name
            assert torch.equal(got, ref), name
        # the expanded view's storage holds its 4 values, not 10**6 rows
        assert ckpt.tensor("expand.weight").untyped_storage().nbytes() == 16
        assert ckpt.tensor("slice.weight").untyped_storage().nbytes() == view_span(saved["slice.weight"])[1] * 4


def test_a_big_endian_checkpoint_is_swapped_on_its_copy(tmp_path):
    import io
    import zipfile

    import numpy as np

    w = torch.arange(12, dtype=torch.float32).view(3, 4)
    buf = io.BytesIO()
    torch.save({"w": w}, buf)
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data, base = src.read(info), info.filename.split("/", 1)[1]
            if base == "byteorder":
                data = b"big"
            elif base == "data/0":
                data = np.frombuffer(data, np.float32).byteswap().tobytes()
            dst.writestr(info.filename, data)
    path = tmp_path / "be.pt"
    path.write_bytes(out.getvalue())
    with open_checkpoint(path) as ckpt:
        assert torch.equal(ckpt.tensor("w"), w)


def test_read_exact_and_file_offsets_on_their_own(tmp_path):
    path = tmp_path / "b.bin"
    path.write_bytes(bytes(range(256)) * 16)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_exact(fd, 250, 10).tolist() == [250, 251, 252, 253, 254, 255, 0, 1, 2, 3]
        assert read_exact(fd, 4096, 0).numel() == 0
        with pytest.raises(ShortRead, match="4 of 10 bytes at offset 4,092"):
            read_exact(fd, 4092, 10)
        mapped = torch.from_file(str(path), shared=False, size=4096, dtype=torch.uint8)
        where = file_offsets(fd, [mapped.data_ptr() + 100, 12345])
        if os.path.exists("/proc/self/maps"):
            assert where == {mapped.data_ptr() + 100: 100}
    finally:
        os.close(fd)
