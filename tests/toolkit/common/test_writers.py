"""Writers never destroy: no output over an input, no FIFO opened, no truncated file after a failed write.

Before the fix ``twofour audit m.safetensors --json m.safetensors`` replaced the checkpoint with
its report, ``twofour trace t.json --html t.json`` the trace, ``trace --html FIFO`` and
``calibrate --out FIFO`` blocked forever, and a full disk left a truncated report where the
previous one was.
"""

from __future__ import annotations

import errno
import os
import stat
import threading

import pytest
import torch
from safetensors.torch import save_file

from twofour._common import atomic
from twofour._common.atomic import OutputError, write_text
from twofour.cli import main
from twofour.dispatch.trace import recorded


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.safetensors"
    save_file({"fc.weight": torch.zeros(16, 16, dtype=torch.float16)}, str(path))
    return path


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(recorded("dense-eager").read_bytes())
    return path


def _error(capsys, args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    err = err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (code, err)
    return err


def _links(tmp_path, target):
    sym = tmp_path / "link-to-input"
    sym.symlink_to(target)
    hard = tmp_path / "hard-link-to-input"
    os.link(target, hard)
    return [target, sym, hard]


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_audit_never_writes_over_its_checkpoint(capsys, tmp_path, model, option):
    before = model.read_bytes()
    for out in _links(tmp_path, model):
        err = _error(capsys, ["audit", model, "--capability", "8.0", option, out])
        assert f"{option} " in err and "is an input of this command (the same file)" in err
        assert model.read_bytes() == before


def test_audit_json_and_html_may_not_be_one_file(capsys, tmp_path, model):
    out = tmp_path / "r.out"
    err = _error(capsys, ["audit", model, "--capability", "8.0", "--json", out, "--html", out])
    assert "are the same file" in err and not out.exists()


def test_trace_html_never_writes_over_its_traces(capsys, tmp_path, trace_file):
    before = trace_file.read_bytes()
    for out in _links(tmp_path, trace_file):
        err = _error(capsys, ["trace", trace_file, "--html", out])
        assert "--html " in err and "is an input of this command" in err
    base = tmp_path / "dense.json.gz"
    base.write_bytes(recorded("dense-eager").read_bytes())
    err = _error(capsys, ["trace", trace_file, "--compare", base, "--html", base])
    assert "is an input" in err and base.read_bytes() == before and trace_file.read_bytes() == before


def test_calibrate_never_writes_over_a_measurement_it_reads(capsys):
    from twofour.roofline.calibration import fit_inputs, save
    from twofour.roofline.published import PUBLISHED_PATH

    inputs = fit_inputs()
    assert PUBLISHED_PATH in inputs and any(p.name.startswith("bench-") for p in inputs)
    for target in (PUBLISHED_PATH, inputs[-1]):
        before = target.read_bytes()
        err = _error(capsys, ["calibrate", "--out", target])
        assert "is an input of this command" in err and target.read_bytes() == before
        with pytest.raises(OutputError, match="is an input"):
            save(target)
        assert target.read_bytes() == before


def test_quality_never_writes_over_its_corpus(capsys, tmp_path, monkeypatch):
    import twofour.quality as quality
    from twofour.quality import corpus

    fake_stdlib = tmp_path / "stdlib"
    fake_stdlib.mkdir()
    for name in corpus.STDLIB_FILES:
        (fake_stdlib / name).parent.mkdir(parents=True, exist_ok=True)
        (fake_stdlib / name).write_text("# corpus\n")
    monkeypatch.setattr(corpus, "stdlib_dir", lambda: fake_stdlib)
    monkeypatch.setattr(quality, "run_sweep", lambda *a, **k: pytest.fail("the sweep must not start"))
    target = fake_stdlib / corpus.STDLIB_FILES[0]
    err = _error(capsys, ["quality", "--out", target, "--sizes", "tiny", "--no-progress"])
    assert "is an input of this command" in err and target.read_text() == "# corpus\n"


# ---- FIFOs and other non-regular files: refused before anything is opened -------------------


def _fifo(tmp_path, name="out.fifo"):
    path = tmp_path / name
    os.mkfifo(path)
    return path


def _never_blocks(fn, seconds=120):
    """Run fn in a thread; fail (instead of hanging the suite) if it does not return."""
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"blocked for {seconds} s (opened a FIFO?)")
    if "error" in result:
        raise result["error"]
    return result.get("value")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize(
    "args",
    [
        ["audit", "{model}", "--capability", "8.0", "--json", "{fifo}"],
        ["audit", "{model}", "--capability", "8.0", "--html", "{fifo}"],
        ["trace", "{trace}", "--html", "{fifo}"],
        ["calibrate", "--out", "{fifo}"],
        ["bench", "--m", "1", "--shapes", "64x64", "--repeats", "1", "--warmup", "0", "--no-progress", "--out", "{fifo}"],
        ["quality", "--out", "{fifo}", "--sizes", "tiny", "--no-progress"],
    ],
    ids=["audit --json", "audit --html", "trace --html", "calibrate --out", "bench --out", "quality --out"],
)
def test_a_fifo_output_is_refused_without_blocking(capsys, tmp_path, model, trace_file, args):
    fifo = _fifo(tmp_path)
    subs = {"{model}": model, "{trace}": trace_file, "{fifo}": fifo}
    args = [str(subs.get(a, a)) for a in args]
    code = _never_blocks(lambda: main(args))
    out, err = capsys.readouterr()
    assert code == 2 and "FIFO (named pipe)" in err and "Traceback" not in err, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# ---- atomic writes: a failed write keeps the previous file ---------------------------------


def _disk_full(monkeypatch):
    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(atomic.os, "fsync", fsync)


def _leftovers(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("option, name", [("--json", "audit.json"), ("--html", "audit.html")])
def test_a_failed_audit_write_leaves_the_previous_report(capsys, tmp_path, model, monkeypatch, option, name):
    out = tmp_path / name
    out.write_text("the previous report")
    _disk_full(monkeypatch)
    err = _error(capsys, ["audit", model, "--capability", "8.0", option, out])
    assert "cannot write (No space left on device)" in err and "previous file" in err
    assert out.read_text() == "the previous report" and _leftovers(tmp_path) == []


def test_a_failed_trace_html_write_leaves_the_previous_page(capsys, tmp_path, trace_file, monkeypatch):
    out = tmp_path / "r.html"
    out.write_text("the previous page")
    _disk_full(monkeypatch)
    err = _error(capsys, ["trace", trace_file, "--html", out])
    assert "cannot write (No space left on device)" in err
    assert out.read_text() == "the previous page" and _leftovers(tmp_path) == []


def test_toolkit_saves_are_atomic(tmp_path, monkeypatch):
    from twofour.bench import Results

    res = Results(points=[], provenance={"device": "cpu"}, settings={})
    out = tmp_path / "r.json"
    out.write_text("previous")
    _disk_full(monkeypatch)
    with pytest.raises(OSError, match="No space left"):
        res.save(out)
    assert out.read_text() == "previous" and _leftovers(tmp_path) == []


def test_write_text_writes_through_a_symlink_and_keeps_permissions(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    fresh = write_text(tmp_path / "fresh.json", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o666 & ~mask
    with pytest.raises(OutputError, match="is a directory"):
        write_text(tmp_path, "x")
    with pytest.raises(OutputError, match="character device"):
        write_text("/dev/null", "x")
