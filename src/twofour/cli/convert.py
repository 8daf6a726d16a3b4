"""``twofour convert SRC OUT``: a compressed-tensors 2:4 checkpoint as one plain safetensors file.

    twofour convert Sparse-Llama-folder/ dense.safetensors                    # dense 2:4 weights
    twofour convert Sparse-Llama-folder/ packed.safetensors --layout packed   # twofour.pack values + meta
    twofour convert model.safetensors.index.json cutlass.safetensors --layout cutlass

Reads the folder as data (:func:`twofour.checkpoint.open`), one weight at a time, checks every
stored 2:4 weight on the way, and writes the output atomically (nothing is written when a
check fails; the output may not be one of the inputs). See :func:`twofour.checkpoint.convert`.
Exit code 0 when written, 2 on a usage or file error, printed as one line.
"""

from __future__ import annotations

import argparse

from .main import UserError

_EPILOG = """examples:
  twofour convert my-2of4-model/ dense.safetensors
  twofour convert my-2of4-model/ packed.safetensors --layout packed
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..checkpoint.convert import LAYOUTS

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("src", metavar="SRC", help="a model folder, a model.safetensors.index.json or a .safetensors file")
    parser.add_argument("out", metavar="OUT", help="the safetensors file to write")
    parser.add_argument("--layout", choices=LAYOUTS, default="dense",
                        help="dense 2:4 weights (default), twofour.pack's values + meta (packed), or PyTorch's CUTLASS layout")


def run(args: argparse.Namespace) -> int:
    import os

    from ..checkpoint import CheckpointError, convert
    from ._output import check_output_file, show

    check_output_file(args.out, "OUT", "converted.safetensors", inputs=[args.src])
    if os.path.isdir(args.src) and os.path.realpath(args.out) == os.path.realpath(args.src):
        raise UserError(f"OUT {show(args.out)} is SRC; give a new file name")
    from ._progress import Progress

    progress = Progress("converting")
    try:
        result = convert(args.src, args.out, args.layout, progress=progress)
    except CheckpointError as exc:
        raise UserError(str(exc)) from None
    finally:
        progress.close()
    print(result)
    return 0
