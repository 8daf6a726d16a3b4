"""Planning arithmetic a bank expression may call: sample sizes, tensor-parallel degrees, KV-cache
batch limits and collective times, each from first principles and tested.

These answer the follow-ups an interviewer asks after the 2:4 question (how many runs, which TP
degree, how large a batch fits, what an all-reduce costs next to the GEMM time 2:4 saves); the
measured GEMM helpers live in :mod:`.helpers`.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from ..._common.args import require_positive_int


def runs_for_power(sigma: float, delta: float, alpha: float = 0.05, power: float = 0.8, rounded: bool = True) -> float:
    """Runs per side for a two-sample comparison of means to detect ``delta`` with the given power.

    ``n = 2 ((z_{1-alpha/2} + z_{power}) sigma / delta)^2`` (two-sided test at level ``alpha``,
    equal variances, independent runs). Rounded up unless ``rounded`` is false. With
    ``power = 0.5`` it is the "two standard errors" rule ``2 (z sigma / delta)^2``.

    >>> runs_for_power(0.03, 0.04), round(runs_for_power(0.03, 0.04, rounded=False), 2)
    (9, 8.83)
    >>> runs_for_power(0.01, 0.01), runs_for_power(0.03, 0.08)
    (16, 3)
    """
    for name, v in (("sigma", sigma), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    for name, v, lo in (("alpha", alpha, 0.0), ("power", power, 0.0)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v < 1:
            raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    n = 2 * (z * sigma / delta) ** 2
    return math.ceil(n - 1e-9) if rounded else n


def tp_degrees(cfg, candidates=(1, 2, 3, 4, 5, 6, 7, 8), k_multiple: int = 32) -> str:
    """The tensor-parallel degrees of ``candidates`` every block linear of ``cfg`` can be split by.

    A degree ``d`` works when it divides the query heads, the KV heads (or is a multiple of them,
    each KV head then replicated), the hidden size and the MLP width, and each row-parallel
    shard's K (``o_proj``: hidden / d; ``down_proj``: intermediate / d) stays a multiple of
    ``k_multiple`` (the 2:4 backend's column multiple; it is a multiple of 4, the group). Returns
    the degrees as text, e.g. ``"1, 2, 4, 8"``.

    >>> from twofour import models
    >>> tp_degrees(models.LLAMA_3_70B)
    '1, 2, 4, 8'
    """
    require_positive_int("k_multiple", k_multiple)
    if k_multiple % 4:
        raise ValueError(f"k_multiple must be a multiple of 4 (the 2:4 group), got {k_multiple!r}")
    degrees = list(candidates)
    if not degrees:
        raise ValueError("candidates must name at least one degree")
    for d in degrees:
        require_positive_int("candidates[...]", d)
    ok = []
    for d in degrees:
        heads = cfg.heads % d == 0
        kv = cfg.kv_heads % d == 0 or d % cfg.kv_heads == 0
        dims = cfg.hidden % d == 0 and cfg.intermediate % d == 0
        aligned = dims and (cfg.hidden // d) % k_multiple == 0 and (cfg.intermediate // d) % k_multiple == 0
        if heads and kv and aligned:
            ok.append(d)
    return ", ".join(str(d) for d in ok)


def kv_batch_limit(free_bytes: float, kv_bytes_per_token: float, context: int, block_tokens: int = 1) -> int:
    """Sequences of ``context`` tokens whose KV cache fits in ``free_bytes``.

    With a paged cache of ``block_tokens`` per block, each sequence holds whole blocks, so its
    last block is partly empty: ``ceil(context / block_tokens)`` blocks each.

    >>> kv_batch_limit(40e9, 131072, 8192), kv_batch_limit(40e9, 131072, 8200, block_tokens=16)
    (37, 37)
    """
    for name, v in (("free_bytes", free_bytes), ("kv_bytes_per_token", kv_bytes_per_token)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    require_positive_int("context", context)
    require_positive_int("block_tokens", block_tokens)
    per_seq = math.ceil(context / block_tokens) * block_tokens * kv_bytes_per_token
    return int(free_bytes // per_seq)


def ring_allreduce_us(n_bytes: float, ranks: int, link_gbs: float, latency_us: float = 0.0) -> float:
    """Time of one ring all-reduce of ``n_bytes`` over ``ranks`` GPUs, in µs.

    Each rank sends and receives ``2 (ranks - 1) / ranks`` of the buffer over its link of
    ``link_gbs`` GB/s (one direction), plus ``2 (ranks - 1)`` steps of ``latency_us`` each.

    >>> round(ring_allreduce_us(16384, 8, 450, 0.0), 4)
    0.0637
    """
    require_positive_int("ranks", ranks)
    for name, v in (("n_bytes", n_bytes), ("link_gbs", link_gbs)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if not (isinstance(latency_us, (int, float)) and math.isfinite(latency_us) and latency_us >= 0):
        raise ValueError(f"latency_us must be a finite number >= 0, got {latency_us!r}")
    if ranks == 1:
        return 0.0
    steps = 2 * (ranks - 1)
    return steps / ranks * n_bytes / (link_gbs * 1e3) + steps * latency_us


def normal_quantile(p: float) -> float:
    """The standard normal quantile ``z_p`` (``P(Z <= z_p) = p``).

    >>> round(normal_quantile(0.975), 2), round(normal_quantile(0.8), 2)
    (1.96, 0.84)
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    return NormalDist().inv_cdf(p)
