"""The audit table's cells, shared by the text and the HTML renderings of :class:`~twofour.dispatch.audit.AuditReport`."""

from __future__ import annotations

import math

from .._common.text import printable

# The audit table's columns, shared by the text and the HTML renderings.
TABLE_HEADER = ("name", "shape", "dtype", "2:4 valid", "packed", "verdict", "problems")


# Names are printed escaped (they come from the file) and at most this long, shortened in the middle.
NAME_WIDTH = 60


STORED_HEADER = ("stored", "on disk")


def valid_cell(r) -> str:
    """The 2:4-valid fraction, never rounded up to 100% when a group fails: ``99.9% (1 of 1,024 bad)``.

    >>> from types import SimpleNamespace as R
    >>> valid_cell(R(fraction_valid=32767 / 32768, n_groups=32768, n_bad_groups=1))
    '99.9% (1 of 32,768 bad)'
    >>> valid_cell(R(fraction_valid=1.0, n_groups=64, n_bad_groups=0)), valid_cell(R(fraction_valid=None, n_groups=None, n_bad_groups=None))
    ('100.0%', '—')
    """
    if r.fraction_valid is None:
        return "—"
    if not r.n_bad_groups:
        return "100.0%" if r.n_groups is not None or r.fraction_valid == 1.0 else f"{r.fraction_valid:.1%}"
    shown = math.floor(r.fraction_valid * 1000) / 10  # rounded down: a failing weight never reads 100.0%
    return f"{shown:.1f}% ({r.n_bad_groups:,} of {r.n_groups:,} bad)"


def _disk_cell(r) -> str:
    if r.stored_bytes is None:
        return "—"
    fp16 = r.shape[0] * r.shape[1] * 2
    return f"{format_bytes(r.stored_bytes)} ({r.stored_bytes / fp16:.2f}x fp16)"


def table_cells(r, stored: bool = False) -> tuple[str, ...]:
    """One audit row as the table's cell strings (the name escaped and shortened)."""
    verdict = r.verdict if r.kind == "linear" else "embedding"
    cells = (
        printable(r.name, NAME_WIDTH),
        "x".join(map(str, r.shape)),
        str(r.dtype),
        valid_cell(r),
        "yes" if r.packed else "no",
        "dense (kept)" if r.kept_dense and r.kind == "linear" else verdict,
        ", ".join(r.topics) or "—",
    )
    return cells[:3] + (r.stored, _disk_cell(r)) + cells[3:] if stored else cells


def format_bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"
