"""2:4 next to quantization: the bytes of weight formats, and what bytes mean for decode.

At small batch a decode step is bound by the bytes it reads, so the first question about any
weight format is how many bits one weight costs. A format stores some fraction of the values
(all of them, or half for 2:4), each in ``value_bits``; 2:4 adds a 2-bit position per kept
value; group-quantized formats add a scale (and a zero point) per ``group_size`` weights:

    bits per weight = kept * value_bits + kept * meta_bits + scale_bits / group_size

The metadata and the scales do not shrink with the values, so the smaller the values, the less
2:4 adds: bf16 9 of 16 bits (1.78x fewer bytes), fp8 5 of 8 (1.6x), int4 with a 16-bit scale per
128 weights 3.125 of 4.125 (1.32x).

On top of the bits, the capacity win (:func:`capacity_at_tpot`): weight bytes a format frees
become KV cache, and a lighter step leaves more of a time-per-output-token budget for KV reads.
It is a bytes model (no compute limit, no kernel overheads), checked in the tests against
torchao's Llama-3-8B sizes and Sparse-Marlin decode result and pytorch/ao PR #2012.

Example:
    >>> round(bits_per_weight("bf16+2:4") / bits_per_weight("bf16"), 4)
    0.5625
    >>> bits_per_weight("int4-g128+2:4")        # Sparse-Marlin: 4-bit values, 2:4, fp16 scale per 128
    3.125
    >>> from twofour.models import LLAMA_3_8B
    >>> round(model_weight_bytes(LLAMA_3_8B, "int4-g64", lm_head="int4-g64")["read_per_token"] / 1e9, 2)
    4.22
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..vocabulary import SPARSE_24
from ..hardware import get_gpu
from ..models import TransformerConfig, parameter_counts

__all__ = [
    "WeightFormat",
    "WEIGHT_FORMATS",
    "weight_format",
    "bits_per_weight",
    "model_weight_bytes",
    "decode_step_bytes",
    "decode_tokens_per_s",
    "kv_bytes_per_token",
    "Capacity",
    "capacity_at_tpot",
    "break_even_bandwidth_ratio",
    "GPU_MEMORY_BYTES",
    "TORCHAO_LLAMA3_8B_A100",
]


@dataclass(frozen=True)
class WeightFormat:
    """How one weight format stores a weight: the inputs of the bits-per-weight formula.

    Attributes:
        name: key in :data:`WEIGHT_FORMATS`, e.g. ``"fp8+2:4"``.
        value_bits: bits of each stored value.
        sparse_24: stored 2:4 (half the values, a 2-bit position per kept value).
        scale_bits: bits of scale (plus zero point) per group; 0 for per-tensor/per-row scales,
            whose bytes are negligible next to the weight.
        group_size: dense weights per scale group (``None`` without group scales).
        compute: the tensor-core dtype its GEMM runs in (int4 weight-only dequantizes to bf16).
        note: what the format is and where its layout is described.
    """

    name: str
    value_bits: float
    sparse_24: bool = False
    scale_bits: float = 0.0
    group_size: int | None = None
    compute: str = "bf16"
    note: str = ""

    @property
    def bits_per_weight(self) -> float:
        n, m, meta_bits = SPARSE_24  # the dtype table's 2:4: 2 of 4 kept, 2 bits of position each
        kept = n / m if self.sparse_24 else 1.0
        meta = meta_bits * kept if self.sparse_24 else 0.0
        scales = self.scale_bits / self.group_size if self.group_size else 0.0
        return kept * self.value_bits + meta + scales


WEIGHT_FORMATS: dict[str, WeightFormat] = {f.name: f for f in (
    WeightFormat("bf16", 16, note="16-bit weights (fp16 alike)"),
    WeightFormat("fp8", 8, compute="fp8", note="e4m3 weights with per-tensor or per-row scales"),
    WeightFormat("int8", 8, compute="int8", note="int8 weights with per-row scales"),
    WeightFormat("int4-g64", 4, scale_bits=32, group_size=64,
                 note="int4 weight-only, a bf16 scale and a bf16 zero point per 64 weights (torchao int4wo-64)"),
    WeightFormat("int4-g128", 4, scale_bits=32, group_size=128,
                 note="int4 weight-only, a bf16 scale and zero point per 128 weights"),
    WeightFormat("bf16+2:4", 16, sparse_24=True, note="bf16 2:4: PyTorch's packed layout, 9/16 of dense"),
    WeightFormat("fp8+2:4", 8, sparse_24=True, compute="fp8", note="fp8 2:4: 5/8 of dense fp8"),
    WeightFormat("int8+2:4", 8, sparse_24=True, compute="int8", note="int8 2:4: 5/8 of dense int8"),
    WeightFormat("int4-g128+2:4", 4, sparse_24=True, scale_bits=16, group_size=128,
                 note="Sparse-Marlin: int4 values of a 2:4 weight, an fp16 scale per 128 weights, two "
                      "2-bit indices per 4 weights (IST-DASLab/Sparse-Marlin README)"),
)}

# Memory of the GPUs the chapters use as the device reports it (nvidia-smi's memory.total, MiB), which
# is what an allocator divides up, not the data sheet's label: the "141 GB" H200 reports 143,771 MiB
# (benchmarks/gpu-runs/2026-11-30-nvidia-h200/environment.txt); an H100 80GB HBM3 81,559 MiB
# (NVIDIA/nccl#1264); an A100 80GB 81,920 MiB and an L4 23,034 MiB (modal-labs/modal-client#2797).
GPU_MEMORY_BYTES: dict[str, int] = {"L4": 23_034 << 20, "A100": 81_920 << 20, "H100": 81_559 << 20, "H200": 143_771 << 20}

# torchao sparsity README (v0.15.0, "LLama3" table): Llama-3-8B on an A100-80GB, batch 1,
# generate.py with --compile. tokens/s over the whole generate() call; model size in GB (1e9)
# without the embedding table; the "bandwidth" column is size x tokens/s, so it is not listed.
TORCHAO_LLAMA3_8B_A100: dict[str, dict[str, float]] = {
    "bf16": {"tokens_per_s": 95.64, "model_size_gb": 15.01},
    "int4wo-64": {"tokens_per_s": 180.80, "model_size_gb": 4.22},
    "int4wo-64-sparse-marlin": {"tokens_per_s": 226.02, "model_size_gb": 3.05},
}


def weight_format(fmt) -> WeightFormat:
    """A :class:`WeightFormat` by name (``"bf16"``, ``"fp8+2:4"``, ...); a WeightFormat passes through."""
    if isinstance(fmt, WeightFormat):
        return fmt
    if fmt not in WEIGHT_FORMATS:
        raise ValueError(f"fmt must be one of {sorted(WEIGHT_FORMATS)} or a WeightFormat, got {fmt!r}")
    return WEIGHT_FORMATS[fmt]


def bits_per_weight(fmt) -> float:
    """Bits one weight costs in ``fmt``, values, 2:4 metadata and scales included.

    >>> bits_per_weight("fp8+2:4"), bits_per_weight("int4-g64")
    (5.0, 4.5)
    """
    return weight_format(fmt).bits_per_weight


def model_weight_bytes(cfg: TransformerConfig, fmt, *, lm_head="bf16", embedding="bf16") -> dict[str, float]:
    """Weight bytes of a transformer whose block linears are in ``fmt``.

    Args:
        cfg: model shapes (:mod:`twofour.models`).
        fmt: format of the block linears (q, k, v, o, gate, up, down).
        lm_head: format of the output head (Sparse-Llama leaves it bf16; torchao's int4 runs
            quantize it like the rest).
        embedding: format of the embedding table (gathered one row per token, not read whole).

    Returns:
        ``{"block", "lm_head", "embedding", "norms", "resident", "read_per_token"}`` in bytes:
        ``read_per_token`` (all but the embedding) is what torchao reports as "model size".
    """
    if not isinstance(cfg, TransformerConfig):
        raise TypeError(f"cfg must be a twofour.models.TransformerConfig, got {type(cfg).__name__}")
    counts = parameter_counts(cfg)
    out = {
        "block": counts["eligible"] * bits_per_weight(fmt) / 8,
        "lm_head": counts["lm_head"] * bits_per_weight(lm_head) / 8,
        "embedding": counts["embedding"] * bits_per_weight(embedding) / 8,
        "norms": counts["norms"] * 2.0,  # bf16
    }
    out["resident"] = out["block"] + out["lm_head"] + out["embedding"] + out["norms"]
    out["read_per_token"] = out["block"] + out["lm_head"] + out["norms"]
    return out


# Bounds that keep every answer finite and every loop short: a byte count beyond 1e18 (an exabyte),
# a TPOT beyond an hour or a tolerance outside [1e-12, 0.5] is a typo, not a question.
_MAX_BYTES = 1e18
_MAX_TPOT_S = 3600.0
_MAX_CONTEXT = 2**40
_MAX_KV_ELEMENT = 64.0  # bytes per cached element: fp64 is 8
_MAX_BATCH = 2**53  # past it a float cannot count sequences one by one


def _shown_number(v) -> str:
    """A value as an error message shows it (a 5,000-digit int as its digit count)."""
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**30:
        return f"an int of {len(str(abs(v))) if abs(v) < 10**4000 else 'over 4,000'} digits"
    return repr(v)


def _require_finite_positive(name: str, v, high: float | None = None) -> None:
    """``v`` a real number (not a bool) in (0, high] and finite, else a ValueError naming ``name``."""
    ok = (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and (high is None or v <= high)
          and (isinstance(v, int) or math.isfinite(v)))  # compared before isfinite: a 400-digit int has no float
    if not ok:
        bound = f"in (0, {high:g}]" if high is not None else "> 0 and finite"
        raise ValueError(f"{name} must be a number {bound}, got {_shown_number(v)}")


def kv_bytes_per_token(cfg: TransformerConfig, kv_bytes_per_element: float = 2.0) -> float:
    """KV-cache bytes per cached token of one sequence: ``2 * layers * kv_dim * bytes``.

    >>> from twofour.models import LLAMA_3_8B
    >>> kv_bytes_per_token(LLAMA_3_8B) / 1024                # KiB, bf16
    128.0
    """
    _require_finite_positive("kv_bytes_per_element", kv_bytes_per_element, _MAX_KV_ELEMENT)
    return 2.0 * cfg.layers * cfg.kv_dim * kv_bytes_per_element


def decode_step_bytes(cfg: TransformerConfig, fmt, *, batch: int, context: int, lm_head="bf16",
                      kv_bytes_per_element: float = 2.0) -> float:
    """Bytes one decode step reads: the weights once, plus every sequence's KV cache.

    >>> from twofour.models import LLAMA_3_8B
    >>> round(decode_step_bytes(LLAMA_3_8B, "bf16", batch=1, context=0) / 1e9, 2)
    15.01
    """
    for name, v in (("batch", batch), ("context", context)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} must be an int >= 0, got {v!r}")
    weights = model_weight_bytes(cfg, fmt, lm_head=lm_head)["read_per_token"]
    return weights + batch * context * kv_bytes_per_token(cfg, kv_bytes_per_element)


def decode_tokens_per_s(n_bytes: float, gpu, *, efficiency: float = 1.0) -> float:
    """Decode steps per second when a step is bound by reading ``n_bytes`` at ``efficiency`` of bandwidth.

    >>> round(decode_tokens_per_s(15.01e9, "A100"), 1)      # Llama-3-8B bf16 at the A100's peak
    135.8
    """
    if isinstance(n_bytes, bool) or not isinstance(n_bytes, (int, float)) or not 1 <= n_bytes <= _MAX_BYTES:
        raise ValueError(f"n_bytes must be a number of bytes from 1 to {_MAX_BYTES:.0e}, got {_shown_number(n_bytes)}")
    if isinstance(efficiency, bool) or not isinstance(efficiency, (int, float)) or not 0 < efficiency <= 1:
        raise ValueError(f"efficiency must be in (0, 1], got {efficiency!r}")
    return get_gpu(gpu).mem_bw_gbs * 1e9 * efficiency / n_bytes


@dataclass(frozen=True)
class Capacity:
    """The result of :func:`capacity_at_tpot`: how many sequences one GPU serves at a TPOT target.

    Attributes:
        format: the block linears' format.
        resident_gb: weight bytes held in memory, GB.
        kv_budget_gb: memory left for the KV cache, GB.
        batch_by_memory: sequences whose KV cache fits at the context.
        batch_by_tpot: the largest batch whose step still meets the TPOT target.
        batch: the smaller of the two (0: the target cannot be met at all).
        bound: ``"memory"`` or ``"tpot"``, whichever set ``batch``.
        tpot_s: step time at ``batch`` (the weights-only step when ``batch`` is 0).
        tokens_per_s: ``batch / tpot_s``, decode tokens per second of the GPU.
    """

    format: str
    resident_gb: float
    kv_budget_gb: float
    batch_by_memory: int
    batch_by_tpot: int
    batch: int
    bound: str
    tpot_s: float
    tokens_per_s: float


def capacity_at_tpot(cfg: TransformerConfig, gpu, fmt, *, context: int, tpot_target_s: float,
                     memory_bytes: float | None = None, lm_head="bf16", kv_bytes_per_element: float = 2.0,
                     memory_fraction: float = 0.9, bandwidth_efficiency: float = 0.7,
                     sparse_bandwidth_ratio: float = 1.0, step_overhead_s: float = 0.0) -> Capacity:
    """The capacity win: the batch a GPU can serve at ``context`` tokens without missing a TPOT target.

    Memory: ``memory_fraction`` of the GPU's memory, minus the resident weights, holds the KV
    caches. Time: a step reads the weights and every sequence's KV cache at
    ``bandwidth_efficiency`` of the bandwidth, plus ``step_overhead_s``, within ``tpot_target_s``.

    Args:
        cfg, gpu, fmt: model, GPU (name from :mod:`twofour.hardware`), format of the block linears.
        context: tokens in each sequence's KV cache (prompt plus output so far).
        tpot_target_s: the target time per output token, seconds.
        memory_bytes: the GPU's memory in bytes; default :data:`GPU_MEMORY_BYTES`.
        memory_fraction: share of memory for weights and KV (an assumption).
        bandwidth_efficiency: share of peak bandwidth a decode step reaches. The default 0.7 is
            [derived] from torchao's bf16 Llama-3-8B row on an A100: 1.44 TB/s of 2.04 TB/s.
        sparse_bandwidth_ratio: the 2:4 weight read's bandwidth efficiency relative to dense
            (1.0: as good as dense, a bound; the H200 run of chapter 4 measured far less).
        step_overhead_s: fixed time per step (launches, sampling, scheduling).

    Example:
        >>> from twofour.models import LLAMA_3_8B
        >>> dense = capacity_at_tpot(LLAMA_3_8B, "L4", "bf16", context=4096, tpot_target_s=0.1)
        >>> sparse = capacity_at_tpot(LLAMA_3_8B, "L4", "bf16+2:4", context=4096, tpot_target_s=0.1)
        >>> dense.bound, sparse.batch > dense.batch
        ('memory', True)
    """
    form = weight_format(fmt)
    spec = get_gpu(gpu)
    if memory_bytes is None:
        if spec.name not in GPU_MEMORY_BYTES:
            raise ValueError(f"no memory size on file for {spec.name}; pass memory_bytes (known: {sorted(GPU_MEMORY_BYTES)})")
        memory_bytes = GPU_MEMORY_BYTES[spec.name]
    if isinstance(context, bool) or not isinstance(context, int) or not 1 <= context <= _MAX_CONTEXT:
        raise ValueError(f"context must be an int from 1 to {_MAX_CONTEXT:,} (tokens in a KV cache), got "
                         f"{_shown_number(context)}")
    for name, v, high in (("tpot_target_s", tpot_target_s, _MAX_TPOT_S), ("memory_bytes", memory_bytes, _MAX_BYTES),
                          ("memory_fraction", memory_fraction, 1.0), ("bandwidth_efficiency", bandwidth_efficiency, 1.0),
                          ("sparse_bandwidth_ratio", sparse_bandwidth_ratio, 1.0)):
        _require_finite_positive(name, v, high)
    if sparse_bandwidth_ratio < 1e-15:  # a weight read at 1e-300 of dense would take forever: step time inf
        raise ValueError(f"sparse_bandwidth_ratio must be a number from 1e-15 to 1, got {sparse_bandwidth_ratio!r}")
    if not (isinstance(step_overhead_s, (int, float)) and not isinstance(step_overhead_s, bool)
            and 0 <= step_overhead_s <= _MAX_TPOT_S):
        raise ValueError(f"step_overhead_s must be a number from 0 to {_MAX_TPOT_S:g}, got {_shown_number(step_overhead_s)}")

    weights = model_weight_bytes(cfg, form, lm_head=lm_head)
    kv_seq = context * kv_bytes_per_token(cfg, kv_bytes_per_element)
    kv_budget = memory_bytes * memory_fraction - weights["resident"]
    if kv_budget / kv_seq > _MAX_BATCH:
        raise ValueError(f"the KV cache per sequence ({kv_seq:g} bytes) is so small that over 2**53 sequences fit: "
                         f"check kv_bytes_per_element ({kv_bytes_per_element!r}) and context ({context:,})")
    by_memory = max(0, math.floor(kv_budget / kv_seq))

    rate = spec.mem_bw_gbs * 1e9 * bandwidth_efficiency
    block_rate = rate * (sparse_bandwidth_ratio if form.sparse_24 else 1.0)
    weights_s = weights["block"] / block_rate + (weights["lm_head"] + weights["norms"]) / rate

    def step_s(batch: int) -> float:
        return step_overhead_s + weights_s + batch * kv_seq / rate

    spare = tpot_target_s - step_s(0)
    by_tpot = max(0, math.floor(min(spare * rate / kv_seq, _MAX_BATCH))) if spare > 0 else 0
    # The floor can overshoot by a rounding; the bounds above keep by_tpot below 2**53, where
    # each decrement changes the float, and a few always suffice.
    for _ in range(8):
        if by_tpot <= 0 or step_s(by_tpot) <= tpot_target_s:
            break
        by_tpot -= 1
    batch = min(by_memory, by_tpot)
    tpot = step_s(batch)
    return Capacity(
        format=form.name,
        resident_gb=weights["resident"] / 1e9,
        kv_budget_gb=max(kv_budget, 0.0) / 1e9,
        batch_by_memory=by_memory,
        batch_by_tpot=by_tpot,
        batch=batch,
        bound="memory" if by_memory <= by_tpot else "tpot",
        tpot_s=tpot,
        tokens_per_s=batch / tpot,
    )


def break_even_bandwidth_ratio(cfg: TransformerConfig, gpu, fmt, baseline, *, context: int, tpot_target_s: float,
                               tol: float = 1e-4, **kw) -> float | None:
    """The slowest 2:4 kernel that still pays: the ``sparse_bandwidth_ratio`` at which ``fmt`` serves as many tokens/s as ``baseline``.

    Found by bisection on (0, 1]; None when even a kernel as fast as dense (ratio 1) does not
    beat ``baseline``. Other keyword arguments go to :func:`capacity_at_tpot`.

    Example:
        >>> from twofour.models import LLAMA_3_70B
        >>> r = break_even_bandwidth_ratio(LLAMA_3_70B, "H200", "fp8+2:4", "fp8", context=4096, tpot_target_s=0.05)
        >>> 0.3 < r < 0.6
        True
    """
    if not weight_format(fmt).sparse_24:
        raise ValueError(f"fmt must be a 2:4 format (its kernel's bandwidth is what varies), got {fmt!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 1e-12 <= tol <= 0.5:
        # a tol below one ulp of the bisection would never be reached: the loop would never end
        raise ValueError(f"tol must be a number from 1e-12 to 0.5, got {_shown_number(tol)}")

    def gain(ratio: float) -> float:
        ours = capacity_at_tpot(cfg, gpu, fmt, context=context, tpot_target_s=tpot_target_s,
                                sparse_bandwidth_ratio=ratio, **kw)
        theirs = capacity_at_tpot(cfg, gpu, baseline, context=context, tpot_target_s=tpot_target_s, **kw)
        return ours.tokens_per_s - theirs.tokens_per_s

    if gain(1.0) <= 0:
        return None
    low, high = 0.0, 1.0  # gain(high) > 0 >= gain at a ratio near 0 (no batch fits the target)
    for _ in range(64):  # tol >= 1e-12 ends it within 40 halvings; the bound keeps it finite regardless
        if high - low <= tol:
            break
        mid = (low + high) / 2
        if gain(mid) > 0:
            high = mid
        else:
            low = mid
    return high
