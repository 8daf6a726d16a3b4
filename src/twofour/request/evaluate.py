"""The request arithmetic: the time of each phase by component, and the estimate (inputs: :mod:`.inputs`).

The components of a step's time (:data:`COMPONENTS`, formulas in step 4 below) run one after
another: kernels do not overlap; inside one kernel compute and memory do. ``attention`` is never
2:4 (both operands are activations).

Spec of the arithmetic (the site's JavaScript mirrors it operation for operation; all values
are IEEE doubles, ``n_dec = output_len - 1``, sums run in the order listed):

1. Shapes: ``h = hidden``, ``d = hidden / heads``, ``kv_dim = kv_heads * d``, ``I = intermediate``,
   ``L = layers``; linear kinds ``(N, K)``: q ``(h, h)``, k ``(kv_dim, h)``, v ``(kv_dim, h)``,
   o ``(h, h)``, gate ``(I, h)``, up ``(I, h)``, down ``(h, I)``, lm_head ``(vocab, h)``.
2. GEMM times per phase and kind: ``gemm[phase][kind] = (dense_s, sparse_s)`` for one GEMM
   with ``M = batch * prompt_len`` (prefill) or ``M = batch + prefill_chunk_tokens`` (decode;
   lm_head ``M = batch`` in both phases), inputs of :func:`evaluate` (from the GEMM model, or
   ``sparse_s = dense_s / speedup`` for a measured speedup).
3. Ideal ratio of a GEMM (funnel step 2): ``flops = 2*M*N*K``; ``act = M*K*b + M*N*b_out``;
   ``w = N*K*b``; ``ideal_dense = max(flops / dense_flops, (w + act) / bandwidth)``;
   ``ideal_sparse = max(flops / sparse_flops, (w * packed_ratio + act) / bandwidth)``;
   ``ratio = ideal_dense / ideal_sparse``.
4. Per phase, with ``steps = 1`` (prefill) or ``n_dec`` (decode), ``tokens = batch*prompt_len``
   or ``batch + prefill_chunk_tokens``, attended ``A = prompt_len*(prompt_len+1)/2`` (prefill, per sequence, causal)
   or ``n_dec*prompt_len + n_dec*(n_dec+1)/2`` (decode, summed over steps, per sequence):

   * block linear of kind k: ``t = steps * L * gemm_dense`` (``* gemm_sparse`` on the 2:4 side
     if pruned); added to ``pruned_linear`` or ``dense_linear`` in the kind order of step 1;
   * ``lm_head = steps * gemm_dense`` (or ``* gemm_sparse`` if pruned);
   * ``attention = 4 * batch * L * h * A / (dense_flops * attention_efficiency)``;
   * ``kv_cache = 2 * batch * L * kv_dim * A_kv * kv_b / (bandwidth * memory_efficiency)`` with
     ``A_kv = prompt_len`` (prefill) or the decode ``A``;
   * ``embedding = steps * 2 * tokens * h * b / (bandwidth * memory_efficiency)``;
   * ``other = steps * tokens * (L * other_elems + 2 * h) * b / (bandwidth * memory_efficiency)``;
   * ``step_overhead = steps * step_overhead_s``; ``request_overhead`` = the input in prefill, 0
     in decode.

   * decode with ``c = prefill_chunk_tokens > 0`` only (the mixed step), added after the above:
     ``attention += 4 * L * h * steps * c * (prompt_len + 1) / 2 / (dense_flops * attention_efficiency)``
     and ``kv_cache += 2 * L * kv_dim * steps * (c + max(prompt_len - c, 0) / 2) * kv_b / (bandwidth * memory_efficiency)``.

   Phase time = sum of the components in the order of :data:`COMPONENTS`.
5. ``eligible_dense`` = pruned block linears (+ lm_head if pruned), dense times;
   ``eligible_sparse`` likewise with 2:4 times; ``eligible_ideal_sparse = sum(t / ratio)`` over
   the same GEMMs; ``p = eligible_dense / phase_dense`` (0 when the phase takes no time);
   ``gemm_speedup = eligible_dense / eligible_sparse`` and ``ceiling_speedup = eligible_dense /
   eligible_ideal_sparse`` (both 1 when nothing is eligible); ``speedup = phase_dense /
   phase_sparse`` (1 when the phase takes no time).
6. ``ttft = prefill``; ``tpot = decode / n_dec`` (when ``n_dec = 0``: one step at context
   ``prompt_len + 1``); ``total = prefill + decode``; the request's ``p`` is
   ``(eligible_prefill + eligible_decode) / total_dense``.

By construction ``twofour.amdahl.speedup(p, gemm_speedup)`` equals each phase's speedup (tested).

**The mixed step (continuous batching with chunked prefill).** One forward pass holds the
running sequences' decode tokens and ``c = Workload.prefill_chunk_tokens`` tokens of other
requests' prompts; TPOT is its time. Other ways serving moves ``M``: :func:`decode_gemm_m`,
:func:`expert_gemm_m`, :func:`tensor_parallel_shape`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from .gemm import ideal_times
from .inputs import RequestInputs, build_inputs, gemm_shapes
from .workload import COMPONENTS, LINEAR_KINDS, Assumptions, GemmModel, Workload

__all__ = ["PhaseTime", "RequestEstimate", "evaluate", "estimate"]


@dataclass(frozen=True)
class PhaseTime:
    """One phase of a request: seconds by component (dense and 2:4, over ``steps``) and its Amdahl numbers.

    ``dense``/``sparse`` are keyed by :data:`COMPONENTS`, ``linear_dense``/``linear_sparse`` by
    :data:`LINEAR_KINDS`; ``eligible_*`` is the time in pruned GEMMs (``ideal``: perfect 2:4
    kernels, funnel step 2); ``overhead_s`` the fixed overheads; the rest as spec step 5.
    """

    name: str
    steps: int
    dense: dict[str, float]
    sparse: dict[str, float]
    linear_dense: dict[str, float]
    linear_sparse: dict[str, float]
    dense_s: float
    sparse_s: float
    eligible_dense_s: float
    eligible_sparse_s: float
    eligible_ideal_sparse_s: float
    overhead_s: float
    p: float
    gemm_speedup: float
    ceiling_speedup: float
    speedup: float


def _phase(r: RequestInputs, phase: str, steps: int, attended: float, kv_tokens: float, tokens: float) -> PhaseTime:
    """Spec steps 4 and 5 for one phase (``steps`` may be 0: an empty decode phase)."""
    h = float(r.hidden)
    L = float(r.layers)
    kv_dim = float(r.kv_heads * (r.hidden // r.heads))
    b = float(r.bytes_per_element)
    mem_rate = r.bandwidth * r.memory_efficiency
    shapes = gemm_shapes(r, phase)
    n = float(steps)

    dense = {c: 0.0 for c in COMPONENTS}
    sparse = {c: 0.0 for c in COMPONENTS}
    linear_dense: dict[str, float] = {}
    linear_sparse: dict[str, float] = {}
    eligible_dense = eligible_sparse = eligible_ideal = 0.0
    for kind in LINEAR_KINDS:
        gemm_dense, gemm_sparse = r.gemm[phase][kind]
        count = n if kind == "lm_head" else n * L
        t_dense = count * gemm_dense
        pruned = bool(r.pruned.get(kind, False))
        t_sparse = count * gemm_sparse if pruned else t_dense
        linear_dense[kind], linear_sparse[kind] = t_dense, t_sparse
        component = "lm_head" if kind == "lm_head" else ("pruned_linear" if pruned else "dense_linear")
        dense[component] += t_dense
        sparse[component] += t_sparse
        if pruned:
            M, N, K = shapes[kind]
            ideal_dense, ideal_sparse = ideal_times(M, N, K, b, r.out_bytes_per_element, r.packed_ratio, r)
            eligible_dense += t_dense
            eligible_sparse += t_sparse
            eligible_ideal += t_dense / (ideal_dense / ideal_sparse)

    unchanged = {
        "attention": 4.0 * r.batch * L * h * attended / (r.dense_flops * r.attention_efficiency),
        "kv_cache": 2.0 * r.batch * L * kv_dim * kv_tokens * r.kv_bytes_per_element / mem_rate,
        "embedding": n * 2.0 * tokens * h * b / mem_rate,
        "other": n * tokens * (L * r.other_elems_per_token_layer + 2.0 * h) * b / mem_rate,
        "step_overhead": n * r.step_overhead_s,
        "request_overhead": r.request_overhead_s if phase == "prefill" else 0.0,
    }
    chunk = float(r.prefill_chunk_tokens) if phase == "decode" else 0.0
    if chunk > 0.0:  # the mixed step: a prompt chunk shares every decode step (module docstring)
        P = float(r.prompt_len)
        unchanged["attention"] += 4.0 * L * h * n * chunk * (P + 1.0) / 2.0 / (r.dense_flops * r.attention_efficiency)
        unchanged["kv_cache"] += (2.0 * L * kv_dim * n * (chunk + max(P - chunk, 0.0) / 2.0)
                                  * r.kv_bytes_per_element / mem_rate)
    dense.update(unchanged)
    sparse.update(unchanged)

    dense_s = sparse_s = 0.0
    for c in COMPONENTS:
        dense_s += dense[c]
        sparse_s += sparse[c]
    return PhaseTime(
        name=phase,
        steps=steps,
        dense=dense,
        sparse=sparse,
        linear_dense=linear_dense,
        linear_sparse=linear_sparse,
        dense_s=dense_s,
        sparse_s=sparse_s,
        eligible_dense_s=eligible_dense,
        eligible_sparse_s=eligible_sparse,
        eligible_ideal_sparse_s=eligible_ideal,
        overhead_s=dense["step_overhead"] + dense["request_overhead"],
        p=eligible_dense / dense_s if dense_s > 0.0 else 0.0,
        gemm_speedup=eligible_dense / eligible_sparse if eligible_dense > 0.0 else 1.0,
        ceiling_speedup=eligible_dense / eligible_ideal if eligible_dense > 0.0 else 1.0,
        speedup=dense_s / sparse_s if sparse_s > 0.0 else 1.0,
    )


@dataclass(frozen=True)
class RequestEstimate:
    """The result of :func:`evaluate`: both phases, and the request-level numbers.

    ``decode`` sums all ``output_len - 1`` decode steps; TPOT is their mean (the time of a step at
    the mean context, since a step's time is linear in its context). Times in seconds.
    """

    inputs: RequestInputs
    prefill: PhaseTime
    decode: PhaseTime
    ttft_dense_s: float
    ttft_sparse_s: float
    tpot_dense_s: float
    tpot_sparse_s: float
    total_dense_s: float
    total_sparse_s: float
    p_request: float
    gemm_speedup_request: float
    ceiling_speedup_request: float

    def speedup(self, what: str = "request") -> float:
        """Dense / 2:4 time of ``"request"``, ``"ttft"`` (= ``"prefill"``) or ``"tpot"`` (= ``"decode"``)."""
        names = {"request": "total", "ttft": "ttft", "prefill": "ttft", "tpot": "tpot", "decode": "tpot"}
        if what not in names:
            raise ValueError(f"what must be one of {sorted(names)}, got {what!r}")
        return getattr(self, f"{names[what]}_dense_s") / getattr(self, f"{names[what]}_sparse_s")

    def summary(self) -> dict[str, float]:
        """The headline numbers as a flat dict (what the calculators display and golden files hold)."""
        times = [f"{t}_{side}_s" for t in ("ttft", "tpot", "total") for side in ("dense", "sparse")]
        out = {name: getattr(self, name) for name in times}
        out.update({f"speedup_{what}": self.speedup(what) for what in ("ttft", "tpot", "request")})
        for n in ("p", "gemm_speedup", "ceiling_speedup"):
            out.update({f"{n}_prefill": getattr(self.prefill, n), f"{n}_decode": getattr(self.decode, n),
                        f"{n}_request": getattr(self, f"{n}_request")})
        return out

    def to_dict(self) -> dict:
        """Summary plus the per-phase component breakdowns (JSON-ready; not the per-kind linears or overheads)."""
        left_out = ("name", "linear_dense", "linear_sparse", "overhead_s")
        phases = {ph.name: {k: v for k, v in asdict(ph).items() if k not in left_out}
                  for ph in (self.prefill, self.decode)}
        return {"summary": self.summary(), **phases}


def evaluate(inputs: RequestInputs) -> RequestEstimate:
    """The model's arithmetic (spec steps 4-6 of the module docstring) on flat inputs.

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> r = build_inputs(Workload(LLAMA_3_8B, 1, 128, 2), "A100")
        >>> est = evaluate(r)
        >>> est.total_dense_s == est.ttft_dense_s + est.decode.dense_s
        True
    """
    if not isinstance(inputs, RequestInputs):
        raise TypeError(f"inputs must be a RequestInputs (see build_inputs), got {type(inputs).__name__}")
    r = inputs
    P = float(r.prompt_len)
    n_dec = r.output_len - 1
    nd = float(n_dec)
    prefill = _phase(r, "prefill", 1, P * (P + 1.0) / 2.0, P, float(r.batch) * P)
    decode_attended = nd * P + nd * (nd + 1.0) / 2.0
    decode_tokens = float(r.batch + r.prefill_chunk_tokens)  # == float(r.batch) without a chunk
    decode = _phase(r, "decode", n_dec, decode_attended, decode_attended, decode_tokens)
    if n_dec > 0:
        tpot_dense, tpot_sparse = decode.dense_s / nd, decode.sparse_s / nd
    else:  # no decode step in this request: report what one step at context P + 1 would take
        one = _phase(r, "decode", 1, P + 1.0, P + 1.0, decode_tokens)
        tpot_dense, tpot_sparse = one.dense_s, one.sparse_s
    total_dense = prefill.dense_s + decode.dense_s
    total_sparse = prefill.sparse_s + decode.sparse_s
    eligible_dense = prefill.eligible_dense_s + decode.eligible_dense_s
    eligible_sparse = prefill.eligible_sparse_s + decode.eligible_sparse_s
    eligible_ideal = prefill.eligible_ideal_sparse_s + decode.eligible_ideal_sparse_s
    est = RequestEstimate(
        inputs=r,
        prefill=prefill,
        decode=decode,
        ttft_dense_s=prefill.dense_s,
        ttft_sparse_s=prefill.sparse_s,
        tpot_dense_s=tpot_dense,
        tpot_sparse_s=tpot_sparse,
        total_dense_s=total_dense,
        total_sparse_s=total_sparse,
        p_request=eligible_dense / total_dense,
        gemm_speedup_request=eligible_dense / eligible_sparse if eligible_dense > 0.0 else 1.0,
        ceiling_speedup_request=eligible_dense / eligible_ideal if eligible_dense > 0.0 else 1.0,
    )
    for name in [f"{t}_{side}_s" for t in ("ttft", "tpot", "total") for side in ("dense", "sparse")]:
        value = getattr(est, name)
        if not math.isfinite(value):  # extreme inputs together overflowed: never show inf seconds
            raise ValueError(f"these inputs together are out of range: {name} would be {value!r}, not a "
                             "finite number; bring the largest or smallest inputs nearer the usual ones")
    return est


def estimate(
    workload: Workload,
    gpu="H100",
    *,
    assumptions: Assumptions | None = None,
    gemm: GemmModel | None = None,
    gemm_speedup: float | Mapping[str, float] | None = None,
    scenario: str = "cached",
) -> RequestEstimate:
    """Dense vs 2:4 time of one request: :func:`build_inputs` (the GEMM model: ``gemm``, ``gemm_speedup``,
    ``scenario``) then :func:`evaluate`.

    Example:
        >>> from twofour.models import LLAMA_3_70B
        >>> w = Workload(LLAMA_3_70B, batch=64, prompt_len=8192, output_len=512)
        >>> est = estimate(w, "H100", gemm_speedup=1.5)       # a measured GEMM speedup
        >>> est.decode.p < estimate(w.__class__(LLAMA_3_70B, 1, 8192, 512), "H100").decode.p
        True
    """
    return evaluate(build_inputs(workload, gpu, assumptions=assumptions, gemm=gemm, gemm_speedup=gemm_speedup,
                                 scenario=scenario))
