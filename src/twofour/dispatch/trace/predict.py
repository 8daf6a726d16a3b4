"""The 2:4 GEMM speedup a trace without a dense baseline can be given: the kernel model's, for its own GEMMs.

Assuming it at the ceiling (2x, or 1.78x at decode) promises what the default kernel does not give
at decode; :func:`kernel_speedup` predicts each GEMM with :func:`twofour.roofline.predict` (kernel
time, PyTorch's default algorithm) on the GPU the trace names, weighted by its predicted dense time.

>>> kernel_speedup([("aten::linear", (((16, 4096), (4096, 4096), ()), ("c10::Half", "c10::Half", "")))], "NVIDIA H200")[0] < 1.78
True
>>> kernel_speedup([("aten::linear", None)], "NVIDIA H200")
(None, 'the trace records no operand shapes (record with torch.profiler.profile(record_shapes=True))')
"""

from __future__ import annotations

import math

_DTYPES = {"c10::Half": "fp16", "c10::BFloat16": "bf16"}
_MAX_SHAPES = 4096  # distinct GEMM shapes predicted; a trace with more is not a model's decode step
# Operators whose operands say the GEMM: (index of x [.., K], index of the weight, weight stored [N, K]?)
_OPERANDS = {"aten::linear": (0, 1, True), "aten::mm": (0, 1, False), "aten::matmul": (0, 1, False),
             "aten::addmm": (1, 2, False)}


def _shape(op: str | None, sig) -> tuple[tuple[int, int, int], str] | str:
    """((M, N, K), dtype) of one GEMM call, or why it cannot be read."""
    if sig is None:
        return "no operand shapes"
    if op not in _OPERANDS:
        return f"a GEMM called through {op or 'no operator'} (known: {', '.join(_OPERANDS)})"
    dims, types = sig
    xi, wi, nk = _OPERANDS[op]
    if len(dims) <= wi or not dims[xi] or len(dims[wi]) != 2 or not all(isinstance(d, int) for d in dims[xi]):
        return f"{op} with operands {dims}"
    x, w = dims[xi], dims[wi]
    K = x[-1]
    N, Kw = (w[0], w[1]) if nk else (w[1], w[0])
    M = math.prod(x[:-1]) if len(x) > 1 else 1
    dtype = _DTYPES.get(types[xi] if len(types) > xi else "")
    if Kw != K or min(M, N, K) < 1:
        return f"{op} with operands {dims}"
    if dtype is None:
        return f"operands of type {types[xi] if len(types) > xi else '?'} (the model covers fp16 and bf16)"
    return (M, N, K), dtype


def kernel_speedup(gemm_ops, device_name: str | None) -> tuple[float | None, str]:
    """(predicted dense / 2:4 GEMM time of ``gemm_ops``, what it rests on), or (None, why it is unknown).

    ``gemm_ops``: ``(operator, signature)`` pairs (:attr:`~.report.StepStats.gemm_ops`);
    ``device_name``: the trace's GPU (``"NVIDIA H200"``).
    """
    from ...hardware import match_device_name
    from ...roofline import predict

    spec = match_device_name(device_name)
    if spec is None:
        return None, f"the trace's GPU ({device_name or 'not named'}) is not one the kernel model knows"
    if not spec.sparse_24:
        return None, f"{spec.name} has no sparse tensor cores"
    gemm_ops = list(gemm_ops)
    if not gemm_ops:
        return None, "no GEMM ran"
    if all(sig is None for _, sig in gemm_ops):
        return None, "the trace records no operand shapes (record with torch.profiler.profile(record_shapes=True))"
    dense = sparse = 0.0
    shapes = {}
    for op, sig in gemm_ops:
        got = _shape(op, sig)
        if isinstance(got, str):
            return None, f"the kernel model cannot read every GEMM: {got}"
        shapes[got] = shapes.get(got, 0) + 1
    if len(shapes) > _MAX_SHAPES:
        return None, f"{len(shapes):,} distinct GEMM shapes (the prediction covers up to {_MAX_SHAPES:,})"
    for ((M, N, K), dtype), n in shapes.items():
        if K % 4:
            return None, f"a GEMM with K = {K}, not a multiple of 4 (no 2:4 weight)"
        try:
            p = predict(M, N, K, dtype, spec, scenario="kernel")
        except ValueError as exc:  # a size past the model's range: said, not a traceback
            return None, f"the kernel model refuses a GEMM of M = {M:.3g}, N = {N:.3g}, K = {K:.3g}: {str(exc)[:120]}"
        dense += n * p.dense_us
        sparse += n * p.sparse_us
    if not sparse > 0:
        return None, "the kernel model predicts no time for these GEMMs"
    Ms = sorted({M for (M, _, _), _ in shapes})
    return dense / sparse, (f"predicted by the kernel model (twofour.roofline, kernel time, default algorithm) for the "
                            f"{len(gemm_ops)} GEMM{'s' if len(gemm_ops) != 1 else ''} of the summarized steps ({len(shapes)} "
                            f"shape{'s' if len(shapes) != 1 else ''}, M = "
                            f"{', '.join(map(str, Ms[:4]))}{', ...' if len(Ms) > 4 else ''}) on {spec.name}")
