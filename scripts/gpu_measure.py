#!/usr/bin/env python3
"""gpu_measure.py — the measurements `make gpu-check` records on a GPU, one step at a time.

Steps (each writes its files into --out as soon as it has them, so a step cut short by its
time limit keeps what it measured):

  bench-8b    dense vs 2:4 on the Llama-3-8B linear shapes, M = 1 ... 16384 (powers of two):
              fp16 with every timing mode (eager, graph, stream, kernel), then bf16 eager and
              graph; the results file is rewritten after every (shape, dtype) group
  bench-ref   the GEMM shapes of published measurements (pytorch#177866's among them), eager,
              graph and kernel timings: the same shape on one more GPU
  bench-70b   the Llama-3-70B shapes, fp16, M = 1, 16, 256, 4096, 16384, eager/graph/kernel
  alg-search  each cuSPARSELt algorithm ID the library accepts (tried upward until refused) for the
              Llama-3-8B shapes at M = 1 ... 256, through F.linear and as a direct _cslt_sparse_mm,
              with kernel names, and the ID the library's search returns: is the slow decode
              kernel PyTorch's choice (algorithm 0) or the library's best?
  kernels     probe(try_kernels=True) and the profiler's kernel table (twofour.dispatch.kernels)
              for dense and 2:4 F.linear at Llama-3-8B gate_proj, M = 1, 16, 4096, fp16 and bf16
  traces      Chrome traces (torch.profiler, gzipped) of one decode step of the linear layers
              of two Llama-3-8B blocks at M = 16: dense and 2:4, eager and CUDA-graph replay
  decode      whole steps of Llama-3-8B (twofour.serve): fp16 then bf16 decode at batch 1 and 32
              (context 512) eager / graph / graph with searched cuSPARSELt algorithms, dense and
              2:4; then TTFT at 512 and 4096 eager / graph; then torch.compile at batch 1 if time
              is left (--budget seconds in all). The results file is rewritten after every item;
              a mode that fails (a torch without cuSPARSELt, a graph that does not capture) is
              recorded as an error and the run goes on

On a CPU, --rehearse runs each step on tiny float32 shapes (no GPU number is produced) to
prove the plumbing; for decode it runs the same plan on the tiny model with a fake CUDA device
(twofour.serve.RehearsalOps: packing, graph capture and the algorithm search stand in on the CPU).

Usage: python scripts/gpu_measure.py STEP --out DIR [--rehearse] [--budget SECONDS]
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

from twofour.bench import MODES, Results, model_shapes, provenance, sweep

SMALL_MS = [2**i for i in range(15)]  # 1 .. 16384


def _log(msg: str) -> None:
    print(f"[gpu_measure {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _merge_save(parts: list[Results], path: Path, command: str) -> None:
    merged = Results(provenance=dict(parts[0].provenance, command=command), settings=parts[0].settings,
                     points=[p for r in parts for p in r.points])
    merged.save(path)


def bench(out: Path, *, models: list[str], Ms: list[int], plan: list[tuple[str, tuple[str, ...]]],
          name: str, rehearse: bool) -> None:
    """Sweep ``plan`` = [(dtype, modes), ...] over the models' shapes; save after every group."""
    command = (f"scripts/gpu_measure.py {name} (twofour.bench.sweep: models={models} Ms={Ms} "
               f"dtype/modes={[(d, list(m)) for d, m in plan]} warmup=3 repeats=10)")
    shapes = model_shapes(models)
    if rehearse:
        shapes, Ms, plan = [("rehearsal 256x512", 256, 512)], Ms[:3], [("float32", ("eager",))]
    parts: list[Results] = []
    for dtype, modes in plan:
        for shape in shapes:
            t0 = time.perf_counter()
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
    """The published GEMM shapes, eager / graph / kernel, one results file."""
    command = "scripts/gpu_measure.py bench-ref (twofour.bench.sweep per published shape, warmup=3 repeats=10)"
    points = REFERENCE_POINTS if not rehearse else [(8, 64, 128, "float32"), (16, 128, 64, "float32")]
    modes = ("eager", "graph", "kernel") if not rehearse else ("eager",)
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


class CudaCase:
    """twofour.bench.algsweep.CaseOps on a CUDA GPU for one (W24, M): both call paths, CUDA-graph timings."""

    def __init__(self, W24, M: int, device, gen):
        from twofour.bench import sparse_weight

        self.device, self.M = device, M
        K = W24.shape[1]
        self.Mp = -(-M // 8) * 8  # the fp16 row multiple PyTorch pads cuSPARSELt inputs to
        self.x = torch.randn(M, K, generator=gen).to(device, torch.float16)
        self.xp = torch.nn.functional.pad(self.x, (0, 0, 0, self.Mp - M))
        self.W24, self.Wc = W24, torch._cslt_compress(W24)
        self.ref = torch.nn.functional.linear(self.x, W24).float()
        self._sparse_weight = sparse_weight
        self._linear: dict = {}

    def _weight(self, alg_id: int):
        """A to_sparse_semi_structured weight carrying alg_id: through sparse_weight, else by setting the attribute."""
        if alg_id not in self._linear:
            try:
                Ws, how = self._sparse_weight(self.W24, "cuSPARSELt", alg_id), "twofour.bench.sparse_weight"
            except RuntimeError:  # a torch that does not take it at conversion: set the attribute F.linear reads
                Ws, how = self._sparse_weight(self.W24, "cuSPARSELt"), "alg_id_cusparselt set after conversion"
                Ws.alg_id_cusparselt = alg_id
            self._linear[alg_id] = (Ws, how)
        return self._linear[alg_id][0]

    def call(self, path, alg_id):
        if path == "_cslt_sparse_mm":
            return lambda: torch._cslt_sparse_mm(self.Wc, self.xp.t(), alg_id=alg_id).t()[: self.M]
        W = self._weight(alg_id)
        return lambda: torch.nn.functional.linear(self.x, W)

    def dense(self):
        return lambda: torch.nn.functional.linear(self.x, self.W24)

    def rel_err(self, y):
        return float((y.float() - self.ref).abs().max() / self.ref.abs().max())

    def time_ms(self, fn, repeats):
        from twofour.bench.gpu_timing import time_graph

        return time_graph(fn, device=self.device, warmup=2, repeats=repeats)

    def kernel_names(self, fn):
        from twofour.bench.gpu_timing import profile_kernels

        return profile_kernels(fn, device=self.device, calls=2)["kernels"]

    def search(self):
        return torch._cslt_sparse_mm_search(self.Wc, self.xp.t())

    def library_max(self):
        top = getattr(torch.backends.cusparselt, "get_max_alg_id", lambda: None)()
        return int(top) if top is not None else None


def alg_search(out: Path, *, rehearse: bool) -> None:
    """Is the slow 2:4 decode kernel PyTorch's choice or cuSPARSELt's best? Each algorithm ID the library accepts.

    For the Llama-3-8B shapes at small M (twofour.bench.algsweep.sweep_case): the IDs the library
    accepts, tried upward from 0 until it refuses one (no maximum assumed); each timed as a
    CUDA-graph replay with L2 flushed through F.linear (a to_sparse_semi_structured weight with
    that alg_id, x at its real M) and as a direct torch._cslt_sparse_mm on x padded to 8 rows;
    the kernel names of each; each result checked against dense; and the ID the library's search
    returns, timed too. --rehearse runs the same flow on the CPU with dense stand-ins
    (twofour.bench.algsweep.RehearsalCase): no GPU number is produced.
    """
    from twofour.bench.algsweep import RehearsalCase, sweep_case
    from twofour.structure import prune

    name = "cslt-algsearch-rehearsal.json" if rehearse else "cslt-algsearch.json"
    device = torch.device("cpu" if rehearse else "cuda")
    record = {"schema": "twofour-cslt-algsearch/2",
              "provenance": provenance("scripts/gpu_measure.py alg-search" + (" --rehearse" if rehearse else ""), device=device),
              "rehearsal": rehearse, "paths": ["_cslt_sparse_mm", "F.linear"],
              "timer": "CUDA-graph replay, L2 flushed, median of 10" if not rehearse else "CPU wall clock (rehearsal)",
              "cases": []}
    gen = torch.Generator().manual_seed(0)
    t0 = time.perf_counter()
    shapes = model_shapes(["Llama-3-8B"]) if not rehearse else [("rehearsal 32x64", 32, 64)]
    for label, N, K in shapes:
        W24 = None if rehearse else prune((torch.randn(N, K, generator=gen) / K**0.5).to(device, torch.float16))[0]
        for M in ((1, 16, 64, 256) if not rehearse else (1, 3)):
            ops = CudaCase(W24, M, device, gen) if not rehearse else RehearsalCase(M, N, K, accepts=3, search_id=5)
            case = {"shape": label, "M": M, "M_padded": -(-M // 8) * 8, "N": N, "K": K,
                    **sweep_case(ops, repeats=10 if not rehearse else 2)}
            direct = case["best"]["_cslt_sparse_mm"]
            zero = next((c for c in case["configs"] if c["path"] == "_cslt_sparse_mm" and c["alg_id"] == 0 and "ms" in c), None)
            # the fields readers of schema /1 use: the direct path's algorithm 0 and its best
            case["default_ms"] = zero["ms"] if zero else None
            case["best_direct"] = direct
            record["cases"].append(case)
            (out / name).write_text(json.dumps(record, indent=1) + "\n")
            lin = case["best"]["F.linear"]
            _log(f"alg-search {label} M={M}: accepted IDs {case['accepted_alg_ids'][:1]}..{case['accepted_alg_ids'][-1:]} "
                 f"({case['stopped']}); dense {case['dense_ms'] * 1e3:.1f} us; best direct "
                 f"{(direct['ms'] * 1e3 if direct else float('nan')):.1f} us (alg {direct and direct['alg_id']}), best F.linear "
                 f"{(lin['ms'] * 1e3 if lin else float('nan')):.1f} us (alg {lin and lin['alg_id']}); search says "
                 f"{case['search_alg_id']} (timed: {case['search_timed']}); {time.perf_counter() - t0:.0f}s")


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


def decode_plan(rehearse: bool):
    """The decode step's plan: Llama-3-8B on the GPU; the same order and modes on the tiny model to rehearse."""
    from dataclasses import replace

    from twofour.models import LLAMA_3_8B
    from twofour.serve import TINY, make_plan

    cfg = TINY if rehearse else LLAMA_3_8B
    # The rehearsal keeps the plan's order and modes and shrinks every count: it checks the flow, not speed.
    common = {"dtypes": ["float16", "bfloat16"], "context": 8 if rehearse else 512, "decode_steps": 4 if rehearse else 16,
              "warmup": 0 if rehearse else 3, "repeats": 1 if rehearse else 10, "profiled_calls": 1 if rehearse else 3}
    plan = make_plan(cfg, batches=[1, 32], prompt_lens=[16, 32] if rehearse else [512, 4096],
                     modes=["eager", "graph", "graph-searched"], prefill_modes=["eager", "graph"], **common)
    compiled = make_plan(cfg, batches=[1], prompt_lens=[], modes=["compile"], **dict(common, dtypes=["float16"]))
    return replace(plan, items=plan.items + compiled.items)  # last: it compiles for a minute and is optional


def decode(out: Path, *, rehearse: bool, budget_s: float | None, plan=None) -> int:
    """Whole decode steps and prefill, dense vs 2:4 (twofour.serve.run_plan); 1 if nothing was measured."""
    from twofour.serve import RehearsalOps, ops_for, run_plan

    if rehearse:
        torch.set_num_threads(1)  # tiny matmuls: a second thread only waits on a busy machine
    plan = plan if plan is not None else decode_plan(rehearse)
    command = ("scripts/gpu_measure.py decode (twofour.serve.run_plan: Llama-3-8B all layers, fp16 and bf16, decode "
               "batch 1/32 at context 512 eager/graph/graph-searched, TTFT 512/4096 eager/graph, compile fp16 batch 1; "
               f"warmup {plan.warmup} repeats {plan.repeats}, budget {budget_s} s)")
    res = run_plan(plan, RehearsalOps() if rehearse else ops_for("cuda"),
                   out=out / ("decode-rehearsal.json" if rehearse else "decode-llama-3-8b.json"),
                   command=command, budget_s=budget_s, log=_log)
    for line in res.problems():
        _log(f"problem: {line}")
    for row in res.speedups():
        _log(f"{row['phase']} {row['dtype']} {row['mode']} batch {row['batch']} P {row['prompt_len']}: "
             f"dense {row['dense_ms']:.3f} ms, 2:4 {row['sparse_ms']:.3f} ms, speedup {row['speedup']:.2f}")
    return 0 if res.measured() else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["bench-8b", "bench-ref", "bench-70b", "kernels", "traces", "alg-search", "decode"])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--rehearse", action="store_true", help="tiny CPU versions of each step (no GPU numbers)")
    ap.add_argument("--budget", type=float, help="decode: seconds for the whole step; items not started by then are skipped")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.rehearse and not torch.cuda.is_available():
        print("gpu_measure.py: no CUDA GPU; pass --rehearse to run the CPU versions", file=sys.stderr)
        return 3
    if args.step == "bench-8b":
        # fp16 with every timing mode first (what the model is fitted to); bf16 eager and graph
        bench(args.out, models=["Llama-3-8B"], Ms=SMALL_MS, plan=[("float16", MODES), ("bfloat16", ("eager", "graph"))],
              name="llama-3-8b", rehearse=args.rehearse)
    elif args.step == "bench-70b":
        bench(args.out, models=["Llama-3-70B"], Ms=[1, 16, 256, 4096, 16384],
              plan=[("float16", ("eager", "graph", "kernel"))], name="llama-3-70b", rehearse=args.rehearse)
    elif args.step == "bench-ref":
        bench_reference(args.out, rehearse=args.rehearse)
    elif args.step == "alg-search":
        alg_search(args.out, rehearse=args.rehearse)
    elif args.step == "decode":
        return decode(args.out, rehearse=args.rehearse, budget_s=args.budget)
    elif args.step == "kernels":
        kernel_tables(args.out, rehearse=args.rehearse)
    else:
        traces(args.out, rehearse=args.rehearse)
    return 0


if __name__ == "__main__":
    sys.exit(main())
