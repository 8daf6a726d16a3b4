"""Small functions a bank expression may call: each one computes a number the answers quote, and is tested."""

from __future__ import annotations

import bisect
import functools
import itertools
import math

from ... import models, request, roofline
from ..._common.args import require_positive_int
from ...dispatch import rules as dispatch_rules
from ...funnel import funnel as _funnel


def funnel_step(est: request.RequestEstimate, scope: str, key: str) -> float:
    """Speedup of one funnel step (``datasheet`` ... ``request``) of a request estimate.

    >>> est = request.estimate(request.WORKLOADS["chat decode, batch 1"], "H100")
    >>> funnel_step(est, "decode", "datasheet")
    2.0
    """
    for step in _funnel(est, scope):
        if step.key == key:
            return step.speedup
    raise ValueError(f"key must be a funnel step key (datasheet, roofline_ceiling, kernel, eligible_fraction, request), got {key!r}")


def wave_count(M: int, N: int, sms: int, tile_m: int = 128, tile_n: int = 128) -> int:
    """Waves of ``tile_m x tile_n`` output tiles over ``sms`` SMs: ``ceil(tiles / sms)``.

    >>> wave_count(128 * 33, 4096, 132)
    8
    """
    for name, v in (("M", M), ("N", N), ("sms", sms), ("tile_m", tile_m), ("tile_n", tile_n)):
        require_positive_int(name, v)
    # integer ceilings: math.ceil(M / tile_m) rounds through a float past 2**53
    tiles = -(-M // tile_m) * -(-N // tile_n)
    return -(-tiles // sms)


def tokens_per_second(n_bytes: float, bandwidth_gbs: float) -> float:
    """Decode tokens/s of a step that must read ``n_bytes`` at ``bandwidth_gbs`` GB/s (bytes-bound).

    >>> round(tokens_per_second(15.01e9, 2039), 1)    # Llama-3-8B bf16 at the A100's peak: the bound
    135.8
    """
    if n_bytes <= 0 or bandwidth_gbs <= 0:
        raise ValueError(f"n_bytes and bandwidth_gbs must be > 0, got {n_bytes!r} and {bandwidth_gbs!r}")
    return bandwidth_gbs * 1e9 / n_bytes


def published_speedup(record_id: str) -> float:
    """The speedup of one published GEMM timing, by its id in ``twofour/data/published-gemm.json``.

    >>> round(published_speedup("pt111339-m1"), 2)
    0.11
    """
    return published_value(record_id, "speedup")


def published_value(record_id: str, field_name: str) -> float:
    """One number of a published GEMM record (``dense_time``, ``sparse_time``, ``M`` ...).

    >>> published_value("pt111339-m1", "sparse_time")
    0.196
    """
    from ...roofline.published import published_records

    hits = [r for r in published_records() if r["id"] == record_id]
    if len(hits) != 1:
        ids = [r["id"] for r in published_records() if r.get("kind") == "gemm"]
        raise ValueError(f"record_id must be the id of one published record, got {record_id!r}; GEMM ids: {ids}")
    value = hits[0].get(field_name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"field_name must name a number of record {record_id!r}, got {field_name!r} = {value!r}")
    return float(value)


@functools.lru_cache(maxsize=None)
def _measured_table(mode: str) -> dict:
    from ...bench import recorded_results
    from ...bench.trusted import trusted_gemm_table

    # flagged timings are replaced by a named rule or left out (twofour.bench.trusted), never used as recorded
    return {(M, N, K, dtype): (row["dense_ms"], row["sparse_ms"]) for dtype in ("float16", "bfloat16")
            for (M, N, K), row in trusted_gemm_table(recorded_results("gpu"), dtype, mode).items()}


def measured_gemm(M: int, N: int, K: int, dtype: str = "bfloat16", mode: str = "graph", what: str = "speedup") -> float:
    """One GEMM timed on the H200 in ``mode``: ``what`` is ``"speedup"``, ``"dense_us"`` or ``"sparse_us"``.

    >>> round(measured_gemm(1, 4096, 14336), 2)          # Llama-3-8B down_proj, one token
    0.43
    """
    row = _measured_table(mode).get((M, N, K, dtype))
    if row is None:
        raise ValueError(f"no H200 measurement of M={M}, N={N}, K={K}, {dtype} in mode {mode!r}")
    dense_ms, sparse_ms = row
    values = {"speedup": dense_ms / sparse_ms, "dense_us": dense_ms * 1e3, "sparse_us": sparse_ms * 1e3}
    if what not in values:
        raise ValueError(f"what must be one of {sorted(values)}, got {what!r}")
    return values[what]


def measured_phase_speedup(workload: request.Workload, phase: str, mode: str = "graph") -> float:
    """The time-weighted 2:4 GEMM speedup of one phase of ``workload``, measured on the project's H200.

    >>> measured_phase_speedup(request.WORKLOADS["chat decode, batch 1"], "decode") < 1
    True
    """
    from ...bench import recorded_results

    value = request.measured_gemm_speedup(recorded_results("gpu"), workload, mode=mode).get(phase)
    if value is None:
        raise ValueError(f"phase {phase!r} of this workload was not measured in mode {mode!r} on the H200")
    return value


def replaced_timings(workload: request.Workload, phase: str, mode: str = "graph") -> str:
    """Which flagged timings of ``phase`` a named rule (:data:`twofour.bench.trusted.FLAG_RULES`) replaced.

    >>> replaced_timings(request.Workload(models.LLAMA_3_8B, 64, 512, 256), "decode")
    'k_proj M=64: dense-at-larger-m, v_proj M=64: dense-at-larger-m'
    >>> replaced_timings(request.Workload(models.LLAMA_3_8B, 16, 512, 256), "decode")
    'none'
    """
    from ...bench import recorded_results

    detail = request.measured_gemm_detail(recorded_results("gpu"), workload, mode=mode)
    if phase not in detail:
        raise ValueError(f"phase must be one of {sorted(detail)}, got {phase!r}")
    return ", ".join(detail[phase]["replaced"]) or "none"


def measured_crossover_m(N: int, K: int, dtype: str = "bfloat16", mode: str = "graph") -> int:
    """The smallest measured M from which 2:4 is faster than dense at that M and every larger one.

    >>> measured_crossover_m(14336, 4096)                 # Llama-3-8B gate/up on the H200
    256
    """
    rows = sorted((m, d / sp) for (m, n, k, dt), (d, sp) in _measured_table(mode).items() if (n, k, dt) == (N, K, dtype))
    if not rows:
        raise ValueError(f"no H200 measurements of N={N}, K={K}, {dtype} in mode {mode!r}")
    wins = [m for m, _ in itertools.takewhile(lambda r: not r[1] < 1, reversed(rows))]
    if not wins:
        raise ValueError(f"2:4 never wins at the largest measured M for N={N}, K={K}")
    return wins[-1]


def compute_bound_m(N: int, K: int, dtype: str = "bf16", gpu: str = "H200") -> int:
    """Smallest M at which ``M x K @ K x N`` has the arithmetic intensity of the GPU's dense ridge point.

    >>> compute_bound_m(4096, 4096, "bf16", "H200") > 100
    True
    """
    ridge = roofline.ridge_point(gpu, dtype)
    top = 1 << 20
    if roofline.arithmetic_intensity(top, N, K, dtype) < ridge:
        raise ValueError(f"N={N}, K={K} never reaches the ridge point {ridge:.0f} FLOP/byte")
    # the intensity grows with M: bisect (a scan took a million steps for a thin GEMM)
    return 1 + bisect.bisect_left(range(1, top + 1), ridge,
                                  key=lambda m: roofline.arithmetic_intensity(m, N, K, dtype))


def first_torch_pinning(min_version: int) -> str:
    """The first torch release whose default wheel pins cuSPARSELt ``min_version`` (701 for 0.7.1) or newer.

    >>> first_torch_pinning(dispatch_rules.MIN_CUSPARSELT_FOR_BLACKWELL)
    '2.8.0'
    """
    pins = dispatch_rules.TORCH_CUSPARSELT_PINS
    for torch_version in sorted(pins, key=lambda v: tuple(map(int, v.split(".")))):
        major, minor, patch = map(int, pins[torch_version].split("."))
        if major * 1000 + minor * 100 + patch >= min_version:  # torch's encoding of the version
            return torch_version
    raise ValueError(f"no torch in the table pins cuSPARSELt {dispatch_rules.cusparselt_version_str(min_version)} or newer")


def transposable_patterns(n: int = 2, m: int = 4) -> int:
    """How many ``m x m`` keep-masks have exactly ``n`` kept values in every row *and* column: n:m along
    the rows of ``W`` and of ``W.T`` at once, as the backward pass needs.

    >>> transposable_patterns(), math.comb(4, 2) ** 4      # transposable vs row-wise-only 2:4 tiles
    (90, 1296)
    """
    # m = 6 would walk 20**6 tiles (minutes); the question is about 2:4 and its neighbours.
    if not (isinstance(n, int) and isinstance(m, int) and 0 < n <= m <= 5):
        raise ValueError(f"n and m must be ints with 0 < n <= m <= 5, got n={n!r}, m={m!r}")
    rows = [c for c in itertools.product((0, 1), repeat=m) if sum(c) == n]
    return sum(all(sum(col) == n for col in zip(*tile)) for tile in itertools.product(rows, repeat=m))


def cost_per_token_ratio(shares, relative_costs) -> float:
    """Mean cost per request under routing, relative to the big model's: ``shares[i]`` of the traffic
    costs ``relative_costs[i]``, a traffic-weighted *sum of costs* (the saving factor is its inverse).

    >>> cost_per_token_ratio([0.7, 0.3], [0.1, 1.0])
    0.37
    """
    shares, relative_costs = list(shares), list(relative_costs)
    if len(shares) != len(relative_costs) or not shares:
        raise ValueError("shares and relative_costs must be non-empty and of the same length")
    total = sum(shares)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"shares must add up to 1 (all the traffic), got {total!r}")
    return round(sum(s * c for s, c in zip(shares, relative_costs)), 12)


def measured_bandwidth_ratio(cfg, M: int = 1, dtype: str = "float16", mode: str = "kernel", what: str = "ratio") -> float:
    """How fast the default 2:4 kernel streams its bytes relative to cuBLAS, measured on the H200:
    each side's bytes (weight, packed for 2:4, plus ``x`` and ``y``) over its measured time, summed over
    ``cfg``'s block linears at ``M`` tokens (``"ratio"``), or the extreme GEMMs' (``"min"``, ``"max"``).

    >>> 0.2 < measured_bandwidth_ratio(models.LLAMA_3_70B) < 0.5
    True
    """
    from ... import packing
    from ...models import linear_shapes
    from ...vocabulary import DTYPES, dtype_key

    if what not in ("ratio", "min", "max"):
        raise ValueError(f"what must be 'ratio', 'min' or 'max', got {what!r}")
    table = _measured_table(mode)
    f = DTYPES[dtype_key(dtype)]
    dense_bytes = sparse_bytes = dense_s = sparse_s = 0.0
    ratios = []
    for s in linear_shapes(cfg, include_lm_head=False):
        N, K = s.out_features, s.in_features
        row = table.get((M, N, K, dtype))
        if row is None:
            raise ValueError(f"no H200 measurement of M={M}, N={N}, K={K}, {dtype} in mode {mode!r} ({cfg.name} {s.name})")
        d_ms, s_ms = row
        act = M * K * f.in_bytes + M * N * f.out_bytes
        db = N * K * f.in_bytes + act
        sb = packing.packed_bytes((N, K), f.value_bits, f.n, f.m, meta_bits_per_value=f.meta_bits) + act
        ratios.append((sb / s_ms) / (db / d_ms))
        dense_bytes, sparse_bytes = dense_bytes + db * s.count, sparse_bytes + sb * s.count
        dense_s, sparse_s = dense_s + d_ms * s.count, sparse_s + s_ms * s.count
    return {"ratio": (sparse_bytes / sparse_s) / (dense_bytes / dense_s), "min": min(ratios), "max": max(ratios)}[what]


def recorded_launch(layer: str, side: str = "sparse", field_name: str = "ctas") -> int:
    """One field (``tile_n``, ``tile_m``, ``tiles``, ``split``, ``ctas``) of the ``side`` kernel launch the
    H200's GEMM-chain trace recorded for ``layer`` (:func:`twofour.roofline.evidence.trace_grids`, M = 16).

    >>> recorded_launch("down_proj", "sparse", "ctas"), recorded_launch("down_proj", "dense", "ctas")
    (96, 128)
    """
    from ...roofline.evidence import trace_grids

    if side not in ("sparse", "dense"):
        raise ValueError(f"side must be 'sparse' or 'dense', got {side!r}")
    grids = [g for g in trace_grids(f"{side}-graph") if g["layer"] == layer]
    if not grids:
        raise ValueError(f"layer must be one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; got {layer!r}")
    if field_name not in ("tile_n", "tile_m", "tiles", "split", "ctas"):
        raise ValueError(f"field_name must be one of tile_n, tile_m, tiles, split, ctas; got {field_name!r}")
    values = {g[field_name] for g in grids}
    if len(values) != 1:  # every replay launched the same grid; say so if one day they do not
        raise ValueError(f"the trace's {side} {layer} launches differ in {field_name}: {sorted(values)}")
    return values.pop()


def speculative_speedup(alpha: float, k: int, draft_cost: float) -> float:
    """Speculative decoding's walltime gain: expected tokens per target pass over the pass's cost.
    ``alpha``: the chance the target accepts a drafted token; ``k``: drafted tokens per pass;
    ``draft_cost``: one draft step's time over one target step's. A pass yields ``(1 - alpha**(k + 1))
    / (1 - alpha)`` tokens and costs ``k * draft_cost + 1`` target steps (Leviathan et al., arXiv
    2211.17192; verification costs one decode step while it is bytes-bound).

    >>> round(speculative_speedup(0.8, 4, 0.1), 3)
    2.401
    """
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
    require_positive_int("k", k)
    if not draft_cost > 0:
        raise ValueError(f"draft_cost must be > 0, got {draft_cost!r}")
    tokens = (1 - alpha ** (k + 1)) / (1 - alpha)
    return tokens / (k * draft_cost + 1)


def slo_goodput(loads, latencies, slo: float) -> float:
    """Goodput at the SLO: the highest of the increasing ``loads`` before the first whose latency misses
    ``slo`` (no interpolation; 0: even the lowest misses).

    >>> slo_goodput([2, 4, 6, 8], [30, 34, 52, 48], 50)
    4
    """
    loads, latencies = list(loads), list(latencies)
    if not loads or len(loads) != len(latencies):
        raise ValueError("loads and latencies must be non-empty and of the same length")
    if any(b <= a for a, b in zip(loads, loads[1:])):
        raise ValueError(f"loads must increase, got {loads!r}")
    met = [load for load, _ in itertools.takewhile(lambda p: not p[1] > slo, zip(loads, latencies))]
    return met[-1] if met else 0


def searched_gemm(M: int, N: int, K: int, what: str = "best_us") -> float:
    """One GEMM of the H200's cuSPARSELt algorithm sweep (fp16, ``x`` pre-padded): ``"best_us"`` (the
    fastest correct algorithm), ``"default_us"`` (algorithm 0), ``"dense_us"`` or ``"best_alg"``.

    >>> searched_gemm(1, 4096, 14336, "best_us") < searched_gemm(1, 4096, 14336, "dense_us")
    True
    """
    from ...bench import recorded_alg_search

    hits = [c for c in recorded_alg_search() if (c["M"], c["N"], c["K"]) == (M, N, K)]
    if not hits:
        shapes = sorted({(c["M"], c["N"], c["K"]) for c in recorded_alg_search()})
        raise ValueError(f"no sweep case M={M}, N={N}, K={K}; swept: {shapes}")
    c = hits[0]
    values = {"dense_us": c["dense_ms"] * 1e3, "default_us": c["default_ms"] * 1e3}
    if c.get("best"):
        values["best_us"] = c["best"]["ms"] * 1e3
        values["best_alg"] = c["best"]["alg_id"]
    if what not in values:
        raise ValueError(f"what must be one of {sorted(values)}, got {what!r}")
    return values[what]
