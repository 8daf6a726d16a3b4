"""``twofour convert SRC OUT``: a compressed-tensors 2:4 checkpoint as one plain safetensors file.

The work is :func:`twofour.checkpoint.convert`: one weight at a time, every stored 2:4 weight
checked, the output written atomically. Exit code 0 when written, 2 on a usage or file error.
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
    from ..checkpoint import CheckpointError, convert
    from ._output import check_output_file

    check_output_file(args.out, "OUT", "converted.safetensors", inputs=[args.src])  # refuses SRC too
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
