"""Timing harness for ``y = x @ W.T``: dense vs every available 2:4 backend, with provenance.

One file per stage: :mod:`.timing`, :mod:`.gpu_timing` and :mod:`.clocks` (one call timed) ->
:mod:`.measure` (a point, dense vs 2:4 with a numerical check; sweeps) -> :mod:`.results` (the
results file with provenance) and :mod:`.flags` (suspect points). This package re-exports them.

Example (CPU, tiny shape):
    >>> from twofour.bench import sweep
    >>> res = sweep([("toy", 64, 64)], Ms=[1, 8], dtypes=["float32"], device="cpu",
    ...             warmup=1, repeats=3, progress=False)
    >>> [p["M"] for p in res.points], res.points[0]["sparse_skipped"][:30]
    ([1, 8], '2:4 sparse kernels need an NVI')
    >>> len(res.points[0]["dense"]["raw_ms"])
    3
"""

from .clocks import read_gpu_state
from .flags import flag_points
from .measure import DEFAULT_MS, TOLERANCE, measure_point, model_shapes, parse_shape, sparse_weight, sweep
from .results import (
    ALG_SEARCH_SCHEMA,
    DATA_DIR,
    READABLE_SCHEMAS,
    REQUIRED_PROVENANCE,
    RESULTS_SCHEMA,
    SCHEMA,
    Results,
    cpu_roofline,
    default_out_path,
    load_results,
    provenance,
    recorded_alg_search,
    recorded_results,
)
from .timing import summarize, time_callable

__all__ = [
    "SCHEMA",
    "READABLE_SCHEMAS",
    "RESULTS_SCHEMA",
    "ALG_SEARCH_SCHEMA",
    "REQUIRED_PROVENANCE",
    "TOLERANCE",
    "Results",
    "summarize",
    "time_callable",
    "measure_point",
    "sparse_weight",
    "read_gpu_state",
    "flag_points",
    "sweep",
    "model_shapes",
    "parse_shape",
    "provenance",
    "load_results",
    "recorded_results",
    "cpu_roofline",
    "recorded_alg_search",
    "default_out_path",
    "DATA_DIR",
    "DEFAULT_MS",
]
