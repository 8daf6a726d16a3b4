"""Lab 4, "Find the crossover": checkers for the learner's speedup model and crossover search.

The learner writes three functions:

* ``decode_speedup(N, K, gpu) -> float``: the predicted 2:4 speedup of a one-token fp16 GEMM
  ``y = x @ W.T`` (``W`` is ``[N, K]``) on ``gpu``, with the model's default efficiencies:
  bytes over bandwidth plus the per-call overhead, the sparse side on rows padded to 8.
* ``find_crossover(speedup, m_max) -> int | None``: the smallest ``M`` in ``1..m_max`` with
  ``speedup(M) > 1``, or None.
* ``measured_crossover(rows) -> int | None``: from measured rows (dicts with ``M``,
  ``dense_ms``, ``sparse_ms``, in any order), the smallest measured ``M`` at which the 2:4
  time is lower than the dense one, or None.

The checkers compare with :mod:`twofour.roofline` and explain the first mistake they find
without printing the expected value.

>>> from twofour.course.labs import lab4
>>> lab4.check_find_crossover(lambda speedup, m_max: None)
Traceback (most recent call last):
...
twofour.course.labs._common.CheckFailed: case 'wins from 37': you returned None, but speedup(M) > 1 for some M <= m_max. Scan every M from 1 up.
"""

from __future__ import annotations

import math

import torch

from ...hardware import get_gpu
from ...packing import packed_bytes
from ...roofline import DEFAULT_EFFICIENCY, crossover_m, gemm_speedup, pad_multiple, predict
from ._common import CheckFailed, CheckResult, exercise_check

__all__ = [
    "DECODE_CASES",
    "check_decode_speedup",
    "check_find_crossover",
    "check_measured_crossover",
    "check_prediction",
    "reference_measured_crossover",
    "compare_with_data",
]

# (N, K, gpu): a Llama-3-8B projection, an MLP matrix, and a GPU of each generation.
DECODE_CASES = [(4096, 4096, "H100"), (14336, 4096, "A100"), (1024, 4096, "H200"), (4096, 14336, "L4")]


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _variants(N: int, K: int, gpu: str) -> dict[str, float]:
    """Typical wrong answers, to recognise which step the learner missed."""
    e = DEFAULT_EFFICIENCY
    spec = get_gpu(gpu)
    bw = spec.mem_bw_gbs * 1e9
    mult = pad_multiple(spec.backends[0], "fp16")

    def t(weight, rows, eff, overhead_us):
        return (weight + rows * K * 2 + rows * N * 2) / (bw * eff) + overhead_us * 1e-6

    dense_w, sparse_w = N * K * 2, packed_bytes((N, K), torch.float16)
    return {
        "no overhead": t(dense_w, 1, e.dense_memory, 0) / t(sparse_w, mult, e.sparse_memory, 0),
        "no padding": t(dense_w, 1, e.dense_memory, e.dense_overhead_us) / t(sparse_w, 1, e.sparse_memory, e.sparse_overhead_us),
        "weight only": (dense_w / (bw * e.dense_memory) + e.dense_overhead_us * 1e-6)
        / (sparse_w / (bw * e.sparse_memory) + e.sparse_overhead_us * 1e-6),
        "half the weight": t(dense_w, 1, e.dense_memory, e.dense_overhead_us) / t(dense_w / 2, mult, e.sparse_memory, e.sparse_overhead_us),
        "inverted": 1 / predict(1, N, K, "fp16", gpu).speedup,
    }


@exercise_check("decode_speedup")
def check_decode_speedup(fn) -> str:
    """Check ``decode_speedup(N, K, gpu)`` against :func:`twofour.roofline.predict` at M = 1."""
    for N, K, gpu in DECODE_CASES:
        got = fn(N, K, gpu)
        where = f"decode_speedup({N}, {K}, {gpu!r})"
        if not _is_number(got):
            raise CheckFailed(f"{where} returned {got!r}; return a float (dense time / 2:4 time)")
        want = predict(1, N, K, "fp16", gpu).speedup
        if math.isclose(got, want, rel_tol=1e-6):
            continue
        hints = {
            "no overhead": "it looks like the per-call overheads are missing: add dense_overhead_us to the dense time and sparse_overhead_us to the 2:4 time",
            "no padding": "it looks like x and y were counted with 1 row on the 2:4 side: PyTorch pads x to a multiple of 8 rows for fp16 (pad_multiple)",
            "weight only": "it looks like only the weight bytes were counted: x ([M, K]) and y ([M, N]) cross memory too",
            "half the weight": "the packed weight is not half the dense bytes: count the 2-bit metadata per kept value (packed_bytes)",
            "inverted": "the ratio is upside down: speedup = dense time / 2:4 time",
        }
        # The variants can lie within 1e-6 of each other (the activations are tiny next to the
        # weight at M = 1), so recognise a mistake only by an exact (float-rounding) match.
        for name, value in _variants(N, K, gpu).items():
            if math.isclose(got, value, rel_tol=1e-9):
                raise CheckFailed(f"{where}: {hints[name]}")
        if got > 1 / 0.5625:
            raise CheckFailed(f"{where} = {got:.3f} is above the memory-bound ceiling 1/0.5625: a one-token GEMM cannot beat the byte saving")
        raise CheckFailed(f"{where} = {got:.4f} is off by {abs(got / want - 1):.1%}; use the model's default efficiencies "
                          "(DEFAULT_EFFICIENCY) and the GPU's mem_bw_gbs in bytes per second")
    return f"your decode speedups match the model on {len(DECODE_CASES)} shape/GPU cases"


def _curves() -> list[tuple[str, object, int, int | None]]:
    """(name, speedup function, m_max, expected answer) for the crossover search."""
    def step(M):
        return 0.8 if M < 37 else 1.3

    def always(M):
        return 1.2

    def never(M):
        return 0.9 + M * 1e-9

    def saw(M):  # wins at 10, loses at 11-12, wins again
        return 1.1 if M == 10 or M > 12 else 0.95

    def tie(M):  # exactly 1 is not a win
        return 1.0 if M < 50 else 1.01

    model = lambda M: gemm_speedup(M, 4096, 4096, "fp16", "H100")  # noqa: E731
    return [
        ("wins from 37", step, 100, 37),
        ("wins everywhere", always, 100, 1),
        ("never wins", never, 200, None),
        ("saw-tooth", saw, 100, 10),
        ("speedup exactly 1 before M=50", tie, 100, 50),
        ("roofline, 4096x4096 fp16 on H100", model, 16384, crossover_m(4096, 4096, "fp16", "H100")),
    ]


@exercise_check("find_crossover")
def check_find_crossover(fn) -> str:
    """Check ``find_crossover(speedup, m_max)`` on synthetic curves and on the roofline model."""
    for name, curve, m_max, want in _curves():
        got = fn(curve, m_max)
        if got == want and (got is None or isinstance(got, int)):
            continue
        if got is None:
            raise CheckFailed(f"case {name!r}: you returned None, but speedup(M) > 1 for some M <= m_max. Scan every M from 1 up.")
        if not isinstance(got, int) or isinstance(got, bool):
            raise CheckFailed(f"case {name!r}: return an int M (or None), got {type(got).__name__} {got!r}")
        if want is None:
            raise CheckFailed(f"case {name!r}: speedup({got}) = {curve(got):.3f}; 2:4 never wins up to m_max here, so return None")
        if not 1 <= got <= m_max:
            raise CheckFailed(f"case {name!r}: M={got} is outside 1..m_max={m_max}")
        if curve(got) <= 1:
            raise CheckFailed(f"case {name!r}: at M={got} speedup is {curve(got):.3f}, not above 1 (equal to 1 is not a win)")
        raise CheckFailed(f"case {name!r}: 2:4 already wins at a smaller M than {got}; return the first M, not a later one")
    return "find_crossover finds the first winning M, handles ties, saw-teeth and 'never'"


def reference_measured_crossover(rows) -> int | None:
    """The reference answer for measured rows (used for the data check, not shown to learners)."""
    wins = [int(r["M"]) for r in rows if r["sparse_ms"] < r["dense_ms"]]
    return min(wins) if wins else None


def _row_cases() -> list[tuple[str, list[dict]]]:
    def rows(pairs):
        return [{"M": M, "dense_ms": d, "sparse_ms": s} for M, d, s in pairs]

    return [
        ("sorted", rows([(1, 0.02, 0.05), (16, 0.03, 0.05), (256, 0.2, 0.15), (4096, 2.0, 1.4)])),
        ("unsorted", rows([(4096, 2.0, 1.4), (1, 0.02, 0.05), (256, 0.2, 0.15), (64, 0.08, 0.1)])),
        ("never", rows([(1, 0.02, 0.05), (4096, 2.0, 2.1)])),
        ("tie is not a win", rows([(8, 0.05, 0.05), (32, 0.1, 0.09)])),
        ("two backends at one M", rows([(16, 0.03, 0.05), (16, 0.03, 0.02), (64, 0.08, 0.07)])),
    ]


@exercise_check("measured_crossover")
def check_measured_crossover(fn, results=None) -> str:
    """Check ``measured_crossover(rows)`` on prepared rows, and on real results if given.

    ``results``: an optional list of :class:`twofour.bench.Results`; each one's rows are
    checked per (shape, dtype, backend) against the reference answer.
    """
    for name, rows in _row_cases():
        want = reference_measured_crossover(rows)
        got = fn([dict(r) for r in rows])
        if got != want:
            if got is None:
                raise CheckFailed(f"rows {name!r}: you returned None, but some row has sparse_ms < dense_ms")
            if want is None:
                raise CheckFailed(f"rows {name!r}: no row has sparse_ms < dense_ms, so return None (you returned {got!r})")
            if name == "tie is not a win" and got == 8:
                raise CheckFailed(f"rows {name!r}: at M=8 both times are equal; equal is not a win")
            if name == "unsorted":
                raise CheckFailed(f"rows {name!r}: the rows are not sorted by M; the first row that wins is not the smallest M")
            raise CheckFailed(f"rows {name!r}: M={got!r} is not the smallest M whose 2:4 time is below the dense time")
    checked = 0
    for res in results or []:
        groups: dict = {}
        for r in res.gpu_points():
            groups.setdefault((r["shape"], r["dtype"], r["backend"]), []).append(r)
        for key, rows in groups.items():
            if fn(rows) != reference_measured_crossover(rows):
                raise CheckFailed(f"on recorded data {res.label}, {key}: your answer differs from the reference")
            checked += 1
    extra = f", and on {checked} measured curve(s)" if checked else ""
    return f"measured_crossover reads measured rows correctly{extra}"


def check_prediction(M_predicted, N: int, K: int, gpu: str, dtype: str = "fp16") -> CheckResult:
    """Compare the learner's predicted crossover for (N, K, gpu, dtype) with the model's."""
    want = crossover_m(N, K, dtype, gpu)
    if M_predicted == want:
        print(f"passed: the model also puts the crossover for W = [{N}, {K}] {dtype} on {get_gpu(gpu).name} at M = {want}")
        return CheckResult(True)
    if M_predicted is None:
        print("not done yet: my_prediction is None (run find_crossover on the model's speedup curve)")
        return CheckResult(False)
    raise CheckFailed(
        f"your prediction M={M_predicted} differs from the model's for W = [{N}, {K}] on {get_gpu(gpu).name}; "
        "did you pass gemm_speedup for this shape, dtype and GPU, with the default efficiencies?"
    )


def compare_with_data(M_predicted: int | None, M_measured: int | None, source: str) -> str:
    """One sentence comparing the predicted and the measured crossover, naming the data's source.

    Example:
        >>> compare_with_data(512, 1024, "recorded H200 run")
        'model: M = 512; recorded H200 run: M = 1024 (2.0x the prediction).'
    """
    pred = "no crossover up to the search limit" if M_predicted is None else f"M = {M_predicted}"
    if M_measured is None:
        return f"model: {pred}; {source}: 2:4 never won at the measured M."
    ratio = "" if M_predicted is None else f" ({M_measured / M_predicted:.1f}x the prediction)"
    return f"model: {pred}; {source}: M = {M_measured}{ratio}."
