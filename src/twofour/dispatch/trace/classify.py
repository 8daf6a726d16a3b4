"""Which class each event of a trace belongs to: 2:4 GEMM by backend, dense GEMM, attention, other, unclassified.

Rules: :func:`twofour.dispatch.kernels.classify_records`, plus the attention kernels PyTorch's SDPA
backends launch and anything launched inside an attention operator (:func:`trace_class`).
"""

from __future__ import annotations

import functools

from ...vocabulary import (ATTENTION, BACKENDS, DENSE, OTHER, SPARSE_CUSPARSELT, SPARSE_CUTLASS,
                                   SPARSE_GENERAL, UNCLASSIFIED)
from ..kernels import NON_GEMM_MARKERS

TRACE_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE, ATTENTION, OTHER, UNCLASSIFIED)
ELIGIBLE: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE)
LABELS = {
    SPARSE_CUSPARSELT: "2:4 GEMM, cuSPARSELt",
    SPARSE_CUTLASS: "2:4 GEMM, CUTLASS",
    SPARSE_GENERAL: "CSR/COO sparse matmul",
    DENSE: "dense GEMM",
    ATTENTION: "attention",
    OTHER: "other",
    UNCLASSIFIED: "unclassified",
}
BACKEND_NAME = {b.kernel_class: b.name for b in BACKENDS.values()}

# Attention: PyTorch's SDPA kernels (flash: pytorch_flash::flash_fwd_kernel; memory-efficient:
# fmha_cutlassF_*; cuDNN: cudnn_generated_fort_native_sdpa_*), FlashAttention's flash::, and
# FlashInfer's BatchPrefill/BatchDecode kernels; on the CPU the aten SDPA operators. Checked
# before the GEMM markers, because "fmha_cutlassF" contains "cutlass".
_ATTENTION_MARKERS = ("attention", "pytorch_flash::", "flash::", "flash_fwd", "flash_bwd", "fmha", "sdpa",
                      "batchprefill", "batchdecode")
# CPU operators known to be neither GEMM nor attention (GPU kernels: NON_GEMM_MARKERS). Anything
# else that no rule claims is "unclassified": listed with its time, never guessed.
_KNOWN_OTHER_CPU_PREFIXES = ("aten::", "prim::", "profiler::", "c10d::", "autograd::", "torch::", "cuda",
                             "PythonSubclass", "Optimizer.", "enumerate(DataLoader)", "ProfilerStep#")


@functools.lru_cache(maxsize=1 << 16)
def is_attention_op(name: str) -> bool:
    """An operator whose kernels (and child operators) are attention: SDPA and friends."""
    return any(m in name.lower() for m in ("attention", "sdpa", "flash"))


@functools.lru_cache(maxsize=1 << 16)
def trace_class(name: str, base: str, *, device: str = "cuda", in_attention: bool = False) -> str:
    """The class of one event in a trace report, from its name and its class by ``classify_records``.

    ``in_attention`` is True when the event runs inside an attention operator (a kernel launched
    by one, an operator nested in one). 2:4 classes always win; a name nobody recognises is
    ``"unclassified"``.

    >>> trace_class("fmha_cutlassF_f16_aligned_64x128_rf_sm80", "dense-gemm")
    'attention'
    >>> trace_class("my_fused_thing_kernel", "other"), trace_class("Memset (Device)", "other")
    ('unclassified', 'other')
    """
    if base in (SPARSE_CUSPARSELT, SPARSE_CUTLASS):
        return base
    low = name.lower()
    if in_attention or any(m in low for m in _ATTENTION_MARKERS):
        return ATTENTION
    if base != OTHER:
        return base
    known = name.startswith(_KNOWN_OTHER_CPU_PREFIXES) if device == "cpu" else any(m in low for m in NON_GEMM_MARKERS)
    return OTHER if known else UNCLASSIFIED


def kernel_dtype_bits(names) -> int:
    low = " ".join(names).lower()
    return 8 if any(m in low for m in ("e4m3", "e5m2", "fp8", "_i8", "s8s8", "int8", "imma")) else 16
