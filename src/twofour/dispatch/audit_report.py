"""What an audit found, and how it is shown: :class:`AuditRow` s and :class:`AuditReport` (text, HTML page, JSON).

:func:`twofour.dispatch.audit.audit` makes the rows (with :mod:`.runners` for compressed-tensors
files); this module only adds them up and renders them.
"""

from __future__ import annotations

import html
import json
import math
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field

from .._common.fit import fit, fit_table, report_width
from .._common.text import printable

__all__ = ["AuditRow", "AuditReport"]


@dataclass(frozen=True)
class AuditRow:
    """One 2-D weight of the model."""

    name: str
    kind: str  # "linear" or "embedding" (a lookup: never a sparse GEMM)
    shape: tuple[int, int]
    dtype: str
    fraction_valid: float | None  # fraction of 2:4-valid groups along K; None when not checked
    packed: bool
    verdict: str  # sparse-cusparselt / sparse-cutlass / dense / error
    topics: tuple[str, ...]
    reasons: tuple[str, ...]
    dense_bytes: int
    packed_bytes: int | None  # bytes once packed, for rows whose verdict is sparse
    n_groups: int | None = None  # groups of four along K checked (None when not checked)
    n_bad_groups: int | None = None  # of those, groups holding more than two non-zeros
    stored: str = "dense"  # how the file stores it: dense, sparse-24-bitmask, marlin-24
    stored_bytes: int | None = None  # its bytes on disk (every part), when read from a file
    # Why the layer is left dense on purpose ("the output head", "a MoE router, in the recipe's ignore list",
    # "an embedding (a lookup)"), or "" when it is not: a layer kept dense is listed, not judged.
    kept_dense: str = ""

    @property
    def sparse(self) -> bool:
        return self.verdict.startswith("sparse")


# The audit table's columns, shared by the text and the HTML renderings; rows read from files
# add STORED_HEADER's two after the dtype.
TABLE_HEADER = ("name", "shape", "dtype", "2:4 valid", "packed", "verdict", "problems")
STORED_HEADER = ("stored", "on disk")
# Names are printed escaped (they come from the file) and at most this long, shortened in the middle.
NAME_WIDTH = 60


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
    return f"{format_bytes(r.stored_bytes)} ({r.stored_bytes / (r.shape[0] * r.shape[1] * 2):.2f}x fp16)"


def format_bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class AuditReport:
    rows: tuple[AuditRow, ...]
    skipped: tuple[tuple[str, str], ...]
    target: str
    backend: str
    M: int | None
    n_bytes_read: int = 0
    notes: tuple[str, ...] = field(default=())
    model: str | None = None  # what the folder's config says about how it is stored (compressed-tensors)
    runners: tuple[str, ...] = field(default=())  # what can load and run it, with the steps
    on_gpu: bool = True  # judged for a GPU (this one or a named one); False: a machine with no CUDA GPU

    @property
    def linear(self) -> tuple[AuditRow, ...]:
        """Linear weights the audit judges (layers the recipe keeps dense are listed, not judged)."""
        return tuple(r for r in self.rows if r.kind == "linear" and not r.kept_dense)

    @property
    def kept_dense(self) -> tuple[AuditRow, ...]:
        return tuple(r for r in self.rows if r.kept_dense)

    @property
    def n_sparse(self) -> int:
        return sum(r.sparse for r in self.linear)

    @property
    def bytes_saved(self) -> int:
        """Weight bytes saved if every layer whose verdict is sparse is stored packed."""
        return sum(r.dense_bytes - r.packed_bytes for r in self.linear if r.sparse and r.packed_bytes is not None)

    def reason_counts(self) -> list[tuple[str, int, str]]:
        """(topic, how many linear layers, the first layer's name and its own message), most frequent first."""
        counts: Counter = Counter()
        example: dict[str, str] = {}
        for r in self.linear:
            for topic, message in zip(r.topics, r.reasons):
                counts[topic] += 1
                example.setdefault(topic, f"{printable(r.name, NAME_WIDTH)}: {message}")
        return [(t, n, example[t]) for t, n in counts.most_common()]

    def checkpoint_line(self) -> str:
        """What the checkpoint is, on any machine: 2:4 along K per linear weight, how it is stored, what is kept dense.

        >>> row = AuditRow("fc.weight", "linear", (8, 8), "float16", 1.0, False, "error", (), (), 128, None)
        >>> AuditReport((row,), (), "CPU (no CUDA GPU)", "cusparselt", None, on_gpu=False).checkpoint_line()
        '2:4 CHECKPOINT: 1 of 1 linear weights are 2:4 along K (stored dense: 1)'
        """
        lin = self.linear
        valid = sum(r.fraction_valid == 1.0 or r.stored == "marlin-24" for r in lin)
        verdict = "2:4 CHECKPOINT" if lin and valid == len(lin) else ("PARTLY 2:4" if valid else "NOT 2:4")
        forms = Counter(r.stored for r in lin)
        kept = Counter(r.kept_dense for r in self.kept_dense)
        return (f"{verdict}: {valid} of {len(lin)} linear weights are 2:4 along K (stored "
                + ", ".join(f"{printable(f, 40)}: {n}" for f, n in forms.most_common()) + ")"
                + ("; kept dense on purpose: " + ", ".join(f"{n} {printable(w, 80)}" for w, n in kept.most_common())
                   if kept else ""))

    def machine_line(self) -> str:
        """What would run where it was judged: a GPU's 2:4 kernels, or (no GPU) how to ask about one."""
        if not self.on_gpu:
            return (f"on {self.target} no 2:4 kernel runs; to ask what a GPU would run: "
                    "`twofour audit --capability 9.0` (or 8.0, 8.9), or audit(..., target=hypothetical_gpu((9, 0)))")
        lin = self.linear
        packed = sum(r.packed for r in lin)
        verdict = "SPARSE-READY" if lin and self.n_sparse == len(lin) else ("PARTLY SPARSE" if self.n_sparse else "NOT SPARSE")
        kept = len(self.kept_dense)
        valid = sum(r.fraction_valid == 1.0 for r in lin)
        total = format_bytes(sum(r.dense_bytes for r in self.rows))
        return (
            f"{verdict}: {self.n_sparse} of {len(lin)} linear weights would run a 2:4 sparse kernel on {self.target} "
            f"(2:4 along K: {valid}, already packed: {packed}"
            + (f"; {kept} more kept dense on purpose" if kept else "")
            + f"); packing those saves {format_bytes(self.bytes_saved)} of {total} weight bytes"
        )

    def summary(self) -> str:
        """The headline: what would run on the GPU judged for, or, with no GPU, what the checkpoint is."""
        return self.machine_line() if self.on_gpu else self.checkpoint_line()

    def disk_line(self) -> str | None:
        """Bytes on disk of the weights audited against the same weights stored dense in fp16."""
        rows = [r for r in self.rows if r.stored_bytes is not None]
        if not rows:
            return None
        disk = sum(r.stored_bytes for r in rows)
        fp16 = sum(r.shape[0] * r.shape[1] * 2 for r in rows)
        return f"on disk: {format_bytes(disk)} for these {len(rows)} weights, {disk / fp16:.2f}x their {format_bytes(fp16)} as dense fp16"

    def _skipped_line(self) -> str:
        """How many tensors were skipped, by reason: ``3 tensors: 2 x 1-D ...; 1 x scalar``."""
        kinds = Counter(why for _, why in self.skipped)
        return f"{len(self.skipped)} tensors: " + "; ".join(f"{n} x {printable(why, 200)}" for why, n in kinds.most_common())

    def _cells(self, rows) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        """The table's header, and the cells of ``rows`` (each name escaped and shortened)."""
        stored = any(r.stored_bytes is not None for r in self.rows)  # rows from files: bytes on disk known
        body = []
        for r in rows:
            cells = (
                printable(r.name, NAME_WIDTH),
                "x".join(map(str, r.shape)),
                str(r.dtype),
                valid_cell(r),
                "yes" if r.packed else "no",
                ("dense (kept)" if r.kept_dense else r.verdict) if r.kind == "linear" else "embedding",
                ", ".join(r.topics) or "—",
            )
            body.append(cells[:3] + (r.stored, _disk_cell(r)) + cells[3:] if stored else cells)
        return (TABLE_HEADER[:3] + STORED_HEADER + TABLE_HEADER[3:] if stored else TABLE_HEADER), body

    def table(self, max_rows: int | None = None, width: int | None = None) -> str:
        """The per-layer table (its first ``max_rows`` rows); wider than ``width`` it is printed as
        two tables that repeat the layer name, or one block per layer (:func:`twofour._common.fit.fit_table`)."""
        header, body = self._cells(self.rows if max_rows is None else self.rows[:max_rows])
        more = [f"... {len(self.rows) - max_rows} more rows"] if max_rows is not None and len(self.rows) > max_rows else []
        return "\n\n".join("\n".join(lines + more) for lines in fit_table(header, body, width))

    def __str__(self) -> str:
        return self.text(report_width())

    def text(self, width: int | None = None, max_rows: int | None = None) -> str:
        """The report as ``twofour audit`` prints it: the table (its first ``max_rows`` rows), the
        problems with one example each, what was kept dense or skipped, and the verdict last.

        ``width`` (``str()`` takes :func:`~twofour._common.fit.report_width`: a terminal's, or
        ``COLUMNS``) folds the table and wraps the sentences to fit it; None keeps whole lines.
        """
        lines = ([self.model, ""] if self.model else []) + self.table(max_rows, width).split("\n")
        counts = self.reason_counts()
        if counts:
            lines += ["", "problems (number of linear layers): the first layer with it, and its message"]
            for t, n, msg in counts:
                where, _, what = msg.partition(": ")
                lines += [f"  {t} ({n}): {where}", f"    {what}"]
        if self.kept_dense:
            lines += ["", f"kept dense on purpose ({len(self.kept_dense)}):"]
            by_reason: dict[str, list[str]] = {}
            for r in self.kept_dense:
                by_reason.setdefault(r.kept_dense, []).append(printable(r.name, NAME_WIDTH))
            for why, names in by_reason.items():
                lines.append(f"  {printable(why, 120)} ({len(names)}): " + ", ".join(names[:3]) + (" ..." if len(names) > 3 else ""))
        if self.skipped:
            lines += ["", f"skipped {self._skipped_line()}"]
        lines += [f"note: {printable(n, 400)}" for n in self.notes]
        if self.disk_line():
            lines += ["", self.disk_line()]
        if self.runners:
            lines += ["", "what can load and run it:"]
            for line in self.runners:  # wrapped: these are sentences, not table rows
                lines += textwrap.wrap(line, min(width or 100, 100), initial_indent="  ", subsequent_indent="    ",
                                       break_on_hyphens=False)
        lines.append("")
        lines += [self.checkpoint_line(), self.machine_line()] if self.on_gpu else [self.machine_line(), self.checkpoint_line()]
        return "\n".join(fit(lines, width))

    def _table_html(self) -> str:
        header, cells = self._cells(self.rows)
        head = "".join(f"<th>{h}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def _repr_html_(self) -> str:
        return f"{self._table_html()}<p><strong>{html.escape(self.summary())}</strong></p>"

    def to_html(self, title: str = "twofour audit") -> str:
        """The report as a self-contained HTML page (``twofour audit --html``), names from the file escaped.

        >>> from twofour.dispatch.audit_report import AuditReport
        >>> page = AuditReport(rows=(), skipped=(("norm.weight", "1-D"),), target="CPU", backend="cusparselt", M=None).to_html()
        >>> page.startswith("<!doctype html>") and "<table" in page and "1 tensors: 1 x 1-D" in page
        True
        """
        e = html.escape
        parts = [f"<h1>{e(title)}</h1>",
                 f"<p>Judged for {e(self.target)}, backend {e(self.backend)}"
                 + (f", {self.M} tokens per forward pass" if self.M is not None else "") + ".</p>",
                 f'<p class="verdict"><strong>{e(self.summary())}</strong></p>',
                 '<div class="scroll">' + self._table_html() + "</div>"]
        counts = self.reason_counts()
        if counts:
            parts.append("<h2>Problems</h2><table><thead><tr><th>problem</th><th>linear layers</th>"
                         "<th>first example</th></tr></thead><tbody>"
                         + "".join(f'<tr><td>{e(t)}</td><td class="num">{n}</td><td>{e(m)}</td></tr>' for t, n, m in counts)
                         + "</tbody></table>")
        if self.skipped:
            parts.append(f"<h2>Skipped</h2><p>{e(self._skipped_line())}</p>")
        parts += [f"<p>note: {e(printable(n, 400))}</p>" for n in self.notes]
        if self.disk_line():
            parts.append(f"<p>{e(self.disk_line())}</p>")
        if self.runners:
            parts.append("<h2>What can load and run it</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in self.runners) + "</ul>")
        return (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{e(title)}</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;"
            "color:#222;background:#fff}.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:.85rem}"
            "td,th{border-bottom:1px solid #ccc;padding:.25rem .8rem .25rem 0;text-align:left;white-space:nowrap}"
            "th{border-bottom-width:2px}.num{text-align:right}.verdict{font-size:1.05rem}</style>"
            "</head><body>" + "".join(parts) + "</body></html>\n"
        )

    def to_json(self) -> str:
        """Rows, skipped tensors and the summary as JSON (for scripts and CI)."""
        return json.dumps(
            {
                "target": self.target,
                "backend": self.backend,
                "M": self.M,
                "summary": self.summary(),
                "checkpoint": self.checkpoint_line(),
                "machine": self.machine_line(),
                "rows": [asdict(r) for r in self.rows],
                "skipped": [{"name": n, "why": w} for n, w in self.skipped],
                "notes": list(self.notes),
                "model": self.model,
                "runners": list(self.runners),
            },
            indent=1,
        )
