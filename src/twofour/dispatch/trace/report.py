"""The report's data model: steps, gaps, the comparison with a dense baseline, the funnel and the verdicts.

:func:`twofour.dispatch.trace.analyze` fills these objects, plain data; its caller renders them
with :func:`.render.report_text` or :func:`.render.report_html`. The number formats below (never
``nan`` or ``inf``) are shared by the verdicts and the renderer.

>>> fmt_ms(1234.5), fmt_speedup(1.234), fmt_speedup(float("nan")), fmt_bound(1.0)
('1.234 ms', '1.23x', 'n/a', 'no limit (p = 1)')
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

from ...amdahl import max_speedup, speedup
from ...funnel import FunnelStep
from .classify import ELIGIBLE, TRACE_CLASSES
from .read import Trace

_RUNTIME_RE = re.compile(r"^(cuda|cu[A-Z]|hip)")


def fmt_speedup(s: float) -> str:
    """A speedup as shown: ``1.23x``; ``n/a`` when it cannot be measured (never ``nanx`` or ``infx``)."""
    return f"{s:.2f}x" if math.isfinite(s) else "n/a"


def fmt_bound(p: float) -> str:
    """Amdahl's bound ``1 / (1 - p)`` as shown; ``no limit`` at p = 1 (never ``infx``)."""
    bound = max_speedup(min(max(p, 0.0), 1.0))
    return f"{bound:.2f}x" if math.isfinite(bound) else "no limit (p = 1)"


def fmt_ms(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us < 10_000 else f"{us / 1000:.1f} ms"


@dataclass(frozen=True)
class Gap:
    """One stretch of GPU idle time inside a step.

    ``at_us`` is measured from the step's start. ``during`` is the stack of CPU operators (outer
    to inner) on the launching thread at the gap's middle, down to the innermost one covering at
    least half the gap (empty when none does); ``culprit`` is that innermost one, or a phrase;
    ``setup`` is True when that operator launched the kernel that ends the gap.
    """

    step: str
    at_us: float
    dur_us: float
    culprit: str
    during: tuple[str, ...]
    setup: bool
    next_kernel: str | None


class _Shares:
    """GEMM time, the eligible share p and the idle share of a step, or of a phase's mean step
    (from its ``time_us`` by class, ``wall_us`` and ``busy_us``)."""

    @property
    def gemm_us(self) -> float:
        return sum(self.time_us.get(c, 0.0) for c in ELIGIBLE)

    @property
    def p(self) -> float:
        """Eligible share: GEMM time / step time."""
        return self.gemm_us / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def idle_fraction(self) -> float | None:
        """GPU idle time / step time; None in a CPU trace."""
        if self.busy_us is None:
            return None
        return max(0.0, 1.0 - self.busy_us / self.wall_us) if self.wall_us > 0 else 0.0


@dataclass(frozen=True)
class StepStats(_Shares):
    """One step: its wall time, GPU busy time (None in a CPU trace) and time by class."""

    name: str
    phase: str
    start_us: float
    wall_us: float
    busy_us: float | None
    time_us: dict
    gemms: int
    sparse_gemms: int
    outside_ops_us: float | None = None  # CPU traces: step time outside any operator
    # Per GEMM counted, in time order: (outermost operator's name, its operand signature or None).
    gemm_ops: tuple = field(default=(), repr=False)


@dataclass(frozen=True)
class Comparison:
    """2:4 run against its dense baseline, per summarized step of one phase (means)."""

    baseline_path: str
    dense_wall_us: float
    sparse_wall_us: float
    dense_gemm_us: float
    sparse_gemm_us: float
    dense_p: float
    dense_idle_fraction: float | None
    baseline_sparse_gemms: int
    shapes: str = ""  # what the comparison of operand shapes found (compare.py), one sentence
    gpus: str = ""  # when either trace names no GPU, that the speedup assumes one GPU (compare.gpu_note)

    @property
    def gemm_speedup(self) -> float:
        return self.dense_gemm_us / self.sparse_gemm_us if self.sparse_gemm_us > 0 else math.nan

    @property
    def end_to_end(self) -> float:
        return self.dense_wall_us / self.sparse_wall_us if self.sparse_wall_us > 0 else math.nan

    @property
    def amdahl(self) -> float:
        """What the GEMM speedup alone gives end to end at the dense run's p (Amdahl)."""
        s = self.gemm_speedup
        return speedup(min(self.dense_p, 1.0), s) if s > 0 and math.isfinite(s) else math.nan


@dataclass
class PhaseReport(_Shares):
    """Everything measured for one phase (prefill, decode, step or the whole trace)."""

    phase: str
    device: str  # "cuda" or "cpu"
    steps: list
    summarized: list  # indices into steps
    culprits: dict = field(default_factory=dict)  # label -> idle us over summarized steps
    setup_us: dict = field(default_factory=dict)  # label -> idle us where it was set-up
    largest_gaps: list = field(default_factory=list)
    unclassified: dict = field(default_factory=dict)  # name -> us over summarized steps
    kernel_table: dict = field(default_factory=dict)  # (name, class) -> [count, us] over summarized steps
    dtype_bits: int = 16
    gpu: str | None = None  # the GPU the trace's deviceProperties name
    comparison: Comparison | None = None
    gemms: int = 0  # GEMMs in all steps of the phase (a split-K GEMM's reduction kernel is not counted)
    sparse_gemms: int = 0  # 2:4 GEMMs (cuSPARSELt or CUTLASS) in all steps of the phase
    sparse_backends: tuple[str, ...] = ()

    # -- sums over the summarized steps --
    def _sum(self, attr) -> float:
        return sum(getattr(self.steps[i], attr) or 0.0 for i in self.summarized)

    @property
    def n(self) -> int:
        return len(self.summarized)

    @property
    def wall_us(self) -> float:
        """Mean wall time of a summarized step (us)."""
        return self._sum("wall_us") / self.n

    @property
    def busy_us(self) -> float | None:
        return None if self.device == "cpu" else self._sum("busy_us") / self.n

    @property
    def time_us(self) -> dict:
        """Mean time per summarized step by class (us)."""
        out: dict[str, float] = defaultdict(float)
        for i in self.summarized:
            for c, t in self.steps[i].time_us.items():
                out[c] += t / self.n
        return {c: out[c] for c in TRACE_CLASSES if c in out}

    @property
    def outside_ops_fraction(self) -> float | None:
        if self.device != "cpu":
            return None
        return self._sum("outside_ops_us") / self.n / self.wall_us if self.wall_us > 0 else 0.0

    @property
    def idle_us(self) -> float:
        return sum(self.culprits.values())

    @property
    def culprit(self) -> str | None:
        """The CPU operator (or phrase) charged with the most idle GPU time, or None."""
        return max(self.culprits, key=self.culprits.get) if self.culprits else None

    @property
    def culprit_share(self) -> float:
        return self.culprits[self.culprit] / self.idle_us if self.culprit and self.idle_us > 0 else 0.0

    @property
    def step_names(self) -> str:
        names = [self.steps[i].name for i in self.summarized]
        return names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}" if len(names) > 2 else " and ".join(names)

    # -- funnel and verdicts --
    @property
    def ceiling(self) -> float:
        """Roofline ceiling of the 2:4 GEMM: bytes-bound decode gets 1 / packed ratio, else 2x."""
        from ...packing import packed_ratio

        if self.phase == "decode":
            return 1.0 / packed_ratio(8 if self.dtype_bits == 8 else 16)
        return 2.0

    def funnel(self) -> list[FunnelStep]:
        """The funnel for this phase (as :func:`twofour.funnel.funnel`), each step marked how it was obtained.

        None on a CPU. The 2:4 GEMM step is measured against a dense baseline, else predicted for the
        trace's own GEMM shapes (:mod:`.predict`), else unknown (NaN, shown ``n/a``): never assumed
        at the ceiling.
        """
        if self.device == "cpu":
            return []
        cmp = self.comparison
        bits = "8-bit" if self.dtype_bits == 8 else "16-bit"
        ceiling_note = {"decode": f"decode GEMMs are bytes-bound: 1 / packed ratio of {bits} weights",
                        "prefill": "prefill GEMMs are compute-bound: the full 2x"}.get(
            self.phase, "phase not annotated: the compute-bound 2x (a decode step is capped at 1.78x)")
        steps = [
            FunnelStep("datasheet", "data sheet", 2.0, "peak 2:4 over peak dense tensor-core FLOP/s", "data sheet"),
            FunnelStep("roofline_ceiling", "roofline ceiling", self.ceiling, ceiling_note),
        ]
        if cmp is not None and math.isfinite(cmp.gemm_speedup):
            s, p, how = cmp.gemm_speedup, min(cmp.dense_p, 1.0), "measured"
            speedups = (s, speedup(p, s), cmp.end_to_end)
            notes = (f"dense {fmt_ms(cmp.dense_gemm_us)} / 2:4 {fmt_ms(cmp.sparse_gemm_us)} of GEMM per step",
                     f"Amdahl with measured p = {p:.2f} (dense run) and s = {s:.2f}",
                     f"dense {fmt_ms(cmp.dense_wall_us)} / 2:4 {fmt_ms(cmp.sparse_wall_us)} per step")
        else:
            from .predict import kernel_speedup

            s, why = kernel_speedup([op for i in self.summarized for op in self.steps[i].gemm_ops], self.gpu)
            if s is None:
                how, speedups = "unknown", (math.nan,) * 3
                notes = (f"not measured and not predicted: {why}; give a dense baseline (--compare) to "
                         "measure it",
                         "unknown without the 2:4 GEMM step", "unknown without the 2:4 GEMM step")
            else:
                p, how = min(self.p, 1.0), "predicted"
                speedups = (s, speedup(p, s), speedup(p, s))
                notes = (why, f"Amdahl with p = {p:.2f} measured in this trace",
                         "assumes host time and the rest of the step unchanged")
        keys = (("kernel", "2:4 GEMM"), ("eligible_fraction", "eligible fraction"), ("request", "end to end"))
        return steps + [FunnelStep(k, lab, v, note, how) for (k, lab), v, note in zip(keys, speedups, notes)]

    def verdicts(self) -> list[str]:
        """The findings in words, most important first."""
        out = []
        steps_word = f"{len(self.steps)} step{'s' if len(self.steps) != 1 else ''}"
        if self.gemms == 0:
            out.append(f"no GEMM ran in the {steps_word}: nothing here for 2:4 to speed up")
        elif self.sparse_gemms == 0:
            why = (" (a CPU trace: sparse tensor cores exist only on NVIDIA GPUs)" if self.device == "cpu"
                   else ": if this was meant to be the 2:4 run, dispatch failed and the weights ran the dense path "
                   "(check them with `twofour audit`)")
            out.append(f"2:4 kernels ran: 0 of {self.gemms} GEMMs{why}")
        else:
            backends = " and ".join(self.sparse_backends)
            rest = "" if self.sparse_gemms == self.gemms else f"; the other {self.gemms - self.sparse_gemms} ran dense"
            out.append(f"2:4 kernels ran: {self.sparse_gemms} of {self.gemms} GEMMs ({backends}){rest}")
        idle = self.idle_fraction
        if idle is not None and idle >= 0.1:
            out.append(self._host_verdict(idle))
        elif idle is not None:
            out.append(f"GPU busy {1 - idle:.0%} of the step: not host-bound")
        elif self.outside_ops_fraction is not None and self.outside_ops_fraction >= 0.1:
            out.append(f"{self.outside_ops_fraction:.0%} of the step ran outside any operator (Python and framework "
                       "code): on a GPU that time would show as idle gaps")
        cmp = self.comparison
        if cmp is not None and math.isfinite(cmp.gemm_speedup):
            s, p, e2e = cmp.gemm_speedup, cmp.dense_p, cmp.end_to_end
            if s > self.ceiling * 1.02:  # above the roofline, said first (past MAX_GEMM_SPEEDUP: refused)
                out.insert(0, f"IMPLAUSIBLE: the measured 2:4 GEMM speedup {s:.2f}x is above the "
                           f"{self.ceiling:.2f}x ceiling of {self.phase} GEMMs: the dense run was slowed by "
                           "something 2:4 did not pay (check both runs' shapes, clocks and warm-up) before "
                           "believing it")
            if self.sparse_gemms == 0:
                out.append(f"GEMMs {s:.2f}x against the baseline, but no 2:4 kernel ran: this compares dense with dense")
            elif s >= 1.0:
                out.append(f"sparse GEMMs {s:.2f}x faster but only {p:.0%} of step time is GEMM: Amdahl caps the step "
                           f"at {cmp.amdahl:.2f}x (at most {fmt_bound(p)} with infinitely fast GEMMs)")
            else:
                from ...roofline.mechanism import verdict_clause

                out.append(f"sparse GEMMs are slower than dense ({s:.2f}x): "
                           + verdict_clause(name for name, _ in self.kernel_table))
            if math.isfinite(e2e) and math.isfinite(cmp.amdahl) and e2e < 0.9 * cmp.amdahl:
                di = "" if cmp.dense_idle_fraction is None or idle is None else (
                    f"; GPU idle {idle:.0%} against {cmp.dense_idle_fraction:.0%} dense")
                out.append(f"end to end {e2e:.2f}x, below the {cmp.amdahl:.2f}x the GEMMs alone explain: the rest is "
                           f"host time{di}")
            elif math.isfinite(e2e):
                out.append(f"end to end {e2e:.2f}x (dense {fmt_ms(cmp.dense_wall_us)}, 2:4 {fmt_ms(cmp.sparse_wall_us)} per step)")
            if cmp.shapes.startswith("not compared"):
                out.append(f"GEMM operand shapes {cmp.shapes}: the speedup assumes both runs multiplied the same shapes")
            if cmp.gpus:
                out.append(f"GPUs not compared: {cmp.gpus}")
            if cmp.baseline_sparse_gemms > 0 and self.sparse_gemms == 0:
                out.append("the baseline ran 2:4 kernels and this trace did not: are the two files swapped? "
                           "(FILE is the 2:4 run, --compare the dense one)")
        elif self.gemms and self.device != "cpu":  # a CPU trace: no 2:4 kernel to promise from
            p = min(self.p, 1.0)
            at_ceiling = f"{speedup(p, self.ceiling):.2f}x at the {self.ceiling:.2f}x ceiling; " if self.ceiling < 2.0 else ""
            out.append(f"GEMMs are {p:.0%} of step time: 2x faster GEMMs give at most {speedup(p, 2.0):.2f}x end to end "
                       f"({at_ceiling}{fmt_bound(p)} with infinitely fast GEMMs)")
        if self.unclassified:
            total = sum(self.unclassified.values()) / self.n
            out.append(f"{len(self.unclassified)} kernel name{'s' if len(self.unclassified) != 1 else ''} unclassified "
                       f"({fmt_ms(total)} per step, counted as not eligible): listed below, never guessed")
        where = self.where_it_went()
        if where:
            out.append(where)
        return out

    def _host_verdict(self, idle: float) -> str:
        culprit, share = self.culprit, self.culprit_share
        head = f"GPU idle {idle:.0%} of the step"
        if culprit is None:
            return head
        setup = self.setup_us.get(culprit, 0.0) >= 0.5 * self.culprits[culprit]
        if share < 0.5:
            parts = sorted(self.culprits.items(), key=lambda kv: -kv[1])[:3]
            return head + ", spread over " + ", ".join(f"`{k}` {v / self.idle_us:.0%}" for k, v in parts) + \
                ": host-bound; capture a CUDA graph or put more tokens in each step"
        if culprit.startswith("profiler overhead"):
            return head + f", mostly during {culprit}: the profiler's own cost; read a later step"
        if _RUNTIME_RE.match(culprit) and "Synchronize" in culprit:
            return head + f", mostly while the CPU waited in `{culprit}`: the gaps are on the GPU side (launch latency)"
        if _RUNTIME_RE.match(culprit):
            return (f"{head}, mostly during `{culprit}` ({share:.0%} of the idle time): launch-bound, the kernels are "
                    "short next to their launch cost; capture a CUDA graph or fuse kernels")
        mostly = f"mostly during `{culprit}` set-up" if setup else f"mostly during `{culprit}`"
        if "cslt" in culprit.lower() or "cusparselt" in culprit.lower():
            advice = ("host-bound: each call sets up and tears down its cuSPARSELt descriptors and plan "
                      "(pytorch PR #177866); cache plans or capture a CUDA graph")
        elif culprit.startswith("no operator"):
            advice = "host-bound: Python between operators; capture a CUDA graph (torch.compile mode='reduce-overhead')"
        else:
            advice = "host-bound: the CPU cannot launch kernels fast enough; capture a CUDA graph or put more tokens in each step"
        return f"{head}, {mostly} ({share:.0%} of the idle time): {advice}"

    def where_it_went(self) -> str | None:
        """One sentence naming the funnel stage that lost the most."""
        stages = self.funnel()
        drops = [(stages[i].speedup / stages[i - 1].speedup, stages[i - 1], stages[i]) for i in range(1, len(stages))
                 if stages[i - 1].speedup > 0 and math.isfinite(stages[i].speedup)]
        if not drops:
            return None
        ratio, before, after = min(drops, key=lambda d: d[0])
        if ratio >= 0.98:
            return None
        reason = {
            "roofline_ceiling": "decode GEMMs are bytes-bound",
            "kernel": "the 2:4 kernel itself",
            "eligible_fraction": "the rest of the step is not GEMM (Amdahl)",
            "request": "host time and overheads outside the GEMMs",
        }[after.key]
        return (f"where the 2x went: the biggest loss is {before.label} {before.speedup:.2f}x -> {after.label} "
                f"{after.speedup:.2f}x ({after.how}): {reason}")


@dataclass
class TraceReport:
    """The report for one trace (and its baseline): one :class:`PhaseReport` per phase."""

    path: str
    trace: Trace
    phases: list
    baseline_path: str | None = None
    excluded: dict = field(default_factory=dict)  # reason -> validate.Invalid, left out with exclude_invalid
    baseline_excluded: dict = field(default_factory=dict)
    # GPU events launched inside no step (trace, baseline): after the last step annotation, or a trace cut
    # by the profiler's schedule; left out of every number and counted here
    outside_steps: tuple = (0, 0)
    index: object = field(default=None, repr=False, compare=False)

    def phase(self, name: str) -> PhaseReport:
        for ph in self.phases:
            if ph.phase == name:
                return ph
        raise ValueError(f"phase must be one of {[p.phase for p in self.phases]}, got {name!r}")

