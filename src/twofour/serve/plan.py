"""A measurement plan: which whole steps to time, in which order, and the loop that runs it.

:func:`run_plan` works through the :class:`Item` list on one device (:mod:`twofour.serve.ops`):
every item ends with a timing, an ``error`` (recorded, the run goes on) or ``skipped``, beside
the request model's prediction (:func:`twofour.serve.predict`); the results file is rewritten after
every item. Models are made when first needed, one dtype at a time.

Example (CPU: the tiny model, dense eager only):
    >>> plan = make_plan(TINY, dtypes=["float32"], batches=[1, 4], context=16, prompt_lens=[32],
    ...                  modes=["eager"], weights=["dense"], warmup=1, repeats=2)
    >>> [i.label for i in plan.items]
    ['decode float32 dense eager batch 1 context 16', 'decode float32 dense eager batch 4 context 16', 'prefill float32 dense eager batch 1 prompt 32']
    >>> res = run_plan(plan, ops_for("cpu"), log=None)
    >>> [("t_ms" in m) for m in res.measurements]
    [True, True, True]
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

from ..bench import provenance
from ..hardware import match_device_name
from ..models import TransformerConfig
from ..vocabulary import DECODE_DTYPES, DECODE_MODES
from .measure import DECODE_STEPS, PROFILED_CALLS, measure_decode, measure_prefill
from .model import TINY, Decoder, weight_bytes  # noqa: F401 (TINY: the module docstring's example)
from .._common.text import one_line
from .ops import NotSupported, Ops, ops_for
from .predict import predict
from .results import WEIGHTS, DecodeResults, record_label
from .sparse import algorithm_per_linear, check_agreement, pack_blocks, search_algorithms

__all__ = ["Item", "Plan", "make_plan", "run_plan", "REHEARSAL_GPU"]

# A rehearsal predicts for the GPU `make gpu-check` is written for, so the prediction code runs too.
REHEARSAL_GPU = "H200"
WEIGHTS_NOTE = ("random weights with the model's shapes, block linears pruned to 2:4 by magnitude (the dense model "
                "holds the same pruned values): a GEMM takes the same time whatever the values, the tokens mean nothing")


@dataclass(frozen=True)
class Item:
    """One measurement: ``prompt_len`` is the context already cached (decode) or the prompt (prefill)."""

    phase: str
    dtype: str
    weights: str
    mode: str
    batch: int
    prompt_len: int

    @property
    def label(self) -> str:
        return record_label(asdict(self))


@dataclass(frozen=True)
class Plan:
    """What to measure (``items``, in order) on which model, and how many times."""

    cfg: TransformerConfig
    items: tuple[Item, ...]
    n_layers: int | None = None  # blocks to build (default all of cfg.layers)
    warmup: int = 3
    repeats: int = 10
    decode_steps: int = DECODE_STEPS
    profiled_calls: int = PROFILED_CALLS  # steps run under the profiler per item (0: none)
    seed: int = 0
    extra: dict = field(default_factory=dict)  # recorded in the settings (e.g. why a layer count)
    checkpoint: str | None = None  # a model folder whose own weights are timed (twofour.serve.checkpoint)


def make_plan(cfg: TransformerConfig, *, dtypes=("float16", "bfloat16"), batches=(1, 8, 32, 64), context: int = 512,
              prompt_lens=(512, 4096), modes=("eager", "graph", "graph-searched"), prefill_modes=None,
              weights=WEIGHTS, n_layers: int | None = None, warmup: int = 3, repeats: int = 10,
              decode_steps: int = DECODE_STEPS, profiled_calls: int = PROFILED_CALLS, seed: int = 0) -> Plan:
    """Decode at every batch, then prefill (batch 1) at every prompt length; per dtype, dense then 2:4, per mode.

    ``prefill_modes`` defaults to ``modes``. ``graph-searched`` is planned for 2:4 only.
    """
    dtypes, modes = list(dtypes), list(modes)
    prefill_modes = modes if prefill_modes is None else list(prefill_modes)
    _require_among("dtypes", dtypes, DECODE_DTYPES)
    _require_among("modes", modes, DECODE_MODES)
    _require_among("prefill_modes", prefill_modes, DECODE_MODES, allow_empty=True)
    _require_among("weights", list(weights), WEIGHTS)
    ints = [("batches", b, 1) for b in batches] + [("prompt_lens", P, 1) for P in prompt_lens]
    for name, v, low in ints + [("context", context, 1), ("warmup", warmup, 0), ("repeats", repeats, 1),
                                ("decode_steps", decode_steps, 1), ("profiled_calls", profiled_calls, 0)]:
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must hold ints >= {low}, got {v!r}")
    if n_layers is not None and not (isinstance(n_layers, int) and not isinstance(n_layers, bool) and 1 <= n_layers <= cfg.layers):
        raise ValueError(f"n_layers must be None (all) or an int from 1 to {cfg.layers}, got {n_layers!r}")
    pairs = lambda ms: [(w, m) for w in weights for m in ms if (w, m) != ("dense", "graph-searched")]  # noqa
    items = [Item("decode", d, w, m, b, context) for d in dtypes for b in batches for w, m in pairs(modes)]
    items += [Item("prefill", d, w, m, 1, P) for d in dtypes for P in prompt_lens
              for w, m in pairs(prefill_modes)]
    return Plan(cfg=cfg, items=tuple(items), n_layers=n_layers, warmup=warmup, repeats=repeats,
                decode_steps=decode_steps, profiled_calls=profiled_calls, seed=seed)


def _require_among(name: str, values, valid, *, allow_empty: bool = False) -> None:
    bad = [v for v in values if v not in valid]
    if bad or (not values and not allow_empty):
        raise ValueError(f"{name} must be a non-empty list of {list(valid)}, got {values!r}")


def run_plan(plan: Plan, ops: Ops | None = None, *, out=None, inputs=(), command: str | None = None,
             budget_s: float | None = None, log: Callable[[str], object] | None = print) -> DecodeResults:
    """Run ``plan`` on ``ops`` (default: this machine's GPU, else its CPU); see the module doc.

    ``out``: results file (never one of ``inputs``). ``budget_s``: items not started by then are
    skipped. ``log``: called with one line per item (None: quiet).
    """
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a twofour.serve.Plan (see make_plan), got {type(plan).__name__}")
    ops = ops if ops is not None else ops_for("cuda" if torch.cuda.is_available() else "cpu")
    say = log or (lambda line: None)
    t0 = time.monotonic()
    results = DecodeResults(provenance=provenance(command, device=ops.device), settings=_settings(plan, ops))
    gpu = _prediction_gpu(ops, results.settings)
    models = _Models(plan, ops, results, say)
    eager_eligible: dict[tuple, float] = {}
    try:
        for item in plan.items:
            record = asdict(item)
            if budget_s is not None and time.monotonic() - t0 > budget_s:
                record["skipped"] = f"time limit: the run's {budget_s:g} s budget was spent before this item"
            else:
                _measure_item(item, plan, ops, models, record)
            _fill_eligible(record, eager_eligible)
            if gpu is not None and "t_ms" in record:
                try:
                    record["prediction"] = predict(models.cfg, gpu=gpu, **asdict(item))
                except Exception as exc:  # a model that cannot predict this case must not lose the measurement
                    record["prediction"] = {"error": one_line(exc)}
            results.measurements.append(record)
            if out is not None:
                results.save(out, inputs=inputs)
            say(_line(record, time.monotonic() - t0))
    finally:
        models.release()
    if out is not None:
        results.save(out, inputs=inputs)
    return results


def _measure_item(item: Item, plan: Plan, ops: Ops, models: "_Models", record: dict) -> None:
    model = None
    try:
        model = models.get(item.dtype, item.weights)
        if item.mode == "graph-searched":
            # the algorithm of each weight shape at this M, then the block linears packed with it
            dense = models.get(item.dtype, "dense")
            found = search_algorithms(dense, item.batch * (1 if item.phase == "decode" else item.prompt_len), ops)
            record["algorithms"] = found
            model = pack_blocks(dense, ops, algorithm_per_linear(found))
        kw = dict(mode=item.mode, ops=ops, warmup=plan.warmup, repeats=plan.repeats, seed=plan.seed,
                  profiled_calls=plan.profiled_calls)
        if item.phase == "decode":
            record.update(measure_decode(model, batch=item.batch, context=item.prompt_len, steps=plan.decode_steps, **kw))
        else:
            record.update(measure_prefill(model, prompt_len=item.prompt_len, batch=item.batch, **kw))
    except NotSupported as exc:
        record["skipped"] = str(exc)
    except Exception as exc:  # recorded, never raised: one failing mode must not end the run
        record["error"] = one_line(exc)
    finally:
        del model  # a searched model lives for its item only
        ops.free()  # the item's cache and graphs are gone; give their memory back before the next


def _fill_eligible(record: dict, eager_eligible: dict) -> None:
    """A graph replay hides which operator launched a kernel; borrow the eager profile's eligible time."""
    profile = record.get("profile") or {}
    key = (record["phase"], record["dtype"], record["weights"], record["batch"], record["prompt_len"])
    if record["mode"] == "eager" and profile.get("eligible_ms") is not None:
        eager_eligible[key] = profile["eligible_ms"]
    elif "t_ms" in record and "eligible_ms" in profile and profile["eligible_ms"] is None and key in eager_eligible:
        profile["eligible_ms"] = eager_eligible[key]
        profile["eligible_from"] = "the eager profile of the same model and batch (the same kernels run)"
        profile["p_eligible"] = profile["eligible_ms"] / profile["share_of_ms"]


class _Models:
    """The dense and 2:4 models of the current dtype, made on first use; a failure is kept and re-raised per item."""

    def __init__(self, plan: Plan, ops: Ops, results: DecodeResults, say):
        self.plan, self.ops, self.results, self.say = plan, ops, results, say
        self.dtype: str | None = None
        self.built: dict[str, Decoder | BaseException] = {}
        self.cfg = plan.cfg if plan.n_layers in (None, plan.cfg.layers) else None

    def get(self, dtype: str, weights: str) -> Decoder:
        if dtype != self.dtype:
            self.release()
            self.dtype = dtype
        for w in ("dense", weights):  # the 2:4 model is packed from the dense one
            if w not in self.built:
                try:
                    self.built[w] = (self._dense if w == "dense" else self._packed)()
                except Exception as exc:  # kept: every item of this dtype reports it without a retry
                    self.ops.free()
                    self.built[w] = exc
            if isinstance(self.built[w], BaseException):
                raise self.built[w]
        return self.built[weights]

    def _dense(self) -> Decoder:
        t0 = time.monotonic()
        torch_dtype = self.ops.compute_dtype(getattr(torch, self.dtype))
        n = self.plan.n_layers or self.plan.cfg.layers
        if self.ops.device.type == "cuda":  # refuse a model that cannot fit before spending minutes making it
            free, _ = torch.cuda.mem_get_info(self.ops.device)
            cut = self.plan.cfg.with_(layers=n, name=self.plan.cfg.name)
            need = weight_bytes(cut, torch_dtype) + weight_bytes(cut, torch_dtype, packed=True)
            if need > 0.9 * free:
                raise RuntimeError(f"{cut.name} {torch_dtype}: dense + 2:4 weights need {need / 1e9:.1f} GB, "
                                   f"{free / 1e9:.1f} GB is free on the GPU; measure fewer layers "
                                   "(n_layers, --layers)")
        if self.plan.checkpoint is not None:
            from .checkpoint import from_checkpoint

            model = from_checkpoint(self.plan.checkpoint, dtype=torch_dtype, device=self.ops.device, n_layers=n)
        else:
            model = Decoder.random(self.plan.cfg, n_layers=n, dtype=torch_dtype, device=self.ops.device,
                                   seed=self.plan.seed, pruned=True)
        self.cfg = model.cfg
        values = "the checkpoint's weights" if self.plan.checkpoint is not None else "2:4-pruned values"
        self.say(f"built {model.cfg.name} {self.dtype} dense ({values}) in {time.monotonic() - t0:.1f}s")
        return model

    def _packed(self) -> Decoder:
        dense = self.built["dense"]
        if self.plan.checkpoint is not None:
            from .checkpoint import all_24

            if not all_24(dense):
                raise ValueError("the checkpoint's block linears are not all 2:4 along K: packing would change the "
                                 "model, so only its dense arm is timed")
        t0 = time.monotonic()
        packed = pack_blocks(dense, self.ops)
        self.say(f"packed the block linears 2:4 in {time.monotonic() - t0:.1f}s")
        if not any(a["dtype"] == self.dtype for a in self.results.agreement):  # once per dtype, not per rebuild
            try:
                agreement = check_agreement(packed, dense, seed=self.plan.seed).to_dict()
            except Exception as exc:
                agreement = {"error": one_line(exc)}
            agreement["dtype"] = self.dtype  # the plan's name (a rehearsal computes in float32)
            self.results.agreement.append(agreement)
            self.say(f"dense vs 2:4 agreement ({self.dtype}): " + (
                agreement.get("error") or f"max relative difference {agreement['rel_err']:.2g} (tolerance "
                f"{agreement['tol']:g}), same top token at {agreement['top1_match']:.0%} of positions"))
        return packed

    def release(self) -> None:
        self.built = {}
        self.ops.free()


def _settings(plan: Plan, ops: Ops) -> dict:
    n = plan.n_layers or plan.cfg.layers
    settings = {
        "model": plan.cfg.name, "layers": n, "model_layers": plan.cfg.layers,
        "hidden": plan.cfg.hidden, "intermediate": plan.cfg.intermediate, "heads": plan.cfg.heads,
        "kv_heads": plan.cfg.kv_heads, "vocab": plan.cfg.vocab,
        "decode_steps": plan.decode_steps, "warmup": plan.warmup, "repeats": plan.repeats, "seed": plan.seed,
        "profiled_calls": plan.profiled_calls,
        "ops": ops.name, "weights_note": WEIGHTS_NOTE,
        "timer": ("CUDA events around back-to-back steps" if ops.device.type == "cuda" and not ops.rehearsal
                  else "time.perf_counter around back-to-back steps"),
        "layers_note": ("every layer of the model" if n == plan.cfg.layers else
                        f"{n} of {plan.cfg.layers} blocks (embedding and LM head whole): times are for this cut model, "
                        "and so are the predictions beside them; they are not scaled to the full model"),
        **plan.extra,
    }
    if not ops.supports_2to4:
        settings["sparse_note"] = getattr(ops, "why_not_2to4", None) or "2:4 needs an NVIDIA GPU with compute capability >= 8.0"
    if ops.rehearsal:
        settings["rehearsal"] = ("fake CUDA on the CPU (twofour.serve.RehearsalOps): float32 under the plan's dtype "
                                 "names, no GPU number; it rehearses the control flow only")
    return settings


def _prediction_gpu(ops: Ops, settings: dict):
    if ops.rehearsal:
        return REHEARSAL_GPU
    if ops.device.type != "cuda":
        settings["prediction_note"] = "no prediction: the request model describes NVIDIA GPUs, this run is on the CPU"
        return None
    spec = match_device_name(getattr(getattr(ops, "env", None), "gpu_name", None))
    if spec is None:
        settings["prediction_note"] = "no prediction: this GPU is not in twofour.hardware"
    return spec.name if spec is not None else None


def _line(r: dict, elapsed: float) -> str:
    head = record_label(r)
    if "t_ms" not in r:
        return f"{head}: {'error' if 'error' in r else 'skipped'}: {r.get('error') or r.get('skipped')}"
    prof = r.get("profile") or {}
    text = f"{head}: {r['t_ms']['median_ms']:.3f} ms, {r['tokens_per_s']:,.0f} tok/s"
    for key in ("p_gemm", "p_eligible"):
        if prof.get(key) is not None:
            text += f", {key} {prof[key]:.2f}"
    if r.get("prediction") and "t_ms" in r["prediction"]:
        text += f" (predicted {r['prediction']['t_ms']:.3f} ms, p {r['prediction']['p']:.2f})"
    return text + f" [{elapsed:.0f}s]"
