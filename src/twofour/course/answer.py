"""Chapter 7's worked deployment and its verdict: one table, measured first, read by every page that quotes it.

The deployment is Llama-3-8B shapes in fp16, every linear layer inside the transformer blocks
pruned to 2:4 (the LM head dense), batch 1, 512-token prompts and 256 output tokens, on an
NVIDIA H200. fp16 because the project's H200 run measured it in every way a GEMM can be called
(eager, CUDA graph, kernel only, and every cuSPARSELt algorithm); bf16 was measured eager and in
CUDA graphs only (:func:`bf16_rows`).

The verdict is a range over how the GEMMs are called (:data:`ROWS`). Each row is labelled
``measured`` (the decode GEMMs were timed on the H200; the file and timing mode are named) or
``predicted`` (nothing was measured; the kernel model fills in). The per-token and request
speedups put the row's GEMM speedup into the request model (:func:`twofour.request.estimate`):
the GEMMs are measured, the rest of the step (attention, KV cache, the LM head, element-wise
work) is predicted, which is said with every number.

Every page that quotes the verdict reads :func:`verdict_table`: chapter 7's table and levers,
the home page's bottom line (``site_hooks/answer.py``), chapter 6's range, the calculator's
opening values (``docs/js/calc/verdict.js``, written by :func:`verdict_js`) and the practice answers. Prose quotes a number
between markers, ``<!-- verdict:range -->0.05x to 1.19x<!-- /verdict -->``: the site's build
puts the computed value there (:func:`fill_quotes`), a test fails when the text in the file is
stale (:func:`stale_quotes`), and ``python scripts/refresh_quotes.py`` rewrites it. So no two
places can disagree, and new measurements move all of them. The diagnosis checklist is one list
(:data:`CHECKLIST`) quoted the same way, between ``<!-- checklist -->`` and ``<!-- /checklist -->``.

Example:
    >>> from twofour.course.answer import verdict_table
    >>> t = verdict_table()
    >>> [r.key for r in t.rows]
    ['eager', 'graph', 'graph-searched', 'kernel', 'kernel-searched']
    >>> t.low <= t.row("kernel").per_token <= t.high and t.high == t.measured_best.per_token
    True
"""

from __future__ import annotations

import functools
import posixpath
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..models import LLAMA_3_8B
from ..request import RequestEstimate, Workload, estimate, measured_gemm_speedup, searched_gemm_speedup
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
    "VERDICT_JS",
    "verdict_js",
]

GPU = "H200"
CHAT = Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=256, dtype="fp16")

# key -> (how the GEMMs are called, timing mode of `twofour bench` that measures it, algorithm)
ROWS: dict[str, tuple[str, str, str]] = {
    "eager": ("PyTorch eager: a cuSPARSELt plan built per call, calls back to back", "stream", "default"),
    "graph": ("CUDA graph (plans cached), PyTorch's default algorithm", "graph", "default"),
    "graph-searched": ("CUDA graph, the fastest cuSPARSELt algorithm (searched)", "graph", "searched"),
    "kernel": ("kernel time only, default algorithm", "kernel", "default"),
    "kernel-searched": ("kernel time only, fastest algorithm", "kernel", "searched"),
}
BENCH_FILE = "bench-nvidia-h200-llama-3-8b-20261130.json"
SWEEP_FILE = "cslt-algsearch-nvidia-h200-20261130.json"


@dataclass(frozen=True)
class VerdictRow:
    """One way of calling the GEMMs, and what 2:4 gives in it.

    ``decode_gemm``: the time-weighted 2:4 speedup of one layer's seven decode GEMMs;
    ``estimate``: the request with that GEMM speedup (per token: ``estimate.speedup("tpot")``).
    """

    key: str
    label: str
    status: str  # "measured" or "predicted"
    source: str
    decode_gemm: float
    prefill_gemm: float | None
    estimate: RequestEstimate
    note: str = ""

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
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(f"key must be one of {[r.key for r in self.rows]}, got {key!r}")

    @property
    def low(self) -> float:
        """The lowest per-token speedup of any row."""
        return min(r.per_token for r in self.rows)

    @property
    def high(self) -> float:
        """The highest per-token speedup of any row."""
        return max(r.per_token for r in self.rows)

    @property
    def measured_best(self) -> VerdictRow:
        """The fastest measured row (what a practitioner can run today)."""
        return max((r for r in self.rows if r.status == "measured"), key=lambda r: r.per_token)

    @property
    def software_line(self) -> str:
        s = self.software
        return (f"{s['gpu']}, torch {s['torch']}, CUDA {s['cuda']}, cuSPARSELt {s['cusparselt']}, "
                f"driver {s['driver']}, measured {s['date']}")


def _cusparselt_version(code) -> str:
    """cuSPARSELt's version as torch reports it (800) in the dotted form (0.8.0)."""
    try:
        n = int(code)
    except (TypeError, ValueError):
        return str(code)
    return f"{n // 1000}.{n // 100 % 10}.{n % 100}"


def verdict_results(name: str = BENCH_FILE):
    """The recorded results file the verdict's measured rows read (:data:`BENCH_FILE`, shipped in ``twofour/data``).

    One file, not every recorded one: the reference-shape file repeats some Llama-3-8B shapes,
    and a verdict must name the one measurement it quotes.
    """
    from ..bench import recorded_results

    for res in recorded_results("gpu"):
        if res.path is not None and Path(res.path).name == name:
            return res
    raise FileNotFoundError(f"{name} is not among the recorded results in twofour/data")


def _predicted_kernel_searched(workload: Workload, measured_dense: dict) -> tuple[float, str]:
    """The searched algorithm's kernel time was never recorded: the kernel model predicts its 2:4 side.

    The dense side stays measured (kernel mode); only the 2:4 kernel times come from
    :func:`twofour.roofline.predict` with ``algorithm="searched"``.
    """
    from ..request.evaluate import gemm_shapes
    from ..roofline import predict

    shapes = gemm_shapes(workload.model, "decode", workload.batch)
    dense = sparse = 0.0
    for kind in workload.pruned:
        M, N, K = shapes[kind]
        dense += measured_dense[(M, N, K)]
        # l2="flushed": the dense kernel times it sits beside were measured after an L2 flush, as bench does
        sparse += predict(M, N, K, workload.dtype, GPU, scenario="kernel", algorithm="searched", l2="flushed").sparse_us * 1e-3
    return dense / sparse, "the 2:4 kernel times predicted by twofour.roofline (searched algorithm, tile model); dense measured"


@functools.lru_cache(maxsize=4)
def verdict_table(workload: Workload = CHAT, gpu: str = GPU) -> VerdictTable:
    """The measured-first verdict of ``workload`` on the recorded GPU (fp16, Llama-3-8B shapes)."""
    from ..bench import recorded_alg_search

    res = verdict_results()
    sweep = recorded_alg_search()
    prov = res.provenance
    software = {"gpu": prov["gpu_name"], "torch": prov["torch"], "cuda": prov["cuda"],
                "cusparselt": _cusparselt_version(prov["cusparselt"]), "driver": prov["driver"],
                "date": prov["date"][:10]}
    rows = []
    measured = {mode: measured_gemm_speedup(res, workload, mode=mode) for mode in ("stream", "graph", "kernel")}
    for key, (label, mode, algorithm) in ROWS.items():
        prefill = measured[mode]["prefill"]
        note = ""
        if algorithm == "default":
            decode, status, source = measured[mode]["decode"], "measured", f"{BENCH_FILE}, mode {mode}"
        elif mode == "graph":
            decode = searched_gemm_speedup(sweep, workload)["decode"]
            status, source = "measured", f"{SWEEP_FILE}, fastest algorithm per GEMM"
            note = ("the sweep timed the library's kernels on pre-padded x against cuBLAS's untuned default; "
                    "prefill (M = 512, outside the sweep) is the default algorithm's")
        else:
            dense_kernel = {(p["M"], p["N"], p["K"]): p["dense_ms"] for p in res.gpu_points("kernel")
                            if p["dtype"] == "float16"}
            decode, note = _predicted_kernel_searched(workload, dense_kernel)
            status, source = "predicted", "twofour.roofline over the measured dense kernels"
            note += "; prefill is the default algorithm's, measured"
        if decode is None:
            raise ValueError(f"row {key!r}: the recorded data has no decode GEMMs of this workload in mode {mode!r}")
        est = estimate(workload, gpu, gemm_speedup={"decode": decode, "prefill": prefill})
        rows.append(VerdictRow(key, label, status, source, decode, prefill, est, note))
    return VerdictTable(tuple(rows), software, workload, gpu)


def bf16_rows(gpu: str = GPU) -> list[VerdictRow]:
    """The bf16 measurements of the same deployment: eager and CUDA graph (the only modes timed in bf16)."""
    res = verdict_results()
    w = replace(CHAT, dtype="bf16")
    out = []
    for key, mode, label in (("eager", "eager", "PyTorch eager, one lone call per GEMM"),
                             ("graph", "graph", "CUDA graph, PyTorch's default algorithm")):
        s = measured_gemm_speedup(res, w, mode=mode)
        est = estimate(w, gpu, gemm_speedup={"decode": s["decode"], "prefill": s["prefill"]})
        out.append(VerdictRow(key, label, "measured", f"{BENCH_FILE}, mode {mode}", s["decode"], s["prefill"], est))
    return out


def verdict_markdown_table(t: VerdictTable | None = None) -> Table:
    """The verdict as chapter 7 shows it: one row per way of calling the GEMMs, each labelled."""
    t = t or verdict_table()
    x = "{:.2f}x"
    rows = [{"how the GEMMs are called": r.label, "how we know": r.status, "decode GEMMs": r.decode_gemm,
             "per token": r.per_token, "whole request": r.request} for r in t.rows]
    return table(rows, formats={"decode GEMMs": x, "per token": x, "whole request": x},
                 caption=(f"2:4 against dense, Llama-3-8B fp16, batch 1, 512-token prompt, 256 output tokens, "
                          f"{t.gpu}: decode GEMMs as labelled, the rest of the step predicted. Holds for "
                          f"{t.software_line}."))


def bottom_line_markdown(chapter_link: str = "notebooks/07-the-answer.ipynb") -> str:
    """The home page's bottom line (Markdown in a ``div``): the verdict as a range, in one sentence, linking chapter 7.

    >>> text = bottom_line_markdown()
    >>> "The bottom line." in text and "(notebooks/07-the-answer.ipynb)" in text
    True
    """
    t = verdict_table()
    eager, graph, kernel, best = t.row("eager"), t.row("graph"), t.row("kernel"), t.measured_best
    return (
        '<div class="htw-bottom-line" markdown="1">\n\n'
        "**The bottom line.** Served through PyTorch's 2:4 path, Llama-3-8B at batch 1 on an NVIDIA H200 "
        f"generates each token at **{t.low:.2f}x to {t.high:.2f}x the dense speed**, measured: "
        f"{eager.per_token:.2f}x with eager calls, {graph.per_token:.2f}x with CUDA graphs and the default "
        f"kernel ({kernel.per_token:.2f}x counting its kernel time alone), {best.per_token:.2f}x with the "
        f"fastest cuSPARSELt algorithm, which PyTorch does not pick by default; [chapter 7]({chapter_link}) "
        "shows where the 2x went and what would change it.\n\n</div>\n"
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
    """What the request calculator opens on: the worked deployment with its measured GEMM speedups.

    The calculator starts where chapter 7 and the home page do: Llama-3-8B fp16 on an H200, batch 1,
    with the decode and prefill GEMM speedups measured in CUDA graphs with PyTorch's default
    algorithm (``graph``), so its headline is the verdict table's ``graph`` row.
    """
    t = t or verdict_table()
    r = t.row("graph")
    w = t.workload
    return {"gpu": t.gpu, "model": w.model.name, "dtype": w.dtype, "batch": w.batch, "prompt_len": w.prompt_len,
            "output_len": w.output_len, "pruned": list(w.pruned), "speedup_prefill": r.prefill_gemm, "speedup_decode": r.decode_gemm,
            "per_token": r.per_token, "request": r.request, "row": r.key, "source": r.source,
            "software": t.software_line}


# The calculator's copy of calculator_verdict(), relative to the repository root.
VERDICT_JS = "docs/js/calc/verdict.js"


def verdict_js(t: VerdictTable | None = None) -> str:
    """The text of ``docs/js/calc/verdict.js``: :func:`calculator_verdict` as a frozen ES module.

    The calculators are static ES modules with no build step, so the verdict travels as a committed,
    generated copy; ``scripts/refresh_quotes.py`` rewrites it and a test fails while it is stale.
    The GEMM speedups are rounded to 3 decimals, as the calculator's fields show them; the request
    and per-token speedups they give round to the verdict table's 2 decimals (a test checks that).

    >>> text = verdict_js()
    >>> text.startswith("// GENERATED") and '"gpu": "H200"' in text
    True
    """
    import json

    c = calculator_verdict(t)
    data = {**c, "speedup_prefill": round(c["speedup_prefill"], 3), "speedup_decode": round(c["speedup_decode"], 3),
            "per_token": round(c["per_token"], 4), "request": round(c["request"], 4)}
    return ("// GENERATED by `python scripts/refresh_quotes.py` from twofour.course.answer.calculator_verdict().\n"
            "// Do not edit: rerun the script after new measurements; tests/course/answer/test_answer.py fails while it is stale.\n"
            "// What the request calculator opens on: chapter 7's worked deployment with the GEMM speedups\n"
            "// measured on the H200 in CUDA graphs (the verdict table's row named in `row`).\n\n"
            "export const VERDICT = Object.freeze(" + json.dumps(data, indent=1) + ");\n")


def quoted_numbers(t: VerdictTable | None = None) -> dict[str, str]:
    """The verdict's numbers as prose quotes them, by the key a ``<!-- verdict:KEY -->`` marker names.

    >>> q = quoted_numbers()
    >>> sorted(q)  # doctest: +NORMALIZE_WHITESPACE
    ['best', 'eager', 'graph', 'graph-gemm', 'graph-gemm3', 'graph-prefill-gemm', 'graph-request', 'kernel',
     'kernel-gemm', 'range', 'software']
    """
    t = t or verdict_table()
    x = "{:.2f}x".format
    return {
        "range": f"{x(t.low)} to {x(t.high)}",
        "eager": x(t.row("eager").per_token),
        "graph": x(t.row("graph").per_token),
        "graph-gemm": x(t.row("graph").decode_gemm),
        # the calculator's opening values: the GEMM speedups as its fields hold them, and its headline
        "graph-gemm3": f"{t.row('graph').decode_gemm:.3f}x",
        "graph-prefill-gemm": f"{t.row('graph').prefill_gemm:.3f}x",
        "graph-request": x(t.row("graph").request),
        "kernel": x(t.row("kernel").per_token),
        "kernel-gemm": x(t.row("kernel").decode_gemm),
        "best": x(t.measured_best.per_token),
        "software": t.software_line,
    }


_QUOTE = re.compile(r"(<!--\s*verdict:([a-z-]+)\s*-->)(.*?)(<!--\s*/verdict\s*-->)", re.S)
_CHECKLIST = re.compile(r"(<!--\s*checklist\s*-->)(.*?)(<!--\s*/checklist\s*-->)", re.S)


def _checklist_for(page_src: str) -> str:
    """The checklist with links relative to ``page_src`` (a path in the site: ``index.md``, ``notebooks/07-....ipynb``)."""
    here = posixpath.dirname(page_src) or "."
    chapters = posixpath.relpath("notebooks", here)
    return checklist_markdown("" if chapters == "." else chapters + "/", posixpath.relpath("calculator/index.md", here))


def fill_quotes(text: str, page_src: str) -> str:
    """``text`` with every quoted verdict number and the checklist set to their computed values.

    The markers stay, so filling twice changes nothing. An unknown key raises, naming it.

    >>> fill_quotes("at <!-- verdict:eager -->?<!-- /verdict --> the speed", "index.md") == (
    ...     f"at <!-- verdict:eager -->{quoted_numbers()['eager']}<!-- /verdict --> the speed")
    True
    """
    quotes = quoted_numbers()

    def number(m: re.Match) -> str:
        if m.group(2) not in quotes:
            raise KeyError(f"{page_src}: <!-- verdict:{m.group(2)} --> is not a quoted number; known: {sorted(quotes)}")
        return m.group(1) + quotes[m.group(2)] + m.group(4)

    text = _QUOTE.sub(number, text)
    return _CHECKLIST.sub(lambda m: m.group(1) + "\n" + _checklist_for(page_src) + m.group(3), text)


def stale_quotes(text: str, page_src: str) -> list[str]:
    """One line per quote in ``text`` whose value differs from the computed one (empty: all current)."""
    filled = fill_quotes(text, page_src)
    old = [m.group(0) for m in _QUOTE.finditer(text)] + [m.group(0) for m in _CHECKLIST.finditer(text)]
    new = [m.group(0) for m in _QUOTE.finditer(filled)] + [m.group(0) for m in _CHECKLIST.finditer(filled)]
    return [f"{page_src}: {a!r} should be {b!r}" for a, b in zip(old, new) if a != b]
