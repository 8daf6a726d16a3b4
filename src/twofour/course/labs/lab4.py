"""Lab 4, "Find the crossover": checkers for the learner's launch count, crossover searches and algorithm pick.

The learner writes:

* ``tile_math_us(tile, K, split, sm_tflops)``: the µs of one CTA's math on its whole tile over
  ``K / split`` of the reduction, at one SM's peak;
* ``ctas(M, N, K, tile, sms, cta_target, max_split, min_k_iters)``: the CTAs one kernel launches,
  tiles times the split-K factor of :mod:`twofour.roofline.tiles`;
* ``find_crossover(speedup, m_max)`` and ``measured_crossover(rows)``: the smallest ``M`` at which
  2:4 is faster, on a speedup curve and in measured rows, or None;
* ``fastest_algorithm(configs)``: the fastest cuSPARSELt algorithm that ran and matched dense.

>>> from twofour.course.labs import lab4
>>> lab4.check_find_crossover(lambda speedup, m_max: None)
Traceback (most recent call last):
...
twofour.course.labs._common.CheckFailed: case 'wins from 37': you returned None, but speedup(M) > 1 for some M <= m_max. Scan every M from 1 up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...hardware import get_gpu, match_device_name
from ...roofline import crossover_m, default_params, gemm_speedup, pad_multiple
from ...roofline.tiles import choose_tile, launch
from ._common import CheckFailed, CheckResult, exercise_check

__all__ = [
    "CTA_CASES",
    "MATCH_TOL",
    "check_tile_math_us",
    "check_ctas",
    "check_find_crossover",
    "check_measured_crossover",
    "check_fastest_algorithm",
    "check_prediction",
    "reference_measured_crossover",
    "reference_fastest_algorithm",
    "compare_with_data",
    "Measurement",
    "measurements",
]

# (M, N, K, family, gpu): the Llama-3-8B projections at decode with the default 2:4 kernel, the
# searched one, cuBLAS (cta_target 0 = the GPU's SMs), CUTLASS on an A100, and a prefill GEMM.
CTA_CASES = [(1, 1024, 4096, "cusparselt", "H200"), (1, 4096, 4096, "cusparselt", "H200"),
             (16, 14336, 4096, "cusparselt", "H200"), (1, 4096, 14336, "cusparselt", "H200"),
             (1, 4096, 4096, "cusparselt_searched", "H200"), (1, 1024, 4096, "cutlass", "A100"),
             (4096, 4096, 4096, "cusparselt", "H200"), (1, 1024, 256, "cusparselt", "H200"),
             (1, 4096, 4096, "cublas", "H200"), (16, 1024, 4096, "cublas", "A100")]
MATCH_TOL = 1e-2  # the sweep's tolerance on max |2:4 - dense| / max |dense| (fp16)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _case_args(M, N, K, family, gpu):
    """The padded M the kernel sees, its tile (the family's table), the SMs and the family."""
    fam = default_params(gpu).family(family)
    backend = "CUTLASS" if family == "cutlass" else "cuSPARSELt"
    mult = 1 if family == "cublas" else pad_multiple(backend, "fp16")
    Mp = math.ceil(M / mult) * mult
    return Mp, choose_tile(fam.tiles, Mp, N), get_gpu(gpu).sms, fam


@exercise_check("tile_math_us")
def check_tile_math_us(fn) -> str:
    """Check ``tile_math_us(tile, K, split, sm_tflops)`` on the recorded launches of the default 2:4 kernel and cuBLAS's."""
    from ...roofline.mechanism import mechanism_facts

    f = mechanism_facts()
    tile = tuple(int(v) for v in f["tile"].split(" x "))
    cases = [(tile, r["K"], r["split"], f["peak_sm_tflops"]) for r in f["one_token"]]
    cases += [((128, 8), 4096, 1, f["peak_sm_tflops"] / 2)]  # cuBLAS's decode tile at the dense peak
    for t, K, split, tflops in cases:
        where = f"tile_math_us({t}, {K}, {split}, {tflops:.2f})"
        got = fn(t, K, split, tflops)
        if not isinstance(got, (int, float)) or isinstance(got, bool) or not math.isfinite(got):
            raise CheckFailed(f"{where} returned {got!r}; return a number of microseconds")
        want = 2 * t[0] * t[1] * (K / split) / (tflops * 1e12) * 1e6
        if math.isclose(got, want, rel_tol=1e-6):
            continue
        for ratio, hint in ((split, "each CTA computes only K / split of the reduction"),
                            (0.5, "a multiply-add is 2 FLOPs"),
                            (1 / t[1], "the tensor cores compute the whole tile, all tile_m token columns, not only the real tokens"),
                            (1e-6, "convert seconds to microseconds (x 1e6)"), (1e6, "sm_tflops is in TFLOP/s: 1e12 FLOP/s each")):
            if math.isclose(got, want * ratio, rel_tol=1e-6):
                raise CheckFailed(f"{where}: {hint}")
        raise CheckFailed(f"{where} = {got:.4g} is not the time of one tile's math: 2 * tile_n * tile_m * (K / split) "
                          "FLOPs at sm_tflops")
    return "tile_math_us counts the whole tile's math, as the kernel does"


@exercise_check("ctas")
def check_ctas(fn) -> str:
    """Check ``ctas(M, N, K, tile, sms, cta_target, max_split, min_k_iters)`` against :func:`twofour.roofline.tiles.launch`."""
    for M, N, K, family, gpu in CTA_CASES:
        Mp, tile, sms, fam = _case_args(M, N, K, family, gpu)
        where = f"ctas({Mp}, {N}, {K}, {tile}, {sms}, {fam.cta_target}, {fam.max_split}, {fam.min_k_iters})"
        got = fn(Mp, N, K, tile, sms, fam.cta_target, fam.max_split, fam.min_k_iters)
        if not _is_int(got):
            raise CheckFailed(f"{where} returned {got!r}; return an int (tiles times the split-K factor)")
        want = launch(Mp, N, K, ((None, None) + tile,), sms, cta_target=fam.cta_target, max_split=fam.max_split,
                      min_k_iters=fam.min_k_iters).ctas
        if got == want:
            continue
        # Typical wrong answers, each with the step the learner missed (the first that matches wins).
        tiles = math.ceil(N / tile[0]) * math.ceil(Mp / tile[1])
        floor_tiles = max(1, (N // tile[0]) * (Mp // tile[1]))
        target, k_cap = fam.cta_target or sms, K // (64 * fam.min_k_iters)
        for value, hint in (
            (tiles, "cta_target 0 means the GPU's SM count (sms)" if fam.cta_target == 0 else
             "that is the number of tiles: with fewer tiles than cta_target the kernel splits K to launch "
             "more CTAs"),
            (tiles * max(1, min(fam.max_split, target // tiles)),
             "each K piece keeps at least min_k_iters steps of 64 along K: cap the split by floor(K / (64 * "
             "min_k_iters))"),
            (tiles * fam.max_split, "the split is not always max_split: it is as many pieces as fill "
             "cta_target CTAs, floor(cta_target / tiles), capped by max_split and by K"),
            (floor_tiles * max(1, min(fam.max_split, target // floor_tiles, k_cap)),
             "a partial tile is still a tile: count ceil(N / tile_n) * ceil(M / tile_m)"),
        ):
            if got == value:
                raise CheckFailed(f"{where}: {hint}")
        raise CheckFailed(f"{where} = {got} is not the number of CTAs: tiles = ceil(N / tile_n) * ceil(M / tile_m), "
                          "times split = max(1, min(max_split, floor(target / tiles), floor(K / (64 * min_k_iters))))")
    return f"your CTA counts match the model's launch on {len(CTA_CASES)} kernels"


@exercise_check("find_crossover")
def check_find_crossover(fn) -> str:
    """Check ``find_crossover(speedup, m_max)`` on synthetic curves and on the kernel model."""
    curves = [  # (name, speedup function, m_max, expected answer)
        ("wins from 37", lambda M: 0.8 if M < 37 else 1.3, 100, 37),
        ("wins everywhere", lambda M: 1.2, 100, 1),
        ("never wins", lambda M: 0.9 + M * 1e-9, 200, None),
        ("saw-tooth", lambda M: 1.1 if M == 10 or M > 12 else 0.95, 100, 10),  # wins at 10, loses at 11-12, wins again
        ("speedup exactly 1 before M=50", lambda M: 1.0 if M < 50 else 1.01, 100, 50),  # exactly 1 is not a win
        ("kernel model, 4096x4096 fp16 on H100", lambda M: gemm_speedup(M, 4096, 4096, "fp16", "H100"), 16384,
         crossover_m(4096, 4096, "fp16", "H100")),
    ]
    for name, curve, m_max, want in curves:
        got = fn(curve, m_max)
        if got == want and (got is None or isinstance(got, int)):
            continue
        if got is None:
            raise CheckFailed(f"case {name!r}: you returned None, but speedup(M) > 1 for some M <= m_max. Scan every M from 1 up.")
        if not _is_int(got):
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


@exercise_check("measured_crossover")
def check_measured_crossover(fn, results=None) -> str:
    """Check ``measured_crossover(rows)`` on prepared rows, and per (shape, dtype, backend) on
    ``results`` (:class:`twofour.bench.Results`) if given."""
    def rows(pairs):
        return [{"M": M, "dense_ms": d, "sparse_ms": s} for M, d, s in pairs]

    cases = [
        ("sorted", rows([(1, 0.02, 0.05), (16, 0.03, 0.05), (256, 0.2, 0.15), (4096, 2.0, 1.4)])),
        ("unsorted", rows([(4096, 2.0, 1.4), (1, 0.02, 0.05), (256, 0.2, 0.15), (64, 0.08, 0.1)])),
        ("never", rows([(1, 0.02, 0.05), (4096, 2.0, 2.1)])),
        ("tie is not a win", rows([(8, 0.05, 0.05), (32, 0.1, 0.09)])),
        ("two backends at one M", rows([(16, 0.03, 0.05), (16, 0.03, 0.02), (64, 0.08, 0.07)])),
    ]
    for name, rows in cases:
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


def reference_fastest_algorithm(configs) -> int | None:
    """The reference pick: the fastest configuration that ran and matched dense (None if none did)."""
    ok = [c for c in configs if "error" not in c and c.get("rel_err", math.inf) < MATCH_TOL]
    return min(ok, key=lambda c: c["ms"])["alg_id"] if ok else None


@exercise_check("fastest_algorithm")
def check_fastest_algorithm(fn, cases=None) -> str:
    """Check ``fastest_algorithm(configs)`` on prepared sweeps and on the recorded sweep (``cases``)."""
    def cfg(alg, ms=None, rel=1e-4, error=None):
        return {"alg_id": alg, "split_k": 1, "error": error} if error else {"alg_id": alg, "split_k": 1, "ms": ms, "rel_err": rel}

    sweeps = [
        ("plain", [cfg(0, 0.036), cfg(1, 0.0156), cfg(2, 0.02)]),
        ("a failed configuration", [cfg(0, 0.036), cfg(1, error="RuntimeError: CUDA error: invalid value"), cfg(2, 0.03)]),
        ("a fast but wrong result", [cfg(0, 0.036), cfg(3, 0.001, rel=0.5), cfg(4, 0.02)]),
    ]
    for name, configs in sweeps:
        got, want = fn([dict(c) for c in configs]), reference_fastest_algorithm(configs)
        if got == want:
            continue
        if any(c.get("alg_id") == got and "error" in c for c in configs):
            raise CheckFailed(f"sweep {name!r}: algorithm {got} did not run (its entry has an 'error'); skip those")
        if any(c.get("alg_id") == got and c.get("rel_err", 0) >= MATCH_TOL for c in configs):
            raise CheckFailed(f"sweep {name!r}: algorithm {got} is fast but its result differs from dense "
                              f"(rel_err >= {MATCH_TOL}); a wrong answer is not a speedup")
        raise CheckFailed(f"sweep {name!r}: {got!r} is not the alg_id of the fastest configuration that ran and matched")
    checked = 0
    for case in cases or []:
        if fn(case["configs"]) != case["best"]["alg_id"]:
            raise CheckFailed(f"recorded sweep, {case['shape']} M={case['M']}: your pick differs from the recorded best")
        checked += 1
    extra = f", and agrees with the recorded sweep on {checked} shapes" if checked else ""
    return f"fastest_algorithm skips failed and wrong configurations{extra}"


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
        "did you pass gemm_speedup for this shape, dtype and GPU, with the fitted defaults?"
    )


def compare_with_data(M_predicted: int | None, M_measured: int | None, source: str, *, gpu: str | None = None) -> str:
    """One sentence comparing the predicted and the measured crossover, naming the data's source.

    ``gpu``: the GPU the prediction is for (the one the data was measured on), named in the sentence.

    Example:
        >>> compare_with_data(512, 1024, "recorded H200 run")
        'model: M = 512; recorded H200 run: M = 1024 (2.0x the prediction).'
        >>> compare_with_data(513, 2048, "H200, measured 2026-11-30", gpu="H200")
        'model (H200): M = 513; H200, measured 2026-11-30: M = 2048 (4.0x the prediction).'
    """
    pred = "no crossover up to the search limit" if M_predicted is None else f"M = {M_predicted}"
    model = f"model ({get_gpu(gpu).name})" if gpu is not None else "model"
    if M_measured is None:
        return f"{model}: {pred}; {source}: 2:4 never won at the measured M."
    ratio = "" if M_predicted is None else f" ({M_measured / M_predicted:.1f}x the prediction)"
    return f"{model}: {pred}; {source}: M = {M_measured}{ratio}."


@dataclass(frozen=True)
class Measurement:
    """One distinct measurement of a weight: every row one GPU run recorded for it, in one timing mode.

    ``gpu``: the GPU's name in the spec table, None when the model does not know it.
    """

    source: str
    gpu: str | None
    rows: list[dict]


def measurements(results, N: int, K: int, dtype: str = "float16", mode: str = "graph") -> list[Measurement]:
    """The distinct measurements of ``W = [N, K]`` in ``results`` (:class:`twofour.bench.Results`), one per GPU run.

    Files from the same run (same GPU, torch and day: one ``make gpu-check`` writes several)
    merge into one curve; each backend is its own measurement.

    Example:
        >>> from twofour.bench import recorded_results
        >>> [(m.gpu, len(m.rows), m.source) for m in measurements(recorded_results("gpu"), 4096, 4096)]
        [('H200', 17, 'H200, measured 2026-11-30, CUDA graph replays (17 timings at 15 values of M, 2 results files)')]
    """
    from ..plotting import measured_on

    groups: dict[tuple, dict] = {}
    for res in results:
        for r in (r for r in res.gpu_points(mode) if (r["N"], r["K"], r["dtype"]) == (N, K, dtype)):
            group = groups.setdefault((res.label, r["backend"]), {"res": res, "rows": {}, "files": set()})
            group["rows"].setdefault((r["M"], r["dense_ms"], r["sparse_ms"]), r)  # a file given twice adds no timing
            group["files"].add(str(res.path) if res.path else id(res))
    how = {"graph": "CUDA graph replays", "kernel": "kernel time", "stream": "eager back to back", "lone": "lone eager calls"}
    backends = {backend for _, backend in groups}
    out = []
    for (_, backend), group in groups.items():
        p = group["res"].provenance
        rows = sorted(group["rows"].values(), key=lambda r: r["M"])
        spec = match_device_name(p.get("gpu_name"))
        where = measured_on(p.get("gpu_name") or "unknown GPU", p.get("date"))
        source = (f"{where}, {how.get(mode, mode)}{', ' + backend if len(backends) > 1 else ''} ({len(rows)} timings at "
                  f"{len({r['M'] for r in rows})} values of M, {len(group['files'])} results file{'s' if len(group['files']) > 1 else ''})")
        out.append(Measurement(source, spec.name if spec is not None else None, rows))
    return out
