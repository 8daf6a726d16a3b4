"""Read a profiler trace someone recorded and measure where the promised 2x went.

:func:`~twofour.dispatch.kernels.kernels` profiles a call you make here; this package reads a
trace recorded anywhere with ``torch.profiler`` and ``prof.export_chrome_trace(path)``, gzipped
or not, and measures, per step and per phase:

* **GPU busy vs idle.** A step's window runs from its start on the CPU (or the end of the
  previous step's GPU work, if later) to the end of its last GPU activity. Each idle gap is
  charged to the innermost CPU operator that covers at least half of it, and called *set-up*
  when that operator launches the kernel that ends the gap.
* **Time by class.** Every GPU kernel (in a CPU-only trace, every operator's self time) is
  sorted by :mod:`.classify`; a name no rule knows is listed as *unclassified* with its time,
  never guessed.
* **The eligible share p**: GEMM time (2:4 and dense, outside attention) over step time, the
  ``p`` of Amdahl's law; with a dense baseline (``baseline=``), the measured GEMM and end-to-end
  speedups; and the funnel (:class:`twofour.funnel.FunnelStep` s), each step marked measured,
  predicted, data sheet or unknown (none for a CPU trace).

The stages: :mod:`.read` (streaming: a 1 GB trace never sits in memory as text) -> :mod:`.classify`
-> :mod:`.analyze` -> :mod:`.report` (plain data) -> :mod:`.render`; :mod:`.record` makes a trace
of your own code. Nsight Systems exports are not read (an SQLite file gets a clear error).

Steps are the innermost ``record_function`` annotations naming ``prefill`` or ``decode``;
otherwise ``ProfilerStep#N``; otherwise the whole trace is one step. When a phase has three
steps or more, its first step (warm-up) is left out of the summary.

>>> report = analyze(recorded("sparse-eager"), baseline=recorded("dense-eager"))
>>> ph = report.phase("decode")
>>> ph.sparse_gemms, ph.gemms, ph.sparse_backends
(42, 42, ('cuSPARSELt',))
>>> ph.idle_fraction > 0.9, ph.culprit
(True, 'aten::_cslt_sparse_mm')
>>> ph.comparison.end_to_end < 0.1      # 2:4 eager decode: 10x slower than dense here
True
"""

from .analyze import analyze
from .classify import ATTENTION, ELIGIBLE, LABELS, TRACE_CLASSES, UNCLASSIFIED, trace_class
from .read import KIND_NAMES, RECORDED, Trace, TraceError, load, recorded
from .record import record
from .render import report_html, report_text
from .report import Comparison, Gap, PhaseReport, StepStats, TraceReport

__all__ = [
    "TraceError",
    "Trace",
    "load",
    "record",
    "recorded",
    "RECORDED",
    "TRACE_CLASSES",
    "ELIGIBLE",
    "LABELS",
    "ATTENTION",
    "UNCLASSIFIED",
    "KIND_NAMES",
    "trace_class",
    "Gap",
    "StepStats",
    "Comparison",
    "PhaseReport",
    "TraceReport",
    "analyze",
    "report_text",
    "report_html",
]
