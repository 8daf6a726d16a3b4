"""Planning arithmetic a bank expression may call: sample sizes, tensor-parallel degrees, KV-cache
batch limits and collective times, each from first principles."""

from __future__ import annotations

import math
from statistics import NormalDist

from ..._common.args import require_positive_int


def _require_positive(**values) -> None:
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")


def _require_probability(**values) -> None:
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            raise ValueError(f"{name} must be in (0, 1), got {v!r}")


def runs_for_power(sigma: float, delta: float, alpha: float = 0.05, power: float = 0.8, rounded: bool = True) -> float:
    """Runs per side for a two-sided two-sample comparison of means to detect ``delta`` with ``power``:
    ``n = 2 ((z_{1-alpha/2} + z_{power}) sigma / delta)^2`` (equal variances), rounded up if ``rounded``.

    >>> runs_for_power(0.03, 0.04), round(runs_for_power(0.03, 0.04, rounded=False), 2)
    (9, 8.83)
    """
    _require_positive(sigma=sigma, delta=delta)
    _require_probability(alpha=alpha, power=power)
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    n = 2 * (z * sigma / delta) ** 2
    return math.ceil(n - 1e-9) if rounded else n


def tp_degrees(cfg, candidates=(1, 2, 3, 4, 5, 6, 7, 8), k_multiple: int = 32) -> str:
    """The tensor-parallel degrees of ``candidates`` every block linear of ``cfg`` can be split by:
    a degree must divide the query heads, the KV heads (or be a multiple of them) and the widths, and
    leave each row-parallel shard's K a multiple of ``k_multiple`` (the 2:4 backend's column multiple).

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
    def fits(d: int) -> bool:
        heads = cfg.heads % d == 0
        kv = cfg.kv_heads % d == 0 or d % cfg.kv_heads == 0
        dims = cfg.hidden % d == 0 and cfg.intermediate % d == 0
        aligned = dims and (cfg.hidden // d) % k_multiple == 0 and (cfg.intermediate // d) % k_multiple == 0
        return heads and kv and aligned

    return ", ".join(str(d) for d in degrees if fits(d))


def kv_batch_limit(free_bytes: float, kv_bytes_per_token: float, context: int, block_tokens: int = 1) -> int:
    """Sequences of ``context`` tokens whose KV cache, in whole blocks of ``block_tokens``, fits in memory.

    >>> kv_batch_limit(40e9, 131072, 8192), kv_batch_limit(40e9, 131072, 8200, block_tokens=16)
    (37, 37)
    """
    _require_positive(free_bytes=free_bytes, kv_bytes_per_token=kv_bytes_per_token)
    require_positive_int("context", context)
    require_positive_int("block_tokens", block_tokens)
    per_seq = math.ceil(context / block_tokens) * block_tokens * kv_bytes_per_token
    return int(free_bytes // per_seq)


def _check_allreduce(n_bytes, ranks, link_gbs, latency_us) -> None:
    """Refuse an all-reduce's inputs by name (both all-reduce formulas take the same four)."""
    require_positive_int("ranks", ranks)
    _require_positive(n_bytes=n_bytes, link_gbs=link_gbs)
    if not (isinstance(latency_us, (int, float)) and math.isfinite(latency_us) and latency_us >= 0):
        raise ValueError(f"latency_us must be a finite number >= 0, got {latency_us!r}")


def ring_allreduce_us(n_bytes: float, ranks: int, link_gbs: float, latency_us: float = 0.0) -> float:
    """Time of one ring all-reduce of ``n_bytes`` over ``ranks`` GPUs, in µs: each rank sends
    ``2 (ranks - 1) / ranks`` of the buffer at ``link_gbs`` GB/s, plus ``2 (ranks - 1)`` latencies.

    >>> round(ring_allreduce_us(16384, 8, 450, 0.0), 4)
    0.0637
    """
    _check_allreduce(n_bytes, ranks, link_gbs, latency_us)
    steps = 2 * (ranks - 1)  # none on one GPU
    return steps / ranks * n_bytes / (link_gbs * 1e3) + steps * latency_us


def normal_quantile(p: float) -> float:
    """The standard normal quantile ``z_p`` (``P(Z <= z_p) = p``).

    >>> round(normal_quantile(0.975), 2), round(normal_quantile(0.8), 2)
    (1.96, 0.84)
    """
    _require_probability(p=p)
    return NormalDist().inv_cdf(p)


def _t_tail_probabilities(threshold: float, df: int, shift: float, points: int = 4000) -> float:
    """``P(|(Z + shift) / sqrt(V / df)| > threshold)`` for ``Z`` standard normal and ``V`` chi-squared with ``df``
    degrees of freedom: the power of a two-sided t-test (``shift = 0``: its level), by integrating over ``V``."""
    phi = NormalDist().cdf
    log_norm = (df / 2) * math.log(2) + math.lgamma(df / 2)
    top = df + 12 * math.sqrt(2 * df) + 40  # the chi-squared density is negligible beyond
    h = top / points
    total = 0.0
    for i in range(1, points):  # the density is 0 at v = 0 for df >= 2 and the integrand is smooth
        v = i * h
        density = math.exp((df / 2 - 1) * math.log(v) - v / 2 - log_norm)
        cut = threshold * math.sqrt(v / df)
        total += density * (phi(-cut - shift) + 1 - phi(cut - shift)) * (4 if i % 2 else 2)
    return total * h / 3


def _t_critical(alpha: float, df: int) -> float:
    lo, hi = 0.0, 50.0
    for _ in range(60):  # bisection on the two-sided tail
        mid = (lo + hi) / 2
        if _t_tail_probabilities(mid, df, 0.0, 800) > alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def t_test_power(sigma: float, delta: float, runs: int, alpha: float = 0.05) -> float:
    """Power of a two-sided two-sample t-test with ``runs`` independent runs per side to detect ``delta``:
    lower than :func:`runs_for_power` assumes, as the noise is estimated from the runs (``2 runs - 2`` df).

    >>> round(t_test_power(0.03, 0.08, 3), 2), round(t_test_power(0.03, 0.08, 4), 2)
    (0.69, 0.88)
    """
    _require_positive(sigma=sigma, delta=delta)
    require_positive_int("runs", runs)
    if runs < 2:
        raise ValueError(f"runs must be at least 2 (a t-test estimates the noise from the runs), got {runs!r}")
    _require_probability(alpha=alpha)
    df = 2 * runs - 2
    shift = delta / (sigma * math.sqrt(2 / runs))
    return _t_tail_probabilities(_t_critical(alpha, df), df, shift)


def runs_for_t_test_power(sigma: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """The fewest runs per side whose two-sided t-test reaches ``power`` (:func:`t_test_power`), up to 1,000.

    >>> runs_for_t_test_power(0.03, 0.08), runs_for_power(0.03, 0.08)
    (4, 3)
    """
    start = max(2, runs_for_power(sigma, delta, alpha, power))
    for runs in range(start, 1001):
        if t_test_power(sigma, delta, runs, alpha) >= power:
            return runs
    raise ValueError(f"more than 1,000 runs per side needed for sigma={sigma!r}, delta={delta!r}")


def one_shot_allreduce_us(n_bytes: float, ranks: int, link_gbs: float, latency_us: float) -> float:
    """Time of one one-shot all-reduce over ``ranks`` GPUs on one NVLink switch, in µs: each rank reads
    the others' whole buffers at ``link_gbs`` GB/s in one step, one latency (decode's small messages).

    >>> round(one_shot_allreduce_us(131072, 8, 450, 5.0), 2)
    7.04
    """
    _check_allreduce(n_bytes, ranks, link_gbs, latency_us)
    return 0.0 if ranks == 1 else (ranks - 1) * n_bytes / (link_gbs * 1e3) + latency_us
