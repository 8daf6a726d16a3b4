"""Why PyTorch's default 2:4 kernel loses at decode, as pages quote it, and the step beside the bench.

Pages quote :func:`decode_loss_explanation` (``<!-- verdict:decode-loss -->``), so none words it
differently; its words and figures live in :mod:`twofour.roofline.mechanism`.
"""

from __future__ import annotations

__all__ = ["decode_loss_explanation", "step_against_graphs"]


def decode_loss_explanation() -> str:
    """The explanation as every page quotes it: :func:`twofour.roofline.mechanism.mechanism_paragraph`.

    >>> text = decode_loss_explanation()
    >>> "256" in text and "\\n" not in text
    True
    """
    from ..roofline.mechanism import mechanism_paragraph

    return mechanism_paragraph()


def step_against_graphs() -> dict:
    """The GEMM-chain traces against the bench's one-GEMM CUDA graphs and kernel times, at the traces' M:
    ``step_gemm``, ``step_wall``: the traces' GEMM kernel sums and wall span per step, dense over 2:4;
    ``graph``, ``kernel``: the bench over the same seven GEMMs; ``idle_us_*``: GPU idle per kernel.

    >>> s = step_against_graphs()
    >>> s["M"], s["step_wall"] < s["graph"]
    (16, True)
    """
    from ..dispatch.trace import analyze
    from ..dispatch.trace.read import recorded
    from ..models import LLAMA_3_8B
    from ..request import Workload, measured_gemm_speedup
    from ..roofline.evidence import TRACE_M
    from .deployment import verdict_results

    rep = analyze(recorded("sparse-graph"), phase="decode", baseline=recorded("dense-graph"))
    dense = analyze(recorded("dense-graph"), phase="decode")
    ph, dph = rep.phase("decode"), dense.phase("decode")
    c = ph.comparison

    def idle_per_kernel(p):
        n = sum(count for count, _ in p.kernel_table.values()) / max(len(p.summarized), 1)
        return (p.wall_us - (p.busy_us or 0.0)) / n

    w = Workload(LLAMA_3_8B, batch=TRACE_M, prompt_len=512, output_len=256, dtype="fp16")
    res = verdict_results()
    return {"M": TRACE_M, "step_gemm": c.gemm_speedup, "step_wall": c.end_to_end,
            "graph": measured_gemm_speedup(res, w, mode="graph")["decode"],
            "kernel": measured_gemm_speedup(res, w, mode="kernel")["decode"],
            "idle_us_dense": idle_per_kernel(dph), "idle_us_sparse": idle_per_kernel(ph)}
