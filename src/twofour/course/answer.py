"""Chapter 7's worked deployment and its verdict: one table, measured first, read by every page that quotes it.

The deployment (:mod:`.deployment`): Llama-3-8B in fp16 (bf16: :func:`bf16_rows`), every block linear 2:4.
The verdict is a range over how the GEMMs are called (:data:`ROWS`), each row ``measured``, ``adjusted``
(another call path's measurement plus a measured per-call cost) or ``predicted`` (the kernel model);
the range spans the rows measured on ``F.linear``, flagged timings left out.

Pages quote the verdict and :data:`CHECKLIST` between markers (``<!-- verdict:range -->...<!-- /verdict -->``)
that :func:`fill_quotes` fills (``scripts/refresh_quotes.py``) and :func:`stale_quotes` checks.

Example:
    >>> from twofour.course.answer import verdict_table
    >>> t = verdict_table()
    >>> [r.key for r in t.rows]
    ['eager', 'graph', 'graph-searched', 'graph-searched-linear', 'kernel', 'kernel-searched']
    >>> t.low <= t.row("kernel").per_token <= t.high == t.row("graph").per_token < t.row("graph-searched-linear").per_token
    True
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass, replace

from ..request import RequestEstimate, Workload, estimate, measured_gemm_detail, searched_gemm_speedup
from .deployment import BENCH_FILE, CHAT, GPU, SWEEP_FILE, verdict_results
from .call_paths import linear_path_cost, searched_fit_error, searched_on_linear, sweep_sentence
from .decode_loss import decode_loss_explanation, step_against_graphs
from .gemm_chain import bias_sentence, chain_headline, headline_sentence
from .tables import Table, table

__all__ = [
    "GPU",
    "CHAT",
    "ROWS",
    "VerdictRow",
    "VerdictTable",
    "verdict_table",
    "verdict_results",
    "BENCH_FILE",
    "SWEEP_FILE",
    "bf16_rows",
    "verdict_markdown_table",
    "quoted_numbers",
    "fill_quotes",
    "stale_quotes",
    "bottom_line_markdown",
    "CHECKLIST",
    "checklist_markdown",
    "calculator_verdict",
    "calculator_opening",
    "linear_path_cost",
    "searched_fit_error",
    "sweep_sentence",
    "step_sentence",
]

# key -> (how the GEMMs are called, timing mode of `twofour bench` that measures it, algorithm)
ROWS: dict[str, tuple[str, str, str]] = {
    "eager": ("PyTorch eager: a cuSPARSELt plan built per call, calls back to back", "stream", "default"),
    "graph": ("CUDA graph (plans cached), PyTorch's default algorithm", "graph", "default"),
    "graph-searched": ("CUDA graph, the fastest of cuSPARSELt algorithms 0-7, called directly", "graph", "searched"),
    "graph-searched-linear": ("CUDA graph, the fastest of algorithms 0-7, on F.linear (direct call + "
                              "F.linear's measured cost per call)", "graph", "searched-linear"),
    "kernel": ("kernel time only, default algorithm", "kernel", "default"),
    "kernel-searched": ("kernel time only, fastest of algorithms 0-7 (model of the direct call)", "kernel", "searched"),
}
# Short names of the call paths, as the verdict table's column shows them.
PATH_LABELS = {"F.linear": "F.linear", "_cslt_sparse_mm": "_cslt_sparse_mm direct, x pre-padded",
               "F.linear (adjusted)": "F.linear (adjusted)", "model": "model of the direct call"}


@dataclass(frozen=True)
class VerdictRow:
    """One way of calling the GEMMs: ``decode_gemm``, the time-weighted 2:4 speedup of one layer's seven
    decode GEMMs, and ``estimate``, the request with that GEMM speedup."""

    key: str
    label: str
    status: str  # "measured", "adjusted" or "predicted"
    source: str
    decode_gemm: float
    prefill_gemm: float | None
    estimate: RequestEstimate
    note: str = ""
    call_path: str = "F.linear"  # a key of PATH_LABELS

    @property
    def per_token(self) -> float:
        """Per output token: dense time over 2:4 time of one decode step (> 1: 2:4 is faster)."""
        return self.estimate.speedup("tpot")

    @property
    def request(self) -> float:
        return self.estimate.speedup("request")


@dataclass(frozen=True)
class VerdictTable:
    """The verdict's rows, the software they hold for, and the range they span."""

    rows: tuple[VerdictRow, ...]
    software: dict
    workload: Workload
    gpu: str

    def row(self, key: str) -> VerdictRow:
        keys = [r.key for r in self.rows]
        if key not in keys:
            raise KeyError(f"key must be one of {keys}, got {key!r}")
        return self.rows[keys.index(key)]

    def _measured_on_linear(self) -> list[float]:  # the adjusted row is not measured on F.linear
        return [r.per_token for r in self.rows if r.status == "measured" and r.call_path == "F.linear"]

    @property
    def low(self) -> float:
        """The lowest per-token speedup measured on ``F.linear``."""
        return min(self._measured_on_linear())

    @property
    def high(self) -> float:
        """The highest per-token speedup measured on ``F.linear``."""
        return max(self._measured_on_linear())

    @property
    def measured_best(self) -> VerdictRow:
        """The fastest measured row on any path (the direct call of the sweep: not PyTorch's path)."""
        return max((r for r in self.rows if r.status == "measured"), key=lambda r: r.per_token)

    @property
    def software_line(self) -> str:
        s = self.software
        return (f"{s['gpu']}, torch {s['torch']}, CUDA {s['cuda']}, cuSPARSELt {s['cusparselt']}, "
                f"driver {s['driver']}, measured {s['date']}")


def _replaced_note(replaced: list[str]) -> str:
    return (f"flagged timings replaced: {', '.join(replaced)} (twofour.bench.trusted.FLAG_RULES)"
            if replaced else "")


@functools.lru_cache(maxsize=4)
def verdict_table(workload: Workload = CHAT, gpu: str = GPU) -> VerdictTable:
    """The measured-first verdict of ``workload`` on the recorded GPU (fp16, Llama-3-8B shapes)."""
    from ..bench import recorded_alg_search
    from ..bench.trusted import trusted_gemm_table
    from ..dispatch.rules import cusparselt_version_str
    from ..request.inputs import gemm_shapes
    from ..roofline import predict

    res = verdict_results()
    prov = res.provenance
    software = {"gpu": prov["gpu_name"], "torch": prov["torch"], "cuda": prov["cuda"],
                "cusparselt": cusparselt_version_str(prov["cusparselt"]), "driver": prov["driver"],
                "date": prov["date"][:10]}
    rows = []
    measured = {mode: measured_gemm_detail(res, workload, mode=mode) for mode in ("stream", "graph", "kernel")}
    for key, (label, mode, algorithm) in ROWS.items():
        prefill = measured[mode]["prefill"]["speedup"]
        path = "F.linear"
        if algorithm == "default":
            decode, status, source = measured[mode]["decode"]["speedup"], "measured", f"{BENCH_FILE}, mode {mode}"
            note = _replaced_note(measured[mode]["decode"]["replaced"])
        elif algorithm == "searched" and mode == "graph":
            decode, path = searched_gemm_speedup(recorded_alg_search(), workload)["decode"], "_cslt_sparse_mm"
            status, source = "measured", f"{SWEEP_FILE}, fastest of algorithms 0-7 per GEMM"
            note = ("not PyTorch's path: torch._cslt_sparse_mm called directly on x pre-padded to 8 rows, against "
                    "cuBLAS's untuned default; prefill (M = 512, outside the sweep) is the default algorithm's on F.linear")
        elif algorithm == "searched-linear":
            cost = linear_path_cost(workload)
            decode, status, path = searched_on_linear(workload), "adjusted", "F.linear (adjusted)"
            source = f"{SWEEP_FILE} plus F.linear's cost per call: {cost['source']}"
            note = (f"adjustment, not a measurement on F.linear: the direct call's times plus "
                    f"{cost['range_us'][0]:.1f}-{cost['range_us'][1]:.1f} us per GEMM (gate/up: the median, its F.linear "
                    "timing is flagged); prefill is the default algorithm's on F.linear")
        else:  # never timed in kernel mode: the model predicts the searched 2:4 kernels, dense is measured
            shapes = [gemm_shapes(workload.model, "decode", workload.batch)[k] for k in workload.pruned]
            dense_ms = trusted_gemm_table(res, "float16", "kernel")
            # l2="flushed": the dense kernel times beside it were measured after an L2 flush, as bench does
            decode = sum(dense_ms[shape]["dense_ms"] for shape in shapes) / sum(
                predict(*shape, workload.dtype, GPU, scenario="kernel", algorithm="searched",
                        l2="flushed").sparse_us * 1e-3 for shape in shapes)
            path, status, source = "model", "predicted", "twofour.roofline over the measured dense kernels"
            note = ("the 2:4 kernel times predicted by twofour.roofline (searched algorithm, tile model); "
                    "dense measured; fitted to the direct call's sweep (in-fit errors up to "
                    f"{searched_fit_error():.0%}, no held-out check); prefill is the default algorithm's, "
                    "measured")
        if decode is None:
            raise ValueError(f"row {key!r}: the recorded data has no decode GEMMs of this workload in mode {mode!r}")
        est = estimate(workload, gpu, gemm_speedup={"decode": decode, "prefill": prefill})
        rows.append(VerdictRow(key, label, status, source, decode, prefill, est, note, path))
    return VerdictTable(tuple(rows), software, workload, gpu)


def bf16_rows(gpu: str = GPU) -> list[VerdictRow]:
    """The bf16 measurements of the same deployment: lone calls and CUDA graph (the only modes timed in bf16)."""
    res = verdict_results()
    w = replace(CHAT, dtype="bf16")
    out = []
    for key, mode, label in (("lone", "lone", "PyTorch eager, one lone call per GEMM"),
                             ("graph", "graph", "CUDA graph, PyTorch's default algorithm")):
        s = measured_gemm_detail(res, w, mode=mode)
        est = estimate(w, gpu, gemm_speedup={"decode": s["decode"]["speedup"], "prefill": s["prefill"]["speedup"]})
        note = _replaced_note(s["decode"]["replaced"] + s["prefill"]["replaced"])
        out.append(VerdictRow(key, label, "measured", f"{BENCH_FILE}, mode {mode}", s["decode"]["speedup"],
                              s["prefill"]["speedup"], est, note))
    return out


def verdict_markdown_table(t: VerdictTable | None = None) -> Table:
    """The verdict as chapter 7 shows it: one row per way of calling the GEMMs, each labelled."""
    t = t or verdict_table()
    x = "{:.2f}x"
    rows = [{"how the GEMMs are called": r.label, "call path": PATH_LABELS[r.call_path], "how we know": r.status,
             "decode GEMMs": r.decode_gemm, "per token": r.per_token, "whole request": r.request} for r in t.rows]
    return table(rows, formats={"decode GEMMs": x, "per token": x, "whole request": x},
                 caption=(f"2:4 against dense, Llama-3-8B fp16, batch 1, 512-token prompt, 256 output tokens, "
                          f"{t.gpu}: decode GEMMs as labelled, the rest of the step predicted. Holds for "
                          f"{t.software_line}."))


def bottom_line_markdown(chapter_link: str = "notebooks/07-the-answer.ipynb") -> str:
    """The home page's answer box (Markdown in a ``div``): the why first, then the headline in each dtype.

    >>> text = bottom_line_markdown()
    >>> text.index("Why") < text.index("The bottom line.") and "bf16" in text and "(notebooks/07-the-answer.ipynb)" in text
    True
    """
    from ..roofline.mechanism import why  # twofour.roofline imports PyTorch: on first use

    h = chain_headline()
    return (
        '<div class="htw-bottom-line" markdown="1">\n\n'
        f"**Why.** {why()}\n\n"
        "**The bottom line.** Llama-3-8B on an H200, one token at a time, through `F.linear`: "
        f"**{h['fp16']['per_token']:.2f}x the dense speed in fp16 and {h['bf16']['per_token']:.2f}x in bf16**. "
        "A hand-picked cuSPARSELt algorithm gets near break-even, not 2x. "
        f"[Chapter 7]({chapter_link}) shows where the 2x went.\n\n</div>\n"
    )


# The diagnosis, in the order to run it: (stage, the question, how to settle it). One list for the
# home page and chapter 7; {ch} is the prefix of chapter links, {calc} the calculator's link.
CHECKLIST: tuple[tuple[str, str], ...] = (
    ("Structure", "is every group of 4 weights along K at most 2 non-zeros? `twofour audit model.safetensors` "
     "or `twofour.check(W)` ([chapter 1]({ch}01-structure.ipynb))"),
    ("Representation", "is the weight packed? Free the dense copy and compare allocated bytes: packed fp16 is "
     "56.25% of dense, a masked dense tensor 100% ([chapter 2]({ch}02-packing.ipynb))"),
    ("Dispatch", "did a sparse kernel run? Read the kernel names in a profile of the serving shapes, decode and "
     "prefill apart (`twofour trace`) ([chapter 3]({ch}03-dispatch.ipynb))"),
    ("Kernel speed", "is the 2:4 kernel faster at your M (the rows each GEMM multiplies: the batch in decode, "
     "batch × prompt tokens in prefill)? `twofour bench` in the mode your server runs, and "
     "`--alg-id` for cuSPARSELt's other algorithms ([chapter 4]({ch}04-kernel-speed.ipynb))"),
    ("Quality", "what did the zeros cost? The same evaluation before and after pruning "
     "([chapter 5]({ch}05-quality.ipynb))"),
    ("Amdahl", "what share $p$ of the request is pruned GEMM? Measure it from a trace; the request gets "
     "$1/((1-p)+p/s)$ ([chapter 6]({ch}06-amdahl.ipynb), [calculator]({calc}))"),
)


def checklist_markdown(chapters: str = "", calculator: str = "../calculator/index.md") -> str:
    """:data:`CHECKLIST` as a numbered Markdown list; ``chapters`` prefixes chapter links (``"notebooks/"`` on the home page).

    >>> md = checklist_markdown("notebooks/", "calculator/index.md")
    >>> md.splitlines()[0][:28], "(notebooks/03-dispatch.ipynb)" in md
    ('1. **Structure**: is every g', True)
    """
    import textwrap

    def wrap(item: str) -> str:
        # code spans and link texts stay on one line: their spaces are held while the item is wrapped
        held = re.sub(r"`[^`]*`|\[[^\]]*\]", lambda m: m.group(0).replace(" ", "\0"), item)
        return textwrap.fill(held, 100, subsequent_indent="   ", break_on_hyphens=False,
                             break_long_words=False).replace("\0", " ")

    items = [f"{i}. **{stage}**: {what.format(ch=chapters, calc=calculator)}." for i, (stage, what) in
             enumerate(CHECKLIST, 1)]
    return "\n".join(wrap(item) for item in items) + "\n"


def calculator_verdict(t: VerdictTable | None = None) -> dict:
    """What the request calculator opens on: the worked deployment with its least biased GEMM speedups.
    Decode: the GEMM-chain traces' (the one-GEMM graph bench flatters 2:4 at decode); prefill: the
    graph bench's, whose per-call bias is small beside a prefill GEMM.
    """
    from ..roofline.mechanism import why

    t = t or verdict_table()
    r = t.row("graph")
    w = t.workload
    decode = chain_headline()["fp16"]["gemm"]
    est = estimate(w, t.gpu, gemm_speedup={"prefill": r.prefill_gemm, "decode": decode})
    return {"gpu": t.gpu, "model": w.model.name, "dtype": w.dtype, "batch": w.batch, "prompt_len": w.prompt_len,
            "output_len": w.output_len, "pruned": list(w.pruned), "speedup_prefill": r.prefill_gemm, "speedup_decode": decode,
            "per_token": est.speedup("tpot"), "request": est.speedup("request"), "row": "chain",
            "source": "decode: the GEMM-chain traces; prefill: " + r.source,
            "software": t.software_line, "decode_loss": decode_loss_explanation(), "why": why()}


def calculator_opening(t: VerdictTable | None = None) -> dict:
    """:func:`calculator_verdict` rounded as the calculator's fields show it (``docs/js/calc/data.js``).

    >>> calculator_opening()["gpu"], calculator_opening()["row"]
    ('H200', 'chain')
    """
    c = calculator_verdict(t)
    return {**c, "speedup_prefill": round(c["speedup_prefill"], 3), "speedup_decode": round(c["speedup_decode"], 3),
            "per_token": round(c["per_token"], 4), "request": round(c["request"], 4)}


def quoted_numbers(t: VerdictTable | None = None) -> dict[str, str]:
    """The verdict's numbers as prose quotes them, by the key a ``<!-- verdict:KEY -->`` marker names.

    >>> q = quoted_numbers()
    >>> sorted(q)  # doctest: +NORMALIZE_WHITESPACE
    ['adjusted', 'bench-bias', 'chain', 'chain-bf16', 'chain-fp16', 'chain-gemm-bf16', 'chain-gemm-fp16',
     'chain-gemm3', 'chain-request', 'decode-loss', 'direct', 'eager', 'graph', 'graph-gemm', 'graph-prefill-gemm',
     'host-costs', 'kernel', 'kernel-gemm', 'kernel-prefill-gemm', 'linear-cost', 'range', 'searched-bracket',
     'software', 'step-vs-graph', 'sweep', 'why']
    """
    from ..roofline.mechanism import why

    t = t or verdict_table()
    x = "{:.2f}x".format
    calc, chain = calculator_verdict(t), chain_headline()
    return {
        "range": f"{x(t.low)} to {x(t.high)}",
        "eager": x(t.row("eager").per_token),
        "graph": x(t.row("graph").per_token),
        "graph-gemm": x(t.row("graph").decode_gemm),
        # the calculator's opening values: the GEMM speedups as its fields hold them, and its headline
        "chain-gemm3": f"{calc['speedup_decode']:.3f}x",
        "graph-prefill-gemm": f"{t.row('graph').prefill_gemm:.3f}x",
        "kernel-prefill-gemm": f"{t.row('kernel').prefill_gemm:.3f}x",
        "chain-request": x(calc["request"]),
        "kernel": x(t.row("kernel").per_token),
        "kernel-gemm": x(t.row("kernel").decode_gemm),
        # the sweep's fastest algorithm: measured on the direct call, and adjusted to F.linear
        "direct": x(t.row("graph-searched").per_token),
        "adjusted": x(t.row("graph-searched-linear").per_token),
        "linear-cost": "{:.1f}-{:.1f} µs".format(*linear_path_cost(t.workload)["range_us"]),
        "sweep": sweep_sentence(),
        "decode-loss": decode_loss_explanation(),
        "step-vs-graph": step_sentence(),
        # the headline from the GEMM-chain traces (twofour.course.gemm_chain) and the bench's bias against it
        "why": why(),
        "chain": headline_sentence(),
        "chain-fp16": x(chain["fp16"]["per_token"]),
        "chain-bf16": x(chain["bf16"]["per_token"]),
        "chain-gemm-fp16": x(chain["fp16"]["gemm"]),
        "chain-gemm-bf16": x(chain["bf16"]["gemm"]),
        "searched-bracket": "{} to {}".format(*map(x, chain["searched"])),
        "bench-bias": bias_sentence(),
        "host-costs": host_cost_sentence(),
        "software": t.software_line,
    }


def host_cost_sentence() -> str:
    """The eager scenario's host cost per 2:4 call, as this run's host and the published ones imply it."""
    from .kernel_model import host_costs

    rows = host_costs()
    implied = [r for r in rows[1:] if r["host_sparse_us"]]
    def cite(r):  # https://github.com/pytorch/pytorch/pull/177866 -> pytorch/pytorch#177866
        m = re.match(r"https://github.com/([^/]+/[^/]+)/(?:pull|issues)/(\d+)", r["source"])
        where = r["host"].split(" (", 1)[1].split(")", 1)[0]
        return f"{m.group(1)}#{m.group(2)}'s eager timing of its layer ({where})" if m else r["host"]

    return (f"{rows[0]['host_sparse_us']:.0f} µs per 2:4 call on this run's host (a 2-vCPU VM), "
            + ", ".join(f"{r['host_sparse_us']:.0f} µs implied by {cite(r)}" for r in implied))


def step_sentence() -> str:
    """The GEMM-chain traces beside the one-GEMM graphs (:func:`twofour.course.decode_loss.step_against_graphs`)."""
    s = step_against_graphs()
    return (f"at M = {s['M']}, where both were recorded, the GEMM-chain traces give {s['step_gemm']:.2f}x "
            f"(GEMM kernels) and {s['step_wall']:.2f}x (the chain's wall time), where the one-GEMM CUDA graphs give "
            f"{s['graph']:.2f}x and their kernel times {s['kernel']:.2f}x: each bench call replays one GEMM from an "
            f"idle device after an L2 flush, while in the chain the kernels run back to back (GPU idle "
            f"{s['idle_us_dense']:.2f} µs per kernel dense, {s['idle_us_sparse']:.2f} µs 2:4)")


_QUOTE = re.compile(r"(<!--\s*verdict:([a-z0-9-]+)\s*-->)(.*?)(<!--\s*/verdict\s*-->)", re.S)
_CHECKLIST = re.compile(r"(<!--\s*checklist\s*-->)(.*?)(<!--\s*/checklist\s*-->)", re.S)


def fill_quotes(text: str, page_src: str, quotes: dict[str, str] | None = None) -> str:
    """``text`` with every quoted verdict number and the checklist set to their computed values; the
    markers stay, an unknown key raises. ``quotes``: :func:`quoted_numbers`, computed once for many pages.

    >>> fill_quotes("at <!-- verdict:eager -->?<!-- /verdict --> the speed", "index.md") == (
    ...     f"at <!-- verdict:eager -->{quoted_numbers()['eager']}<!-- /verdict --> the speed")
    True
    """
    quotes = quoted_numbers() if quotes is None else quotes

    def number(m: re.Match) -> str:
        if m.group(2) not in quotes:
            raise KeyError(f"{page_src}: <!-- verdict:{m.group(2)} --> is not a quoted number; known: {sorted(quotes)}")
        return m.group(1) + quotes[m.group(2)] + m.group(4)

    here = posixpath.dirname(page_src) or "."  # the checklist's links are relative to the page
    chapters = posixpath.relpath("notebooks", here)
    checklist = checklist_markdown("" if chapters == "." else chapters + "/",
                                   posixpath.relpath("calculator/index.md", here))
    return _CHECKLIST.sub(lambda m: m.group(1) + "\n" + checklist + m.group(3), _QUOTE.sub(number, text))


def stale_quotes(text: str, page_src: str, quotes: dict[str, str] | None = None) -> list[str]:
    """One line per stale quote in ``text`` (empty: all current); ``quotes`` as for :func:`fill_quotes`."""
    def quotes_in(s: str) -> list[str]:
        return [m.group(0) for pattern in (_QUOTE, _CHECKLIST) for m in pattern.finditer(s)]

    old, new = quotes_in(text), quotes_in(fill_quotes(text, page_src, quotes))
    return [f"{page_src}: {a!r} should be {b!r}" for a, b in zip(old, new) if a != b]
