"""One row of an audit: a 2-D weight of a model, what it is stored as and what would run it.

Its own module so that what builds rows (the audit, the compressed-tensors readers) and what reads
them (the report) import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AuditRow:
    """One 2-D weight of the model."""

    name: str
    kind: str  # "linear" or "embedding" (a lookup: never a sparse GEMM)
    shape: tuple[int, int]
    dtype: str
    fraction_valid: float | None  # fraction of 2:4-valid groups along K; None when not checked
    packed: bool
    verdict: str  # sparse-cusparselt / sparse-cutlass / dense / error
    topics: tuple[str, ...]
    reasons: tuple[str, ...]
    dense_bytes: int
    packed_bytes: int | None  # bytes once packed, for rows whose verdict is sparse
    n_groups: int | None = None  # groups of four along K checked (None when not checked)
    n_bad_groups: int | None = None  # of those, groups holding more than two non-zeros
    stored: str = "dense"  # how the file stores it: dense, sparse-24-bitmask, marlin-24
    stored_bytes: int | None = None  # its bytes on disk (every part), when read from a file
    # Why the layer is left dense on purpose ("the output head", "a MoE router, in the recipe's ignore list",
    # "an embedding (a lookup)"), or "" when it is not: a layer kept dense is listed, not judged.
    kept_dense: str = ""

    @property
    def sparse(self) -> bool:
        return self.verdict.startswith("sparse")
