"""``twofour trace FILE``: read a profiler trace and show where the 2x went (examples: ``_EPILOG``).

FILE is what ``prof.export_chrome_trace(path)`` wrote (gzipped or not), read streaming by
:mod:`twofour.dispatch.trace`. Exit code 0 when the report was made (whatever it found), 2 on
a usage or file error, printed as one line.
"""

from __future__ import annotations

import argparse
import sys

from .main import UserError

_EPILOG = """examples:
  twofour trace sparse.json.gz
  twofour trace sparse.json.gz --compare dense.json.gz --phase decode
  twofour trace run.json --html report.html

record a trace:
  with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
      for i in range(4):
          with torch.profiler.record_function(f"decode_step_{i}"):
              step()
  prof.export_chrome_trace("trace.json")
(add record_shapes=True to profile(...) in both runs and --compare also checks that each GEMM
got the same operand shapes in both; without it, only the GEMM counts per step are compared)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("trace_file", metavar="FILE", help="a PyTorch profiler trace (.json or .json.gz), e.g. the 2:4 run")
    parser.add_argument("--compare", metavar="DENSE_FILE",
                        help="the dense run of the same steps: adds measured GEMM and end-to-end speedups (refused when the "
                             "runs differ: steps, GEMM counts, operand shapes where both traces carry them)")
    parser.add_argument("--phase", choices=("prefill", "decode"),
                        help="report only steps whose annotation names say prefill / decode (default: every phase)")
    parser.add_argument("--html", metavar="OUT", help="also write the report as a self-contained HTML page to OUT")
    parser.add_argument("--drop-invalid", action="store_true",
                        help="leave invalid events (NaN, negative or absurd times, duplicates, durations beyond their "
                             "step) out and say so at the top of the report; by default such a trace is refused")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar while reading (default: for files over 64 MB on a terminal)")


def run(args: argparse.Namespace) -> int:
    from .._common.fit import report_width
    from ..dispatch.trace import TraceError, analyze, report_html, report_text
    from ._output import check_output_file, show, write_output

    inputs = [args.trace_file, args.compare]
    if args.html is not None:  # before the (possibly long) read: a folder, an input or a FIFO is refused now
        check_output_file(args.html, "--html", "report.html", inputs=inputs)
    try:
        report = analyze(args.trace_file, phase=args.phase, baseline=args.compare, progress=args.progress,
                         exclude_invalid=args.drop_invalid)
    except TraceError as exc:
        raise UserError(str(exc)) from None
    except MemoryError:  # a trace whose events do not fit in memory: one line, not a traceback
        raise UserError(f"{show(args.trace_file)}: not enough memory to read this trace; try a machine with more memory "
                        "or record fewer steps") from None
    if args.html is not None:  # first: a closed stdout (`| head`) must not cost the file
        write_output(args.html, report_html(report), "--html", inputs=inputs)
    print(report_text(report, report_width()))
    if args.html is not None:
        print(f"wrote {show(args.html)}", file=sys.stderr)
    return 0
