"""``twofour bench``: time dense vs 2:4 GEMMs on this machine and write a results file.

On a GPU it times dense and every available 2:4 backend over Llama-3 linear shapes; on a CPU,
the CPU's own dense float32 roofline (2:4 kernels need a GPU).

    twofour bench --quick                      # a few points, under a minute on 2 CPU cores
    twofour bench --shapes llama-3-8b 4096x14336 --m 1 16 256 --out results.json
    twofour bench --alg-id 1 --shapes llama-3-8b --m 1 16 --modes lone graph kernel   # cuSPARSELt algorithm 1
    twofour bench --decode --model llama-3-8b --layers 4 --batch 1 32 --modes eager graph --out decode.json

Suspect points are flagged and listed (:mod:`twofour.bench.flags`). ``--decode`` times whole
decode steps and prefill instead (:mod:`twofour.serve`); on a CPU the tiny model, dense only.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from .main import UserError
from .._common.text import printable
from ._output import check_output_file, saving, show, write_error
from ..vocabulary import CUSPARSELT, DECODE_DTYPES, DECODE_MODES, MEASURED_DTYPES, TORCH_NAMES, dtype_key

# Quick runs: one shape and four M on CPU (fp32 on 2 cores: ~seconds); GPU quick is larger.
_QUICK_CPU = {"shapes": ["4096x4096"], "Ms": [1, 16, 128, 1024], "repeats": 5, "warmup": 1}
_QUICK_GPU = {"shapes": ["llama-3-8b"], "Ms": [1, 16, 256, 4096], "repeats": 10, "warmup": 3}
# A CPU cannot sweep to M=16384 on 70B shapes in reasonable time; the cap is printed.
_CPU_DEFAULT_MS = [1, 4, 16, 64, 256, 1024]
# Bounds on what a run may ask for: past them a typo would allocate tens of gigabytes or run for days.
_MAX_DIM = 1 << 20  # M, N or K
_MAX_OPERAND = 1 << 32  # elements of the largest of x, W and y
_MAX_REPEATS = 100_000
# What --decode plans by default, and the flags it shares with the GEMM sweep.
_GPU_DEFAULTS = {"model": "llama-3-8b", "modes": ["eager", "graph", "graph-searched"], "dtypes": ["float16", "bfloat16"]}
_CPU_DEFAULTS = {"model": "tiny", "modes": ["eager"], "dtypes": ["float32"]}
_QUICK = {"batches": [1, 32], "prompts": [512]}
_OWN_SHAPES = "the model's own shapes are timed"
_GEMM_ONLY = (("alg_id", "--alg-id", "its graph-searched mode searches the algorithm per GEMM"),
              ("shapes", "--shapes", _OWN_SHAPES), ("Ms", "--m", _OWN_SHAPES),
              ("no_flush", "--no-flush", _OWN_SHAPES))
_DECODE_ONLY = (("model", "--model"), ("checkpoint", "--checkpoint"), ("layers", "--layers"), ("batches", "--batch"), ("context", "--context"),
                ("prompts", "--prompt"))
_MAX_BATCH = 4096  # far beyond a real decode batch; past it a typo allocates a huge KV cache


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a few points only (a smoke run)")
    parser.add_argument("--shapes", nargs="+", metavar="SHAPE",
                        help="model presets (llama-3-8b, llama-3-70b) or NxK weight shapes such as 4096x14336")
    parser.add_argument("--m", nargs="+", type=int, metavar="M", dest="Ms", help="token counts (rows of x)")
    parser.add_argument("--dtypes", nargs="+", metavar="DTYPE",
                        help="float16 / bfloat16 on GPU (default both); CPU always uses float32")
    parser.add_argument("--repeats", type=int, help="timed calls per point (default 10; quick CPU 5)")
    parser.add_argument("--warmup", type=int, help="untimed calls before timing (default 3)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--no-flush", action="store_true", help="do not flush L2 between timed calls (GPU)")
    parser.add_argument("--modes", nargs="+", metavar="MODE",
                        help="timings per point (GPU): lone (default; one call on an idle device, host set-up included), "
                             "graph (CUDA-graph replay: plans cached), stream (back-to-back calls), "
                             "kernel (profiler kernel time only); lone is always first. With --decode: eager, "
                             "graph, graph-searched, compile (default on GPU: eager graph graph-searched)")
    parser.add_argument("--alg-id", type=int, metavar="N", dest="alg_id",
                        help="time cuSPARSELt algorithm N for the 2:4 kernel instead of PyTorch's default 0, set through "
                             "PyTorch's own path (to_sparse_semi_structured(..., alg_id=N), or "
                             "SparseSemiStructuredTensor._DEFAULT_ALG_ID on older torch): GPU with cuSPARSELt only")
    parser.add_argument("--out", metavar="FILE", help="results JSON (default: bench-<device>-<time>.json here, "
                                                      "decode-<device>-<time>.json with --decode)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    group = parser.add_argument_group("whole steps (--decode)")
    group.add_argument("--decode", action="store_true",
                       help="time whole decode steps and prefill of a model (twofour.serve) instead of single GEMMs")
    group.add_argument("--model", metavar="NAME",
                       help="with --decode: llama-3-8b (GPU default), llama-3-70b, or tiny (the CPU's only choice)")
    group.add_argument("--layers", type=int, metavar="N",
                       help="with --decode: build only N blocks (default all; the embedding and LM head stay whole)")
    group.add_argument("--batch", type=int, nargs="+", metavar="B", dest="batches",
                       help="with --decode: decode batch sizes (default 1 8 32 64)")
    group.add_argument("--context", type=int, metavar="C",
                       help="with --decode: tokens already cached when the decode steps run (default 512)")
    group.add_argument("--checkpoint", metavar="DIR",
                       help="with --decode: time this Llama-style model folder's own shapes and weights (config.json + "
                            "safetensors, compressed-tensors 2:4 included) instead of random ones")
    group.add_argument("--prompt", type=int, nargs="+", metavar="P", dest="prompts",
                       help="with --decode: prompt lengths for the time to first token (default 512 4096)")


def run(args: argparse.Namespace) -> int:
    if args.decode:
        for attr, flag, why in _GEMM_ONLY:
            if getattr(args, attr) is not None and getattr(args, attr) is not False:  # --alg-id 0 counts
                raise UserError(f"{flag}: a GEMM-sweep option, not used with --decode ({why}); "
                                "drop one of them")
    else:
        for attr, flag in _DECODE_ONLY:
            if getattr(args, attr) is not None:
                raise UserError(f"{flag}: only used with --decode (whole steps); add --decode, or use --shapes for GEMMs")
    from ..device import environment

    env = environment()
    if args.device == "cuda" and not env.cuda_available:
        raise UserError("--device cuda: torch sees no CUDA GPU here; drop --device or use --device cpu")
    on_gpu = env.cuda_available if args.device == "auto" else args.device == "cuda"
    top = 10_000 if args.decode else _MAX_REPEATS
    for name, low in (("repeats", 1), ("warmup", 0)):
        v = getattr(args, name)
        if v is not None and not low <= v <= top:
            raise UserError(f"--{name} must be from {low} to {top:,}, got {v}")
    if args.decode:
        return _run_decode(args, env, on_gpu)
    from ..bench import default_out_path, parse_shape, sweep

    quick = _QUICK_GPU if on_gpu else _QUICK_CPU

    shape_texts = args.shapes or (quick["shapes"] if args.quick else (["llama-3-8b", "llama-3-70b"] if on_gpu else ["llama-3-8b"]))
    try:
        shapes = [s for text in shape_texts for s in parse_shape(text)]
    except ValueError as exc:
        raise UserError(f"--shapes: {printable(exc, 300)}") from None
    Ms = args.Ms or (quick["Ms"] if args.quick else (None if on_gpu else _CPU_DEFAULT_MS))
    if Ms is not None and any(m <= 0 or m > _MAX_DIM for m in Ms):
        raise UserError(f"--m: every M must be an int from 1 to {_MAX_DIM:,}, got {Ms}")
    _check_sizes(shapes, Ms)
    repeats = args.repeats or (quick["repeats"] if args.quick else 10)
    warmup = args.warmup if args.warmup is not None else (quick["warmup"] if args.quick else 3)
    if args.out is not None:  # results are evidence: an existing file is never replaced
        check_output_file(args.out, "--out", make_folder=True, replace=False)
    from ..bench.results import torch_dtype

    for name in args.dtypes or ():  # refused on every device (on CPU it was ignored in silence)
        try:
            torch_dtype(name)
        except (ValueError, TypeError, KeyError) as exc:
            raise UserError(f"--dtypes: {printable(str(exc), 200)}") from None
    if args.alg_id is not None:
        _check_alg_id(args.alg_id, on_gpu, env)

    if on_gpu:
        dtypes = args.dtypes or (["float16"] if args.quick else ["float16", "bfloat16"])
        print(f"GPU: {env.gpu_name} (compute capability {env.capability_str}); 2:4 backends: "
              f"{', '.join(env.backends) or 'none'}. {env.reason}")
        print("2:4 kernel: " + ("PyTorch's default cuSPARSELt algorithm (0)" if args.alg_id is None else
                                f"cuSPARSELt algorithm {args.alg_id}, set through PyTorch's own path"))
    else:
        if args.dtypes and any(d not in ("float32", "fp32") for d in args.dtypes):
            print(f"note: --dtypes {' '.join(args.dtypes)} ignored on CPU: only float32 is timed here", file=sys.stderr)
        dtypes = ["float32"]
        print("No CUDA GPU: 2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0,")
        print("so this run measures only the CPU's own dense float32 roofline (achieved GFLOP/s and GB/s).")
        if not args.Ms and not args.quick:
            print(f"CPU sweep: M limited to {_CPU_DEFAULT_MS} (pass --m to choose others).")

    from ..vocabulary import TIMING_MODES

    modes = ["lone"] + [m for m in (args.modes or []) if m != "lone"]
    unknown = [m for m in modes if m not in TIMING_MODES]
    if unknown:
        raise UserError(f"--modes: unknown {' '.join(unknown)}; valid: {' '.join(TIMING_MODES)}")
    if not on_gpu and modes != ["lone"]:
        raise UserError(f"--modes {' '.join(modes[1:])}: needs a CUDA GPU; on CPU only lone timing runs")
    kwargs = {} if Ms is None else {"Ms": Ms}
    kwargs["modes"] = tuple(modes)
    if args.alg_id is not None:
        kwargs["alg_id"] = args.alg_id
        kwargs["backends"] = (CUSPARSELT.name,)
    try:
        res = sweep(shapes, dtypes=dtypes, device="cuda" if on_gpu else "cpu", warmup=warmup, repeats=repeats,
                    flush_l2=not args.no_flush, progress=not args.no_progress, command=_command(),
                    **kwargs)
    except ValueError as exc:
        raise UserError(str(exc)) from None

    _print_table(res, on_gpu)
    for mode in modes[1:]:
        print(f"\n[{mode}] {'shape':34} {'dtype':9} {'M':>6} {'dense ms':>10} {'backend':>11} {'2:4 ms':>10} "
              f"{'speedup':>8}")
        for r in res.gpu_points(mode):
            print(f"[{mode}] {(r['shape'] or '')[:34]:34} {r['dtype']:9} {r['M']:>6} {r['dense_ms']:>10.4f} "
                  f"{r['backend']:>11} {r['sparse_ms']:>10.4f} {r['dense_ms'] / r['sparse_ms']:>8.2f}")
    _print_flags(res)
    out = args.out or default_out_path(res.provenance)
    with saving("--out", out):
        out = res.save(out)
    return _written(res, out)


def _check_alg_id(alg_id: int, on_gpu: bool, env) -> None:
    """Refuse an algorithm number this machine cannot time, saying why."""
    if alg_id < 0:
        raise UserError(f"--alg-id must be a cuSPARSELt algorithm number >= 0, got {alg_id}")
    if not on_gpu:
        raise UserError(f"--alg-id {alg_id}: picks the cuSPARSELt algorithm of the 2:4 kernel, and 2:4 kernels need an "
                        f"NVIDIA GPU with compute capability >= 8.0; this run has none ({env.reason.split('; ')[0]}). The recorded "
                        "sweep of algorithms 0-7 on an H200 is twofour.bench.recorded_alg_search()")
    if CUSPARSELT.name not in env.backends:
        raise UserError(f"--alg-id {alg_id}: needs PyTorch's cuSPARSELt backend, which is not usable here "
                        f"(backends: {', '.join(env.backends) or 'none'})")
    import torch

    try:
        top = getattr(getattr(torch.backends, "cusparselt", None), "get_max_alg_id", lambda: None)()
    except (RuntimeError, AttributeError):  # an older torch, or the library not loaded yet: no upper bound known
        top = None
    if top is not None and alg_id > int(top):
        # torch's table of maxima lags the library (the H200 run's search chose IDs above it): the library decides
        print(f"note: torch.backends.cusparselt.get_max_alg_id() says {int(top)}; trying --alg-id {alg_id} anyway "
              "(cuSPARSELt refuses an ID it does not have, and the point records its error)", file=sys.stderr)


def _print_flags(res) -> None:
    flags = res.flags()
    if not flags:
        return
    print(f"\nflagged ({len(flags)}; kept out of any fit, see twofour.bench.flags):")
    for f in flags:
        print(f"  {f['rule']:13} [{f['mode']}] {str(f['shape'] or '')[:34]} M={f['M']} {f['dtype']} {f['side']}: {f['evidence']}")


def _check_sizes(shapes, Ms) -> None:
    """Refuse shapes and token counts whose operands no machine here could hold."""
    largest_m = max(Ms) if Ms else 16384
    for label, N, K in shapes:
        if N > _MAX_DIM or K > _MAX_DIM:
            raise UserError(f"--shapes {printable(label, 60)}: N and K must be at most {_MAX_DIM:,}, got {N}x{K}")
        if max(largest_m * K, N * K, largest_m * N) > _MAX_OPERAND:
            raise UserError(
                f"--shapes {printable(label, 60)} with M={largest_m:,}: an operand would hold more than "
                f"{_MAX_OPERAND:,} elements; choose smaller shapes or --m"
            )


def _print_table(res, on_gpu: bool) -> None:
    if on_gpu:
        print(f"{'shape':34} {'dtype':9} {'M':>6} {'dense ms':>10} {'backend':>11} {'2:4 ms':>10} {'speedup':>8}  check")
        for p in res.points:
            for backend, e in (p.get("sparse") or {}).items():
                head = (f"{p['shape'][:34]:34} {p['dtype']:9} {p['M']:>6} {p['dense']['median_ms']:>10.4f} "
                        f"{backend:>11}")
                if "median_ms" in e:
                    s = p["dense"]["median_ms"] / e["median_ms"]
                    print(f"{head} {e['median_ms']:>10.4f} {s:>8.2f}  {'ok' if e['check']['passed'] else 'FAILED'}")
                else:
                    print(f"{head} {'error':>10}  {e.get('error', '')}")
        return
    from ..bench import cpu_roofline

    roof = cpu_roofline(res)
    print(f"{'shape':34} {'M':>6} {'median ms':>10} {'FLOP/byte':>10} {'GFLOP/s':>9} {'GB/s':>7}")
    for r in roof["points"]:
        print(f"{(r['shape'] or '')[:34]:34} {r['M']:>6} {r['t_ms']:>10.3f} {r['intensity']:>10.1f} "
              f"{r['gflops']:>9.1f} {r['gbs']:>7.1f}")
    print(f"best achieved on this CPU (measured ceilings, float32 dense): "
          f"{roof['best_gflops']:.1f} GFLOP/s, {roof['best_gbs']:.1f} GB/s")


def _run_decode(args: argparse.Namespace, env, on_gpu: bool) -> int:
    """``twofour bench --decode`` on the device :func:`run` chose (``env``, ``on_gpu``)."""
    from ..bench import DATA_DIR, default_out_path
    from ..models import PRESETS
    from ..serve import DECODE_STEPS, TINY, OutputRefused, make_plan, ops_for, run_plan
    from ..serve.model import MAX_POSITIONS

    defaults = _GPU_DEFAULTS if on_gpu else _CPU_DEFAULTS
    models = {"tiny": TINY, **{name.lower(): cfg for name, cfg in PRESETS.items()}}

    checkpoint = getattr(args, "checkpoint", None)
    if checkpoint is not None:
        if args.model is not None:
            raise UserError("--checkpoint and --model both name the model; give one")
        cfg = _checkpoint_config(checkpoint, on_gpu)
    else:
        name = (args.model or defaults["model"]).lower()
        if name not in models:
            raise UserError(f"--model: unknown model {show(args.model)}; valid: {', '.join(models)}")
        if not on_gpu and name != "tiny":
            raise UserError(f"--model {name}: on the CPU only --model tiny runs (the model's float32 weights would not "
                            "fit a test machine, and 2:4 needs a GPU anyway); run it on a GPU")
        cfg = models[name]
    if args.layers is not None and not 1 <= args.layers <= cfg.layers:
        raise UserError(f"--layers must be from 1 to {cfg.layers} (the blocks of {cfg.name}), got {args.layers}")

    modes = args.modes or defaults["modes"]
    unknown = [m for m in modes if m not in DECODE_MODES]
    if unknown:
        raise UserError(f"--modes: with --decode unknown {' '.join(unknown)}; valid: {' '.join(DECODE_MODES)}")
    if not on_gpu and any(m.startswith("graph") for m in modes):
        raise UserError(f"--modes {' '.join(m for m in modes if m.startswith('graph'))}: CUDA graphs need a CUDA GPU; "
                        "on the CPU use eager (or compile)")
    dtypes = _dtypes(args.dtypes, defaults["dtypes"], on_gpu)

    batches = args.batches or (_QUICK["batches"] if args.quick else [1, 8, 32, 64])
    prompts = args.prompts or (_QUICK["prompts"] if args.quick else [512, 4096])
    context = 512 if args.context is None else args.context

    bad = [b for b in batches if not 1 <= b <= _MAX_BATCH]
    if bad:
        raise UserError(f"--batch: every batch must be from 1 to {_MAX_BATCH}, got {bad}")
    if not 1 <= context <= MAX_POSITIONS - DECODE_STEPS:
        raise UserError(f"--context must be from 1 to {MAX_POSITIONS - DECODE_STEPS} (Llama 3's {MAX_POSITIONS} "
                        f"positions minus the {DECODE_STEPS} decode steps timed), got {context}")
    bad = [p for p in prompts if not 1 <= p <= MAX_POSITIONS]
    if bad:
        raise UserError(f"--prompt: every prompt length must be from 1 to {MAX_POSITIONS}, got {bad}")
    if args.out is not None:
        check_output_file(args.out, "--out", make_folder=True)

    if on_gpu:
        print(f"GPU: {env.gpu_name} (compute capability {env.capability_str}); 2:4 backends: "
              f"{', '.join(env.backends) or 'none'}. {env.reason}")
    else:
        print("No CUDA GPU: 2:4 sparse kernels need an NVIDIA GPU with compute capability >= 8.0, so this run")
        what = "the checkpoint's model" if checkpoint is not None else "the tiny model"
        print(f"times {what} in float32, dense only (eager), to show the measurement; no GPU number.")
    plan = make_plan(cfg, dtypes=dtypes, batches=batches, context=context, prompt_lens=prompts, modes=modes,
                     weights=("dense", "2:4") if on_gpu else ("dense",), n_layers=args.layers,
                     warmup=3 if args.warmup is None else args.warmup, repeats=args.repeats or 10)
    plan = dataclasses.replace(plan, checkpoint=checkpoint)
    ops = ops_for("cuda" if on_gpu else "cpu")
    # The prediction reads the package's data files: the results must never replace one of them.
    inputs = sorted(DATA_DIR.glob("*.json"))
    out = args.out
    if out is None:
        from ..bench import provenance

        default = default_out_path(provenance("", device=ops.device))
        out = default.with_name("decode-" + default.name.removeprefix("bench-"))
    try:
        res = run_plan(plan, ops, out=out, inputs=inputs, command=_command(), log=print)
    except OutputRefused as exc:
        raise UserError(f"--out: {exc}") from None
    except OSError as exc:
        raise write_error("--out", out, exc) from None
    _print_decode_summary(res)
    return _written(res, out)


def _command() -> str | None:
    """The command line for the results' provenance, when this process is ``twofour bench``."""
    return "twofour bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 and sys.argv[1] == "bench" else None


def _written(res, out) -> int:
    """Say where the results went and list their problems on stderr; the exit code (1 if any)."""
    print(f"results written to {show(out)}")
    problems = res.problems()
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    return 1 if problems else 0


_CPU_CHECKPOINT_BYTES = 2 << 30  # float32 weights a CPU run may build from a folder


def _checkpoint_config(path: str, on_gpu: bool):
    """The folder's shapes (config.json read as data), refused with one line when unusable."""
    from .. import checkpoint
    from ..models import parameter_counts
    from ..serve.checkpoint import config_from

    try:
        with checkpoint.open(path) as reader:
            cfg = config_from(reader.config, name=path.rstrip("/").rsplit("/", 1)[-1] or path)
    except (checkpoint.CheckpointError, ValueError) as exc:
        raise UserError(f"--checkpoint: {exc}") from None
    params = parameter_counts(cfg)["eligible"] + 2 * cfg.vocab * cfg.hidden  # the block linears, embedding, LM head
    if not on_gpu and params * 4 > _CPU_CHECKPOINT_BYTES:
        raise UserError(f"--checkpoint {show(path)}: {params * 4 / 1e9:.1f} GB of float32 weights; on the CPU at most "
                        f"{_CPU_CHECKPOINT_BYTES / 1e9:.1f} GB are built (use --layers N, or a GPU)")
    return cfg


def _dtypes(asked, default, on_gpu: bool) -> list[str]:
    if not asked:
        return list(default)
    measured = [TORCH_NAMES[k] for k in MEASURED_DTYPES]  # float16 bfloat16

    def torch_name(d):
        try:
            return TORCH_NAMES[dtype_key(d)]
        except ValueError:
            return d

    dtypes = [torch_name(d) for d in asked]
    if not on_gpu:
        if any(d != DECODE_DTYPES[-1] for d in dtypes):
            print(f"note: --dtypes {' '.join(asked)} ignored on CPU: only float32 runs here", file=sys.stderr)
        return [DECODE_DTYPES[-1]]
    bad = [d for d, t in zip(asked, dtypes) if t not in measured]
    if bad:
        raise UserError(f"--dtypes: {' '.join(bad)} has no 2:4 tensor-core path measured here; valid: {' '.join(measured)}")
    return list(dict.fromkeys(dtypes))


def _print_decode_summary(res) -> None:
    rows = res.speedups()
    if not rows:
        return
    print(f"\n{'phase':8} {'dtype':9} {'mode':15} {'batch':>5} {'P':>5} {'dense ms':>9} {'2:4 ms':>9} {'speedup':>8}"
          f" {'predicted':>9}")
    for r in rows:
        predicted = "-" if r["predicted_speedup"] is None else f"{r['predicted_speedup']:.2f}"
        print(f"{r['phase']:8} {r['dtype']:9} {r['mode']:15} {r['batch']:>5} {r['prompt_len']:>5} "
              f"{r['dense_ms']:>9.3f} {r['sparse_ms']:>9.3f} {r['speedup']:>8.2f} {predicted:>9}")
    print("(P: the cached context for decode, the prompt for prefill; predicted: twofour.request's model)")
