"""Printed reports fit the width they are printed to (twofour._common.fit): the audit, trace and
environment reports, with COLUMNS set as the site's notebooks set it, and unchanged without."""

from __future__ import annotations

import io
import re
from importlib.resources import files

import pytest

from twofour._common.fit import SITE_WIDTH, fit, fold_columns, report_width
from twofour.cli import main
from twofour.device import environment
from twofour.dispatch.trace import analyze, recorded, report_text

FOLDER = str(files("twofour") / "data" / "compressed-tensors" / "sparse24-fp16")


def _words(text: str) -> list[str]:
    return text.split()


@pytest.fixture
def no_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)


def test_report_width_is_columns_then_a_terminal_then_none(monkeypatch, no_columns):
    assert report_width(io.StringIO()) is None  # a pipe or a file keeps whole lines
    monkeypatch.setenv("COLUMNS", "100")
    assert report_width(io.StringIO()) == 100
    monkeypatch.setenv("COLUMNS", "12")  # too narrow to fold into: whole lines
    assert report_width(io.StringIO()) is None


def test_fit_wraps_sentences_and_last_columns_and_keeps_every_word():
    row = "    label     1.00x  measured   "
    narrow = "  GEMM time   dense 0.269 ms   2:4 0.509 ms   GEMM speedup 0.53x"
    lines = ["  - " + "word " * 40, row + "a sentence that runs on " * 6, narrow, "short"]
    out = fit(lines, 70)
    assert all(len(line) <= 70 for line in out)
    assert _words(" ".join(out)) == _words(" ".join(lines))  # nothing dropped
    # a bullet's continuation sits under its text, a last column's under that column
    assert out[1].startswith("    word") and any(line.startswith(" " * len(row) + "sentence") for line in out)
    # a row whose last column has no room for it (under 30 characters) breaks between columns
    assert fit([narrow], 48) == ["  GEMM time   dense 0.269 ms   2:4 0.509 ms", "    GEMM speedup 0.53x"]
    assert fit(lines, None) == lines


def test_a_table_wider_than_the_width_folds_into_tables_that_repeat_the_name():
    header = ("name", "alpha", "beta", "gamma")
    rows = [("layer.0", "a" * 30, "b" * 30, "c" * 30), ("layer.1", "x", "y", "z")]
    tables = fold_columns(header, rows, 50)
    assert len(tables) == 3 and all(t[0].startswith("name") and t[2].startswith("layer.0") for t in tables)
    assert all(len(line) <= 50 for t in tables for line in t)
    assert len(fold_columns(header, rows, None)) == 1 and len(fold_columns(header, rows, 500)) == 1


def _cli(capsys, *argv):
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ("audit", FOLDER, "--capability", "9.0"),
    ("audit", FOLDER, "--capability", "9.0", "--max-rows", "3"),
    ("trace", str(recorded("sparse-eager")), "--compare", str(recorded("dense-eager"))),
])
def test_with_columns_set_no_printed_line_is_wider_and_nothing_is_lost(capsys, monkeypatch, no_columns, argv):
    whole = _cli(capsys, *argv)
    assert max(len(line) for line in whole.splitlines()) > SITE_WIDTH  # what the site's column cut
    monkeypatch.setenv("COLUMNS", str(SITE_WIDTH))
    fitted = _cli(capsys, *argv)
    assert max(len(line) for line in fitted.splitlines()) <= SITE_WIDTH, fitted
    # the verdict (the last paragraph) says the same words; every problem and note is still there
    assert _words(whole.rstrip().rsplit("\n\n", 1)[-1]) == _words(fitted.rstrip().rsplit("\n\n", 1)[-1])
    for needle in ("SPARSE-READY", "kept dense by the recipe", "end to end 0.05x", "host time"):
        assert (needle in " ".join(whole.split())) == (needle in " ".join(fitted.split())), needle


def test_an_audit_limited_to_rows_keeps_its_model_line_and_no_row_after_the_cut(capsys, no_columns):
    out = _cli(capsys, "audit", FOLDER, "--capability", "9.0", "--max-rows", "3")
    lines = out.splitlines()
    assert lines[0].startswith("compressed-tensors")  # the model line was dropped with --max-rows
    cut = lines.index("... 6 more rows")
    assert not any(re.match(r"model\.\S+\.weight\s", line) for line in lines[cut + 1:]), out


def test_the_environment_report_wraps_its_reason_under_its_value(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    env = environment()
    lines = str(env).splitlines()
    assert all(len(line) <= 60 for line in lines)
    value_column = lines[0].index(env.torch_version)
    why = next(i for i, line in enumerate(lines) if line.startswith("why"))
    assert all(line.startswith(" " * value_column) for line in lines[why + 1:])
    assert _words(" ".join(lines[why:]))[1:] == _words(env.reason)


def test_a_trace_reports_text_fits_the_width_too(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(SITE_WIDTH))
    text = report_text(analyze(recorded("sparse-eager"), baseline=recorded("dense-eager")), width=report_width())
    assert max(len(line) for line in text.splitlines()) <= SITE_WIDTH
