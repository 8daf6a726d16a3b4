"""What a request is: the machine, the assumptions, the workload (validated once); how serving sets M."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..vocabulary import DTYPES, PHASES, SPARSE_24_DTYPES, dtype_key
from ..models import LLAMA_3_8B, TransformerConfig

BLOCK_LINEARS: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LINEAR_KINDS: tuple[str, ...] = BLOCK_LINEARS + ("lm_head",)
COMPONENTS: tuple[str, ...] = (
    "pruned_linear",
    "dense_linear",
    "attention",
    "kv_cache",
    "embedding",
    "lm_head",
    "other",
    "step_overhead",
    "request_overhead",
)

# Bytes per element, GEMM output bytes and packed/dense byte ratio of the 2:4 dtypes (twofour.vocabulary).
# Every other tensor in the model uses DTYPE_BYTES.
DTYPE_BYTES: dict[str, int] = {d: DTYPES[d].in_bytes for d in SPARSE_24_DTYPES}
OUT_BYTES: dict[str, int] = {d: DTYPES[d].out_bytes for d in SPARSE_24_DTYPES}
PACKED_RATIO: dict[str, float] = {d: DTYPES[d].packed_ratio for d in SPARSE_24_DTYPES}

_MAX_COUNT = 2**31 - 1  # batch and lengths: far beyond any real request, exact in a double


def require_count(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r}")
    if not minimum <= value <= _MAX_COUNT:
        raise ValueError(f"{name} must be an int in [{minimum}, {_MAX_COUNT}], got {value!r}")
    return value


def require_number(name: str, value, *, low: float = 0.0, low_open: bool = True, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    bad_low = value <= low if low_open else value < low
    if not math.isfinite(value) or bad_low or (high is not None and value > high):
        bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


@dataclass(frozen=True)
class Machine:
    """The three numbers of a GPU the model needs, for one dtype: peak dense and 2:4 FLOP/s, bytes/s.

    Example:
        >>> m = Machine.from_gpu("A100", "bf16")
        >>> m.dense_flops, m.sparse_flops, m.bandwidth
        (312000000000000.0, 624000000000000.0, 2039000000000.0)
    """

    name: str
    dense_flops: float
    sparse_flops: float
    bandwidth: float

    def __post_init__(self):
        for f in ("dense_flops", "sparse_flops", "bandwidth"):
            object.__setattr__(self, f, require_number(f, getattr(self, f)))

    @classmethod
    def from_gpu(cls, gpu, dtype: str) -> "Machine":
        """Peaks and bandwidth of a GPU in :mod:`twofour.hardware` (name, alias or GPUSpec)."""
        from ..hardware import get_gpu

        spec = get_gpu(gpu)
        dtype = require_dtype(dtype)
        if not spec.sparse_24:
            cc = f"{spec.capability[0]}.{spec.capability[1]}"
            raise ValueError(
                f"gpu {spec.name} (compute capability {cc}) has no sparse tensor cores, so 2:4 cannot "
                "speed anything up there; choose a GPU with compute capability 8.0 or newer (e.g. A100, L4, H100)"
            )
        return cls(
            name=f"{spec.name} {dtype}",
            dense_flops=spec.peak_tflops(dtype) * 1e12,
            sparse_flops=spec.peak_tflops(dtype, sparse=True) * 1e12,
            bandwidth=spec.mem_bw_gbs * 1e9,
        )


def require_dtype(dtype) -> str:
    try:
        key = dtype_key(dtype)
    except ValueError:
        key = None
    if key not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {sorted(DTYPE_BYTES)} (the 2:4 tensor-core dtypes), got {dtype!r}")
    return key


@dataclass(frozen=True)
class Assumptions:
    """Every modelling knob that is not a shape or a workload.

    The defaults make the model an *optimistic bound for every part alike*: kernels at the
    peaks of the data sheet, no fixed overheads. Set them from your own profile.

    Attributes:
        attention_efficiency: fraction of the dtype's dense peak the attention kernels reach
            (0, 1]. With fp8/int8 weights attention often still runs in bf16, at half the 8-bit
            peak: set 0.5 (or lower) to model that.
        memory_efficiency: fraction of bandwidth the memory-bound kernels (KV cache, norms,
            embedding) reach (0, 1].
        kv_bytes_per_element: bytes per cached K/V element; None = the weights' dtype (set 1
            for an fp8 KV cache).
        other_elems_per_token_layer: elements moved per token per layer by norms, residual
            adds, RoPE and SwiGLU, unfused; None = ``12*hidden + 2*kv_dim + 3*intermediate``.
        step_overhead_s: fixed time per forward step (launches, sampling, scheduler), seconds.
        request_overhead_s: fixed time per request before the first token (tokenisation,
            queueing, network), seconds.
    """

    attention_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    kv_bytes_per_element: float | None = None
    other_elems_per_token_layer: float | None = None
    step_overhead_s: float = 0.0
    request_overhead_s: float = 0.0

    def __post_init__(self):
        for f in ("attention_efficiency", "memory_efficiency"):
            require_number(f, getattr(self, f), high=1.0)
        if self.kv_bytes_per_element is not None:
            require_number("kv_bytes_per_element", self.kv_bytes_per_element)
        if self.other_elems_per_token_layer is not None:
            require_number("other_elems_per_token_layer", self.other_elems_per_token_layer, low_open=False)
        for f in ("step_overhead_s", "request_overhead_s"):
            require_number(f, getattr(self, f), low_open=False)


@dataclass(frozen=True)
class Workload:
    """What is served: model shape, batch (sequences of the same lengths), lengths, dtype, what is 2:4.

    ``output_len`` counts the first token (out of prefill). ``pruned``: any subset of
    :data:`LINEAR_KINDS`, by default every block linear (as Sparse-Llama). ``prefill_chunk_tokens``:
    prompt tokens of *other* requests that share each decode step (see "The mixed step" in
    :mod:`twofour.request.evaluate`).

    Example:
        >>> Workload(LLAMA_3_8B, batch=4, prompt_len=128, output_len=64, pruned=("gate_proj", "up_proj", "down_proj")).pruned
        ('gate_proj', 'up_proj', 'down_proj')
    """

    model: TransformerConfig
    batch: int
    prompt_len: int
    output_len: int
    dtype: str = "bf16"
    pruned: tuple[str, ...] = BLOCK_LINEARS
    prefill_chunk_tokens: int = 0

    def __post_init__(self):
        require_count("prefill_chunk_tokens", self.prefill_chunk_tokens, minimum=0)
        if not isinstance(self.model, TransformerConfig):
            raise TypeError(f"model must be a twofour.models.TransformerConfig, got {type(self.model).__name__}")
        for name in ("batch", "prompt_len", "output_len"):
            require_count(name, getattr(self, name))
        object.__setattr__(self, "dtype", require_dtype(self.dtype))
        if isinstance(self.pruned, str) or not isinstance(self.pruned, Iterable):
            raise TypeError(f"pruned must be a collection of linear kinds from {LINEAR_KINDS}, got {self.pruned!r}")
        pruned = tuple(self.pruned)
        unknown = [k for k in pruned if k not in LINEAR_KINDS]
        if unknown:
            raise ValueError(f"pruned contains unknown linear kinds {unknown}; valid kinds are {LINEAR_KINDS}")
        object.__setattr__(self, "pruned", tuple(k for k in LINEAR_KINDS if k in pruned))


@dataclass(frozen=True)
class GemmTime:
    """Time of one GEMM ``y[M, N] = x[M, K] @ W[N, K]^T``, dense and with ``W`` 2:4, in seconds."""

    dense_s: float
    sparse_s: float


GemmModel = Callable[[int, int, int], GemmTime]


def decode_gemm_m(batch: int, *, prefill_chunk_tokens: int = 0, speculative_tokens: int = 0) -> int:
    """Rows ``M`` of a decode step's block-linear GEMMs (speculative decoding, chunked prefill).

    Example:
        >>> decode_gemm_m(8), decode_gemm_m(8, speculative_tokens=4), decode_gemm_m(8, prefill_chunk_tokens=256)
        (8, 40, 264)
    """
    require_count("batch", batch)
    require_count("prefill_chunk_tokens", prefill_chunk_tokens, minimum=0)
    require_count("speculative_tokens", speculative_tokens, minimum=0)
    return batch * (speculative_tokens + 1) + prefill_chunk_tokens


def expert_gemm_m(M: int, experts: int, top_k: int) -> float:
    """Mean rows each expert's GEMMs see in a mixture-of-experts layer: ``M * top_k / experts``.

    Evenly spread on average (a real router is uneven), so MoE decode GEMMs are skinnier than a
    dense model's at the same batch.

    Example:
        >>> expert_gemm_m(64, experts=128, top_k=8)        # 64 decode tokens, 8 of 128 experts each
        4.0
    """
    for name, v in (("M", M), ("experts", experts), ("top_k", top_k)):
        require_count(name, v)
    if top_k > experts:
        raise ValueError(f"top_k must be <= experts, got top_k={top_k}, experts={experts}")
    return M * top_k / experts


def tensor_parallel_shape(M: int, N: int, K: int, tp: int, split: str) -> tuple[int, int, int]:
    """The ``(M, N, K)`` one GPU runs when a linear is split over ``tp`` GPUs.

    ``split="column"`` (q, k, v, gate, up in Megatron-style tensor parallelism) divides ``N``;
    ``split="row"`` (o, down) divides ``K``, the reduction (an all-reduce sums the outputs).

    Example:
        >>> tensor_parallel_shape(16, 14336, 4096, 8, "column"), tensor_parallel_shape(16, 4096, 14336, 8, "row")
        ((16, 1792, 4096), (16, 4096, 1792))
    """
    for name, v in (("M", M), ("N", N), ("K", K), ("tp", tp)):
        require_count(name, v)
    if split not in ("column", "row"):
        raise ValueError(f"split must be 'column' (divides N) or 'row' (divides K), got {split!r}")
    name, dim = ("N", N) if split == "column" else ("K", K)
    if dim % tp:
        raise ValueError(f"{name}={dim} must be divisible by tp={tp} for a {split} split")
    return (M, N // tp, K) if split == "column" else (M, N, K // tp)


# The three workloads chapter 6 and lab 6 follow (and the site calculator offers as presets).
# Llama-3-8B's context window is 8K tokens: prompt + output stay within 8,192.
WORKLOADS: dict[str, Workload] = {
    "chat decode, batch 1": Workload(LLAMA_3_8B, batch=1, prompt_len=512, output_len=256),
    "high throughput, batch 64, 8K context": Workload(LLAMA_3_8B, batch=64, prompt_len=7680, output_len=512),
    "long-prompt summarisation": Workload(LLAMA_3_8B, batch=1, prompt_len=7936, output_len=256),
}
