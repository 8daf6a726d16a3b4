"""``twofour bench --decode``: time whole decode steps and prefill, dense vs 2:4 (:mod:`twofour.serve`).

    twofour bench --decode                                   # GPU: Llama-3-8B; CPU: the tiny model
    twofour bench --decode --model llama-3-8b --layers 4 --batch 1 32 --modes eager graph --out decode.json

On a GPU: tokens/s and ms per token at each batch, the time to first token at each prompt
length, every mode, dense and 2:4, beside the GEMM share and the prediction. On a CPU: the
tiny model in float32, dense only.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from ..vocabulary import DECODE_DTYPES, DECODE_MODES, MEASURED_DTYPES, TORCH_NAMES, dtype_key
from .main import UserError
from ._output import check_output_file, show, write_error

# What --decode plans by default, and the flags it shares with the GEMM sweep.
_GPU_DEFAULTS = {"model": "llama-3-8b", "modes": ["eager", "graph", "graph-searched"], "dtypes": ["float16", "bfloat16"]}
_CPU_DEFAULTS = {"model": "tiny", "modes": ["eager"], "dtypes": ["float32"]}
_QUICK = {"batches": [1, 32], "prompts": [512]}
_GEMM_ONLY = (("shapes", "--shapes"), ("Ms", "--m"), ("no_flush", "--no-flush"))
_DECODE_ONLY = (("model", "--model"), ("checkpoint", "--checkpoint"), ("layers", "--layers"), ("batches", "--batch"), ("context", "--context"),
                ("prompts", "--prompt"))
_MAX_BATCH = 4096  # far beyond a real decode batch; past it a typo allocates a huge KV cache


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--decode`` options of ``twofour bench`` (the GEMM options stay in :mod:`twofour.cli.bench`)."""
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


def check_flags(args: argparse.Namespace) -> None:
    """Refuse decode options without ``--decode`` (and GEMM options with it), naming the option."""
    if args.decode:
        for attr, flag in _GEMM_ONLY:
            if getattr(args, attr):
                raise UserError(f"{flag}: a GEMM-sweep option, not used with --decode (the model's own shapes are "
                                "timed); drop one of them")
    else:
        for attr, flag in _DECODE_ONLY:
            if getattr(args, attr) is not None:
                raise UserError(f"{flag}: only used with --decode (whole steps); add --decode, or use --shapes for GEMMs")


def run(args: argparse.Namespace, env, on_gpu: bool) -> int:
    """``twofour bench --decode`` on the device :func:`twofour.cli.bench.run` chose (``env``, ``on_gpu``)."""
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
    for flag, value, low in (("--repeats", args.repeats, 1), ("--warmup", args.warmup, 0)):
        if value is not None and not low <= value <= 10_000:
            raise UserError(f"{flag} must be from {low} to 10,000, got {value}")
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
        res = run_plan(plan, ops, out=out, inputs=inputs, command=command(), log=print)
    except OutputRefused as exc:
        raise UserError(f"--out: {exc}") from None
    except OSError as exc:
        raise write_error("--out", out, exc) from None
    _print_summary(res)
    return written(res, out)


def command() -> str | None:
    """The command line for the results' provenance, when this process is ``twofour bench``."""
    return "twofour bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 1 and sys.argv[1] == "bench" else None


def written(res, out) -> int:
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


def _print_summary(res) -> None:
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
