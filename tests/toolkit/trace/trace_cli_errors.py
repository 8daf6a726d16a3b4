"""What a refused ``twofour trace`` call looks like, for the trace tests that attack it.

Imported by its file name (pytest puts this folder on ``sys.path`` for the tests in it).
"""

from __future__ import annotations

from twofour.cli import main


def one_line_error(capsys, *args) -> str:
    """Run ``twofour trace ARGS``; assert exit 2, nothing on stdout, one error line and no traceback; return it."""
    code = main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out, err)
    err = err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("twofour trace: error: ") and "Traceback" not in err, err
    return err
