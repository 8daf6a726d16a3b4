"""Hostile checkpoints and outputs: no hang from a small file, no worker left behind, nothing forged, no traceback.

Each test here failed on the code before ``twofour.checkpoint`` (the reader it names in its
comment); none asserts a wall-clock time: work is bounded by counting it, or by a limit so
generous that the old behaviour (hours) cannot meet it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from importlib.resources import files

import pytest
import torch
from safetensors.torch import load_file, save_file

from twofour import checkpoint
from twofour.checkpoint import _flatten
from twofour.checkpoint._pattern import compile_pattern
from twofour.checkpoint.compressed import parse_config
from twofour.cli.main import main
from twofour.dispatch import audit

FIXTURES = files("twofour") / "data" / "compressed-tensors"


def _folder(tmp_path, tensors: dict, config: dict | None = None, name: str = "m") -> str:
    d = tmp_path / name
    d.mkdir()
    save_file(tensors, str(d / "model.safetensors"))
    if config is not None:
        (d / "config.json").write_text(json.dumps(config))
    return str(d)


def _ct(**sparsity) -> dict:
    return {"quantization_config": {"quant_method": "compressed-tensors", "version": "0.14.0",
                                    "sparsity_config": {"format": "dense", "sparsity_structure": "2:4", **sparsity}}}


def _refused(capsys, *argv) -> str:
    code = main([str(a) for a in argv])
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# -- a `re:` pattern from config.json cannot make the matcher backtrack -------------------------
def test_a_catastrophic_regex_is_matched_in_linear_work():
    # re.match("(a+)+$", "a" * 40 + "!") backtracks for hours; the automaton answers at once.
    name = "a" * 40 + "!.weight"
    assert compile_pattern("(a+)+$")(name) is False
    assert compile_pattern("(a+)+")(name) is True


@pytest.mark.parametrize("pattern", [r".*mlp\.gate$", r"model\.layers\.\d+\.(q|k)_proj", r"[^.]+\.x*y?", r"(?i)LM_HEAD",
                                     r"a{2,3}b", r"(ab|a)*c", r"^$", r".*\bgate\b"])
@pytest.mark.parametrize("name", ["model.layers.3.mlp.gate", "model.layers.12.q_proj", "lm_head", "aab", "abac", "",
                                  "x.y", "mlp.gate_proj"])
def test_the_automaton_answers_as_re_match_does(pattern, name):
    assert compile_pattern(pattern)(name) == (re.match(pattern, name) is not None)


@pytest.mark.parametrize("pattern, name", [
    ("(?i)[^a]", "A"),   # a negated class under (?i): "A" is an "a", so [^a] must not match it
    ("(?i)[^A]x", "ax"),
    (r"\d", "\u00b2"),  # superscript two is a digit to str.isdigit, not to re's \d
    ("(?i)s", "\u017f"),  # long s folds to s in re
    ("(?i)\u017f", "S"),
    (r"\B", ""),        # re: \B never holds in an empty string
])
def test_case_folding_negated_classes_and_digits_answer_as_re_does(pattern, name):
    assert compile_pattern(pattern)(name) == (re.match(pattern, name) is not None)


def test_a_pattern_re_warns_about_prints_no_warning_with_a_source_line():
    # Before: "re:[[:alpha:]]" printed "FutureWarning: Possible nested set" and a line of twofour's source.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = compile_pattern("[[:alpha:]]x")
    assert m(":]x") is True and m("b]x") is False


def test_a_pattern_too_costly_to_match_is_refused_in_one_line_not_run_for_minutes(tmp_path):
    # (?:.?.?){1,400}x has about 2,000 states and no small DFA: 200 long names took tens of seconds.
    from twofour.checkpoint._pattern import MAX_WORK, PatternError

    m = compile_pattern("(?:.?.?){1,400}xz")
    names = ["".join("ab."[(i * 7 + j * j) % 3] for j in range(190)) for i in range(200)]
    with pytest.raises(PatternError, match=f"more than {MAX_WORK:,} automaton steps"):
        for n in names:
            m(n)
    w = torch.ones(4, 4)  # not 2:4, so the claim is checked against the targets
    d = _folder(tmp_path, {f"{n}.weight": w.clone() for n in names[:40]}, _ct(targets=["re:(?:.?.?){1,400}xy"]))
    with pytest.raises(checkpoint.CheckpointError, match="within twofour's bound"):
        with checkpoint.open(d) as r:
            audit(r)


def test_a_config_with_a_catastrophic_target_is_audited_not_hung(tmp_path):
    # Before: audit of this 1 kB folder ran for hours (`re.match` in CompressionConfig.covers).
    w = torch.zeros(8, 8)
    d = _folder(tmp_path, {("a" * 40 + "!.weight"): w}, _ct(targets=["re:(a+)+$"]))
    with checkpoint.open(d) as r:
        report = audit(r)
    assert [row.name for row in report.rows] == ["a" * 40 + "!.weight"]


def test_a_pattern_that_needs_backtracking_is_refused_in_one_line(tmp_path, capsys):
    d = _folder(tmp_path, {"fc.weight": torch.zeros(8, 8)}, _ct(targets=[r"re:(a)\1"]))
    line = _refused(capsys, "audit", d)
    assert "cannot be matched without backtracking" in line


# -- names that collide in a nested .pt are made unique in linear work ------------------------------
def test_colliding_names_cost_linear_work(monkeypatch):
    # Before: the k-th collision tried #2, #3, ... #k from scratch: 2**16 collisions took minutes.
    probes = 0
    real_unique = _flatten.unique_name

    class Counting(dict):
        def __contains__(self, key):
            nonlocal probes
            probes += 1
            return dict.__contains__(self, key)

    n = 3000
    taken, tried = Counting(), {}
    for _ in range(n):
        taken[real_unique("a.b", taken, tried)] = 1
    assert len(taken) == n and probes < 3 * n


def test_a_small_pt_of_shared_nested_dicts_opens_with_every_name(tmp_path):
    # {"s.s": L, "s": {"s": L}}: two routes to one name per level, so 2**12 paths flatten to one name.
    level = {"w": torch.zeros(1)}
    for _ in range(12):
        level = {"s.s": level, "s": {"s": level}}
    path = tmp_path / "nested.pt"
    torch.save(level, path)
    assert path.stat().st_size < 10_000
    with checkpoint.open(path) as r:
        assert len(r.names()) == 2 ** 12


# -- no forked worker to outlive `kill PID` ------------------------------------------------------------
_NO_FORK = """
import os, sys
def refuse(*a, **k):
    raise SystemExit("forked")
os.fork = refuse
sys.argv = ["twofour", "audit", sys.argv[1]]
from twofour.cli.main import main
sys.exit(main())
"""


@pytest.mark.slow  # a real process (imports torch: seconds)
def test_the_audit_program_runs_in_one_process(tmp_path):
    # Before: `twofour audit` forked a worker (cli/_sigbus) that kept running after `kill PID` of the parent.
    d = _folder(tmp_path, {"fc.weight": torch.zeros(8, 8)})
    proc = subprocess.run([sys.executable, "-c", _NO_FORK, d], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


_TERM_MID_WRITE = """
import os, signal, sys
signal.signal(int(sys.argv[3]), signal.SIG_DFL)  # as in a terminal, even when the tests run under nohup
from twofour._common import atomic
real = atomic.os.fsync
def fsync_then_term(fd):
    os.kill(os.getpid(), int(sys.argv[3]))   # what `kill PID` (or a closed terminal) does mid-write
    real(fd)
atomic.os.fsync = fsync_then_term
from twofour.cli.main import main
sys.exit(main(["convert", sys.argv[1], sys.argv[2]]))
"""


@pytest.mark.slow  # a real process (imports torch: seconds)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_during_convert_leaves_no_partial_file(tmp_path, sig):
    # Before: SIGTERM (and, later, SIGHUP: a closed ssh session) killed the process with its hidden
    # `.OUT.<pid>.<hex>.tmp` left in the folder.
    src = str(FIXTURES / "sparse24-fp16")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.run([sys.executable, "-c", _TERM_MID_WRITE, src, str(out_dir / "dense.safetensors"), str(int(sig))],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 128 + sig, proc.stderr[-2000:]
    assert os.listdir(out_dir) == [] and "Traceback" not in proc.stderr


# -- strings from config.json never reach a terminal raw ------------------------------------------
def test_config_strings_are_escaped_in_the_report(tmp_path):
    # Before: version/format/targets/ignore were printed raw: "\x1b[2J" cleared the screen.
    forged = "\x1b[2J\x1b[HSPARSE-READY: 9 of 9"
    config = _ct(targets=["Linear", forged], ignore=[forged], sparsity_structure=forged)
    config["quantization_config"]["version"] = forged
    d = _folder(tmp_path, {"fc.weight": torch.zeros(8, 8)}, config)
    with checkpoint.open(d) as r:
        text = audit(r).text()
    assert "\x1b" not in text and "\\x1b[2J" in text
    assert "\x1b" not in parse_config(config).describe()


# -- convert: one line, never a traceback ----------------------------------------------------------------
def test_convert_copies_a_zero_size_tensor(tmp_path):
    # Before: TypeError: memoryview: cannot cast view with zeros in shape or strides.
    d = _folder(tmp_path, {"fc.weight": torch.zeros(4, 8), "empty": torch.zeros(0, 3)})
    out = tmp_path / "o.safetensors"
    checkpoint.convert(d, out)
    assert tuple(load_file(str(out))["empty"].shape) == (0, 3)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool])
@pytest.mark.parametrize("layout", ["packed", "cutlass"])
def test_convert_packed_refuses_an_unpackable_dtype_in_one_line(tmp_path, capsys, dtype, layout):
    # Before: pack() raised TypeError, which convert did not catch: a traceback.
    d = _folder(tmp_path, {"fc.weight": torch.zeros(4, 8, dtype=dtype)}, _ct(targets=["Linear"]))
    line = _refused(capsys, "convert", d, tmp_path / "o.safetensors", "--layout", layout)
    assert "cannot be packed" in line and "--layout dense" in line


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_convert_into_a_folder_it_cannot_write_is_one_line(capsys):
    # Before: a traceback from os.open of the temporary file (even root cannot create files in /proc).
    line = _refused(capsys, "convert", str(FIXTURES / "sparse24-fp16"), "/proc/o.safetensors")
    assert "cannot write" in line


def test_convert_library_call_into_an_unwritable_place_is_a_checkpoint_error(tmp_path, monkeypatch):
    # Before: os.open of the temporary file raised PermissionError (a traceback in the CLI).
    from twofour._common import atomic

    real_open = os.open

    def denied(path, flags, *a, **k):
        if flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(atomic.os, "open", denied)
    with pytest.raises(checkpoint.CheckpointError, match="cannot write .Permission denied"):
        checkpoint.convert(str(FIXTURES / "sparse24-fp16"), tmp_path / "o.safetensors")


@pytest.mark.parametrize("command", [["convert", str(FIXTURES / "sparse24-fp16")],
                                     ["audit", str(FIXTURES / "sparse24-fp16"), "--json"],
                                     ["quality", "--sizes", "tiny", "--no-progress", "--out"],  # Path() dropped the slash
                                     ["calibrate", "--out"]])  # type=Path dropped the slash
def test_an_output_path_ending_in_a_slash_is_refused_not_written_as_a_file(tmp_path, capsys, command):
    # Before: `convert SRC newdir/` (later `quality --out newdir/`, `calibrate --out newdir/`) wrote a regular
    # file `newdir` and said "wrote newdir/".
    target = str(tmp_path / "newdir") + "/"
    line = _refused(capsys, *command, target)
    assert "names a folder" in line and not os.path.exists(tmp_path / "newdir")


def test_convert_into_its_own_model_folder_is_refused(tmp_path, capsys):
    # Before: the folder then held two *.safetensors files and no index: unreadable afterwards.
    src = tmp_path / "m"
    shutil.copytree(FIXTURES / "sparse24-fp16", src)
    if (src / "model.safetensors.index.json").exists():
        (src / "model.safetensors.index.json").unlink()
        shards = sorted(p for p in os.listdir(src) if p.endswith(".safetensors"))
        merged = {}
        for s in shards:
            merged.update(load_file(str(src / s)))
            (src / s).unlink()
        save_file(merged, str(src / "model.safetensors"))
    line = _refused(capsys, "convert", src, src / "dense.safetensors")
    assert "inside the model folder" in line
    with checkpoint.open(src) as r:  # still readable
        assert r.names()


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_unsigned_tensors_are_read_audited_and_copied(tmp_path, dtype):
    # Before: "U16 is not a dtype torch knows", and convert refused the whole checkpoint.
    d = _folder(tmp_path, {"fc.weight": torch.zeros(4, 8), "counts.weight": torch.arange(32).reshape(4, 8).to(dtype)})
    with checkpoint.open(d) as r:
        assert r.dtype("counts.weight") == dtype
        report = audit(r)
    assert any("uint" in why for _, why in report.skipped)
    out = tmp_path / "o.safetensors"
    checkpoint.convert(d, out)
    assert torch.equal(load_file(str(out))["counts.weight"], torch.arange(32).reshape(4, 8).to(dtype))


@pytest.mark.parametrize("dtype, layout, wanted", [
    (torch.uint16, "packed", "int8, uint8, int16 or int32"),   # before: "8- to 32-bit integers", uint16 among them
    (torch.float32, "packed", "cannot be written as --layout packed"),  # before: "cannot be packed packed"
])
def test_a_weight_convert_cannot_pack_is_refused_with_an_accurate_message(tmp_path, dtype, layout, wanted):
    w = torch.tensor([[1, 0, 0, 1]] * 4, dtype=dtype) if dtype != torch.float32 else torch.zeros(0, 8)
    d = _folder(tmp_path, {"fc.weight": w}, _ct(targets=["Linear"]))
    with pytest.raises(checkpoint.CheckpointError, match=re.escape(wanted)):
        checkpoint.convert(d, tmp_path / "o.safetensors", layout)


def test_the_bound_on_matching_work_is_per_checkpoint_not_per_process(monkeypatch):
    # A long-lived process auditing many checkpoints must not run out of the budget one pattern accumulates.
    from twofour.checkpoint import _pattern
    from twofour.checkpoint.compressed import matches

    monkeypatch.setattr(_pattern, "MAX_WORK", 400)
    config = _ct(targets=[r"re:.*\.(q|k|v)_proj$"])
    for i in range(40):
        parse_config(config)  # what opening a checkpoint does
        assert matches([r"re:.*\.(q|k|v)_proj$"], f"model.layers.{i}.self_attn.{'qkv'[i % 3]}_proj.x{i}", "linear") is False
