"""Chapter 7's worked deployment and its verdict as a range, in one place for the chapter and the home page.

The deployment is Llama-3-8B shapes in bf16, every linear layer inside the transformer blocks
pruned to 2:4 (the LM head dense), batch 1, 512-token prompts and 256 output tokens, on an
NVIDIA H200. Its verdict is not one number but a range over the ways the GEMMs can be called
(:data:`twofour.roofline.SCENARIOS`), plus the one case whose GEMMs were measured:

* ``eager``: PyTorch eager, a cuSPARSELt plan built on every call (predicted);
* ``measured``: cached plans / CUDA graphs, the GEMMs' speedups measured on the H200 by
  ``twofour bench`` (``twofour/data``), the rest of the step predicted;
* ``cached``: cached plans / CUDA graphs, predicted;
* ``ideal``: kernel time only, no per-call cost at all (predicted).

Chapter 7 shows the table; the home page's bottom line (``site_hooks/answer.py``) quotes its
ends, so the two cannot disagree.

Example:
    >>> from twofour.course.answer import verdicts
    >>> v = verdicts()
    >>> v["eager"].speedup("tpot") < v["measured"].speedup("tpot") < v["ideal"].speedup("tpot")
    True
"""

from __future__ import annotations

from ..models import LLAMA_3_8B
from ..request import RequestEstimate, Workload, estimate, measured_gemm_speedup
from .tables import Table, table

__all__ = ["GPU", "CHAT", "SCENARIO_LABELS", "verdicts", "verdict_table", "bottom_line_markdown"]

GPU = "H200"
CHAT = Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=256)

# How each verdict's GEMMs run, as the chapter's table names them (and whether it was measured).
SCENARIO_LABELS = {
    "eager": "PyTorch eager (a cuSPARSELt plan per call), predicted",
    "measured": "cached plans / CUDA graphs, GEMMs measured on the H200",
    "cached": "cached plans / CUDA graphs, predicted",
    "ideal": "kernel time only (no per-call cost), predicted",
}


def verdicts(workload: Workload = CHAT, gpu: str = GPU) -> dict[str, RequestEstimate]:
    """The request estimate in each scenario of :data:`SCENARIO_LABELS` (same keys, same order).

    ``measured`` uses the 2:4 GEMM speedups recorded on a GPU (``twofour bench --modes graph``,
    shipped in ``twofour/data``) for this workload's layers and tokens; the others use the
    fitted kernel model in the named scenario.
    """
    from ..bench import recorded_results

    measured = measured_gemm_speedup(recorded_results("gpu"), workload, mode="graph")
    return {
        "eager": estimate(workload, gpu, scenario="eager"),
        "measured": estimate(workload, gpu, gemm_speedup=measured),
        "cached": estimate(workload, gpu, scenario="cached"),
        "ideal": estimate(workload, gpu, scenario="ideal"),
    }


def verdict_table(estimates: dict[str, RequestEstimate]) -> Table:
    """The verdicts as a table: decode GEMM speedup, per-token speedup, whole-request speedup."""
    rows = [
        {"how the GEMMs run": SCENARIO_LABELS.get(key, key), "decode GEMM": e.decode.gemm_speedup,
         "per token": e.speedup("tpot"), "request": e.speedup("request")}
        for key, e in estimates.items()
    ]
    x = "{:.2f}x"
    return table(rows, formats={"decode GEMM": x, "per token": x, "request": x},
                 caption="2:4 against dense, Llama-3-8B bf16, batch 1, 512-token prompt, 256 output tokens, H200")


def bottom_line_markdown(chapter_link: str = "notebooks/07-the-answer.ipynb") -> str:
    """The home page's bottom line (Markdown in a ``div``): the verdict as a range, in one sentence, linking chapter 7.

    >>> text = bottom_line_markdown()
    >>> "The bottom line." in text and "(notebooks/07-the-answer.ipynb)" in text
    True
    """
    v = verdicts()
    per_token = {key: e.speedup("tpot") for key, e in v.items()}
    low, high = min(per_token.values()), max(per_token.values())
    return (
        '<div class="htw-bottom-line" markdown="1">\n\n'
        "**The bottom line.** Served through PyTorch's 2:4 path, Llama-3-8B at batch 1 on an NVIDIA H200 "
        f"generates each token at **{low:.2f}x to {high:.2f}x the dense speed**: {per_token['eager']:.2f}x with "
        f"eager calls, {per_token['measured']:.2f}x with cached plans (GEMMs measured), {per_token['ideal']:.2f}x "
        f"if a call cost nothing beyond its kernel; [chapter 7]({chapter_link}) shows where the 2x went and "
        "what would change it.\n\n</div>\n"
    )
