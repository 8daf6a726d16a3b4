"""The flat numeric inputs of the request arithmetic: what a workload, a GPU and assumptions become."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

from ..amdahl import require_speedup
from ..models import TransformerConfig
from .gemm import ideal_gemm_model, roofline_gemm_model
from .workload import (DTYPE_BYTES, LINEAR_KINDS, OUT_BYTES, PHASES, PACKED_RATIO, Assumptions, GemmModel, Machine,
                       Workload, require_number, require_count)

__all__ = ["RequestInputs", "gemm_shapes", "build_inputs"]


@dataclass(frozen=True)
class RequestInputs:
    """Every number :func:`evaluate` uses, flat, so the JavaScript can take the same record.

    ``gemm[phase][kind] = [dense_s, sparse_s]`` for one GEMM; ``pruned[kind]`` is a bool.
    :meth:`to_dict` leaves ``prefill_chunk_tokens`` out at 0 (the golden vectors predate it).
    """

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    batch: int
    prompt_len: int
    output_len: int
    bytes_per_element: float
    out_bytes_per_element: float
    kv_bytes_per_element: float
    packed_ratio: float
    dense_flops: float
    sparse_flops: float
    bandwidth: float
    attention_efficiency: float
    memory_efficiency: float
    other_elems_per_token_layer: float
    step_overhead_s: float
    request_overhead_s: float
    pruned: dict[str, bool] = field(default_factory=dict)
    gemm: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    prefill_chunk_tokens: int = 0

    def to_dict(self) -> dict:
        out = asdict(self)
        if out["prefill_chunk_tokens"] == 0:
            del out["prefill_chunk_tokens"]
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> "RequestInputs":
        names = {f.name for f in fields(cls)}
        missing = sorted(names - set(data) - {"prefill_chunk_tokens"})
        if missing:
            raise ValueError(f"request inputs are missing {missing}")
        return cls(**{k: data[k] for k in names if k in data})


def gemm_shapes(inputs_or_cfg, phase: str, batch: int | None = None, prompt_len: int | None = None,
                prefill_chunk_tokens: int = 0) -> dict[str, tuple[int, int, int]]:
    """``{kind: (M, N, K)}`` of the GEMMs one step of ``phase`` runs (per layer for block kinds).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> gemm_shapes(LLAMA_3_8B, "decode", batch=8)["down_proj"]
        (8, 4096, 14336)
        >>> gemm_shapes(LLAMA_3_8B, "decode", batch=8, prefill_chunk_tokens=512)["down_proj"]
        (520, 4096, 14336)
    """
    if isinstance(inputs_or_cfg, RequestInputs):
        r = inputs_or_cfg
        h, I, vocab = r.hidden, r.intermediate, r.vocab
        kv_dim = r.kv_heads * (r.hidden // r.heads)
        batch, prompt_len, prefill_chunk_tokens = r.batch, r.prompt_len, r.prefill_chunk_tokens
    elif isinstance(inputs_or_cfg, TransformerConfig):
        cfg = inputs_or_cfg
        h, I, vocab, kv_dim = cfg.hidden, cfg.intermediate, cfg.vocab, cfg.kv_dim
        require_count("batch", batch)
        if phase == "prefill":
            require_count("prompt_len", prompt_len)
        require_count("prefill_chunk_tokens", prefill_chunk_tokens, minimum=0)
    else:
        raise TypeError(f"first argument must be a TransformerConfig or RequestInputs, got {type(inputs_or_cfg).__name__}")
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    M = batch * prompt_len if phase == "prefill" else batch + prefill_chunk_tokens
    return {
        "q_proj": (M, h, h),
        "k_proj": (M, kv_dim, h),
        "v_proj": (M, kv_dim, h),
        "o_proj": (M, h, h),
        "gate_proj": (M, I, h),
        "up_proj": (M, I, h),
        "down_proj": (M, h, I),
        "lm_head": (batch, vocab, h),  # logits only for the last token of each sequence
    }


def build_inputs(
    workload: Workload,
    gpu="H100",
    *,
    assumptions: Assumptions | None = None,
    gemm: GemmModel | None = None,
    gemm_speedup: float | Mapping[str, float] | None = None,
    scenario: str = "cached",
) -> RequestInputs:
    """Turn a workload, a GPU and assumptions into the flat numbers :func:`evaluate` needs.

    Args:
        gpu: a name or spec from :mod:`twofour.hardware`, or a :class:`Machine` (your own numbers).
        gemm: callable ``(M, N, K) -> GemmTime``; default :func:`roofline_gemm_model` for the GPU
            (with a :class:`Machine`, the plain :func:`ideal_gemm_model`).
        gemm_speedup: a measured 2:4 GEMM speedup that replaces the predicted one (one number,
            or ``{"prefill": s1, "decode": s2}``): ``sparse_s = dense_s / speedup``.
        scenario: how the default model's GEMM calls run (:data:`twofour.roofline.SCENARIOS`); the
            searched algorithm: ``gemm=roofline_gemm_model(gpu, dtype, algorithm="searched")``.
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a twofour.request.Workload, got {type(workload).__name__}")
    assumptions = Assumptions() if assumptions is None else assumptions
    if not isinstance(assumptions, Assumptions):
        raise TypeError(f"assumptions must be a twofour.request.Assumptions, got {type(assumptions).__name__}")
    machine = gpu if isinstance(gpu, Machine) else Machine.from_gpu(gpu, workload.dtype)
    if gemm is None:
        gemm = (ideal_gemm_model(machine, workload.dtype) if isinstance(gpu, Machine)
                else roofline_gemm_model(gpu, workload.dtype, scenario=scenario))
    elif not callable(gemm):
        raise TypeError(f"gemm must be a callable (M, N, K) -> GemmTime, got {type(gemm).__name__}")
    speedups = _phase_speedups(gemm_speedup)

    cfg = workload.model
    b = float(DTYPE_BYTES[workload.dtype])
    kv_b = float(b if assumptions.kv_bytes_per_element is None else assumptions.kv_bytes_per_element)
    other = assumptions.other_elems_per_token_layer
    if other is None:
        other = 12.0 * cfg.hidden + 2.0 * cfg.kv_dim + 3.0 * cfg.intermediate

    times: dict[str, dict[str, list[float]]] = {phase: {} for phase in PHASES}
    for phase in PHASES:
        for kind, (M, N, K) in gemm_shapes(cfg, phase, workload.batch, workload.prompt_len,
                                           workload.prefill_chunk_tokens).items():
            t = gemm(M, N, K)
            dense_s = require_number(f"gemm({M}, {N}, {K}).dense_s", getattr(t, "dense_s", None))
            sparse_s = require_number(f"gemm({M}, {N}, {K}).sparse_s", getattr(t, "sparse_s", None))
            if speedups[phase] is not None:
                sparse_s = dense_s / speedups[phase]
            times[phase][kind] = [dense_s, sparse_s]

    return RequestInputs(
        **{k: getattr(cfg, k) for k in ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")},
        **{k: getattr(workload, k) for k in ("batch", "prompt_len", "output_len", "prefill_chunk_tokens")},
        bytes_per_element=b,
        out_bytes_per_element=float(OUT_BYTES[workload.dtype]),
        kv_bytes_per_element=kv_b,
        packed_ratio=PACKED_RATIO[workload.dtype],
        **{k: getattr(machine, k) for k in ("dense_flops", "sparse_flops", "bandwidth")},
        **{k: float(getattr(assumptions, k))
           for k in ("attention_efficiency", "memory_efficiency", "step_overhead_s", "request_overhead_s")},
        other_elems_per_token_layer=float(other),
        pruned={k: k in workload.pruned for k in LINEAR_KINDS},
        gemm=times,
    )


def _phase_speedups(gemm_speedup) -> dict[str, float | None]:
    if gemm_speedup is None:
        return {p: None for p in PHASES}
    if isinstance(gemm_speedup, Mapping):
        unknown = sorted(set(gemm_speedup) - set(PHASES))
        if unknown:
            raise ValueError(f"gemm_speedup keys must be among {PHASES}, got {unknown}")
        return {
            p: (None if gemm_speedup.get(p) is None else require_speedup(f"gemm_speedup[{p!r}]", gemm_speedup[p]))
            for p in PHASES
        }
    s = require_speedup("gemm_speedup", gemm_speedup)
    return {p: s for p in PHASES}

