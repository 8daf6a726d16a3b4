"""Stage 3 of the answer: did the sparse kernel run?

A 2:4 weight is only faster if the matmul actually dispatches to a sparse tensor-core kernel.
This package answers that question before, after and at scale:

* :func:`probe`: what this machine offers each PyTorch 2:4 backend (cuSPARSELt, CUTLASS), and
  why not; :func:`hypothetical_gpu` describes a GPU you do not have.
* :func:`explain`: before running, which kernel ``F.linear(x, W)`` will take, and every reason.
* :func:`kernels`: after running, the profiler's proof: which kernels ran, with time per class.
* :func:`audit`: every linear weight of a model or checkpoint; ``twofour audit FILE``.
* :mod:`.trace` (:func:`load_trace`, :func:`analyze_trace`): a profiler trace recorded
  elsewhere: GPU idle gaps and their causes, the eligible share p and the measured funnel;
  ``twofour trace FILE``.

The four questions share rules (:mod:`.rules`, read from the installed torch) but little else.
Checkpoints are read by :mod:`twofour.checkpoint` (``open_checkpoint`` and ``CheckpointError``
are re-exported here).

>>> import torch
>>> from twofour.dispatch import explain, hypothetical_gpu
>>> explain(torch.zeros(64, 64, dtype=torch.float16), 64, target=hypothetical_gpu((8, 0))).path
'dense'
"""

from .audit import AuditReport, AuditRow, audit
from ..checkpoint import CheckpointError, open_checkpoint
from .explain import Check, Verdict, explain
from .kernels import CLASSES, KernelReport, classify, kernels, recorded_reports
from .probe import Probe, hypothetical_gpu, probe
from .rules import backend_rules, default_backend, is_packed
from .trace import TraceError, TraceReport, analyze as analyze_trace, load as load_trace

__all__ = [
    "probe",
    "hypothetical_gpu",
    "Probe",
    "explain",
    "Verdict",
    "Check",
    "kernels",
    "recorded_reports",
    "classify",
    "KernelReport",
    "CLASSES",
    "audit",
    "AuditReport",
    "AuditRow",
    "open_checkpoint",
    "CheckpointError",
    "backend_rules",
    "default_backend",
    "is_packed",
    "load_trace",
    "analyze_trace",
    "TraceReport",
    "TraceError",
]
