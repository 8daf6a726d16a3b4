"""Check a whole model: every linear weight, its 2:4 validity, and which kernel it would get.

:func:`audit` takes an ``nn.Module``, a state dict, or an opened checkpoint
(:func:`twofour.dispatch.checkpoint.open_checkpoint`) and returns one :class:`AuditRow` per
2-D weight, in order, plus what it skipped and why. Checkpoints are read one tensor at a time,
so auditing a file needs about one layer's worth of memory, not the model's.

The verdict of a row is :attr:`Verdict.if_packed <twofour.dispatch.explain.Verdict>`: the
kernel the layer would run after ``to_sparse_semi_structured`` on the target GPU (for a layer
that is packed already, the kernel it runs now), with one exception: a weight that is not
2:4 along K gets ``"dense"``, because packing it would change what the layer computes.

>>> import torch, twofour
>>> from twofour.dispatch import audit, hypothetical_gpu
>>> model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64)).half()
>>> with torch.no_grad():
...     _ = model[0].weight.copy_(twofour.prune(model[0].weight)[0])
>>> report = audit(model, 256, target=hypothetical_gpu((8, 0), name="A100"))
>>> [(r.name, r.verdict) for r in report.rows]
[('0.weight', 'sparse-cusparselt'), ('2.weight', 'dense')]
>>> report.rows[1].topics  # not 2:4: packing would change its numbers, so it stays dense
('structure',)
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace

import torch

from .._passes.bits import unsupported_reason
from .._passes.tensors import SUPPORTED_DTYPES
from .._common.text import printable
from ..packing import dense_bytes, packed_bytes
from ..structure import check
from ._flatten import unique_name
from .checkpoint import Checkpoint, CheckpointError
from ._audit_cells import NAME_WIDTH, STORED_HEADER, TABLE_HEADER, format_bytes, table_cells, valid_cell  # noqa: F401
from .audit_row import AuditRow
from .runners import judge_row, marlin_row, who_runs
from .explain import Verdict, explain
from .probe import as_environment
from .rules import BackendRules, default_backend, is_packed

__all__ = ["AuditRow", "AuditReport", "audit", "weight_kind", "MAX_TENSORS"]

# A safetensors header may list about a million tensors; real checkpoints hold hundreds to tens of
# thousands (a Llama-3-70B about 720). Past this many the audit refuses at once instead of running for minutes.
MAX_TENSORS = 200_000

# Names that mark an embedding table in common checkpoints (Llama, GPT-2, BERT, T5...).
# Embeddings are lookups, not GEMMs, so 2:4 kernels never apply to them.
_EMBEDDING_MARKERS = ("embed", "wte", "wpe", "word_embeddings", "position_embeddings", "token_type_embeddings", "shared.weight")


def weight_kind(name: str, shape: tuple[int, ...]) -> str | None:
    """``"linear"``, ``"embedding"``, or None when the tensor is not a 2-D weight (with why in :func:`_skip_reason`).

    >>> weight_kind("model.layers.0.mlp.up_proj.weight", (14336, 4096))
    'linear'
    >>> weight_kind("model.embed_tokens.weight", (128256, 4096)), weight_kind("norm.weight", (4096,))
    ('embedding', None)
    >>> weight_kind("fc.weight#2", (8, 8))  # a second tensor whose name collided keeps its kind
    'linear'
    >>> weight_kind("notaweight", (8, 8)), weight_kind("weight", (8, 8))  # the last name part must be "weight"
    (None, 'linear')
    """
    base = re.sub(r"#\d+$", "", name)
    if len(shape) != 2 or not (base == "weight" or base.endswith(".weight")):
        return None
    low = name.lower()
    return "embedding" if any(m in low for m in _EMBEDDING_MARKERS) else "linear"


def _skip_reason(name: str, shape: tuple[int, ...], dtype) -> str:
    if len(shape) == 1:
        return "1-D (bias or norm scale): not a matmul weight"
    if len(shape) == 0:
        return "scalar"
    if len(shape) > 2:
        return f"{len(shape)}-D (e.g. a conv kernel): reshape to [out, in*kh*kw] to audit it with explain()"
    return "2-D but its name does not end in .weight: not treated as a layer weight"


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

    @property
    def stored_forms(self) -> bool:
        """True when the rows came from files (bytes on disk are known)."""
        return any(r.stored_bytes is not None for r in self.rows)

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

    @property
    def total_bytes(self) -> int:
        return sum(r.dense_bytes for r in self.rows)

    def reason_counts(self) -> list[tuple[str, int, str]]:
        """(topic, how many linear layers, the first layer's name and its own message), most frequent first."""
        counts: Counter = Counter()
        example: dict[str, str] = {}
        for r in self.linear:
            for topic, message in zip(r.topics, _topic_messages(r)):
                counts[topic] += 1
                example.setdefault(topic, f"{printable(r.name, NAME_WIDTH)}: {message}")
        return [(t, n, example[t]) for t, n in counts.most_common()]

    def summary(self) -> str:
        lin = self.linear
        valid = sum(r.fraction_valid == 1.0 for r in lin)
        packed = sum(r.packed for r in lin)
        verdict = "SPARSE-READY" if lin and self.n_sparse == len(lin) else ("PARTLY SPARSE" if self.n_sparse else "NOT SPARSE")
        kept = len(self.kept_dense)
        return (
            f"{verdict}: {self.n_sparse} of {len(lin)} linear weights would run a 2:4 sparse kernel on {self.target} "
            f"(2:4 along K: {valid}, already packed: {packed}"
            + (f"; {kept} more kept dense by the recipe" if kept else "")
            + f"); packing those saves {format_bytes(self.bytes_saved)} of {format_bytes(self.total_bytes)} weight bytes"
        )

    def disk_line(self) -> str | None:
        """Bytes on disk of the weights audited against the same weights stored dense in fp16."""
        rows = [r for r in self.rows if r.stored_bytes is not None]
        if not rows:
            return None
        disk = sum(r.stored_bytes for r in rows)
        fp16 = sum(r.shape[0] * r.shape[1] * 2 for r in rows)
        return f"on disk: {format_bytes(disk)} for these {len(rows)} weights, {disk / fp16:.2f}x their {format_bytes(fp16)} as dense fp16"

    def table(self, max_rows: int | None = None) -> str:
        rows = self.rows if max_rows is None else self.rows[:max_rows]
        stored = self.stored_forms
        header = TABLE_HEADER[:3] + STORED_HEADER + TABLE_HEADER[3:] if stored else TABLE_HEADER
        body = [table_cells(r, stored) for r in rows]
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
        fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        lines = [fmt(header), fmt(tuple("-" * w for w in widths))] + [fmt(b) for b in body]
        if max_rows is not None and len(self.rows) > max_rows:
            lines.append(f"... {len(self.rows) - max_rows} more rows")
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = ([self.model, ""] if self.model else []) + [self.table()]
        counts = self.reason_counts()
        if counts:
            lines.append("")
            lines.append("problems (number of linear layers): the first layer with it, and its message")
            for t, n, msg in counts:
                where, _, what = msg.partition(": ")
                lines += [f"  {t} ({n}): {where}", f"    {what}"]
        if self.kept_dense:
            lines.append("")
            lines.append(f"kept dense by the recipe ({len(self.kept_dense)}): "
                         + ", ".join(printable(r.name, NAME_WIDTH) for r in self.kept_dense[:5])
                         + (" ..." if len(self.kept_dense) > 5 else "") + ": the output head and embeddings stay dense")
        if self.skipped:
            kinds = Counter(why for _, why in self.skipped)
            lines.append("")
            lines.append(
                f"skipped {len(self.skipped)} tensors: "
                + "; ".join(f"{n} x {printable(why, 200)}" for why, n in kinds.most_common())
            )
        lines += [f"note: {printable(n, 400)}" for n in self.notes]
        if self.disk_line():
            lines += ["", self.disk_line()]
        if self.runners:
            lines += ["", "what can load and run it:"]
            for line in self.runners:  # wrapped: these are sentences, not table rows
                lines += textwrap.wrap(line, 100, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        lines.append("")
        lines.append(self.summary())
        return "\n".join(lines)

    def _table_html(self) -> str:
        stored = self.stored_forms
        header = TABLE_HEADER[:3] + STORED_HEADER + TABLE_HEADER[3:] if stored else TABLE_HEADER
        head = "".join(f"<th>{h}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in table_cells(r, stored)) + "</tr>" for r in self.rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def _repr_html_(self) -> str:
        return f"{self._table_html()}<p><strong>{html.escape(self.summary())}</strong></p>"

    def to_html(self, title: str = "twofour audit") -> str:
        """The whole report as a self-contained HTML page (``twofour audit --html``): the table, the problems
        with one example each, what was skipped, the notes and the verdict. Names from the file are escaped.

        >>> from twofour.dispatch.audit import AuditReport
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
            kinds = Counter(why for _, why in self.skipped)
            parts.append(f"<h2>Skipped</h2><p>{len(self.skipped)} tensors: "
                         + "; ".join(f"{n} x {e(printable(why, 200))}" for why, n in kinds.most_common()) + "</p>")
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
                "rows": [asdict(r) for r in self.rows],
                "skipped": [{"name": n, "why": w} for n, w in self.skipped],
                "notes": list(self.notes),
                "model": self.model,
                "runners": list(self.runners),
            },
            indent=1,
        )


def _topic_messages(r: AuditRow) -> list[str]:
    return list(r.reasons)


def _prefetch_window() -> int:
    """Bytes of a checkpoint to ask the disk for ahead of the audit: 1 GiB, or 1/4 of free memory if less."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        free = 4 << 30
    return max(64 << 20, min(1 << 30, free // 4))


_PREFETCH_BYTES = _prefetch_window()


def _is_reader(source) -> bool:
    """A checkpoint-like reader (Checkpoint, a model folder's files or its compressed-tensors view)."""
    return isinstance(source, Checkpoint) or all(
        callable(getattr(source, a, None)) for a in ("names", "shape", "dtype", "tensor", "nbytes", "prefetch")
    )


def _iter_weights(source) -> Iterable[tuple[str, str | None, tuple, object, object]]:
    """Yield (name, kind or None, shape, dtype, loader) for every tensor, in order.

    ``loader()`` returns the tensor; for checkpoints it reads it from disk only then.
    """
    if isinstance(source, torch.nn.Module):
        owners = {}
        for mod_name, mod in source.named_modules():
            kind = "linear" if isinstance(mod, torch.nn.Linear) else "embedding" if isinstance(mod, torch.nn.Embedding) else None
            if kind and getattr(mod, "weight", None) is not None:
                owners[f"{mod_name}.weight" if mod_name else "weight"] = kind
        seen = set()
        for name, t in list(source.named_parameters()) + list(source.named_buffers()):
            if id(t) in seen:
                continue  # tied weights (lm_head = embedding) appear once
            seen.add(id(t))
            kind = owners.get(name) or weight_kind(name, tuple(t.shape))
            yield name, kind, tuple(t.shape), t.dtype, (lambda t=t: t)
        # Packed weights are not Parameters on every torch version: pick them up from modules.
        for name, kind in owners.items():
            mod = source.get_submodule(name.rsplit(".", 1)[0]) if "." in name else source
            w = mod.weight
            if id(w) not in seen and is_packed(w):
                seen.add(id(w))
                yield name, kind, tuple(w.shape), w.dtype, (lambda w=w: w)
        return
    if _is_reader(source):
        names = source.names()
        ahead = 0  # names[:ahead] have been prefetched
        pending = 0  # bytes of names[i + 1 : ahead]
        for i, name in enumerate(names):
            # The disk reads the tensors ahead while this one is checked: a window of bytes,
            # not of tensors, so a file larger than memory does not evict what is still to come.
            if i < ahead:
                pending -= source.nbytes(name)
            else:
                source.prefetch(name)
                ahead = i + 1
            while ahead < len(names) and pending < _PREFETCH_BYTES:
                source.prefetch(names[ahead])
                pending += source.nbytes(names[ahead])
                ahead += 1
            shape = source.shape(name)
            yield name, weight_kind(name, shape), shape, source.dtype(name), (lambda name=name: source.tensor(name))
        return
    if isinstance(source, Mapping):
        for name, t in source.items():
            if not isinstance(t, torch.Tensor):
                yield name, None, (), type(t).__name__, None
                continue
            yield name, weight_kind(name, tuple(t.shape)), tuple(t.shape), t.dtype, (lambda t=t: t)
        return
    raise TypeError(
        "model_or_state_dict must be a torch.nn.Module, a state dict (Mapping of name -> tensor) or a "
        f"Checkpoint from open_checkpoint(path); got {type(source).__name__}. For a file, use `twofour audit FILE`"
    )


def audit(
    model_or_state_dict,
    example_input_shape=None,
    *,
    target=None,
    backend: str | None = None,
) -> AuditReport:
    """Audit every 2-D weight: 2:4 validity along K, packed or not, the kernel it would get, bytes.

    Args:
        model_or_state_dict: an ``nn.Module`` (``nn.Linear`` and ``nn.Embedding`` are recognised by
            type), a state dict, or a :class:`~twofour.dispatch.checkpoint.Checkpoint` (read one
            tensor at a time). In dicts and checkpoints, 2-D tensors named ``*weight`` are
            weights; names with ``embed``/``wte``/``wpe`` are embeddings (lookups, never sparse
            GEMMs).
        example_input_shape: tokens per forward pass, as an int ``M`` or the leading shape
            ``(batch, seq_len)``; used for the padding check. None skips it.
        target: where the model would run (None: this machine; or ``hypothetical_gpu(...)``).
        backend: ``"cusparselt"`` / ``"cutlass"``, or None for torch's default.

    Returns:
        An :class:`AuditReport`; ``print(report)`` shows the table, the reasons and a summary.
    """
    M = _tokens(example_input_shape)
    env = as_environment(target)
    backend = backend or default_backend()
    target_name = f"{env.gpu_name} ({env.capability_str})" if env.cuda_available else "CPU (no CUDA GPU)"
    rows: list[AuditRow] = []
    skipped: list[tuple[str, str]] = list(getattr(model_or_state_dict, "skipped", []))
    notes: list[str] = list(getattr(model_or_state_dict, "notes", []))
    source = model_or_state_dict
    if isinstance(source, Mapping) and not isinstance(source, Checkpoint):
        source = _unique_keys(source, notes)
    n_bytes_read = 0
    if _is_reader(source) and len(source.names()) > MAX_TENSORS:
        raise CheckpointError(
            f"{printable(getattr(source, 'path', 'the checkpoint'), 200)}: holds {len(source.names()):,} tensors, more than "
            f"{MAX_TENSORS:,}; at about a millisecond each that audit would take minutes and no published model "
            "needs it (audit its shards one at a time)"
        )
    ct = getattr(source, "ct", None)
    stored_of = getattr(source, "stored", None)
    for name, kind, shape, dtype, load in _iter_weights(source):
        if load is None:
            skipped.append((name, f"not a tensor ({dtype})"))
            continue
        if kind is None:
            skipped.append((name, _skip_reason(name, shape, dtype)))
            continue
        stored = stored_of(name) if stored_of is not None else None
        if stored is not None and stored.form == "marlin-24":
            rows.append(marlin_row(name, kind, shape, stored))
            continue
        if not isinstance(dtype, torch.dtype) or dtype not in SUPPORTED_DTYPES:
            skipped.append((name, _dtype_reason(dtype)))
            continue
        if 0 in shape:
            skipped.append((name, f"empty ({'x'.join(map(str, shape))}): no values to check"))
            continue
        W = load()
        odd = _odd_tensor(W)
        if odd:
            skipped.append((name, odd))
            continue
        try:
            row = _row(name, kind, W, M, env, backend)
        except _NotChecked as exc:
            skipped.append((name, str(exc)))
            continue
        n_bytes_read += W.numel() * W.element_size() if not is_packed(W) else 0
        on_disk = stored.stored_bytes if stored is not None else (source.nbytes(name) or None if _is_reader(source) else None)
        row = replace(row, stored=stored.form if stored is not None else "dense", stored_bytes=on_disk)
        row = judge_row(row, ct, getattr(source, "path", ""))
        rows.append(row)
        del W
    if not env.cuda_available:
        notes.append(
            "no CUDA GPU here: every verdict is 'error' for the sparse path; pass a GPU with "
            "--capability (CLI) or target=hypothetical_gpu(...) to ask about one"
        )
    notes = tuple(notes)
    model = ct.describe() if ct is not None else None
    runners = tuple(who_runs(ct, rows)) if ct is not None else ()
    return AuditReport(tuple(rows), tuple(skipped), target_name, backend, M, n_bytes_read, notes, model, runners)


class _NotChecked(Exception):
    """A weight that cannot be checked; the message is the reason the audit lists it under."""


def _unique_keys(state: Mapping, notes: list[str]) -> dict:
    """``state`` with ``str`` keys; keys that print the same (``1`` and ``"1"``) get ``#2`` suffixes and a note."""
    out: dict = {}
    collided: dict[str, list[str]] = {}
    for key, value in state.items():
        name = str(key)
        final = unique_name(name, out)
        if final != name:
            collided.setdefault(name, [name]).append(final)
        out[final] = value
    for name, names in collided.items():
        listed = " and ".join(f"'{printable(n, 80)}'" for n in names)
        notes.append(f"{len(names)} keys print as '{printable(name, 80)}': listed as {listed}")
    return out


def _dtype_reason(dtype) -> str:
    if isinstance(dtype, torch.dtype):
        why = unsupported_reason(dtype)
        return f"dtype {str(dtype).replace('torch.', '')}: {why}" if why else f"dtype {dtype} has no 2:4 kernel"
    return f"dtype {printable(dtype, 40)} is not one torch knows"


def _odd_tensor(W) -> str | None:
    """Why ``W`` cannot be audited as a dense weight (sparse, meta, nested...), or None."""
    if not isinstance(W, torch.Tensor):
        return f"not a tensor ({type(W).__name__})"
    if is_packed(W):
        return None
    if W.is_sparse or W.layout != torch.strided:
        return f"{str(W.layout).replace('torch.', '')} layout: stored sparse, not a dense weight; audit W.to_dense()"
    if getattr(W, "is_nested", False):
        return "a nested (jagged) tensor, not a weight matrix"
    if W.device.type == "meta":
        return "a meta tensor: a shape without values"
    if W.is_quantized:
        return f"quantized ({str(W.dtype).replace('torch.', '')}): dequantize it to audit it"
    return None


def _tokens(example_input_shape) -> int | None:
    if example_input_shape is None:
        return None
    if isinstance(example_input_shape, (bool, str, bytes)):
        raise TypeError(f"example_input_shape must be an int (tokens) or (batch, seq_len), got {example_input_shape!r}")
    if isinstance(example_input_shape, int):
        dims = [example_input_shape]
    else:
        try:
            dims = [int(d) for d in example_input_shape]
        except (TypeError, ValueError):
            raise TypeError(
                f"example_input_shape must be an int (tokens) or a shape such as (batch, seq_len), got {example_input_shape!r}"
            ) from None
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"example_input_shape must hold positive sizes, got {example_input_shape!r}")
    M = 1
    for d in dims:
        M *= d
    return M


def _row(name: str, kind: str, W: torch.Tensor, M: int | None, env, backend: str) -> AuditRow:
    packed = is_packed(W)
    shape = tuple(int(d) for d in W.shape)
    d_bytes = dense_bytes(shape, W.dtype)
    dtype = str(W.dtype).replace("torch.", "")
    if kind == "embedding":
        # A lookup reads rows; there is no GEMM for a sparse kernel to replace. Not checked, for speed.
        reason = "an embedding is a table lookup, not a matmul: no sparse kernel applies"
        return AuditRow(name, kind, shape, dtype, None, packed, "dense", ("lookup",), (reason,), d_bytes, None)
    structure = None
    if not packed and shape[1] % 4 == 0:
        try:
            structure = check(W, 2, 4, max_examples=0, max_locations=0)  # counts only: no locations to collect
        except ValueError as exc:  # a self-overlapping view too large to count by its storage
            raise _NotChecked(f"not checked: {exc}") from None
    # The column is the 2:4 count; explain() reuses it only where W's dtype is stored 2:4 (float32 is 1:2).
    reuse = structure if structure is not None and BackendRules.pattern(W.dtype) == (2, 4) else None
    verdict: Verdict = explain(W, M, backend=None if packed else backend, target=env, structure=reuse)
    path = verdict.if_packed
    problems = [c for c in verdict.problems() if c.topic != "packed" or packed]
    if path.startswith("sparse") and any(c.status == "wrong" for c in problems):
        # Packing would change what the layer computes; a faithful deployment keeps it dense.
        path = "dense"
    n, m = BackendRules.pattern(W.dtype)
    p_bytes = packed_bytes(shape, W.dtype, n, m) if path.startswith("sparse") and shape[1] % m == 0 else None
    return AuditRow(
        name=name,
        kind=kind,
        shape=shape,
        dtype=dtype,
        fraction_valid=None if structure is None else structure.fraction_valid,
        n_groups=None if structure is None else structure.num_groups,
        n_bad_groups=None if structure is None else structure.num_bad_groups,
        packed=packed,
        verdict=path,
        topics=tuple(c.topic for c in problems),
        reasons=tuple(c.message for c in problems),
        dense_bytes=d_bytes,
        packed_bytes=p_bytes,
    )
