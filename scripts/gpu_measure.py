#!/usr/bin/env python3
"""gpu_measure.py — the measurements `make gpu-check` records on a GPU, one step at a time.

Steps (each writes its files into --out as soon as it has them, so a step cut short by its
time limit keeps what it measured; --budget SECONDS: work not started by then is left out):

  decode      whole decode steps of Llama-3-8B (twofour.serve): fp16 then bf16, batch 1, 16, 64 at
              context 512; dense, 2:4 with algorithm 0, 2:4 with the searched algorithm pinned
              (to_sparse_semi_structured(W, alg_id=)); one step captured in a CUDA graph, 16
              replays back to back per event pair behind a device-side spin; TPOT, tokens/s, the
              step's kernel names and p from a profile of the same step
  alg-search  every cuSPARSELt algorithm ID the library accepts (tried upward until refused), for
              the Llama-3-8B shapes at M = 1, 16, 64, 256, fp16 and bf16, through F.linear and as a
              direct _cslt_sparse_mm, with kernel names and tile, and the ID the library's search returns
  counters    ncu (where it exists): DRAM bytes, SM throughput, tensor-pipe use of cuBLAS and 2:4
              algorithm 0 / best at M = 1, 16, 256, 2048 (gate_proj shape, fp16); else says why not
  bench-8b    dense vs 2:4 on the Llama-3-8B linear shapes, M = 1 ... 16384 (powers of two): fp16
              with every timing mode (lone, graph, stream, kernel), then bf16 lone and graph
  bench-ref   the GEMM shapes of published measurements, lone / graph / kernel
  bench-70b   the Llama-3-70B shapes, fp16, M = 1, 16, 256, 4096, 16384, lone / graph / kernel
  kernels     probe(try_kernels=True) and the profiler's kernel tables at gate_proj, M = 1, 16, 4096
  traces      Chrome traces of the linear layers of two Llama-3-8B blocks at M = 16
  file        file a finished run: the folder as benchmarks/gpu-runs/<day>-<gpu>/ and its results
              as src/twofour/data/ files (--repo: another repository; nothing is ever replaced)

Every GPU timing says how it was timed (twofour.bench.gpu_timing.METHODS, recorded per point).

On a CPU, --rehearse runs each step's code on tiny float32 stand-ins (no GPU number is produced):
the bench steps on the simulated GPU of twofour.bench.simgpu (every timing mode and the writer),
decode on the tiny model with a fake CUDA device (twofour.serve.RehearsalOps), alg-search with
twofour.bench.algsweep.RehearsalCase, counters through its "not available" path.

Usage: python scripts/gpu_measure.py STEP --out DIR [--rehearse] [--budget SECONDS] [--repo DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
import warnings
from pathlib import Path

import torch

from twofour.vocabulary import TIMING_MODES as MODES
from twofour.bench import Results, model_shapes, provenance, sweep

SMALL_MS = [2**i for i in range(15)]  # 1 .. 16384


def _log(msg: str) -> None:
    print(f"[gpu_measure {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _merge_save(parts: list[Results], path: Path, command: str) -> None:
    merged = Results(provenance=dict(parts[0].provenance, command=command), settings=parts[0].settings,
                     points=[p for r in parts for p in r.points])
    merged.save(path)


def bench(out: Path, *, models: list[str], Ms: list[int], plan: list[tuple[str, tuple[str, ...]]],
          name: str, rehearse: bool, budget_s: float | None = None) -> None:
    """Sweep ``plan`` = [(dtype, modes), ...] over the models' shapes; save after every group.

    A group not started within ``budget_s`` seconds is left out (and logged). ``rehearse``: one
    tiny float32 shape on the simulated GPU (twofour.bench.simgpu) with the plan's modes, so
    every timing path and the writer run; no GPU number is produced.
    """
    import contextlib

    from twofour.bench.simgpu import simulated_gpu

    command = (f"scripts/gpu_measure.py {name} (twofour.bench.sweep: models={models} Ms={Ms} "
               f"dtype/modes={[(d, list(m)) for d, m in plan]} warmup=3 repeats=10)")
    shapes = model_shapes(models)
    if rehearse:
        shapes, Ms, plan = [("rehearsal 256x512", 256, 512)], Ms[:3], [("float32", plan[0][1])]
        command += " --rehearse (simulated GPU)"
    parts: list[Results] = []
    t_start = time.perf_counter()
    for dtype, modes in plan:
        for shape in shapes:
            if budget_s is not None and time.perf_counter() - t_start > budget_s:
                _log(f"{name}: {shape[0]} {dtype}: not started, the step's {budget_s:g} s budget is spent")
                continue
            t0 = time.perf_counter()
            with simulated_gpu() if rehearse else contextlib.nullcontext():
                res = sweep([shape], Ms=Ms, dtypes=[dtype], modes=modes, warmup=3 if not rehearse else 1,
                            repeats=10 if not rehearse else 3, progress=False, command=command,
                            device=None if not rehearse else "cpu")
            parts.append(res)
            _merge_save(parts, out / f"bench-{name}.json", command)
            problems = res.problems()
            _log(f"{name}: {shape[0]} {dtype}: {len(res.points)} points in {time.perf_counter() - t0:.1f}s"
                 f"{'; problems: ' + str(len(problems)) if problems else ''}")
            for p in problems[:5]:
                _log(f"  problem: {p}")
            for mode in modes:
                rows = res.gpu_points(mode)
                if rows:
                    sp = " ".join(f"{r['M']}:{r['dense_ms'] / r['sparse_ms']:.2f}" for r in rows)
                    _log(f"  {mode:6} speedup by M: {sp}")


# GEMM-level shapes of published dense vs 2:4 measurements (shared/reference/published-gemm.json),
# as (M, N, K, dtype): measured here too, the same shape on one more GPU is a direct comparison.
# (3072, 3072, 10240) fp16 is pytorch/pytorch#177866 (0.41x eager, 1.15x with plans cached).
REFERENCE_POINTS = [
    (3072, 3072, 10240, "float16"), (1, 4096, 4096, "float16"), (1024, 1024, 1024, "float16"),
    (2048, 2048, 2048, "float16"), (4096, 4096, 4096, "float16"), (8192, 8192, 8192, "float16"),
    (16384, 16384, 16384, "float16"), (13008, 4096, 1024, "float16"), (13008, 1024, 4096, "float16"),
    (3072, 3072, 10240, "bfloat16"), (4096, 4096, 10240, "bfloat16"), (8192, 8192, 10240, "bfloat16"),
    (10240, 10240, 10240, "bfloat16"), (4096, 768, 4096, "bfloat16"),
    (64, 3720, 10240, "float16"), (512, 3720, 10240, "float16"), (1280, 3720, 10240, "float16"),
]


def bench_reference(out: Path, *, rehearse: bool) -> None:
    """The published GEMM shapes, lone / graph / kernel, one results file."""
    command = "scripts/gpu_measure.py bench-ref (twofour.bench.sweep per published shape, warmup=3 repeats=10)"
    points = REFERENCE_POINTS if not rehearse else [(8, 64, 128, "float32"), (16, 128, 64, "float32")]
    modes = ("lone", "graph", "kernel") if not rehearse else ("lone",)
    parts: list[Results] = []
    for M, N, K, dtype in points:
        res = sweep([(f"{N}x{K}", N, K)], Ms=[M], dtypes=[dtype], modes=modes, warmup=3 if not rehearse else 1,
                    repeats=10 if not rehearse else 3, progress=False, command=command,
                    device=None if not rehearse else "cpu")
        parts.append(res)
        _merge_save(parts, out / "bench-reference.json", command)
        rows = {mode: res.gpu_points(mode) for mode in modes}
        _log(f"bench-ref: M={M} N={N} K={K} {dtype}: " + ", ".join(
            f"{mode} {r[0]['dense_ms'] / r[0]['sparse_ms']:.2f}x" for mode, r in rows.items() if r)
            + (f"; problems: {res.problems()}" if res.problems() else ""))


ALG_MS = (1, 16, 64, 256)  # the decode batches (M = batch) of the decode step, and one beyond


def alg_search(out: Path, *, rehearse: bool, budget_s: float | None = None) -> None:
    """Is the slow 2:4 decode kernel PyTorch's choice or cuSPARSELt's best? Each algorithm ID the library accepts.

    For the Llama-3-8B shapes at M = 1, 16, 64, 256, fp16 then bf16
    (twofour.bench.algsweep.sweep_case on a CudaCase): the IDs the library accepts, tried upward
    from 0 until it refuses one (no maximum assumed); each timed as the bench's graph mode (weight
    copies in turn, replays back to back behind a device-side spin) through F.linear (a
    to_sparse_semi_structured weight converted with that alg_id, x at its real M) and as a direct
    torch._cslt_sparse_mm on x padded to 8 rows; the kernel names and tile of each; each result
    checked against dense; and the ID the library's search returns, timed too. The file is
    rewritten after every case; cases not started within ``budget_s`` are left out.
    --rehearse runs the same flow on the CPU with dense stand-ins (RehearsalCase): no GPU number.
    """
    from twofour.bench import gpu_timing
    from twofour.bench.algsweep import CudaCase, RehearsalCase, sweep_case
    from twofour.structure import prune

    name = "cslt-algsearch-rehearsal.json" if rehearse else "cslt-algsearch.json"
    device = torch.device("cpu" if rehearse else "cuda")
    record = {"schema": "twofour-cslt-algsearch/3",
              "provenance": provenance("scripts/gpu_measure.py alg-search" + (" --rehearse" if rehearse else ""), device=device),
              "rehearsal": rehearse, "paths": ["_cslt_sparse_mm", "F.linear"],
              "timer": gpu_timing.METHODS["graph"] if not rehearse else "CPU wall clock (rehearsal)",
              "cases": []}
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    shapes = model_shapes(["Llama-3-8B"]) if not rehearse else [("rehearsal 32x64", 32, 64)]
    for dtype in ("float16", "bfloat16"):
        for label, N, K in shapes:
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                _log(f"alg-search {label} {dtype}: not started, the step's {budget_s:g} s budget is spent")
                continue
            W24 = None if rehearse else prune((torch.randn(N, K, generator=gen) / K**0.5).to(device, getattr(torch, dtype)))[0]
            for M in (ALG_MS if not rehearse else (1, 3)):
                ops = CudaCase(W24, M) if not rehearse else RehearsalCase(M, N, K, accepts=3, search_id=5)
                try:
                    case = {"shape": label, "dtype": dtype, "M": M, "M_padded": -(-M // 8) * 8, "N": N, "K": K,
                            **sweep_case(ops, repeats=5 if not rehearse else 2)}
                except Exception as exc:  # one case that cannot run (memory, a refused shape) must not end the step
                    _log(f"alg-search {label} {dtype} M={M}: failed: {type(exc).__name__}: {exc}")
                    continue
                direct = case["best"]["_cslt_sparse_mm"]
                zero = next((c for c in case["configs"] if c["path"] == "_cslt_sparse_mm" and c["alg_id"] == 0 and "ms" in c), None)
                # the fields readers of schema /1 use: the direct path's algorithm 0 and its best
                case["default_ms"] = zero["ms"] if zero else None
                case["best_direct"] = direct
                record["cases"].append(case)
                (out / name).write_text(json.dumps(record, indent=1) + "\n")
                lin = case["best"]["F.linear"]
                _log(f"alg-search {label} {dtype} M={M}: accepted IDs {case['accepted_alg_ids'][:1]}..{case['accepted_alg_ids'][-1:]} "
                     f"({case['stopped']}); dense {case['dense_ms'] * 1e3:.1f} us; best direct "
                     f"{(direct['ms'] * 1e3 if direct else float('nan')):.1f} us (alg {direct and direct['alg_id']}), best F.linear "
                     f"{(lin['ms'] * 1e3 if lin else float('nan')):.1f} us (alg {lin and lin['alg_id']}, tile "
                     f"{lin and lin.get('tile')}); search says {case['search_alg_id']} (timed: {case['search_timed']}); "
                     f"{time.perf_counter() - t0:.0f}s")
                del ops
            del W24
            if not rehearse:
                torch.cuda.empty_cache()


COUNTER_SHAPE = ("Llama-3-8B gate_proj/up_proj", 14336, 4096)


def _best_alg(out: Path, dtype: str, M: int) -> tuple[int | None, str]:
    """The best F.linear algorithm the alg-search step found for the counter shape at M (nearest M below), if any."""
    path = out / "cslt-algsearch.json"
    if not path.exists():
        return None, "no alg-search results in this run"
    cases = [c for c in json.loads(path.read_text())["cases"]
             if c.get("dtype") == dtype and (c["N"], c["K"]) == COUNTER_SHAPE[1:] and c["M"] <= M and c["best"].get("F.linear")]
    if not cases:
        return None, "no alg-search case for this shape at or below this M"
    case = max(cases, key=lambda c: c["M"])
    return int(case["best"]["F.linear"]["alg_id"]), f"alg-search's fastest F.linear algorithm at M={case['M']}"


def counters_target(out: Path) -> None:
    """The program ncu profiles: for each M, cuBLAS, 2:4 algorithm 0 and 2:4 best, each after a marker spin."""
    from twofour.bench import sparse_weight
    from twofour.bench.counters import MS
    from twofour.structure import prune

    _, N, K = COUNTER_SHAPE
    gen = torch.Generator().manual_seed(0)
    W = prune((torch.randn(N, K, generator=gen) / K**0.5).to("cuda", torch.float16))[0]
    plan, order = [], []
    for M in MS:
        x = torch.randn(M, K, generator=gen).to("cuda", torch.float16)
        best, source = _best_alg(out, "float16", M)
        if best is None:
            xp = torch.nn.functional.pad(x, (0, 0, 0, -M % 8))
            best, source = int(torch._cslt_sparse_mm_search(torch._cslt_compress(W), xp.t())), "torch._cslt_sparse_mm_search"
        for variant, weight in (("cuBLAS", W), ("alg 0", sparse_weight(W, "cuSPARSELt", 0)),
                                (f"alg {best} (best: {source})", sparse_weight(W, "cuSPARSELt", best))):
            plan.append((x, weight))
            order.append(f"M={M} {variant}")
    for x, weight in plan:  # warm-up, outside the profiled range
        torch.nn.functional.linear(x, weight)
    torch.cuda.synchronize()
    (out / "counters-order.json").write_text(json.dumps(order))
    torch.cuda.profiler.start()
    for x, weight in plan:
        torch.cuda._sleep(20_000)
        torch.nn.functional.linear(x, weight)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def counters(out: Path, *, rehearse: bool, budget_s: float | None = None) -> int:
    """DRAM bytes, SM throughput, tensor-pipe use of cuBLAS and 2:4 algorithm 0 / best at M = 1, 16, 256, 2048 (ncu)."""
    import shutil
    import subprocess

    from twofour.bench.counters import CANDIDATES, MS, SCHEMA, choose_metrics, not_available, parse_csv, split_variants

    prov = provenance("scripts/gpu_measure.py counters" + (" --rehearse" if rehearse else ""),
                      device="cpu" if rehearse else "cuda")
    path = out / ("counters-rehearsal.json" if rehearse else "counters.json")
    ncu = shutil.which("ncu") or next((str(p) for p in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))), None) \
        if not rehearse else None
    if ncu is None:
        record = not_available("ncu (Nsight Compute) is not on this machine's PATH" if not rehearse
                               else "rehearsal: no ncu on a CPU; the GPU run uses it where it exists", prov)
        path.write_text(json.dumps(record, indent=1) + "\n")
        _log(f"counters: not available: {record['reason']}")
        return 0
    limit = max(30.0, (budget_s or 120.0) - 5.0)
    try:
        query = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=60)
        metrics = choose_metrics(query.stdout)
        if not metrics:
            raise RuntimeError(f"ncu --query-metrics listed none of the metrics wanted: {query.stderr.strip()[:300]}")
        cmd = [ncu, "--csv", "--page", "raw", "--profile-from-start", "off", "--clock-control", "none",
               "--metrics", ",".join(metrics), sys.executable, str(Path(__file__).resolve()), "counters-target",
               "--out", str(out)]
        _log(f"counters: {' '.join(cmd[:9])} ... ({len(metrics)} metrics, limit {limit:.0f}s)")
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        (out / "counters-ncu.log").write_text(run.stdout + "\n--- stderr ---\n" + run.stderr)
        if run.returncode != 0:
            raise RuntimeError(f"ncu exited {run.returncode}: {(run.stderr or run.stdout).strip().splitlines()[-1:]}")
        order = json.loads((out / "counters-order.json").read_text())
        variants = split_variants(parse_csv(run.stdout), order)
    except Exception as exc:  # no counters is a result too, said in words
        record = not_available(f"ncu could not read the counters: {type(exc).__name__}: {str(exc)[:400]}", prov)
        path.write_text(json.dumps(record, indent=1) + "\n")
        _log(f"counters: not available: {record['reason']}")
        return 0
    label, N, K = COUNTER_SHAPE
    record = {"schema": SCHEMA, "provenance": prov, "available": True, "shape": label, "N": N, "K": K,
              "dtype": "float16", "Ms": list(MS), "metrics": {m: CANDIDATES[m] for m in metrics},
              "ncu": {"path": ncu, "options": "--profile-from-start off --clock-control none (caches flushed per "
                                              "kernel replay: ncu's default --cache-control all)"},
              "variants": variants}
    path.write_text(json.dumps(record, indent=1) + "\n")
    for name, rows in variants.items():
        _log(f"counters {name}: " + "; ".join(f"{r['kernel'][:40]} " + ", ".join(
            f"{k.split('.')[0].split('__')[-1]}={v:.3g}" for k, v in r["metrics"].items() if isinstance(v, float))
            for r in rows))
    return 0


def kernel_tables(out: Path, *, rehearse: bool) -> None:
    from twofour.dispatch import kernels, probe
    from twofour.structure import prune

    here = probe(try_kernels=True)
    record = {"schema": "twofour-kernels/1", "provenance": provenance("scripts/gpu_measure.py kernels"),
              "probe": [list(r) for r in here.rows()], "cases": []}
    print(here, flush=True)
    device = here.env.device
    N, K = (14336, 4096) if not rehearse else (256, 512)
    gen = torch.Generator().manual_seed(0)
    for dtype in ((torch.float16, torch.bfloat16) if not rehearse else (torch.float32,)):
        W24 = prune((torch.randn(N, K, generator=gen) / K**0.5).to(device, dtype))[0]
        forms = {"dense tensor (2:4 zeros)": W24}
        if here.env.sparse_ok:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*prototype.*")
                forms["to_sparse_semi_structured"] = torch.sparse.to_sparse_semi_structured(W24)
        for M in ((1, 16, 4096) if not rehearse else (1, 16)):
            x = torch.randn(M, K, generator=gen).to(device, dtype)
            for form, W in forms.items():
                rep = kernels(torch.nn.functional.linear, x, W, warmup=3, calls=5)
                record["cases"].append({
                    "M": M, "N": N, "K": K, "dtype": str(dtype).replace("torch.", ""), "weight": form,
                    "summary": rep.summary(), "device": rep.device, "calls": rep.calls, "time_us": rep.time_us,
                    "rows": [{"name": r.name, "class": r.cls, "device": r.device, "count": r.count, "time_us": r.time_us}
                             for r in rep.rows],
                })
                _log(f"kernels: M={M} {dtype} {form}: {rep.summary()}")
                print(rep.table(top=6), flush=True)
    (out / "kernels.json").write_text(json.dumps(record, indent=1) + "\n")


def traces(out: Path, *, rehearse: bool) -> None:
    """Chrome traces of one decode step (the seven linear layers of two blocks) at M = 16."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from twofour.models import LLAMA_3_8B, linear_shapes
    from twofour.structure import prune

    on_gpu = torch.cuda.is_available() and not rehearse
    device = torch.device("cuda" if on_gpu else "cpu")
    dtype = torch.float16 if on_gpu else torch.float32
    scale = 1 if on_gpu else 16
    shapes = [(s.name, s.out_features // scale, s.in_features // scale) for s in linear_shapes(LLAMA_3_8B, include_lm_head=False)]
    gen = torch.Generator().manual_seed(0)
    layers = []
    for block in range(2):
        for name, N, K in shapes:
            W = prune((torch.randn(N, K, generator=gen) / K**0.5).to(device, dtype))[0]
            layers.append((f"block{block}.{name}", W))
    M = 16
    xs = {K: torch.randn(M, K, generator=gen).to(device, dtype) for _, _, K in shapes}

    def step(weights):
        for name, W in weights:
            with record_function(name):
                torch.nn.functional.linear(xs[W.shape[1]], W)

    variants = {"dense": layers}
    if on_gpu:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*prototype.*")
            variants["sparse"] = [(n, torch.sparse.to_sparse_semi_structured(W)) for n, W in layers]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    for label, weights in variants.items():
        for how in (("eager", "graph") if on_gpu else ("eager",)):
            if how == "eager":
                run = lambda weights=weights: step(weights)  # noqa: E731
            else:
                graph = torch.cuda.CUDAGraph()
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        step(weights)
                torch.cuda.current_stream().wait_stream(side)
                with torch.cuda.graph(graph):
                    step(weights)
                run = graph.replay
            for _ in range(3):
                run()
            if on_gpu:
                torch.cuda.synchronize()
            with profile(activities=activities) as prof:
                for i in range(3):
                    with record_function(f"decode_step_{i}"):
                        run()
                if on_gpu:
                    torch.cuda.synchronize()
            raw = out / f"trace-{label}-{how}.json"
            prof.export_chrome_trace(str(raw))
            with open(raw, "rb") as src, gzip.open(str(raw) + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            raw.unlink()
            _log(f"traces: {label} {how}: {raw.name}.gz ({(out / (raw.name + '.gz')).stat().st_size:,} bytes)")


DECODE_BATCHES = (1, 16, 64)


def decode_plan(rehearse: bool):
    """Whole decode steps of Llama-3-8B, fp16 then bf16, batch 1 to 64 at context 512: dense, 2:4 with
    algorithm 0 and 2:4 with the searched algorithm pinned, each one CUDA graph replayed back to back.
    The same order on the tiny model to rehearse."""
    from twofour.models import LLAMA_3_8B
    from twofour.serve import TINY, make_plan

    cfg = TINY if rehearse else LLAMA_3_8B
    # The rehearsal keeps the plan's order and modes and shrinks every count: it checks the flow, not speed.
    return make_plan(cfg, dtypes=["float16", "bfloat16"], batches=list(DECODE_BATCHES), context=8 if rehearse else 512,
                     prompt_lens=[], modes=["graph", "graph-searched"], decode_steps=4 if rehearse else 16,
                     warmup=0 if rehearse else 2, repeats=1 if rehearse else 5, profiled_calls=1 if rehearse else 2)


def decode(out: Path, *, rehearse: bool, budget_s: float | None, plan=None) -> int:
    """Whole decode steps and prefill, dense vs 2:4 (twofour.serve.run_plan); 1 if nothing was measured."""
    from twofour.serve import RehearsalOps, ops_for, run_plan

    if rehearse:
        torch.set_num_threads(1)  # tiny matmuls: a second thread only waits on a busy machine
    plan = plan if plan is not None else decode_plan(rehearse)
    command = ("scripts/gpu_measure.py decode (twofour.serve.run_plan: Llama-3-8B all layers, fp16 and bf16, decode "
               f"batch {'/'.join(map(str, DECODE_BATCHES))} at context 512, graph (algorithm 0) and graph-searched "
               f"(searched algorithm pinned), {plan.decode_steps} steps per window; warmup {plan.warmup} repeats "
               f"{plan.repeats}, budget {budget_s} s)")
    res = run_plan(plan, RehearsalOps() if rehearse else ops_for("cuda"),
                   out=out / ("decode-rehearsal.json" if rehearse else "decode-llama-3-8b.json"),
                   command=command, budget_s=budget_s, log=_log)
    for line in res.problems():
        _log(f"problem: {line}")
    for row in res.speedups():
        _log(f"{row['phase']} {row['dtype']} {row['mode']} batch {row['batch']} P {row['prompt_len']}: "
             f"dense {row['dense_ms']:.3f} ms, 2:4 {row['sparse_ms']:.3f} ms, speedup {row['speedup']:.2f}")
    return 0 if res.measured() else 1


# What the run writes (rehearsal name, GPU name) -> its name among the package's data files.
SHIPPED = {"bench-llama-3-8b.json": "bench-{gpu}-llama-3-8b-{day}.json",
           "decode-llama-3-8b.json": "decode-{gpu}-llama-3-8b-{day}.json",
           "cslt-algsearch.json": "cslt-algsearch-{gpu}-{day}.json",
           "counters.json": "counters-{gpu}-{day}.json"}
REHEARSAL_NAMES = {"bench-llama-3-8b.json": "bench-llama-3-8b.json", "decode-llama-3-8b.json": "decode-rehearsal.json",
                   "cslt-algsearch.json": "cslt-algsearch-rehearsal.json", "counters.json": "counters-rehearsal.json"}


def file_run(run: Path, repo: Path, *, rehearse: bool) -> int:
    """File a finished run: the folder as benchmarks/gpu-runs/<day>-<gpu>/, its results as src/twofour/data/ files.

    Never replaces a file: an existing run folder gets a suffix, an existing data file is left and
    reported. A run without results files (steps that only test) files nothing, and says so.
    """
    import shutil

    found = {name: run / (REHEARSAL_NAMES[name] if rehearse else name) for name in SHIPPED}
    found = {name: p for name, p in found.items() if p.exists()}
    if not found:
        _log(f"file: no results in {run}; nothing filed")
        return 0
    prov = json.loads(next(iter(found.values())).read_text())["provenance"]
    gpu = "".join(c if c.isalnum() else "-" for c in (prov.get("gpu_name") or "cpu-rehearsal").lower()).strip("-")
    while "--" in gpu:
        gpu = gpu.replace("--", "-")
    day = str(prov["date"])[:10]
    target = repo / "benchmarks" / "gpu-runs" / f"{day}-{gpu}"
    n = 2
    while target.exists():
        target = target.with_name(f"{day}-{gpu}-{n}")
        n += 1
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("*.tgz", "filed-*"))
    _log(f"file: run folder {target}")
    data = repo / "src" / "twofour" / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, src in found.items():
        dest = data / SHIPPED[name].format(gpu=gpu, day=day.replace("-", ""))
        if dest.exists():
            _log(f"file: {dest} exists; left as it is (results are never replaced)")
            continue
        shutil.copyfile(src, dest)
        _log(f"file: {dest}")
    return 0


STEPS = ["decode", "alg-search", "counters", "bench-8b", "bench-ref", "bench-70b", "kernels", "traces",
         "counters-target", "file"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=STEPS)
    ap.add_argument("--out", required=True, type=Path, help="the run's folder")
    ap.add_argument("--rehearse", action="store_true", help="tiny CPU versions of each step (no GPU numbers)")
    ap.add_argument("--budget", type=float, help="seconds for the step; work not started by then is left out")
    ap.add_argument("--repo", type=Path, help="file: the repository to file the run into (default: this one)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.step == "file":
        return file_run(args.out, args.repo or Path(__file__).resolve().parents[1], rehearse=args.rehearse)
    if not args.rehearse and not torch.cuda.is_available():
        print("gpu_measure.py: no CUDA GPU; pass --rehearse to run the CPU versions", file=sys.stderr)
        return 3
    if args.step == "bench-8b":
        # fp16 with every timing mode first (what the model is fitted to); bf16 lone and graph
        bench(args.out, models=["Llama-3-8B"], Ms=SMALL_MS, plan=[("float16", MODES), ("bfloat16", ("lone", "graph"))],
              name="llama-3-8b", rehearse=args.rehearse, budget_s=args.budget)
    elif args.step == "bench-70b":
        bench(args.out, models=["Llama-3-70B"], Ms=[1, 16, 256, 4096, 16384],
              plan=[("float16", ("lone", "graph", "kernel"))], name="llama-3-70b", rehearse=args.rehearse,
              budget_s=args.budget)
    elif args.step == "bench-ref":
        bench_reference(args.out, rehearse=args.rehearse)
    elif args.step == "alg-search":
        alg_search(args.out, rehearse=args.rehearse, budget_s=args.budget)
    elif args.step == "counters":
        return counters(args.out, rehearse=args.rehearse, budget_s=args.budget)
    elif args.step == "counters-target":
        counters_target(args.out)
    elif args.step == "decode":
        return decode(args.out, rehearse=args.rehearse, budget_s=args.budget)
    elif args.step == "kernels":
        kernel_tables(args.out, rehearse=args.rehearse)
    else:
        traces(args.out, rehearse=args.rehearse)
    return 0


if __name__ == "__main__":
    sys.exit(main())
