"""The 2:4 GEMM speedup of a request's phases from GPU measurements (bench results, the algorithm search)."""

from __future__ import annotations

from .inputs import gemm_shapes
from ..vocabulary import MEASURED_DTYPES, PHASES, TORCH_NAMES
from .workload import BLOCK_LINEARS, Workload


def measured_gemm_speedup(results, workload: Workload, *, mode: str = "graph") -> dict[str, float | None]:
    """The 2:4 GEMM speedup of each phase of ``workload`` from GPU measurements (for :func:`estimate`).

    Each pruned block linear's GEMM is looked up in ``results`` (:class:`twofour.bench.Results`, one
    or a list) at exactly its ``M``, ``N``, ``K``, dtype and timing ``mode``; the phase's speedup is
    ``sum(dense) / sum(2:4)`` over one layer's pruned GEMMs, None if any is not measured. Flagged
    timings are replaced by a rule or dropped (:func:`measured_gemm_detail` says which).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.bench import recorded_results
        >>> s = measured_gemm_speedup(recorded_results("gpu"), Workload(LLAMA_3_8B, 1, 512, 256))
        >>> sorted(s), s["decode"] < 1          # one token: the 2:4 GEMMs lost, even with cached plans
        (['decode', 'prefill'], True)
    """
    return {phase: d["speedup"] for phase, d in measured_gemm_detail(results, workload, mode=mode).items()}


def measured_gemm_detail(results, workload: Workload, *, mode: str = "graph") -> dict[str, dict]:
    """Per phase: ``speedup`` (as :func:`measured_gemm_speedup`), ``rows`` (each GEMM's trusted row,
    by linear kind) and ``replaced`` (``"kind M=..: rule"`` for each flagged timing a rule replaced).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.course.answer import verdict_results
        >>> d = measured_gemm_detail(verdict_results(), Workload(LLAMA_3_8B, 1, 512, 256, dtype="fp16"))
        >>> d["decode"]["replaced"]
        ['gate_proj M=1: kernel-plus-graph-cost', 'up_proj M=1: kernel-plus-graph-cost']
    """
    from ..vocabulary import TIMING_MODES
    from ..bench.trusted import trusted_gemm_table

    if mode not in TIMING_MODES:
        raise ValueError(f"mode must be one of {TIMING_MODES}, got {mode!r}")
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a twofour.request.Workload, got {type(workload).__name__}")
    if workload.dtype not in MEASURED_DTYPES:
        return {phase: {"speedup": None, "rows": {}, "replaced": []} for phase in PHASES}
    return _per_phase(trusted_gemm_table(results, TORCH_NAMES[workload.dtype], mode), workload)


def _per_phase(table: dict, workload: Workload) -> dict[str, dict]:
    """:func:`measured_gemm_detail` from ``table`` (``{(M, N, K): {"dense_ms", "sparse_ms", "rule"}}``)."""
    out = {}
    for phase in PHASES:
        shapes = gemm_shapes(workload.model, phase, workload.batch, workload.prompt_len,
                             workload.prefill_chunk_tokens)
        rows = {k: table.get(shapes[k]) for k in workload.pruned if k in BLOCK_LINEARS}
        if not rows or any(r is None for r in rows.values()):
            out[phase] = {"speedup": None, "rows": rows, "replaced": []}
            continue
        out[phase] = {"speedup": sum(r["dense_ms"] for r in rows.values()) / sum(r["sparse_ms"] for r in rows.values()),
                      "rows": rows, "replaced": [f"{k} M={shapes[k][0]}: {r['rule']}" for k, r in rows.items() if r["rule"]]}
    return out


def searched_gemm_speedup(cases, workload: Workload, *, pick: str = "best") -> dict[str, float | None]:
    """Like :func:`measured_gemm_speedup`, from a cuSPARSELt algorithm sweep (:func:`twofour.bench.recorded_alg_search`).

    ``pick="default"`` uses algorithm 0 (PyTorch's), ``"best"`` the fastest whose result matched
    dense. The sweep is fp16 with ``x`` padded and no ``F.linear`` wrapper: the library's kernels.

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> from twofour.bench import recorded_alg_search
        >>> s = searched_gemm_speedup(recorded_alg_search(), Workload(LLAMA_3_8B, 1, 64, 8, dtype="fp16"))
        >>> s["decode"] > 1 > searched_gemm_speedup(recorded_alg_search(), Workload(LLAMA_3_8B, 1, 64, 8, dtype="fp16"), pick="default")["decode"]
        True
    """
    if pick not in ("best", "default"):
        raise ValueError(f"pick must be 'best' or 'default', got {pick!r}")
    if workload.dtype != "fp16":
        raise ValueError(f"the recorded algorithm sweeps are fp16; workload.dtype is {workload.dtype!r}")
    table = {}
    for c in cases:
        sparse_ms = c["best"]["ms"] if pick == "best" and c.get("best") else c.get("default_ms")
        if sparse_ms:
            table[(c["M"], c["N"], c["K"])] = {"dense_ms": c["dense_ms"], "sparse_ms": sparse_ms, "rule": None}
    return {phase: d["speedup"] for phase, d in _per_phase(table, workload).items()}
