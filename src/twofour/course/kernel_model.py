"""Chapter 4's reading of the fitted kernel model: its worst misses, its crossovers against the measured ones, the host costs.

The fit is :mod:`twofour.roofline.calibration`'s, its error tables
:func:`twofour.course.figures.kernel_launch.error_rows`.

Example:
    >>> [r["measured"] for r in crossovers()]
    [2048, 8192, 256, 1024]
"""

from __future__ import annotations

import itertools

from ..roofline.calibration import error_row, fit_points, legacy_graph_params, load_fit, predicted_speedup
from ..roofline.model import crossover_m, predict
from ..roofline.params import default_params
from ..roofline.published import points

__all__ = ["crossovers", "misses", "host_costs"]


def _first_win(series) -> int | None:
    """The smallest M of ``[(M, speedup)]`` from which every larger M wins (speedup > 1), or None."""
    wins = [M for M, _ in itertools.takewhile(lambda p: not p[1] <= 1, sorted(series, reverse=True))]
    return wins[-1] if wins else None


def crossovers(dtype: str = "fp16") -> list[dict]:
    """Per Llama-3-8B weight shape, the first M where 2:4 beats dense in CUDA-graph replays:
    ``measured``, the smallest recorded M from which every larger one wins (None: never);
    ``predicted_at_recorded_m``: the same on the model; ``predicted``: the model's first winning M
    (:func:`twofour.roofline.crossover_m`; the saw-toothed curve can win past a tile boundary and lose
    again); ``predicted_serving``: as a serving engine runs (clean L2)."""
    from ..bench import recorded_results
    from ..bench.trusted import trusted_gemm_table
    from ..models import LLAMA_3_8B, linear_shapes

    dtype_name = {"fp16": "float16", "bf16": "bfloat16"}[dtype]
    params = default_params("H200")
    table = trusted_gemm_table(recorded_results("gpu"), dtype_name, "graph")
    names: dict = {}
    for s in linear_shapes(LLAMA_3_8B, include_lm_head=False):
        names.setdefault((s.out_features, s.in_features), []).append(s.name)
    as_run = legacy_graph_params(params)
    out = []
    for (N, K), layer in names.items():
        series = sorted((M, r["dense_ms"] / r["sparse_ms"]) for (M, n_, k_), r in table.items() if (n_, k_) == (N, K))
        model = [(M, predict(M, N, K, dtype, "H200", params=as_run, scenario="cached", l2="flushed").speedup)
                 for M, _ in series]
        out.append({"layer": "/".join(layer), "N": N, "K": K, "measured": _first_win(series),
                    "predicted_at_recorded_m": _first_win(model),
                    "predicted": crossover_m(N, K, dtype, "H200", params=as_run, scenario="cached", l2="flushed"),
                    "predicted_serving": crossover_m(N, K, dtype, "H200", params=params, scenario="cached", l2="clean")})
    return out


def misses(n: int = 3) -> dict:
    """What the per-regime medians hide: ``in_sample`` / ``held_out``, the ``n`` largest ``|predicted /
    measured - 1|`` of the 2:4 speedup in the fit set and on the held-out Llama-3-70B shapes; ``crossovers``.

    Example:
        >>> m = misses()
        >>> [len(m["in_sample"]), len(m["held_out"])], m["in_sample"][0]["rel_err"] >= m["in_sample"][-1]["rel_err"]
        ([3, 3], True)
    """
    params = default_params("H200")
    fit_set = [p for p in fit_points(points()) if p.extra.get("mode") != "trace" and p.origin == "measured"]
    in_sample = [{**error_row(p, predicted_speedup(p, params)), "mode": p.extra["mode"]} for p in fit_set]
    held = load_fit()["errors"]["held_out"]["points"]
    worst = {key: sorted(rows, key=lambda r: -r["rel_err"])[:n] for key, rows in (("in_sample", in_sample),
                                                                                  ("held_out", held))}
    return {**worst, "crossovers": crossovers("fp16")}


def host_costs() -> list[dict]:
    """The eager scenario's host cost per 2:4 call (``host_sparse_us``): this run's, and what published hosts
    imply. Eager calls take ``max(kernel, host)``, so a host-bound published timing implies the host cost:
    the predicted dense eager time over the measured speedup (None where the 2:4 kernel alone is slower).

    Example:
        >>> rows = host_costs()
        >>> rows[0]["host"].startswith("this run") and rows[1]["source"] == "https://github.com/pytorch/pytorch/pull/177866"
        True
        >>> round(rows[0]["host_sparse_us"]), round(rows[1]["host_sparse_us"])
        (520, 794)
    """
    base = default_params("H200")
    rows = [{"host": "this run: the H200's host, a 2-vCPU Firecracker VM (median of its host-bound eager calls)",
             "host_sparse_us": base.host_sparse_us, "source": next(p.source for p in points() if p.origin == "measured")}]
    for p in points():
        if (p.origin != "published" or p.scenario != "eager" or p.gpu is None or p.N is None
                or p.backend != "cuSPARSELt" or p.speedup >= 1):  # a 2:4 win is not host-bound: it implies nothing
            continue
        args = (p.M, p.N, p.K, p.dtype, p.gpu, p.backend, default_params(p.gpu))
        implied = predict(*args, scenario="eager").dense_us / p.speedup
        kernel = predict(*args, scenario="kernel").sparse_us
        rows.append({"host": f"{p.id} ({p.gpu}, {p.M} x {p.N} x {p.K} {p.dtype}), implied by its {p.speedup:.2f}x eager",
                     "host_sparse_us": implied if implied > kernel else None, "source": p.source})
    return rows
