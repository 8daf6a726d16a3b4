"""``twofour quality``: train, prune and recover small language models; write a results file.

Example (the command behind the stored sweep ``src/twofour/data/quality-sweep.json``)::

    twofour quality --out src/twofour/data/quality-sweep.json

Deterministic for a given machine, thread count and Python (the corpus hash is recorded); CPU only.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex

from .main import UserError
from ._output import check_output_file, saving, show

__all__ = ["add_arguments", "run"]


# Upper bounds: a typo past these would run for weeks (steps) or fail deep inside torch (threads).
_MAX_STEPS = 1_000_000
_MAX_THREADS = 1024
_MAX_SEED = 2**63 - 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..quality import BASE_WIDTH, DEFAULT_RECOVER, DEFAULT_TRAIN, LR_RULES, SWEEP_SIZES

    parser.add_argument("--out", required=True, metavar="FILE", help="results file to write (JSON)")
    parser.add_argument(
        "--sizes",
        default=",".join(SWEEP_SIZES),
        metavar="LIST",
        help=f"comma-separated model sizes (default {','.join(SWEEP_SIZES)}; 'tiny' is for tests)",
    )
    parser.add_argument(
        "--criteria",
        default=None,
        metavar="LIST",
        help="comma-separated criteria (default: all), e.g. 'magnitude 2:4,activation-aware 2:4'",
    )
    parser.add_argument(
        "--train-steps", type=_positive_int, default=DEFAULT_TRAIN.steps, metavar="N",
        help=f"training steps of each dense model (default {DEFAULT_TRAIN.steps})",
    )
    parser.add_argument(
        "--recover-steps", type=_positive_int, default=DEFAULT_RECOVER.steps, metavar="N",
        help=f"masked fine-tuning steps per pruned model, and extra steps for the dense baseline (default {DEFAULT_RECOVER.steps})",
    )
    parser.add_argument(
        "--lr-rule", choices=LR_RULES, default="width",
        help=(
            f"learning rate per size (default 'width': the base rates x {BASE_WIDTH} / d_model, muP-style, "
            f"for training ({DEFAULT_TRAIN.lr:g}) and recovery ({DEFAULT_RECOVER.lr:g}); 'none': the base rates at every size)"
        ),
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_TRAIN.seed, help="training seed (recovery uses seed+1)")
    parser.add_argument(
        "--threads",
        type=_positive_int,
        default=1,
        metavar="N",
        help="torch CPU threads (default 1: the float summation order, hence the numbers, depend on it)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _names(option: str, text: str, valid, what: str) -> list[str]:
    """The comma-separated names ``option`` gives, each of ``valid`` and given once, else a UserError."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in valid]
    if not names or unknown:
        raise UserError(f"{option}: unknown {what} {unknown or names!r}; valid: {', '.join(valid)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"{option}: {', '.join(map(repr, twice))} given more than once; name each once")
    return names


def run(args: argparse.Namespace) -> int:
    from ..quality import CRITERIA, DEFAULT_RECOVER, DEFAULT_TRAIN, SIZES, run_sweep

    sizes = _names("--sizes", args.sizes, SIZES, "size(s)")
    criteria = None if args.criteria is None else _names("--criteria", args.criteria, CRITERIA, "criterion")
    from ..quality.corpus import STDLIB_FILES, stdlib_dir

    inputs = [stdlib_dir() / name for name in STDLIB_FILES]  # the corpus it trains on
    out = check_output_file(args.out, "--out", "quality.json", inputs=inputs, make_folder=True)  # save makes it
    if not 0 <= args.seed <= _MAX_SEED:  # torch seeds are 64-bit, and recovery uses seed + 1
        raise UserError(f"--seed must be an integer from 0 to {_MAX_SEED:,} (2^63 - 2), got {args.seed:,}")
    for option, value, top in (
        ("--train-steps", args.train_steps, _MAX_STEPS),
        ("--recover-steps", args.recover_steps, _MAX_STEPS),
        ("--threads", args.threads, _MAX_THREADS),
    ):
        if value > top:
            raise UserError(f"{option} must be at most {top:,}, got {value:,}")
    train_cfg = dataclasses.replace(DEFAULT_TRAIN, steps=args.train_steps, seed=args.seed)
    recover_cfg = dataclasses.replace(DEFAULT_RECOVER, steps=args.recover_steps, seed=args.seed + 1)
    # the equivalent command with every option spelled out, for the provenance record
    command = shlex.join(["twofour", "quality", "--out", str(args.out), "--sizes", args.sizes,
                          *(["--criteria", args.criteria] if args.criteria is not None else []),
                          "--train-steps", str(args.train_steps), "--recover-steps", str(args.recover_steps),
                          "--lr-rule", args.lr_rule, "--seed", str(args.seed),
                          "--threads", str(args.threads)])
    table = run_sweep(
        sizes,
        train_cfg=train_cfg,
        recover_cfg=recover_cfg,
        criteria=criteria,
        threads=args.threads,
        lr_rule=args.lr_rule,
        command=command,
        progress=not args.no_progress,
    )
    with saving("--out", out):
        table.save(out, inputs)
    print(table)
    print(f"\nwrote {len(table)} rows to {show(out)} ({table.provenance['wall_time_s']} s on {table.provenance['cpu_model']})")
    return 0
