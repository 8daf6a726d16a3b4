"""Checkpoints read only what is there: storages checked against their zip entries, views counted by storage.

``torch.load(mmap=True)`` maps each storage with the length its pickle claims; an entry shorter
than that made the audit read the bytes after it as weights (an exactly-2:4 weight reported as
"99.5%, pruned along the wrong axis", exit 0). A few kilobytes can declare ``w.expand(10**9, 4)``
(it cost 8 GB per row count before); a saved nested tensor was a traceback. The fuzzer at the
end rewrites real torch.save zips at random and asks for one line or an honest report.
"""

from __future__ import annotations

import io
import json
import random
import resource
import subprocess
import sys
import zipfile

import pytest
import torch

from twofour.cli import main
from twofour.checkpoint.file import CheckpointError, open_checkpoint

pytestmark = pytest.mark.timeout(120)


def _rezip(src, dst, change):
    """Copy a torch.save zip entry by entry (stored, as torch writes), letting ``change(name, data)`` rewrite each."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if data is not None:
                zout.writestr(info.filename, data)


def _audit(capsys, path, *extra):
    code = main(["audit", str(path), "--capability", "9.0", *map(str, extra)])
    out, err = capsys.readouterr()
    return code, out, err


def _two_four(rows=64, K=64):
    w = torch.zeros(rows, K, dtype=torch.float16)
    w[:, 0::4] = 1.0
    w[:, 1::4] = 2.0
    return w


def test_a_storage_longer_than_its_entry_is_refused_before_it_is_mapped(capsys, tmp_path):
    good = tmp_path / "good.pt"
    torch.save({"fc.weight": _two_four(), "other.weight": torch.randn(64, 64).half()}, good)
    bad = tmp_path / "short.pt"
    _rezip(good, bad, lambda name, data: data[: len(data) // 8] if name.endswith("/data/0") else data)
    code, out, err = _audit(capsys, bad)
    assert code == 2 and out == "", (out, err)
    assert "declares 8,192 bytes but its entry" in err and "holds 1,024" in err and err.count("\n") == 1, err
    with pytest.raises(CheckpointError, match="mapping it would read bytes that are not the tensor's"):
        open_checkpoint(bad)


def test_a_storage_longer_than_the_file_is_refused(tmp_path):
    good = tmp_path / "good.pt"
    torch.save({"fc.weight": _two_four()}, good)
    bad = tmp_path / "missing.pt"
    _rezip(good, bad, lambda name, data: None if name.endswith("/data/0") else data)
    with pytest.raises(CheckpointError, match="has no entry"):
        open_checkpoint(bad)


def test_the_good_checkpoint_still_reads(capsys, tmp_path):
    good = tmp_path / "good.pt"
    torch.save({"fc.weight": _two_four()}, good)
    code, out, _ = _audit(capsys, good)
    assert code == 0 and "100.0%" in out


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
@pytest.mark.parametrize("rows", [10**8, 10**9])
def test_an_expanded_weight_of_a_billion_rows_costs_its_storage_not_its_rows(tmp_path, rows):
    path = tmp_path / "expand.pt"
    torch.save({"fc.weight": torch.tensor([[1.0, 0.0, 2.0, 0.0]]).expand(rows, 4),
                "b.weight": torch.tensor([[1.0, 2.0, 3.0, 0.0]]).expand(rows, 4)}, path)
    assert path.stat().st_size < 10_000
    code = ("import resource, sys; from twofour.cli import main; rc = main(sys.argv[1:]); "
            "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")
    json_out = tmp_path / "a.json"
    proc = subprocess.run([sys.executable, "-c", code, "audit", str(path), "--json", str(json_out)],
                          capture_output=True, text=True, timeout=110)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    rss_kb = int(proc.stderr.split("maxrss_kb")[1].split()[0])
    assert rss_kb < 2_000_000, rss_kb  # 10**8 rows took 5.4 GB; 10**9 an 8 GB allocation
    rows_out = {r["name"]: r for r in json.loads(json_out.read_text())["rows"]}
    assert rows_out["fc.weight"]["fraction_valid"] == 1.0 and rows_out["b.weight"]["fraction_valid"] == 0.0


def test_a_saved_nested_tensor_is_skipped_like_a_sparse_one(capsys, tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.zeros(2, 4), torch.zeros(3, 4)])
    path = tmp_path / "nested.pt"
    torch.save({"jagged.weight": nested, "fine.weight": _two_four(16, 16)}, path)
    code, out, err = _audit(capsys, path, "--json", tmp_path / "n.json")
    assert code == 0 and "Traceback" not in err, err
    skipped = {s["name"]: s["why"] for s in json.loads((tmp_path / "n.json").read_text())["skipped"]}
    assert "nested" in skipped["jagged.weight"] and "fine.weight" in out


def _fuzz_cases(rng, good: bytes):
    """Seeded rewrites of one torch.save zip: entries cut, grown, dropped, swapped, bytes flipped, the file cut."""
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        names = z.namelist()
        contents = {n: z.read(n) for n in names}
    for k in range(60):
        what = rng.choice(("cut", "grow", "drop", "swap", "flip", "truncate", "pickle"))
        if what == "truncate":
            yield what, good[: rng.randrange(1, len(good))]
            continue
        if what == "flip":
            b = bytearray(good)
            for _ in range(rng.randrange(1, 8)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            yield what, bytes(b)
            continue
        entries = dict(contents)
        data_names = [n for n in names if "/data/" in n]
        target = rng.choice(data_names)
        if what == "cut":
            entries[target] = entries[target][: rng.randrange(len(entries[target]))]
        elif what == "grow":
            entries[target] += bytes(rng.randrange(1, 64))
        elif what == "drop":
            del entries[target]
        elif what == "swap" and len(data_names) > 1:
            a, b = rng.sample(data_names, 2)
            entries[a], entries[b] = entries[b], entries[a]
        elif what == "pickle":
            pkl = next(n for n in names if n.endswith("data.pkl"))
            p = bytearray(entries[pkl])
            p[rng.randrange(len(p))] = rng.randrange(256)
            entries[pkl] = bytes(p)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zout:
            for n, d in entries.items():
                zout.writestr(n, d)
        yield what, buf.getvalue()


def test_fuzz_torch_zips_give_one_line_or_the_true_report(tmp_path):
    """Every rewrite either reads back exactly the tensors saved or is refused as a CheckpointError; never a crash."""
    rng = random.Random(40)
    saved = {"a.weight": _two_four(8, 16), "b.weight": torch.arange(64, dtype=torch.float32).view(8, 8),
             "c.bias": torch.ones(8, dtype=torch.int64)}
    buf = io.BytesIO()
    torch.save(saved, buf)
    good = buf.getvalue()
    outcomes = {"refused": 0, "read": 0}
    for k, (what, data) in enumerate(_fuzz_cases(rng, good)):
        path = tmp_path / f"f{k}.pt"
        path.write_bytes(data)
        try:
            with open_checkpoint(path) as ckpt:
                got = {n: ckpt.tensor(n).clone() for n in ckpt.names()}
        except CheckpointError as exc:
            assert "\n" not in str(exc)
            outcomes["refused"] += 1
            continue
        outcomes["read"] += 1
        assert what not in ("cut", "grow", "drop"), f"case {k}: a storage entry was {what} and the file still read"
        # A file that reads must read what is in it: each tensor's bytes are a run of the file's bytes
        # (storages are stored uncompressed), never bytes past its entry glued to the next.
        for name, t in got.items():
            raw = t.contiguous().numpy().tobytes() if t.numel() else b""
            assert raw in data, (what, name)
    assert outcomes["refused"] > 20, outcomes


def test_a_checkpoint_truncated_between_tensors_is_one_clear_error(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"a.weight": _two_four(), "b.weight": _two_four()}, path)
    with open_checkpoint(path) as ckpt:
        ckpt.tensor("a.weight")
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)
        with pytest.raises(CheckpointError, match="the file changed while it was read"):
            ckpt.tensor("b.weight")


