"""Write the golden vectors: input -> output tables for the static site's calculators.

    .venv/bin/python scripts/golden.py --out DIR [--seed 0] [--cases 200]

A development script, not a ``twofour`` command: the vectors are test fixtures (the browser
tests write them into a temporary folder), so the installed package does not carry them.

The site's JavaScript mirrors :mod:`twofour.amdahl`, :mod:`twofour.request` and
:mod:`twofour.funnel` operation for operation; a browser test evaluates it on every case
written here and demands agreement to 1e-12 relative. Four files:

``amdahl.json``
    ``speedup``, ``max_speedup``, ``combined_speedup`` and ``averaged_speedup_mistake`` cases
    (edge values and seeded random ones), plus ``errors``: inputs every implementation must
    reject, with the Python error's type and message.
``request.json``
    ``cases[i] = {"id", "label", "context", "inputs", "output"}``. ``inputs`` is the flat
    :class:`twofour.request.RequestInputs` (per-GEMM times included), ``output`` is
    :meth:`RequestEstimate.to_dict`. ``context`` says how the inputs were made (model, GPU,
    dtype, workload including ``prefill_chunk_tokens``, assumptions, GEMM source: ``"roofline"``
    with its parameters, or ``"measured"`` with the speedups) so the JS roofline can be checked
    against ``inputs.gemm`` as well. Cases with a prefill chunk (the mixed decode step) carry
    ``inputs.prefill_chunk_tokens``; the others leave it out, as ``RequestInputs.to_dict`` does.
``funnel.json``
    ``cases[j] = {"request_case": i, "scope", "stages"}``: the funnel of request case ``i``; each
    step is :func:`twofour.funnel.funnel_dict`'s row plus its ``step`` number and ``title``.

``roofline.json``
    ``cases[i] = {"M", "N", "K", "dtype", "gpu", "backend", "scenario", "algorithm", "l2", "params",
    "output"}``: one :func:`twofour.roofline.predict` each (``output`` is
    :meth:`~twofour.roofline.Prediction.to_dict`: both kernels' tile, split-K, CTAs, waves, busy
    SMs, bytes, bandwidth and times, the guard), over every scenario, both algorithms, both L2
    states, several GPUs and both backends; ``params`` is ``null`` for the fitted default set,
    else a :class:`~twofour.roofline.KernelParams` dict (the assumed set, one with its own tile
    tables and padding, one that makes the ceiling guard bind). ``default_params`` gives the
    fitted set per ``"GPU"`` and ``"GPU/backend"`` (the lookup the JS repeats); ``errors`` and
    ``params_errors``: inputs every implementation must reject, with the Python message.

Non-finite numbers cannot be written in JSON; they appear as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` (only in ``errors`` inputs and ``max_speedup(1)``).
Runs in about a second and is deterministic for a given ``--seed``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

from twofour import __version__
from twofour.vocabulary import SPARSE_24_DTYPES
from twofour.amdahl import averaged_speedup_mistake, combined_speedup, max_speedup, speedup
from twofour.funnel import SCOPES, funnel, funnel_dict
from twofour.hardware import GPUS
from twofour.models import LLAMA_3_8B, LLAMA_3_70B, TransformerConfig
from twofour.roofline import (ALGORITHMS, ASSUMED_PARAMS, DEFAULT_SCENARIO, L2_STATES, SCENARIOS as GEMM_SCENARIOS,
                        KernelParams, default_params, pad_multiple, predict)
from twofour.roofline._fitfile import FIT_PATH
from twofour.request import (BLOCK_LINEARS, LINEAR_KINDS, Assumptions, Workload, build_inputs, evaluate,
                       roofline_gemm_model)
from twofour.cli.main import UserError

__all__ = ["main", "add_arguments", "run", "amdahl_table", "request_table", "funnel_table", "roofline_table", "calculator_defaults",
           "gpu_table", "write_golden"]

FORMAT_VERSION = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path,
                        help="directory to write amdahl.json, request.json, funnel.json, roofline.json")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random cases (default 0)")
    parser.add_argument("--cases", type=int, default=200, help="random request cases on top of the edge cases (default 200)")


def run(args: argparse.Namespace) -> int:
    from twofour._common.atomic import OutputError
    from twofour.cli._output import check_output_dir, show, write_error

    if args.out is None:
        raise UserError("give --out DIR (where to write the golden vectors)")
    if args.cases < 0:
        raise UserError(f"--cases must be >= 0, got {args.cases}")
    if args.cases > 100_000:  # each case is a full request model: more would run for hours
        raise UserError(f"--cases must be at most 100,000, got {args.cases:,}")
    out = check_output_dir(args.out, "--out")
    try:
        paths = write_golden(out, seed=args.seed, random_cases=args.cases)
    except OutputError as exc:
        raise UserError(f"--out {exc}") from None
    except OSError as exc:
        raise write_error("--out", out, exc) from None
    for path, count in paths.items():
        print(f"wrote {show(path)} ({count} cases)")
    return 0


def main(argv=None) -> int:
    """Parse ``argv`` and write the vectors: 0, or 2 with one line on stderr naming the bad argument."""
    parser = argparse.ArgumentParser(prog="scripts/golden.py", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"golden: error: {exc}", file=sys.stderr)
        return 2


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
    errors += [_error_case(speedup, {"p": 0.5, "s": s}) for s in (0.0, -1.0, nan, inf, 1e-320, 5e-324)]
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


def _case(case_id: int, label: str, workload: Workload, gpu: str, assumptions: Assumptions, gemm_speedup,
          scenario: str = DEFAULT_SCENARIO, backend: str | None = None) -> dict:
    if backend is None:  # the API the calculator mirrors: the GPU's preferred backend, its fitted set
        inputs = build_inputs(workload, gpu, assumptions=assumptions, gemm_speedup=gemm_speedup, scenario=scenario)
    else:
        inputs = build_inputs(workload, gpu, assumptions=assumptions, gemm_speedup=gemm_speedup,
                              gemm=roofline_gemm_model(gpu, workload.dtype, backend=backend, scenario=scenario))
    resolved = backend or GPUS[gpu].backends[0]
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
        "prefill_chunk_tokens": workload.prefill_chunk_tokens,
        "pruned": list(workload.pruned),
        "assumptions": {k: getattr(assumptions, k) for k in assumptions.__dataclass_fields__},
        "gemm_source": "measured" if gemm_speedup is not None else "roofline",
        "gemm_speedup": gemm_speedup,
        # How inputs.gemm was made: roofline.predict(M, N, K, dtype, gpu, backend, scenario=scenario)
        # .dense_us * 1e-6 (and .sparse_us), with the fitted parameters default_params(gpu, backend);
        # with a measured speedup only the dense time comes from there. "backend" is what was
        # asked for (null: the GPU's preferred one, "roofline_backend").
        "scenario": scenario,
        "backend": backend,
        "roofline_backend": resolved,
        "roofline_params": default_params(gpu, resolved).to_dict(),
    }
    return {"id": case_id, "label": label, "context": context, "inputs": inputs.to_dict(),
            "output": evaluate(inputs).to_dict()}


def _backends_for(gpu: str, dtype: str) -> list[str]:
    """The PyTorch 2:4 backends of ``gpu`` that have a path for ``dtype`` (CUTLASS has no fp8)."""
    out = []
    for backend in GPUS[gpu].backends:
        try:
            pad_multiple(backend, dtype)
        except ValueError:
            continue
        out.append(backend)
    return out


def request_table(rng: random.Random, random_cases: int, chunk_rng: random.Random | None = None) -> list[dict]:
    """Edge cases (named) then ``random_cases`` seeded random workloads.

    The edge cases cover every GEMM scenario, the fitted sets of several GPUs (H100 and H200, A100
    with each backend, and L4, B200 and A10G, which have no fitted set of their own), the
    corners of the arithmetic and the mixed decode step of chunked prefill. About a third of the
    random workloads get a prefill chunk too, drawn from ``chunk_rng`` (its own stream, so the
    rest of every random case is what ``rng`` alone makes).
    """
    chunk_rng = random.Random("prefill-chunk") if chunk_rng is None else chunk_rng
    mlp = ("gate_proj", "up_proj", "down_proj")
    chat = Workload(LLAMA_3_8B, 1, 512, 256)
    batch8 = Workload(LLAMA_3_8B, 8, 1024, 128, dtype="fp16")
    edge = [
        ("chat decode bs1, Llama-3-8B, H100", chat, "H100", Assumptions(), None, "cached", None),
        ("chat decode bs1, H100, eager PyTorch", chat, "H100", Assumptions(), None, "eager", None),
        ("chat decode bs1, H100, kernel only", chat, "H100", Assumptions(), None, "kernel", None),
        ("chat decode bs1, H200 (the fitted base set), eager", chat, "H200", Assumptions(), None, "eager", None),
        ("chat decode bs1, measured 1.6x", chat, "H100", Assumptions(), 1.6, "cached", None),
        ("measured speedups, eager (dense times from the eager model)", chat, "H100", Assumptions(),
         {"prefill": 1.2, "decode": 0.8}, "eager", None),
        ("A100 fp16 batch 8, cuSPARSELt, eager", batch8, "A100", Assumptions(), None, "eager", "cuSPARSELt"),
        ("A100 fp16 batch 8, CUTLASS, eager (no plan per call)", batch8, "A100", Assumptions(), None, "eager", "CUTLASS"),
        ("A100 fp16 batch 8, cuSPARSELt, cached", batch8, "A100", Assumptions(), None, "cached", "cuSPARSELt"),
        ("A100 fp16 batch 8, CUTLASS, cached", batch8, "A100", Assumptions(), None, "cached", "CUTLASS"),
        ("A100 fp16 batch 8, backend in lower case", batch8, "A100", Assumptions(), None, "kernel", "cutlass"),
        ("L4 (no fitted set of its own), eager", Workload(LLAMA_3_8B, 4, 2048, 256, dtype="fp8"), "L4", Assumptions(),
         None, "eager", None),
        ("batch 64, 8K context", Workload(LLAMA_3_8B, 64, 8192, 512), "H100", Assumptions(), None, "cached", None),
        ("long-prompt summarisation, 70B", Workload(LLAMA_3_70B, 1, 32000, 256), "H200", Assumptions(), None, "cached", None),
        ("one output token (no decode step)", Workload(LLAMA_3_8B, 4, 128, 1), "A100", Assumptions(), None, "cached", None),
        ("nothing pruned", Workload(LLAMA_3_8B, 8, 256, 64, pruned=()), "H100", Assumptions(), None, "eager", None),
        ("MLP only pruned", Workload(LLAMA_3_8B, 8, 256, 64, pruned=mlp), "L4", Assumptions(), None, "cached", None),
        ("LM head pruned too", Workload(LLAMA_3_8B, 8, 256, 64, pruned=LINEAR_KINDS), "H100", Assumptions(), None,
         "kernel", None),
        ("huge context 10M", Workload(LLAMA_3_8B, 64, 10_000_000, 4), "B200", Assumptions(), None, "cached", None),
        ("prompt of 1 token", Workload(LLAMA_3_8B, 1, 1, 2), "H100", Assumptions(), None, "eager", None),
        ("gemm speedup 1 (no change)", Workload(LLAMA_3_8B, 2, 64, 16), "H100", Assumptions(), 1.0, "cached", None),
        ("2:4 slower than dense (0.5x)", Workload(LLAMA_3_8B, 2, 64, 16), "H100", Assumptions(), 0.5, "cached", None),
        ("per-phase measured speedups", Workload(LLAMA_3_70B, 16, 2048, 256, dtype="fp8"), "H100", Assumptions(),
         {"prefill": 1.3, "decode": 1.1}, "cached", None),
        ("overheads, efficiencies, fp8 KV", Workload(LLAMA_3_8B, 32, 4096, 512, dtype="int8"), "A10G",
         Assumptions(attention_efficiency=0.6, memory_efficiency=0.85, kv_bytes_per_element=1,
                     other_elems_per_token_layer=20000, step_overhead_s=3e-4, request_overhead_s=0.02), None,
         "eager", None),
        # The mixed decode step (continuous batching with chunked prefill): decode GEMMs at
        # M = batch + chunk, the chunk's attention, KV-cache and element-wise work added.
        ("mixed step: chat bs1 + 256-token prefill chunk, H100",
         Workload(LLAMA_3_8B, 1, 512, 256, prefill_chunk_tokens=256), "H100", Assumptions(), None, "cached", None),
        ("mixed step: batch 8 + 512 chunk, A100 CUTLASS, eager",
         Workload(LLAMA_3_8B, 8, 1024, 128, dtype="fp16", prefill_chunk_tokens=512), "A100", Assumptions(), None, "eager",
         "CUTLASS"),
        ("mixed step: batch 64, 8K context + 2048 chunk, H200, kernel only",
         Workload(LLAMA_3_8B, 64, 8192, 512, prefill_chunk_tokens=2048), "H200", Assumptions(), None, "kernel", None),
        ("mixed step: chunk longer than the prompt, L4 fp8",
         Workload(LLAMA_3_8B, 4, 128, 64, dtype="fp8", prefill_chunk_tokens=1024), "L4", Assumptions(), None, "cached",
         None),
        ("mixed step: one output token (no decode step)", Workload(LLAMA_3_8B, 4, 128, 1, prefill_chunk_tokens=64),
         "A100", Assumptions(), None, "cached", None),
        ("mixed step: chunk of 1 token, prompt of 1 token", Workload(LLAMA_3_8B, 1, 1, 2, prefill_chunk_tokens=1), "H100",
         Assumptions(), None, "eager", None),
        ("mixed step: per-phase measured speedups, 70B fp8",
         Workload(LLAMA_3_70B, 16, 2048, 256, dtype="fp8", prefill_chunk_tokens=512), "H100", Assumptions(),
         {"prefill": 1.3, "decode": 1.1}, "cached", None),
        ("mixed step: overheads, efficiencies, fp8 KV, B200",
         Workload(LLAMA_3_8B, 32, 4096, 512, prefill_chunk_tokens=8192, pruned=mlp), "B200",
         Assumptions(attention_efficiency=0.6, memory_efficiency=0.85, kv_bytes_per_element=1, step_overhead_s=3e-4,
                     request_overhead_s=0.02), None, "eager", None),
    ]
    cases = [_case(i, label, w, gpu, a, s, sc, be) for i, (label, w, gpu, a, s, sc, be) in enumerate(edge)]
    while len(cases) < len(edge) + random_cases:
        cfg = rng.choice([LLAMA_3_8B, LLAMA_3_70B, None])
        cfg = cfg or _random_config(rng)
        gpu = rng.choice(_SPARSE_GPUS)
        dtypes = [d for d in SPARSE_24_DTYPES if GPUS[gpu].sparse_tflops.get(d)]
        kinds = LINEAR_KINDS if rng.random() < 0.2 else BLOCK_LINEARS
        pruned = tuple(k for k in kinds if rng.random() < 0.8)
        dtype = rng.choice(dtypes)
        chunk = _log_int(chunk_rng, 1, 16384) if chunk_rng.random() < 0.35 else 0
        workload = Workload(cfg, _log_int(rng, 1, 1024), _log_int(rng, 1, 1_000_000), _log_int(rng, 1, 8192),
                            dtype=dtype, pruned=pruned, prefill_chunk_tokens=chunk)
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
        scenario = rng.choice(GEMM_SCENARIOS)
        backend = rng.choice([None] + _backends_for(gpu, dtype))
        cases.append(_case(len(cases), "random", workload, gpu, assumptions, gemm_speedup, scenario, backend))
    return cases


# One GEMM: shapes from decode to prefill, and the (GPU, dtype, backend) triples that exercise
# every fitted set and the fallback to the base set.
_ROOFLINE_SHAPES = [(1, 4096, 4096), (7, 1024, 4096), (16, 14336, 4096), (17, 4096, 4096), (256, 4096, 14336),
                    (257, 1024, 1024), (4096, 4096, 14336), (65536, 128256, 8192), (333, 5000, 12)]
_ROOFLINE_TARGETS = [("fp16", "H100", None), ("bf16", "H200", None), ("fp16", "A100", "CUTLASS"),
                     ("fp16", "A100", "cuSPARSELt"), ("bf16", "A100", "cutlass"), ("int8", "A100", None),
                     ("int8", "L4", None), ("fp8", "L4", "cuSPARSELt"), ("fp8", "B200", None), ("tf32", "A10G", "CUTLASS"),
                     ("tf32", "A100", "cuSPARSELt")]


def _custom_params() -> list[KernelParams]:
    """Parameter sets beyond the fitted ones: the assumed set, one with its own tables, one where the guard binds."""
    from dataclasses import replace

    custom = replace(
        ASSUMED_PARAMS.with_family("cublas", tiles=((4, 2048, 32, 4), (64, None, 96, 64), (None, None, 256, 128)),
                                   cta_target=100, max_split=3, min_k_iters=8, fill_gain=0.25),
        cusparselt=replace(ASSUMED_PARAMS.cusparselt, tiles=((32, None, 64, 32), (None, None, 128, 256)), cta_target=0,
                           max_split=8, min_k_iters=4, mem_eff=0.55, per_sm_gbs=25.5),
        cusparselt_bf16=replace(ASSUMED_PARAMS.cusparselt_bf16, tiles=((None, None, 128, 128),), mem_eff=0.45,
                                sm_compute_eff=0.35, latency_us=12.5),
        bench_replay_dense_us=7.5, bench_replay_sparse_us=8.5,
        pad_to=32, pad_us=3.25, graph_dense_us=6.5, graph_sparse_us=11.0, host_dense_us=40.0, host_sparse_us=35.0,
        dram_eff=0.75, flush_dirty_mb=12.5, flush_dirty_frac=0.0)
    slow_dense = ASSUMED_PARAMS.with_family("cublas", latency_us=400.0)  # the 2:4 side would pass the ceilings
    return [ASSUMED_PARAMS, custom, slow_dense]


def roofline_table(rng: random.Random) -> dict:
    """:func:`twofour.roofline.predict` over shapes x GPUs/backends x scenarios x algorithms x L2, the fitted sets, and errors."""
    def options(backend, gpu):
        algs = ["default"] if (backend or GPUS[gpu].backends[0]).lower() == "cutlass" else list(ALGORITHMS)
        return [(sc, a, l2) for sc in GEMM_SCENARIOS for a in algs for l2 in L2_STATES]

    points = [(shape, d, g, b, opt, None) for shape in _ROOFLINE_SHAPES for d, g, b in _ROOFLINE_TARGETS
              for opt in options(b, g)]
    points += [(shape, d, g, None, opt, p) for shape in _ROOFLINE_SHAPES for d, g in (("fp16", "H100"), ("bf16", "H200"))
               for opt in options(None, g) for p in _custom_params()]
    for _ in range(150):  # random shapes: M log-uniform over 1..65536
        d, g, b = rng.choice(_ROOFLINE_TARGETS)
        K = 4 * _log_int(rng, 1, 8192)
        points.append(((_log_int(rng, 1, 65536), _log_int(rng, 1, 50000), K), d, g, b, rng.choice(options(b, g)), None))
    cases = []
    for (M, N, K), d, g, b, (sc, alg, l2), params in points:
        p = predict(M, N, K, d, g, b, params, scenario=sc, algorithm=alg, l2=l2)
        cases.append({"M": M, "N": N, "K": K, "dtype": d, "gpu": g, "backend": b, "scenario": sc, "algorithm": alg, "l2": l2,
                      "params": None if params is None else params.to_dict(), "output": p.to_dict()})

    defaults = {}
    for name in _SPARSE_GPUS:
        defaults[name] = default_params(name).to_dict()
        for backend in GPUS[name].backends:
            defaults[f"{name}/{backend}"] = default_params(name, backend).to_dict()

    def err(args: dict, **kw) -> dict:
        try:
            predict(**args, **kw)
        except (ValueError, TypeError) as exc:
            return {"input": {**args, **kw}, "error": type(exc).__name__, "message": str(exc)}
        raise AssertionError(f"predict({args}, {kw}) was expected to raise")  # a bug in this table

    base = {"M": 16, "N": 4096, "K": 4096, "dtype": "fp16"}
    errors = [
        err({**base, "gpu": "H100"}, scenario="fast"),
        err({**base, "gpu": "H100"}, scenario="Eager"),
        err({**base, "gpu": "H100"}, scenario="ideal"),
        err({**base, "gpu": "H100", "backend": "CUTLASS"}),
        err({**base, "gpu": "A100", "backend": "cusparse"}),
        err({**base, "dtype": "fp8", "gpu": "L4", "backend": "CUTLASS"}),
        err({**base, "K": 4098, "gpu": "H100"}),
        err({**base, "M": 0, "gpu": "H100"}),
        err({**base, "gpu": "A100", "backend": "CUTLASS"}, algorithm="searched"),
        err({**base, "gpu": "H100"}, algorithm="alg1"),
        err({**base, "gpu": "H100"}, l2="warm"),
    ]
    good = ASSUMED_PARAMS.to_dict()
    params_errors = []
    for family, bad in (("cusparselt", {"mem_eff": 1.5}), ("cublas", {"compute_eff": 0.0}), ("cutlass", {"per_sm_gbs": 0.0}),
                        ("cublas", {"latency_us": -1.5}), ("cusparselt", {"max_split": 0}), ("cublas", {"cta_target": -1}),
                        ("cusparselt", {"tiles": [[8, None, 64, 8]]}), ("cublas", {"tiles": [[None, None, 0, 8]]}),
                        ("cublas", {"bogus": 1.0}), (None, {"dram_eff": 1.25}), (None, {"flush_dirty_frac": -0.5}),
                        (None, {"host_sparse_us": -2.5}), (None, {"pad_to": 0}), (None, {"bogus": 1.0})):
        data = {**good, family: {**good[family], **bad}} if family else {**good, **bad}
        try:
            KernelParams.from_dict(data)
        except ValueError as exc:
            params_errors.append({"input": data, "error": "ValueError", "message": str(exc)})
        else:
            raise AssertionError(f"KernelParams with {family} {bad} was expected to raise")
    return {
        "formula": "twofour.roofline.model module docstring: tile and split-K -> CTAs, busy SMs -> bandwidth; "
                   "kernel_us = latency + max(t_compute, t_memory) + helpers; the scenario; the ceiling guard",
        "scenarios": list(GEMM_SCENARIOS),
        "default_scenario": DEFAULT_SCENARIO,
        "algorithms": list(ALGORITHMS),
        "default_params": defaults,
        "cases": cases,
        "errors": errors,
        "params_errors": params_errors,
    }


def calculator_defaults() -> dict:
    """The starting values of the calculators, each with where it comes from (all editable).

    The calculator opens on chapter 7's worked deployment (:func:`twofour.course.answer.calculator_verdict`):
    its GEMM speedups are the H200 run's measurements in CUDA graphs. The rest is not measured: the
    workload is an example, the pruned set follows a published recipe, and the request-level
    efficiencies and overheads are neutral defaults.
    """
    from twofour.course.answer import calculator_verdict

    v = calculator_verdict()
    a = Assumptions()
    return {
        "model": v["model"],
        "gpu": v["gpu"],
        "dtype": v["dtype"],
        "batch": v["batch"],
        "prompt_len": v["prompt_len"],
        "output_len": v["output_len"],
        "pruned": list(v["pruned"]),
        "gemm_source": "measured",
        "speedup_prefill": round(v["speedup_prefill"], 3),
        "speedup_decode": round(v["speedup_decode"], 3),
        "scenario": DEFAULT_SCENARIO,
        "assumptions": {k: getattr(a, k) for k in a.__dataclass_fields__},
        "sources": {
            "model": "meta-llama/Meta-Llama-3-8B config.json (shapes); chapter 7's worked deployment",
            "gpu": "twofour.hardware table (cited per number); the GPU of the project's measurements",
            "workload": "derived: the chat scenario of chapter 6 (an example, not a measured trace)",
            "pruned": "every linear layer in the transformer blocks, LM head dense: Sparse-Llama-3.1-8B-2of4 model card",
            "gemm_source": f"measured: {v['source']} ({v['software']}), the verdict table's {v['row']!r} row",
            "scenario": "plans cached or CUDA graphs, as a serving engine runs (twofour.roofline.DEFAULT_SCENARIO)",
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
        for dtype in SPARSE_24_DTYPES:
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
    """The funnel of every request case, for every scope (each step with its number and title)."""
    from twofour.request import RequestInputs

    rows = []
    for case in request_cases:
        est = evaluate(RequestInputs.from_dict(case["inputs"]))
        for scope in SCOPES:
            stages = [{**row, "step": s.step, "title": s.title}
                      for row, s in zip(funnel_dict(est, scope), funnel(est, scope))]
            rows.append({"request_case": case["id"], "scope": scope, "stages": stages})
    return rows


def write_golden(out: Path, *, seed: int = 0, random_cases: int = 200) -> dict[Path, int]:
    """Write the four golden files into ``out`` (created if missing); return ``{path: case count}``.

    Each file is written atomically (:mod:`twofour._common.atomic`): a failed run leaves the previous vectors.
    """
    from twofour._common.atomic import check_output, write_text

    names = ("amdahl.json", "request.json", "funnel.json", "roofline.json")
    for name in names:  # every output checked before any work: a FIFO or the fit file it reads is refused
        check_output(out / name, [FIT_PATH], follow_symlinks=False)
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    header = {"format_version": FORMAT_VERSION, "twofour_version": __version__, "seed": seed,
              "tolerance": "1e-12 relative", "generated_by": "scripts/golden.py"}
    amdahl = amdahl_table(rng)
    requests = request_table(rng, random_cases, chunk_rng=random.Random(f"prefill-chunk-{seed}"))
    funnels = funnel_table(requests)
    gemms = roofline_table(rng)
    files = {
        out / "amdahl.json": ({**header, **amdahl}, len(amdahl["speedup"]) + len(amdahl["parts"]) + len(amdahl["max_speedup"])),
        out / "request.json": ({**header, "spec": "module docstring of twofour.request.evaluate", "defaults": calculator_defaults(),
                                "gpus": gpu_table(),
                                "cases": requests}, len(requests)),
        out / "funnel.json": ({**header, "spec": "twofour.funnel.funnel docstring", "cases": funnels}, len(funnels)),
        out / "roofline.json": ({**header, "spec": "twofour.roofline.model module docstring", **gemms}, len(gemms["cases"])),
    }
    for path, (data, _) in files.items():
        # allow_nan=False: a non-finite number that slipped past _jsonable is a bug, not output.
        # inside the output folder: a symlink planted there is replaced, never written through
        write_text(path, json.dumps(_jsonable(data), allow_nan=False, indent=1) + "\n", [FIT_PATH],
                   follow_symlinks=False)
    return {path: count for path, (_, count) in files.items()}


if __name__ == "__main__":
    sys.exit(main())
