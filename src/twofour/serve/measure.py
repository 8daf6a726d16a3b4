"""Time one decode step or one prefill of a :class:`~twofour.serve.Decoder`, in one mode, and profile it.

Modes (:data:`twofour.vocabulary.DECODE_MODES`), each a way a practitioner can run a 2:4 model in PyTorch today:

``eager``
    Python calls every operator; for a 2:4 weight PyTorch builds a cuSPARSELt plan on every call.
``graph``
    The whole step captured once in a CUDA graph and replayed: no Python, no per-call set-up.
``graph-searched``
    The graph of a 2:4 model packed with the cuSPARSELt algorithm timed fastest for each weight
    shape at this batch (:func:`twofour.serve.search_algorithms`; PyTorch's default is 0).
``compile``
    ``torch.compile(mode="reduce-overhead")``: fused element-wise kernels, CUDA graphs inside.

A decode step picks the next token (greedy) and advances the position on the device, so
``steps`` steps run back to back with no host work between them, as in a serving loop;
``tpot_ms`` is their timed window over ``steps``. The profile is :func:`gemm_share`.

Example (CPU, the tiny config):
    >>> from twofour.serve import Decoder, TINY, ops_for
    >>> rec = measure_decode(Decoder.random(TINY), batch=2, context=8, mode="eager", ops=ops_for("cpu"),
    ...                      warmup=1, repeats=2, steps=4)
    >>> sorted(rec), rec["t_ms"]["n"]
    (['profile', 't_ms', 'timing', 'tokens_per_s', 'tpot_ms'], 2)
    >>> 0 < rec["profile"]["p_eligible"] < 1
    True
"""

from __future__ import annotations

import torch

from ..bench import summarize
from ..vocabulary import DECODE_MODES
from ..dispatch.kernels import OTHER, SPARSE_CLASSES, classify_records
from .model import ELIGIBLE_LABEL, Decoder
from .._common.text import one_line
from .ops import Ops

__all__ = ["DECODE_STEPS", "PROFILED_CALLS", "measure_decode", "measure_prefill", "gemm_share",
           "eligible_positions"]

# Steps per timed run: the two timing events cost nothing beside them, the context barely grows.
DECODE_STEPS = 16
PROFILED_CALLS = 3


def measure_decode(model: Decoder, *, batch: int, context: int, mode: str, ops: Ops, warmup: int = 3,
                   repeats: int = 10, steps: int = DECODE_STEPS, seed: int = 0,
                   profiled_calls: int = PROFILED_CALLS) -> dict:
    """``{"t_ms", "tpot_ms", "tokens_per_s", "timing", "profile"}`` (``profiled_calls=0``: no profile)."""
    cache = model.new_cache(batch, context + steps)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    first = torch.randint(0, model.cfg.vocab, (batch, 1), generator=gen).to(model.device)
    tokens, pos = first.clone(), torch.tensor([context], device=model.device)

    def step_logits():
        return model.decode(tokens, pos, cache)

    def advance(logits):
        tokens.copy_(logits[:, -1].argmax(-1, keepdim=True))
        pos.add_(1)

    def reset():
        tokens.copy_(first)
        pos.fill_(context)

    record = _measure(model, mode, ops, step_logits, advance, reset, calls=steps, warmup=warmup,
                      repeats=repeats, profiled_calls=profiled_calls, static=[tokens, pos, *cache.k, *cache.v])
    record["tpot_ms"] = record["t_ms"]["median_ms"]
    record["tokens_per_s"] = batch * 1e3 / record["t_ms"]["median_ms"]
    return record


def measure_prefill(model: Decoder, *, prompt_len: int, mode: str, ops: Ops, batch: int = 1, warmup: int = 3,
                    repeats: int = 10, seed: int = 0, profiled_calls: int = PROFILED_CALLS) -> dict:
    """Like :func:`measure_decode` for the prefill of a ``prompt_len``-token prompt: ``t_ms`` is the TTFT."""
    cache = model.new_cache(batch, prompt_len)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    prompt = torch.randint(0, model.cfg.vocab, (batch, prompt_len), generator=gen).to(model.device)
    first_token = torch.zeros(batch, 1, dtype=torch.long, device=model.device)

    def step_logits():
        return model.prefill(prompt, cache)

    def advance(logits):
        first_token.copy_(logits[:, -1].argmax(-1, keepdim=True))

    # nothing to reset between calls: every prefill starts from position 0
    record = _measure(model, mode, ops, step_logits, advance, lambda: None, calls=1, warmup=warmup, repeats=repeats,
                      profiled_calls=profiled_calls, static=[prompt, *cache.k, *cache.v])
    record["tokens_per_s"] = batch * prompt_len * 1e3 / record["t_ms"]["median_ms"]
    return record


def _measure(model, mode, ops, step_logits, advance, reset, *, calls, warmup, repeats, profiled_calls,
             static) -> dict:
    if mode not in DECODE_MODES:
        raise ValueError(f"mode must be one of {DECODE_MODES}, got {mode!r}")
    record: dict = {}
    with torch.inference_mode():
        eager = lambda: advance(step_logits())  # noqa: E731
        logits = ops.compile(step_logits, static) if mode == "compile" else step_logits
        step = lambda: advance(logits())  # noqa: E731
        if mode in ("graph", "graph-searched"):
            reset()
            step = ops.capture(step)
        timing: dict = {}
        record["t_ms"] = summarize(ops.time_calls(step, reset=reset, calls=calls, warmup=warmup, repeats=repeats,
                                                  info=timing))
        record["timing"] = timing
        if profiled_calls:
            record["profile"] = _profile(model, mode, ops, step, eager, reset, record["t_ms"]["median_ms"],
                                         profiled_calls)
    return record


def _profile(model, mode, ops, step, eager, reset, step_ms: float, calls: int) -> dict:
    """The step's GEMM share and kernels; a profiler failure is recorded, the timing is kept."""
    try:
        labels = None
        if mode in ("graph", "graph-searched") and ops.device.type == "cuda":
            reset()
            model.label_linears = True  # one eager step, labelled: which kernel positions are block linears
            try:
                eager_records, _, eager_starts = ops.profile(eager, calls=1)
                labels = eligible_positions(eager_records, eager_starts)
            finally:
                model.label_linears = False
        reset()
        model.label_linears = mode == "eager"  # labels only where Python runs each call (see gemm_share)
        try:
            records, profiled_ms, starts = ops.profile(step, calls=calls)
        finally:
            model.label_linears = False
    except Exception as exc:  # a profiler that cannot start must not cost the measurement
        return {"error": one_line(exc)}
    on_gpu = any(r.device == "cuda" for r in records)
    if ops.device.type == "cuda" and not on_gpu:  # a share of nothing would read as p = 0
        return {"error": "the profiler recorded no GPU kernel (is CUPTI available to this torch?)"}
    # A GPU kernel takes as long with the profiler on as off: its share is of the step as timed. On
    # the CPU the profiler slows every operator: both sides come from the profiled run.
    share = gemm_share(records, calls=calls, step_ms=step_ms if on_gpu else profiled_ms, starts=starts, labels=labels)
    share["share_of"] = "the timed step" if on_gpu else "the profiled step (the profiler slows CPU operators)"
    return share


def eligible_positions(records, starts) -> list[tuple[str, bool]]:
    """``(kernel name, under the block-linear label?)`` for each GPU kernel of a labelled profile, in the order they ran.

    Example:
        >>> from twofour.dispatch.kernels import OpRecord
        >>> recs = [OpRecord(ELIGIBLE_LABEL, "cpu", 1.0), OpRecord("gemm_a", "cuda", 5.0, parent=0),
        ...         OpRecord("softmax", "cuda", 2.0)]
        >>> eligible_positions(recs, [0.0, 30.0, 10.0])
        [('softmax', False), ('gemm_a', True)]
    """
    device = [i for i, r in enumerate(records) if r.device == "cuda"]
    return [(records[i].name, _under_label(records, i)) for i in sorted(device, key=lambda i: starts[i])]


def gemm_share(records, *, calls: int, step_ms: float, starts=None, labels=None) -> dict:
    """GEMM and eligible shares of a step from profiler records (:class:`twofour.dispatch.kernels.OpRecord`).

    Kernel (GPU) or operator self (CPU) times are summed per class and divided by ``calls``.
    Eligible time is that of the kernels under the :data:`~twofour.serve.ELIGIBLE_LABEL` label
    (eager runs). A graph replay hides which operator launched a kernel: there ``labels``
    (:func:`eligible_positions` of a labelled eager step) mark the eligible positions of one
    step's kernel sequence (ordered by ``starts``) when every step ran that sequence; else the
    2:4 kernels by name, else unknown (``None``). ``kernels``: launches and µs per step by name.

    Example:
        >>> from twofour.dispatch.kernels import OpRecord
        >>> recs = [OpRecord("twofour.serve.block_linear", "cpu", 1.0), OpRecord("aten::mm", "cpu", 600.0, parent=0),
        ...         OpRecord("aten::mm", "cpu", 200.0), OpRecord("aten::softmax", "cpu", 199.0)]
        >>> s = gemm_share(recs, calls=1, step_ms=2.0)
        >>> s["gemm_ms"], s["eligible_ms"], s["p_gemm"], s["p_eligible"]
        (0.8, 0.601, 0.4, 0.3005)
    """
    records = list(records)
    classes = classify_records(records)
    device = "cuda" if any(r.device == "cuda" for r in records) else "cpu"
    by_class: dict[str, float] = {}
    kernels: dict[str, dict] = {}
    eligible_us = sparse_us = 0.0
    labelled = False
    for i, (r, cls) in enumerate(zip(records, classes)):
        if r.device != device:
            continue
        by_class[cls] = by_class.get(cls, 0.0) + r.self_us
        k = kernels.setdefault(r.name, {"class": cls, "per_step": 0.0, "us_per_step": 0.0})
        k["per_step"] += 1 / calls
        k["us_per_step"] += r.self_us / calls
        if cls in SPARSE_CLASSES:
            sparse_us += r.self_us
        if _under_label(records, i):
            labelled = True
            eligible_us += r.self_us
    per_step = 1e-3 / calls
    gemm_ms = sum(t for c, t in by_class.items() if c != OTHER) * per_step
    aligned = _aligned_eligible_us(records, starts, labels, calls) if labels and starts is not None else None
    if labelled:
        eligible_ms, source = eligible_us * per_step, "kernels under the block-linear label"
    elif aligned is not None:
        eligible_ms, source = aligned * per_step, ("kernels at the positions a labelled eager step ran block linears "
                                                   "(the replay ran the same kernel sequence)")
    elif sparse_us > 0:
        eligible_ms, source = sparse_us * per_step, "2:4 kernels by name (graph replay: no operator labels)"
    else:
        eligible_ms, source = None, None
    return {
        "device": device,
        "kernel_ms": {c: t * per_step for c, t in sorted(by_class.items())},
        "busy_ms": sum(by_class.values()) * per_step,
        "gemm_ms": gemm_ms,
        "eligible_ms": eligible_ms,
        "eligible_from": source,
        "share_of_ms": step_ms,
        "p_gemm": gemm_ms / step_ms,
        "p_eligible": None if eligible_ms is None else eligible_ms / step_ms,
        "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1]["us_per_step"])),
    }


def _aligned_eligible_us(records, starts, labels, calls: int) -> float | None:
    """Summed µs of the kernels at eligible positions, when each step ran ``labels``' sequence; else None."""
    seq = sorted((i for i, r in enumerate(records) if r.device == "cuda"), key=lambda i: starts[i])
    n = len(labels)
    if n == 0 or len(seq) != n * calls or any(records[i].name != labels[j % n][0] for j, i in enumerate(seq)):
        return None
    return sum(records[i].self_us for j, i in enumerate(seq) if labels[j % n][1])


def _under_label(records, i: int) -> bool:
    """True when record ``i`` or one of its ancestors (launching operator, enclosing operators) is the label."""
    j = i
    for _ in range(64):  # a profile's nesting is shallow; the bound guards a cycle
        if j is None:
            return False
        if records[j].name == ELIGIBLE_LABEL:
            return True
        j = records[j].parent
    return False
