"""``twofour audit FILE``: check every linear weight of a checkpoint for 2:4 dispatch (examples: ``_EPILOG``).

Reads safetensors one tensor at a time, or a PyTorch checkpoint with ``weights_only=True``.
Prints one row per 2-D weight, the problems that keep layers off the sparse path, and a
verdict; names from the file are printed escaped and shortened (``--json`` keeps them exact).
Exit code 0 when the audit ran (whatever it found), 2 on a usage or file error, printed as one line.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from .._common.fit import report_width
from .._common.text import printable
from .main import UserError
from ._output import check_output_file, show, write_output

_EPILOG = """examples:
  twofour audit model.safetensors
  twofour audit model.safetensors --capability 9.0 --tokens 4096
  twofour audit checkpoint.pt --device cpu --json audit.json
  twofour audit model.safetensors --capability 9.0 --html audit.html
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "model_file", metavar="MODEL",
        help="a model folder (config.json + safetensors shards, compressed-tensors included), a "
             "model.safetensors.index.json, a .safetensors file or a torch.save checkpoint",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="judge dispatch for this machine's GPU (cuda), the CPU, or whichever is here (auto, default)",
    )
    parser.add_argument(
        "--capability",
        metavar="MAJOR.MINOR",
        help="judge dispatch for a GPU you name by compute capability, e.g. 8.0 (A100), 8.9 (L4), 9.0 (H100)",
    )
    parser.add_argument("--backend", choices=("cusparselt", "cutlass"), help="the 2:4 backend (default: torch's default)")
    parser.add_argument(
        "--tokens", type=int, metavar="M", help="tokens per forward pass (batch x seq_len), for the padding check"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows and the summary as JSON to PATH")
    parser.add_argument("--html", metavar="PATH",
                        help="also write the report as a self-contained HTML page (a table, one row per weight) to PATH")
    parser.add_argument("--max-rows", type=int, metavar="N", help="print only the first N rows of the table")


_CAPABILITY = re.compile(r"([0-9]{1,2})\.([0-9])", re.ASCII)  # ASCII digits only: int() reads '٨' as 8
_MAX_MAJOR = 15  # NVIDIA's are 1.0 .. 12.x so far; past this it is a typo, not a GPU


def _parse_capability(text: str) -> tuple[int, int]:
    m = _CAPABILITY.fullmatch(text)
    if m is None:
        raise UserError(f"--capability must look like 8.0 or 9.0 (MAJOR.MINOR, ASCII digits), got {printable(text, 40)!r}")
    cc = (int(m.group(1)), int(m.group(2)))
    if not 1 <= cc[0] <= _MAX_MAJOR:
        raise UserError(f"--capability must be a real compute capability such as 8.0 (major 1 to {_MAX_MAJOR}), "
                        f"got {text!r}")
    return cc


def _target(args):
    from ..device import environment
    from ..dispatch import hypothetical_gpu

    if args.capability is not None:
        if args.device == "cpu":
            raise UserError("--capability names a GPU; it cannot be combined with --device cpu")
        return hypothetical_gpu(_parse_capability(args.capability), name="hypothetical GPU")
    env = environment()
    if args.device == "cuda" and not env.cuda_available:
        raise UserError(
            "--device cuda but torch sees no CUDA GPU here; use --capability 8.0 (or 9.0 ...) to ask about a GPU "
            "you do not have"
        )
    if args.device == "cpu" and env.cuda_available:
        from dataclasses import replace

        env = replace(env, cuda_available=False, gpu_name=None, capability=None, backends=())
    return env


def run(args: argparse.Namespace) -> int:
    from collections import Counter

    from .. import checkpoint
    from ..checkpoint import CheckpointError
    from ..dispatch import audit

    if args.tokens is not None and args.tokens < 1:
        raise UserError(f"--tokens must be a positive number of tokens (batch x seq_len), got {args.tokens}")
    if args.max_rows is not None and args.max_rows < 0:
        raise UserError(f"--max-rows must be >= 0, got {args.max_rows}")
    inputs = [args.model_file]
    if args.json is not None:
        check_output_file(args.json, "--json", "audit.json", inputs=inputs)
    if args.html is not None:
        check_output_file(args.html, "--html", "audit.html", inputs=inputs)
    if args.json and args.html and os.path.realpath(args.json) == os.path.realpath(args.html):
        raise UserError(f"--json and --html are the same file {show(args.json)}; the second would replace the first")
    target = _target(args)
    from ._progress import Progress

    progress = Progress("auditing")
    try:
        with checkpoint.open(args.model_file) as source:
            report = audit(source, args.tokens, target=target, backend=args.backend, progress=progress)
    except CheckpointError as exc:
        raise UserError(str(exc)) from None
    finally:
        progress.close()
    if not report.rows:
        kinds = Counter(why for _, why in report.skipped)
        why = "; ".join(f"{n} x {printable(w, 120)}" for w, n in kinds.most_common(3))
        raise UserError(
            f"{show(args.model_file)}: no 2-D weights found ({len(report.skipped)} other tensors"
            + (f": {why}" if why else "")
            + "); nothing to audit"
        )
    # Fitted to the terminal (or COLUMNS); the first --max-rows rows of the table, the rest of the report whole.
    text = report.text(report_width(), args.max_rows)
    # The files first: a closed stdout (`| head`) ends the command at the print, and must not cost them.
    if args.json is not None:
        write_output(args.json, report.to_json(), "--json", inputs=inputs)
    if args.html is not None:
        title = f"twofour audit: {printable(os.path.basename(args.model_file), 120)}"
        write_output(args.html, report.to_html(title=title), "--html", inputs=inputs)
    print(text)
    for path in (args.json, args.html):
        if path is not None:
            print(f"wrote {show(path)}", file=sys.stderr)
    return 0
