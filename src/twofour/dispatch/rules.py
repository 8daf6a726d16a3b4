"""PyTorch's 2:4 dispatch rules, read from the installed torch wherever torch exposes them.

``torch.sparse.to_sparse_semi_structured(W)`` picks a backend class (CUTLASS when
``_FORCE_CUTLASS`` is True: :func:`default_backend`), and that class's
``_DTYPE_SHAPE_CONSTRAINTS`` give the dtypes it takes and each one's :class:`ShapeRule`. They
are read live, not copied, so a newer torch with new dtypes or minimum shapes is described
correctly without a code change.

What the classes do not expose is written down here (capability and cuSPARSELt minima, fp8,
float32's 1:2 pattern, what a plain matmul does with fp8 and int8), each rule's message naming its
source (the Sources page, "Dispatch" and "GPUs and backends").

>>> rules = backend_rules("cutlass")
>>> torch.float16 in rules.shapes
True
>>> rules.pattern(torch.float32)
(1, 2)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._passes.tensors import dtype_name
from ..vocabulary import BACKENDS, CUSPARSELT, CUTLASS

__all__ = [
    "MIN_SPARSE_CAPABILITY",
    "MIN_CUSPARSELT_FOR_SM90",
    "MIN_CUSPARSELT_FOR_BLACKWELL",
    "MIN_CUSPARSELT_FOR_FP8_SM89",
    "TORCH_CUSPARSELT_PINS",
    "ShapeRule",
    "BackendRules",
    "backend_rules",
    "default_backend",
    "semi_structured_classes",
    "is_packed",
    "packed_backend",
    "cusparselt_version_str",
]


# torch reports cuSPARSELt's version as one int (602 is 0.6.2).
MIN_SPARSE_CAPABILITY: tuple[int, int] = (8, 0)  # PyTorch semi-structured tutorial
MIN_CUSPARSELT_FOR_SM90: int = 600  # older versions fail on 9.0 with "architecture mismatch" (pytorch#132009)
# PyTorch moved to 0.7.1 as "needed to support sparse operations on Blackwell" (pytorch PR #155232,
# 2025-06-05; torch 2.8.0 is the first default wheel that pins it). Whether 0.7.0 already ran on SM
# 10.x/12.x is unconfirmed (its release notes could not be retrieved).
MIN_CUSPARSELT_FOR_BLACKWELL: int = 701
MIN_CUSPARSELT_FOR_FP8_SM89: int = 800  # 0.8.0 release notes: "Introduced E4M3 and E5M2 kernels for SM 8.9"
# cuSPARSELt that PyTorch's default PyPI wheels require (their metadata's Requires-Dist; checked
# 2026-11-30). Other CUDA variants (cu126/cu128 indexes) may pin differently; 2.12 and 2.15 were
# not checked. 2.11 moved the default wheel to CUDA 13 (nvidia-cusparselt-cu13).
TORCH_CUSPARSELT_PINS: dict[str, str] = {
    "2.6.0": "0.6.2",
    "2.7.1": "0.6.3",
    "2.8.0": "0.7.1",
    "2.9": "0.7.1",
    "2.10.0": "0.7.1",
    "2.11.0": "0.8.0",
    "2.13.0": "0.8.1",
    "2.14.0": "0.8.1",
}


@dataclass(frozen=True)
class ShapeRule:
    """One dtype's shape rule of a backend, as ``_DTYPE_SHAPE_CONSTRAINTS`` states it.

    ``W [N, K]``: N and K must be >= and multiples of ``sparse_min_rows`` / ``sparse_min_cols``.
    ``x [M, K]`` is zero-padded to multiples of ``dense_min_rows`` / ``dense_min_cols``.
    """

    sparse_min_rows: int
    sparse_min_cols: int
    dense_min_rows: int
    dense_min_cols: int


@dataclass(frozen=True)
class BackendRules:
    """What one PyTorch 2:4 backend accepts. Build it with :func:`backend_rules`."""

    name: str  # "cusparselt" or "cutlass"
    shapes: dict  # torch.dtype -> ShapeRule, read from the installed class
    source: str  # where ``shapes`` came from, for the reader

    @property
    def label(self) -> str:
        """Display name: ``"cuSPARSELt"`` or ``"CUTLASS"``."""
        return BACKENDS[self.name].name

    @property
    def dtypes(self) -> tuple[torch.dtype, ...]:
        return tuple(self.shapes)

    @staticmethod
    def pattern(dtype: torch.dtype) -> tuple[int, int]:
        """The (n, m) pattern the hardware stores for ``dtype``: 1:2 for float32, else 2:4.

        float32 is handled as pairs (cuSPARSELt data-type docs; pytorch PR #115550), so a
        float32 weight that is 2:4 but not 1:2 loses values when packed.
        """
        return (1, 2) if dtype == torch.float32 else (2, 4)

    def capability_problem(self, capability: tuple[int, int], cusparselt_version: int | None) -> str | None:
        """Why this backend cannot run on a GPU of ``capability``, or None when it can."""
        cc = f"{capability[0]}.{capability[1]}"
        if capability < MIN_SPARSE_CAPABILITY:
            return (
                f"compute capability {cc} has no sparse tensor cores; 2:4 kernels need 8.0 or newer "
                "(PyTorch semi-structured tutorial)"
            )
        if self.name == CUTLASS.key and capability[0] != 8:
            return (
                f"PyTorch's CUTLASS 2:4 kernels are built and validated for compute capability 8.x only, "
                f"this GPU is {cc} (pytorch#132928); use the default cuSPARSELt backend"
            )
        if self.name != CUSPARSELT.key or cusparselt_version is None:  # an unknown version counts as recent
            return None
        version = cusparselt_version_str(cusparselt_version)
        if capability >= (9, 0) and cusparselt_version < MIN_CUSPARSELT_FOR_SM90:
            return (
                f"cuSPARSELt {version} predates SM 9.0 support "
                "(0.6.0 added it; older versions fail with 'architecture mismatch', pytorch#132009)"
            )
        if capability >= (10, 0) and cusparselt_version < MIN_CUSPARSELT_FOR_BLACKWELL:
            return (
                f"cuSPARSELt {version} predates PyTorch's Blackwell support: "
                f"PyTorch moved to 0.7.1 to run 2:4 on Blackwell (pytorch PR #155232; torch >= 2.8), this GPU is {cc}"
            )
        return None

    def dtype_problem(self, dtype: torch.dtype, capability: tuple[int, int], cusparselt_version: int | None) -> str | None:
        """Why ``dtype`` cannot run 2:4 on a GPU of ``capability`` with this backend, or None.

        Only fp8 has such a rule: fp8 tensor cores start at compute capability 8.9, and on 8.9
        cuSPARSELt has fp8 kernels from 0.8.0 (release notes).

        >>> backend_rules("cusparselt").dtype_problem(torch.float8_e4m3fn, (8, 9), 701) is not None
        True
        >>> backend_rules("cusparselt").dtype_problem(torch.float8_e4m3fn, (9, 0), 701) is None
        True
        """
        if "float8" not in str(dtype):
            return None
        cc = f"{capability[0]}.{capability[1]}"
        if capability < (8, 9):
            return f"{dtype_name(dtype)} needs fp8 tensor cores: compute capability 8.9 or newer, this GPU is {cc}"
        if (
            self.name == CUSPARSELT.key
            and capability[0] == 8
            and cusparselt_version is not None
            and cusparselt_version < MIN_CUSPARSELT_FOR_FP8_SM89
        ):
            return (
                f"cuSPARSELt {cusparselt_version_str(cusparselt_version)} has no fp8 2:4 kernels for SM {cc}: "
                "they arrived in 0.8.0 (release notes), pinned by the default torch wheels from 2.11"
            )
        return None

    def mm_problem(self, dtype: torch.dtype) -> str | None:
        """Why a plain matmul with a packed ``dtype`` weight raises although packing succeeds."""
        if self.name == CUSPARSELT.key and "float8" in str(dtype):
            return (
                f"cuSPARSELt packs {dtype_name(dtype)} but refuses a plain mm/linear with it; PyTorch points to "
                "torch._scaled_mm: torch._scaled_mm(W_sparse, x.t(), scale_a, scale_b, out_dtype=...) with "
                "per-tensor float32 scales runs it (no bias; the result is W x^T, transpose it) "
                "(torch/sparse/semi_structured.py, _mm; _semi_structured_ops.py)"
            )
        return None

    def mm_result_problem(self, dtype: torch.dtype) -> str | None:
        """Why a plain ``F.linear`` with a packed ``dtype`` weight runs but does not give the layer's result.

        >>> "saturat" in backend_rules("cutlass").mm_result_problem(torch.int8)
        True
        """
        if dtype != torch.int8:
            return None
        if self.name == CUTLASS.key:
            what = ("returns int8: the CUTLASS kernel clamps every int32 sum to [-128, 127] (saturating "
                    "epilogue, output dtype defaults to int8), with no scale")
            src = "aten/src/ATen/native/sparse/cuda/SparseSemiStructuredOps.cu"
        else:
            what = ("returns int8 with no scale: cuSPARSELt writes CUDA_R_8I for int8 inputs, and on the "
                    "project's H200 (cuSPARSELt 0.8.0) an exact sum of 6,400 came back as 127, saturated")
            src = "aten/src/ATen/native/sparse/cuda/cuSPARSELtOps.cpp"
        return (
            f"int8 through a plain F.linear {what}; a usable int8 2:4 layer calls "
            f"torch._cslt_sparse_mm(W.packed, x, alpha=scales, out_dtype=torch.bfloat16) ({src})"
        )


def semi_structured_classes() -> dict:
    """``{"cusparselt": class, "cutlass": class}`` from the installed ``torch.sparse`` (torch >= 2.1)."""
    found = {}
    for name, cls_name in ((b.key, b.torch_class) for b in BACKENDS.values()):
        cls = getattr(torch.sparse, cls_name, None)
        if cls is None:
            raise RuntimeError(
                f"torch {torch.__version__} has no torch.sparse.{cls_name}; 2:4 semi-structured sparsity "
                "needs torch 2.1 or newer"
            )
        found[name] = cls
    return found


def backend_rules(backend: str) -> BackendRules:
    """The rules of ``backend`` (``"cusparselt"`` or ``"cutlass"``) in the installed torch.

    >>> sorted(str(d) for d in backend_rules("cusparselt").dtypes)  # doctest: +SKIP
    ['torch.bfloat16', 'torch.float16', 'torch.float8_e4m3fn', 'torch.int8']
    """
    if not isinstance(backend, str) or backend.lower() not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))} or None (torch's default), got {backend!r}")
    backend = backend.lower()
    cls = semi_structured_classes()[backend]
    shapes = {
        dtype: ShapeRule(
            int(rule.sparse_min_rows), int(rule.sparse_min_cols), int(rule.dense_min_rows), int(rule.dense_min_cols)
        )
        for dtype, rule in cls._DTYPE_SHAPE_CONSTRAINTS.items()
    }
    return BackendRules(
        name=backend,
        shapes=shapes,
        source=f"torch {torch.__version__}, torch.sparse.{cls.__name__}._DTYPE_SHAPE_CONSTRAINTS",
    )


def default_backend() -> str:
    """The backend ``to_sparse_semi_structured`` picks right now: reads ``_FORCE_CUTLASS`` live.

    >>> default_backend() in BACKENDS
    True
    """
    base = getattr(torch.sparse, "SparseSemiStructuredTensor", None)
    if base is None:
        semi_structured_classes()  # raises the version message
    return CUTLASS.key if bool(getattr(base, "_FORCE_CUTLASS", False)) else CUSPARSELT.key


def is_packed(W) -> bool:
    """True when ``W`` is a packed 2:4 tensor (a ``torch.sparse.SparseSemiStructuredTensor``).

    >>> is_packed(torch.zeros(4, 4))
    False
    """
    base = getattr(torch.sparse, "SparseSemiStructuredTensor", None)
    return base is not None and isinstance(W, base)


def packed_backend(W) -> str | None:
    """``"cusparselt"`` or ``"cutlass"`` for a packed ``W`` (from its class), else None."""
    if not is_packed(W):
        return None
    backend = getattr(type(W), "BACKEND", None)
    if backend in BACKENDS:
        return backend
    return next((name for name, cls in semi_structured_classes().items() if isinstance(W, cls)), None)


def cusparselt_version_str(version: int | str | None) -> str:
    """torch's cuSPARSELt version int as text: ``602`` -> ``"0.6.2"``; None (unknown) -> ``"unknown"``;
    anything but a whole number of ASCII digits (a results file's ``"n/a"``, a fraction, inf, a
    negative number) as it is, never rounded into a version that does not exist.

    >>> cusparselt_version_str(602), cusparselt_version_str(None), cusparselt_version_str("n/a")
    ('0.6.2', 'unknown', 'n/a')
    """
    if version is None:
        return "unknown"
    text = str(version)
    if not (text.isascii() and text.isdigit()):
        return text
    n = int(text)
    return f"{n // 1000}.{n % 1000 // 100}.{n % 100}"
