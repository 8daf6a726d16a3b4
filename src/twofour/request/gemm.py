"""The predicted time of each GEMM of a request: the ideal roofline, or the fitted kernel model."""

from __future__ import annotations

from .workload import DTYPE_BYTES, OUT_BYTES, PACKED_RATIO, GemmModel, GemmTime, Machine, require_dtype


def ideal_times(M: float, N: float, K: float, b: float, b_out: float, packed_ratio: float, machine) -> tuple[float, float]:
    """Spec step 3: perfect kernels at the data-sheet peaks, weights and activations read once."""
    flops = 2.0 * M * N * K
    act = M * K * b + M * N * b_out
    w = N * K * b
    ideal_dense = max(flops / machine.dense_flops, (w + act) / machine.bandwidth)
    ideal_sparse = max(flops / machine.sparse_flops, (w * packed_ratio + act) / machine.bandwidth)
    return ideal_dense, ideal_sparse


def ideal_gemm_model(machine: Machine, dtype: str) -> GemmModel:
    """The plain roofline: each GEMM at the data-sheet peak or bandwidth, whichever binds (an upper bound).

    Example:
        >>> gemm = ideal_gemm_model(Machine.from_gpu("H100", "fp16"), "fp16")
        >>> t = gemm(1, 4096, 4096)          # a decode GEMV: bytes-bound
        >>> round(t.dense_s / t.sparse_s, 3)
        1.777
    """
    dtype = require_dtype(dtype)
    b, b_out, ratio = float(DTYPE_BYTES[dtype]), float(OUT_BYTES[dtype]), PACKED_RATIO[dtype]

    def gemm(M: int, N: int, K: int) -> GemmTime:
        return GemmTime(*ideal_times(M, N, K, b, b_out, ratio, machine))

    return gemm


def roofline_gemm_model(gpu, dtype: str, *, backend: str | None = None, params=None,
                        scenario: str = "cached", algorithm: str = "default", l2: str = "clean") -> GemmModel:
    """GEMM times predicted by :func:`twofour.roofline.predict`: each side from the kernel it runs.

    ``backend``, ``params`` (default: the fitted set for the GPU), ``scenario``
    (:data:`twofour.roofline.SCENARIOS`) and ``algorithm`` (``"default"``: cuSPARSELt's 0, or
    ``"searched"``) go to :func:`twofour.roofline.predict`. ``l2``: ``"clean"`` (a step's GEMMs
    back to back) or ``"flushed"`` (as ``twofour bench`` measured each call alone).

    Example:
        >>> gemm = roofline_gemm_model("H100", "fp16")
        >>> t = gemm(16384, 4096, 4096)
        >>> t.dense_s > t.sparse_s                 # a big prefill GEMM: 2:4 wins
        True
    """
    from .. import roofline

    dtype = require_dtype(dtype)
    roofline.check_scenario(scenario)

    def gemm(M: int, N: int, K: int) -> GemmTime:
        pred = roofline.predict(M, N, K, dtype, gpu, backend, params, scenario=scenario, algorithm=algorithm, l2=l2)
        return GemmTime(pred.dense_us * 1e-6, pred.sparse_us * 1e-6)

    return gemm
