"""Check a whole model: every linear weight, its 2:4 validity, and which kernel it would get.

One :class:`AuditRow` per 2-D weight, in order, plus what was skipped and why. A checkpoint is
read one tensor at a time, so auditing a file needs about one layer's worth of memory.

A row's verdict is :attr:`Verdict.if_packed <twofour.dispatch.explain.Verdict>` (the kernel the
layer would run once packed, or runs now if packed already), except that a weight not 2:4 along
K gets ``"dense"``: packing it would change what the layer computes.

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

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace

import torch

from .._passes.bits import unsupported_reason
from .._passes.tensors import SUPPORTED_DTYPES, dtype_name
from .._common.text import printable
from ..packing import dense_bytes, packed_bytes
from ..structure import StructureReport, check
from ..checkpoint import CheckpointError, Reader, as_reader, weight_kind
from ..checkpoint._flatten import unique_name
from ..checkpoint.file import Checkpoint
from ..checkpoint.folder import ModelFiles
from .audit_report import AuditReport, AuditRow
from .runners import judge_row, marlin_row, packed_int_row, who_runs
from .explain import Verdict, explain
from .probe import as_environment
from .rules import BackendRules, default_backend, is_packed

__all__ = ["AuditRow", "AuditReport", "audit", "weight_kind", "MAX_TENSORS"]

# A safetensors header may list about a million tensors; real checkpoints hold hundreds to tens of
# thousands (a Llama-3-70B about 720). Past this many the audit refuses at once instead of running for minutes.
MAX_TENSORS = 200_000

def _skip_reason(shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return "1-D (bias or norm scale): not a matmul weight"
    if len(shape) == 0:
        return "scalar"
    if len(shape) > 2:
        return f"{len(shape)}-D (e.g. a conv kernel): reshape to [out, in*kh*kw] to audit it with explain()"
    return "2-D but its name does not end in .weight: not treated as a layer weight"


def _prefetch_window() -> int:
    """Bytes of a checkpoint to ask the disk for ahead of the audit: 1 GiB, or 1/4 of free memory if less."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        free = 4 << 30
    return max(64 << 20, min(1 << 30, free // 4))


_PREFETCH_BYTES = _prefetch_window()


def _iter_weights(source) -> Iterable[tuple[str, str | None, tuple, object, object]]:
    """Yield (name, kind or None, shape, dtype, loader) for every tensor, in order.

    ``loader()`` returns the tensor; for checkpoints it reads it from disk only then.
    """
    if isinstance(source, torch.nn.Module):
        owners = {}
        for mod_name, mod in source.named_modules():
            kind = "linear" if isinstance(mod, torch.nn.Linear) else "embedding" if isinstance(mod, torch.nn.Embedding) else None
            if kind and getattr(mod, "weight", None) is not None:
                owners[f"{mod_name}.weight" if mod_name else "weight"] = kind, mod
        seen = set()
        for name, t in list(source.named_parameters()) + list(source.named_buffers()):
            if id(t) in seen:
                continue  # tied weights (lm_head = embedding) appear once
            seen.add(id(t))
            kind = owners[name][0] if name in owners else weight_kind(name, tuple(t.shape))
            yield name, kind, tuple(t.shape), t.dtype, (lambda t=t: t)
        # Packed weights are not Parameters on every torch version: pick them up from modules.
        for name, (kind, mod) in owners.items():
            w = mod.weight
            if id(w) not in seen and is_packed(w):
                seen.add(id(w))
                yield name, kind, tuple(w.shape), w.dtype, (lambda w=w: w)
        return
    if isinstance(source, Reader):
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
        f"checkpoint reader from twofour.checkpoint.open(path); got {type(source).__name__}. For a file, use `twofour audit FILE`"
    )


def audit(
    model_or_state_dict,
    example_input_shape=None,
    *,
    target=None,
    backend: str | None = None,
    progress=None,
) -> AuditReport:
    """Audit every 2-D weight: 2:4 validity along K, packed or not, the kernel it would get, bytes.

    Args:
        model_or_state_dict: an ``nn.Module`` (``nn.Linear`` and ``nn.Embedding`` are recognised by
            type), a state dict, or a :class:`~twofour.checkpoint.file.Checkpoint` (read one
            tensor at a time). In dicts and checkpoints, 2-D tensors named ``*weight`` are
            weights; names with ``embed``/``wte``/``wpe`` are embeddings (lookups, never sparse
            GEMMs).
        example_input_shape: tokens per forward pass, as an int ``M`` or the leading shape
            ``(batch, seq_len)``; used for the padding check. None skips it.
        target: where the model would run (None: this machine; or ``hypothetical_gpu(...)``).
        backend: ``"cusparselt"`` / ``"cutlass"``, or None for torch's default.
        progress: ``progress(done, total, name)``, called before each tensor of a checkpoint (or None).

    Returns:
        An :class:`AuditReport`; ``print(report)`` shows the table, the reasons and a summary.
    """
    M = _tokens(example_input_shape)
    env = as_environment(target)
    backend = backend or default_backend()
    target_name = f"{env.gpu_name} ({env.capability_str})" if env.cuda_available else "CPU (no CUDA GPU)"
    rows: list[AuditRow] = []
    source = model_or_state_dict
    if isinstance(source, (Checkpoint, ModelFiles)):  # files opened by hand: seen through their stored forms
        source = as_reader(source)
    reader = source if isinstance(source, Reader) else None
    skipped: list[tuple[str, str]] = []
    notes: list[str] = []
    ct, total = None, 0
    if reader is not None:
        skipped, notes, ct, total = list(reader.skipped), list(reader.notes), reader.ct, len(reader.names())
        if total > MAX_TENSORS:
            raise CheckpointError(
                f"{printable(reader.path, 200)}: holds {total:,} tensors, more than {MAX_TENSORS:,}; at about a "
                "millisecond each that audit would take minutes and no published model needs it (audit its shards "
                "one at a time)"
            )
    if isinstance(source, Mapping):
        source = _unique_keys(source, notes)
    n_bytes_read = conv1d = 0
    for i, (name, kind, shape, dtype, load) in enumerate(_iter_weights(source)):
        if progress is not None and reader is not None:
            progress(i, total, name)
        if load is None:
            skipped.append((name, f"not a tensor ({dtype})"))
            continue
        if kind is None:
            skipped.append((name, _skip_reason(shape)))
            continue
        stored = reader.stored(name) if reader is not None else None
        if stored is not None and stored.form in ("marlin-24", "pack-quantized"):  # 2:4 as stored
            row = (marlin_row(name, kind, shape, stored) if stored.form == "marlin-24"
                   else packed_int_row(name, kind, shape, dtype, stored, reader.structure(name)))
            rows.append(judge_row(row, ct, reader.path))
            continue
        if not isinstance(dtype, torch.dtype) or dtype not in SUPPORTED_DTYPES:
            skipped.append((name, _dtype_reason(dtype)))
            continue
        if 0 in shape:
            skipped.append((name, f"empty ({'x'.join(map(str, shape))}): no values to check"))
            continue
        if kind == "embedding":  # a lookup reads rows: no GEMM for a sparse kernel, nothing to check or read
            shape = tuple(int(d) for d in shape)
            row = AuditRow(name, "embedding", shape, dtype_name(dtype), None, False, "dense", ("lookup",),
                           ("an embedding is a table lookup, not a matmul: no sparse kernel applies",),
                           dense_bytes(shape, dtype), None)
        else:
            counted = reader.structure(name) if reader is not None else None
            if counted is not None:  # decided by the stored form alone (a bitmask): no values read
                along_k = tuple(reversed(shape)) if reader.transposed(name) else tuple(shape)
                groups, bad = counted
                W = torch.empty(along_k, dtype=dtype, device="meta")
                report = StructureReport(valid=bad == 0, n=2, m=4, shape=along_k, dtype=dtype, examples=(),
                                         num_groups=groups, num_bad_groups=bad, nonzero_fraction=0.5,
                                         bad_groups_per_row=torch.zeros(0, dtype=torch.int64),
                                         bad_locations=torch.zeros(0, 2, dtype=torch.int64))
            else:
                W, report = load(), None
                odd = _odd_tensor(W)
                if odd:
                    skipped.append((name, odd))
                    continue
                if reader is not None and reader.transposed(name):  # Conv1D [in, out]: judged along in_features
                    W = W.t().contiguous()
                n_bytes_read += W.numel() * W.element_size() if not is_packed(W) else 0
                if not is_packed(W) and W.shape[1] % 4 == 0:
                    try:  # counts only: no locations to collect
                        report = check(W, 2, 4, max_examples=0, max_locations=0)
                    except ValueError as exc:  # a self-overlapping view too large to count by its storage
                        skipped.append((name, f"not checked: {exc}"))
                        continue
            row = _row(name, kind, W, M, env, backend, report)
            del W
        if reader is not None:
            row = replace(row, stored=stored.form, stored_bytes=stored.stored_bytes or None)
            conv1d += reader.transposed(name)
            row = judge_row(row, ct, reader.path)
        elif kind == "linear":
            row = judge_row(row, None, "")
        rows.append(row)
    if conv1d:
        notes.append(f"{conv1d} Conv1D weights (stored [in_features, out_features], config.json model_type "
                     f"{printable(str(reader.config.get('model_type')), 40)}) were judged along in_features, "
                     "as their matmul reads them")
    model = ct.describe() if ct is not None else None
    runners = tuple(who_runs(ct, rows)) if ct is not None else ()
    return AuditReport(tuple(rows), tuple(skipped), target_name, backend, M, n_bytes_read, tuple(notes), model, runners,
                       on_gpu=bool(env.cuda_available))


def _unique_keys(state: Mapping, notes: list[str]) -> dict:
    """``state`` with ``str`` keys; keys that print the same (``1`` and ``"1"``) get ``#2`` suffixes and a note."""
    out: dict = {}
    collided: dict[str, list[str]] = {}
    tried: dict[str, int] = {}
    for key, value in state.items():
        name = str(key)
        final = unique_name(name, out, tried)
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
        return f"dtype {dtype_name(dtype)}: {why}" if why else f"dtype {dtype} has no 2:4 kernel"
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
        return f"quantized ({dtype_name(W.dtype)}): dequantize it to audit it"
    return None


def _tokens(example_input_shape) -> int | None:
    if example_input_shape is None:
        return None
    if isinstance(example_input_shape, (bool, str, bytes)):
        raise TypeError(f"example_input_shape must be an int (tokens) or (batch, seq_len), got {example_input_shape!r}")
    try:
        dims = [example_input_shape] if isinstance(example_input_shape, int) else [int(d) for d in example_input_shape]
    except (TypeError, ValueError):
        raise TypeError(
            f"example_input_shape must be an int (tokens) or a shape such as (batch, seq_len), got {example_input_shape!r}"
        ) from None
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"example_input_shape must hold positive sizes, got {example_input_shape!r}")
    return math.prod(dims)


def _row(name: str, kind: str, W: torch.Tensor, M: int | None, env, backend: str, structure) -> AuditRow:
    packed = is_packed(W)
    shape = tuple(int(d) for d in W.shape)
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
        dtype=dtype_name(W.dtype),
        fraction_valid=None if structure is None else structure.fraction_valid,
        n_groups=None if structure is None else structure.num_groups,
        n_bad_groups=None if structure is None else structure.num_bad_groups,
        packed=packed,
        verdict=path,
        topics=tuple(c.topic for c in problems),
        reasons=tuple(c.message for c in problems),
        dense_bytes=dense_bytes(shape, W.dtype),
        packed_bytes=p_bytes,
    )
