"""``twofour golden --out DIR``: input -> output tables for the static site's calculators.

The site's JavaScript mirrors :mod:`twofour.amdahl`, :mod:`twofour.request` and
:mod:`twofour.funnel` operation for operation; a browser test evaluates it on every case
written here and demands agreement to 1e-12 relative. Three files:

``amdahl.json``
    ``speedup``, ``max_speedup``, ``combined_speedup`` and ``averaged_speedup_mistake`` cases
    (edge values and seeded random ones), plus ``errors``: inputs every implementation must
    reject, with the Python error's type and message.
``request.json``
    ``cases[i] = {"id", "label", "context", "inputs", "output"}``. ``inputs`` is the flat
    :class:`twofour.request.RequestInputs` (per-GEMM times included), ``output`` is
    :meth:`RequestEstimate.to_dict`. ``context`` says how the inputs were made (model, GPU,
    dtype, assumptions, GEMM source: ``"roofline"`` with its parameters, or ``"measured"``
    with the speedups) so the JS roofline can be checked against ``inputs.gemm`` as well.
``funnel.json``
    ``cases[j] = {"request_case": i, "scope", "stages"}``: the funnel of request case ``i``.

Non-finite numbers cannot be written in JSON; they appear as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` (only in ``errors`` inputs and ``max_speedup(1)``).
Runs in about a second and is deterministic for a given ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

from .. import __version__
from ..amdahl import averaged_speedup_mistake, combined_speedup, max_speedup, speedup
from ..funnel import SCOPES, funnel_dict
from ..hardware import GPUS
from ..models import LLAMA_3_8B, LLAMA_3_70B, TransformerConfig
from ..roofline import DEFAULT_EFFICIENCY, pad_multiple
from ..request import BLOCK_LINEARS, LINEAR_KINDS, SCENARIOS, Assumptions, Workload, build_inputs, evaluate
from . import UserError

__all__ = ["add_arguments", "run", "amdahl_table", "request_table", "funnel_table", "calculator_defaults", "gpu_table", "write_golden"]

FORMAT_VERSION = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=Path, help="directory to write amdahl.json, request.json, funnel.json")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random cases (default 0)")
    parser.add_argument("--cases", type=int, default=200, help="random request cases on top of the edge cases (default 200)")


def run(args: argparse.Namespace) -> int:
    from ._output import check_output_dir, write_error

    if args.cases < 0:
        raise UserError(f"--cases must be >= 0, got {args.cases}")
    if args.cases > 100_000:  # each case is a full request model: more would run for hours
        raise UserError(f"--cases must be at most 100,000, got {args.cases:,}")
    out = check_output_dir(args.out, "--out")
    try:
        paths = write_golden(out, seed=args.seed, random_cases=args.cases)
    except OSError as exc:
        raise write_error("--out", out, exc) from None
    for path, count in paths.items():
        print(f"wrote {path} ({count} cases)")
    return 0


def _jsonable(value):
    """Floats that JSON cannot hold become strings; everything else passes through."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _error_case(fn, args: dict) -> dict:
    try:
        fn(**args)
    except (ValueError, TypeError) as exc:
        return {"function": fn.__name__, "input": args, "error": type(exc).__name__, "message": str(exc)}
    raise AssertionError(f"{fn.__name__}({args}) was expected to raise")  # a bug in this table


def amdahl_table(rng: random.Random) -> dict:
    """Edge and random cases of the four Amdahl functions, and inputs that must be rejected."""
    edge_p = [0.0, 1e-12, 0.13, 0.5, 0.87, 0.999999, 1.0]
    edge_s = [1e-6, 0.5, 1.0, 1.0000001, 1.6, 1.78, 2.0, 1e6]
    pairs = [(p, s) for p in edge_p for s in edge_s]
    pairs += [(rng.random(), math.exp(rng.uniform(math.log(0.05), math.log(20.0)))) for _ in range(300)]
    speedup_cases = [{"p": p, "s": s, "speedup": speedup(p, s)} for p, s in pairs]
    bound_cases = [{"p": p, "max_speedup": max_speedup(p)} for p in edge_p + [rng.random() for _ in range(20)]]

    parts_cases = []
    for _ in range(100):
        n = rng.randint(1, 4)
        fs = [rng.random() for _ in range(n)]
        scale = rng.random() / sum(fs)  # fractions sum to at most 1
        fs = [f * scale for f in fs]
        ss = [math.exp(rng.uniform(math.log(0.2), math.log(4.0))) for _ in range(n)]
        parts_cases.append({
            "fractions": fs,
            "speedups": ss,
            "combined_speedup": combined_speedup(fs, ss),
            "averaged_speedup_mistake": averaged_speedup_mistake(fs, ss),
        })

    nan, inf = math.nan, math.inf
    errors = [_error_case(speedup, {"p": p, "s": 2.0}) for p in (-0.1, 1.5, nan, inf, -inf)]
    errors += [_error_case(speedup, {"p": 0.5, "s": s}) for s in (0.0, -1.0, nan, inf)]
    errors += [_error_case(combined_speedup, {"fractions": [0.7, 0.4], "speedups": [2.0, 2.0]}),
               _error_case(combined_speedup, {"fractions": [0.5], "speedups": [2.0, 3.0]})]
    return {
        "formula": "speedup(p, s) = 1 / ((1 - p) + p / s); combined: 1 / ((1 - sum f) + sum f_i / s_i), "
                   "sums left to right, 1 - sum f clamped at 0",
        "speedup": speedup_cases,
        "max_speedup": bound_cases,
        "parts": parts_cases,
        "errors": errors,
    }


_SPARSE_GPUS = [name for name, spec in GPUS.items() if spec.sparse_24]


def _random_config(rng: random.Random) -> TransformerConfig:
    head_dim = rng.choice([64, 80, 96, 128])
    heads = rng.choice([4, 8, 12, 16, 32, 40, 64])
    kv_heads = rng.choice([k for k in (1, 2, 4, 8, 16) if heads % k == 0 and k <= heads])
    hidden = heads * head_dim
    return TransformerConfig(
        name="custom",
        layers=rng.randint(1, 96),
        hidden=hidden,
        intermediate=4 * rng.randint(hidden // 8, hidden),  # multiple of 4 (2:4 groups along K)
        heads=heads,
        kv_heads=kv_heads,
        vocab=rng.randint(1000, 256000),
        tied_embeddings=rng.random() < 0.3,
    )


def _log_int(rng: random.Random, low: int, high: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def _case(case_id: int, label: str, workload: Workload, gpu: str, assumptions: Assumptions, gemm_speedup) -> dict:
    inputs = build_inputs(workload, gpu, assumptions=assumptions, gemm_speedup=gemm_speedup)
    cfg = workload.model
    context = {
        "model": {"name": cfg.name, "layers": cfg.layers, "hidden": cfg.hidden, "intermediate": cfg.intermediate,
                  "heads": cfg.heads, "kv_heads": cfg.kv_heads, "vocab": cfg.vocab,
                  "tied_embeddings": cfg.tied_embeddings},
        "gpu": gpu,
        "dtype": workload.dtype,
        "batch": workload.batch,
        "prompt_len": workload.prompt_len,
        "output_len": workload.output_len,
        "pruned": list(workload.pruned),
        "assumptions": {k: getattr(assumptions, k) for k in assumptions.__dataclass_fields__},
        "gemm_source": "measured" if gemm_speedup is not None else "roofline",
        "gemm_speedup": gemm_speedup,
        # How inputs.gemm was made: roofline.predict(M, N, K, dtype, gpu, backend, params).dense_us * 1e-6
        # (and .sparse_us); with a measured speedup only the dense time comes from there.
        "roofline_backend": GPUS[gpu].backends[0],
        "roofline_params": DEFAULT_EFFICIENCY.to_dict(),
    }
    return {"id": case_id, "label": label, "context": context, "inputs": inputs.to_dict(),
            "output": evaluate(inputs).to_dict()}


def request_table(rng: random.Random, random_cases: int) -> list[dict]:
    """Edge cases (named) then ``random_cases`` seeded random workloads."""
    mlp = ("gate_proj", "up_proj", "down_proj")
    edge = [
        ("chat decode bs1, Llama-3-8B, H100", Workload(LLAMA_3_8B, 1, 512, 256), "H100", Assumptions(), None),
        ("chat decode bs1, measured 1.6x", Workload(LLAMA_3_8B, 1, 512, 256), "H100", Assumptions(), 1.6),
        ("batch 64, 8K context", Workload(LLAMA_3_8B, 64, 8192, 512), "H100", Assumptions(), None),
        ("long-prompt summarisation, 70B", Workload(LLAMA_3_70B, 1, 32000, 256), "H200", Assumptions(), None),
        ("one output token (no decode step)", Workload(LLAMA_3_8B, 4, 128, 1), "A100", Assumptions(), None),
        ("nothing pruned", Workload(LLAMA_3_8B, 8, 256, 64, pruned=()), "H100", Assumptions(), None),
        ("MLP only pruned", Workload(LLAMA_3_8B, 8, 256, 64, pruned=mlp), "L4", Assumptions(), None),
        ("LM head pruned too", Workload(LLAMA_3_8B, 8, 256, 64, pruned=LINEAR_KINDS), "H100", Assumptions(), None),
        ("huge context 10M", Workload(LLAMA_3_8B, 64, 10_000_000, 4), "B200", Assumptions(), None),
        ("prompt of 1 token", Workload(LLAMA_3_8B, 1, 1, 2), "H100", Assumptions(), None),
        ("gemm speedup 1 (no change)", Workload(LLAMA_3_8B, 2, 64, 16), "H100", Assumptions(), 1.0),
        ("2:4 slower than dense (0.5x)", Workload(LLAMA_3_8B, 2, 64, 16), "H100", Assumptions(), 0.5),
        ("per-phase measured speedups", Workload(LLAMA_3_70B, 16, 2048, 256, dtype="fp8"), "H100", Assumptions(),
         {"prefill": 1.3, "decode": 1.1}),
        ("overheads, efficiencies, fp8 KV", Workload(LLAMA_3_8B, 32, 4096, 512, dtype="int8"), "A100",
         Assumptions(attention_efficiency=0.6, memory_efficiency=0.85, kv_bytes_per_element=1,
                     other_elems_per_token_layer=20000, step_overhead_s=3e-4, request_overhead_s=0.02), None),
    ]
    cases = [_case(i, label, w, gpu, a, s) for i, (label, w, gpu, a, s) in enumerate(edge)]
    while len(cases) < len(edge) + random_cases:
        cfg = rng.choice([LLAMA_3_8B, LLAMA_3_70B, None])
        cfg = cfg or _random_config(rng)
        gpu = rng.choice(_SPARSE_GPUS)
        dtypes = [d for d in ("fp16", "bf16", "fp8", "int8") if GPUS[gpu].sparse_tflops.get(d)]
        kinds = LINEAR_KINDS if rng.random() < 0.2 else BLOCK_LINEARS
        pruned = tuple(k for k in kinds if rng.random() < 0.8)
        workload = Workload(cfg, _log_int(rng, 1, 1024), _log_int(rng, 1, 1_000_000), _log_int(rng, 1, 8192),
                            dtype=rng.choice(dtypes), pruned=pruned)
        assumptions = Assumptions(
            attention_efficiency=rng.uniform(0.3, 1.0),
            memory_efficiency=rng.uniform(0.5, 1.0),
            kv_bytes_per_element=rng.choice([None, 1, 2]),
            other_elems_per_token_layer=rng.choice([None, rng.uniform(0, 1e5)]),
            step_overhead_s=rng.choice([0.0, rng.uniform(0, 2e-3)]),
            request_overhead_s=rng.choice([0.0, rng.uniform(0, 0.1)]),
        )
        choice = rng.random()
        gemm_speedup = None if choice < 0.5 else (
            rng.uniform(0.3, 2.5) if choice < 0.8 else {"prefill": rng.uniform(0.5, 2.0), "decode": rng.uniform(0.5, 2.0)})
        cases.append(_case(len(cases), "random", workload, gpu, assumptions, gemm_speedup))
    return cases


def calculator_defaults() -> dict:
    """The starting values of the calculators, each with where it comes from (all editable).

    None of them is a measurement: the workload is an example, the pruned set follows a published
    recipe, and the efficiencies and overheads are the model's neutral defaults.
    """
    w = SCENARIOS["chat decode, batch 1"]
    a = Assumptions()
    return {
        "model": w.model.name,
        "gpu": "H100",
        "dtype": w.dtype,
        "batch": w.batch,
        "prompt_len": w.prompt_len,
        "output_len": w.output_len,
        "pruned": list(w.pruned),
        "gemm_source": "roofline",
        "assumptions": {k: getattr(a, k) for k in a.__dataclass_fields__},
        "sources": {
            "model": "meta-llama/Meta-Llama-3-8B config.json (shapes); an example choice",
            "gpu": "twofour.hardware table (cited per number); an example choice",
            "workload": "derived: the chat scenario of chapter 6 (an example, not a measured trace)",
            "pruned": "every linear layer in the transformer blocks, LM head dense: Sparse-Llama-3.1-8B-2of4 model card",
            "gemm_source": "twofour.roofline with its default Efficiency (assumptions, not measurements)",
            "assumptions": "neutral defaults of twofour.request.Assumptions: peak efficiencies, no fixed overheads",
        },
    }


def gpu_table() -> dict:
    """The GPU numbers the request cases used (from :mod:`twofour.hardware`), for the JS to load as data.

    Per GPU with sparse tensor cores: peaks in TFLOP/s per dtype (dense and 2:4), bandwidth in
    GB/s, SMs, compute capability, PyTorch 2:4 backends (preferred first), and the row multiple
    the preferred backend pads ``x`` to per dtype (:func:`twofour.roofline.pad_multiple`).
    """
    table = {}
    for name in _SPARSE_GPUS:
        spec = GPUS[name]
        pads = {}
        for dtype in ("fp16", "bf16", "fp8", "int8"):
            if spec.sparse_tflops.get(dtype):
                try:
                    pads[dtype] = pad_multiple(spec.backends[0], dtype)
                except ValueError:  # no padding rule: that backend has no such dtype
                    pads[dtype] = None
        table[name] = {
            "dense_tflops": {k: v for k, v in spec.dense_tflops.items() if v is not None},
            "sparse_tflops": {k: v for k, v in spec.sparse_tflops.items() if v is not None},
            "mem_bw_gbs": spec.mem_bw_gbs,
            "sms": spec.sms,
            "capability": list(spec.capability),
            "backends": list(spec.backends),
            "pad_multiple": pads,
        }
    return table


def funnel_table(request_cases: list[dict]) -> list[dict]:
    """The funnel of every request case, for every scope."""
    from ..request import RequestInputs

    rows = []
    for case in request_cases:
        est = evaluate(RequestInputs.from_dict(case["inputs"]))
        for scope in SCOPES:
            rows.append({"request_case": case["id"], "scope": scope, "stages": funnel_dict(est, scope)})
    return rows


def write_golden(out: Path, *, seed: int = 0, random_cases: int = 200) -> dict[Path, int]:
    """Write the three golden files into ``out`` (created if missing); return ``{path: case count}``."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    header = {"format_version": FORMAT_VERSION, "twofour_version": __version__, "seed": seed,
              "tolerance": "1e-12 relative", "generated_by": "twofour golden"}
    amdahl = amdahl_table(rng)
    requests = request_table(rng, random_cases)
    funnels = funnel_table(requests)
    files = {
        out / "amdahl.json": ({**header, **amdahl}, len(amdahl["speedup"]) + len(amdahl["parts"]) + len(amdahl["max_speedup"])),
        out / "request.json": ({**header, "spec": "module docstring of twofour.request", "defaults": calculator_defaults(),
                                "gpus": gpu_table(),
                                "cases": requests}, len(requests)),
        out / "funnel.json": ({**header, "spec": "twofour.funnel.funnel docstring", "cases": funnels}, len(funnels)),
    }
    for path, (data, _) in files.items():
        # allow_nan=False: a non-finite number that slipped past _jsonable is a bug, not output.
        path.write_text(json.dumps(_jsonable(data), allow_nan=False, indent=1) + "\n")
    return {path: count for path, (_, count) in files.items()}
