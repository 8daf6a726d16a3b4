"""Writers never leave the output, and small arguments are refused by name.

``audit ... --json x | head`` exited 141 before writing its files; ``--json ""``
was ignored and ``--json`` into a missing folder failed only after the whole audit; ``bench
--out`` replaced any existing file; ``--capability`` read Unicode digits and absurd values;
``--dtypes bogus`` was ignored on CPU.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from twofour._common.atomic import write_text
from twofour.cli import main

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"fc.weight": torch.zeros(16, 16, dtype=torch.float16)}, path)
    return path


def _err(capsys, args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, (code, out, err)
    return out, err


def test_write_text_without_following_replaces_the_link_not_its_target(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text(link, "new", follow_symlinks=False)
    assert target.read_text() == "old" and link.read_text() == "new" and not link.is_symlink()
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "nowhere" / "x.txt")
    write_text(dangling, "made here", follow_symlinks=False)
    assert dangling.read_text() == "made here" and not (tmp_path / "nowhere").exists()
    write_text(link, "through", follow_symlinks=True) if link.is_symlink() else None  # the default still follows


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
def test_a_closed_stdout_never_costs_the_output_files(tmp_path, checkpoint):
    json_out, html_out = tmp_path / "a.json", tmp_path / "a.html"
    cmd = (f"{sys.executable} -m twofour audit {checkpoint} --capability 9.0 --json {json_out} --html {html_out}"
           " | head -c 0")
    subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=170)
    assert json_out.read_text().startswith("{") and html_out.read_text().lstrip().lower().startswith("<!doctype")


@pytest.mark.slow  # a real `twofour` process (imports torch: seconds)
def test_trace_html_is_written_even_when_stdout_is_closed(tmp_path):
    from twofour.dispatch.trace import recorded

    html = tmp_path / "r.html"
    subprocess.run(["sh", "-c", f"{sys.executable} -m twofour trace {recorded('dense-eager')} --html {html} | head -c 0"],
                   capture_output=True, timeout=170)
    assert html.stat().st_size > 1000


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_an_empty_output_path_is_refused(capsys, checkpoint, option):
    out, err = _err(capsys, ["audit", checkpoint, "--capability", "9.0", option, ""])
    assert f"{option} is empty" in err and out == ""


def test_trace_html_empty_is_refused(capsys):
    from twofour.dispatch.trace import recorded

    _, err = _err(capsys, ["trace", recorded("dense-eager"), "--html", ""])
    assert "--html is empty" in err


def test_json_into_a_missing_folder_is_refused_before_the_audit(capsys, checkpoint, tmp_path):
    out, err = _err(capsys, ["audit", checkpoint, "--capability", "9.0", "--json", tmp_path / "missing" / "a.json"])
    assert "does not exist" in err and out == ""  # no report printed: the audit never ran


def test_bench_out_never_replaces_an_existing_file(capsys, tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("my notes")
    _, err = _err(capsys, ["bench", "--quick", "--no-progress", "--out", precious])
    assert "exists; this command never replaces a file" in err and precious.read_text() == "my notes"


@pytest.mark.parametrize("cap", ["٨.٠", "８.０", "8.0\u200b", "99999999.0", "16.0", "0.0", "8.10", "-1.0", "8", " 8.0"])
def test_capability_takes_ascii_digits_and_real_values(capsys, checkpoint, cap):
    _, err = _err(capsys, ["audit", checkpoint, "--capability", cap])
    assert "--capability must" in err


def test_capability_still_reads_real_ones(capsys, checkpoint):
    for cap in ("8.0", "8.9", "9.0", "12.0"):
        assert main(["audit", str(checkpoint), "--capability", cap]) == 0
    capsys.readouterr()


def test_bench_dtypes_bogus_is_refused_on_cpu(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # had it run, the sweep would write its default results file here
    _, err = _err(capsys, ["bench", "--quick", "--no-progress", "--dtypes", "bogus"])
    assert "--dtypes" in err and "bogus" in err
