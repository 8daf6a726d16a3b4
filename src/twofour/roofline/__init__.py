"""The GEMM model: predicted time of ``y = x @ W.T``, dense vs 2:4, for one shape on one GPU.

One file per concern; this package only re-exports their public names:

* :mod:`.model`: the roofline with its corrections (padding, per-call costs, waves) and what
  it predicts (:func:`predict`, :func:`gemm_speedup`, :func:`crossover_m`, the ceilings);
* :mod:`.scenarios`: how a call is run (``eager``, ``cached``, ``ideal``);
* :mod:`.params`: the free parameters (:class:`Efficiency`) and the fitted sets;
* :mod:`.fitting`: fitting them to measurements, under the ceilings;
* :mod:`.published`: the published measurements; :mod:`.calibration`: the fit over them and
  the GPU results files, with its held-out error;
* :mod:`.formats`: 2:4 next to quantization (bits per weight, capacity at a TPOT target).

Example:
    >>> from twofour.roofline import predict
    >>> predict(1, 4096, 4096, "fp16", "H200").bound_sparse     # decode: bytes, not FLOPs
    'memory'
"""

from .fitting import FitReport, ceiling_order, fit
from .formats import (
    WEIGHT_FORMATS,
    Capacity,
    WeightFormat,
    bits_per_weight,
    capacity_at_tpot,
    decode_step_bytes,
    decode_tokens_per_s,
    kv_bytes_per_token,
    model_weight_bytes,
    weight_format,
)
from .model import (
    Prediction,
    arithmetic_intensity,
    ceilings,
    crossover_m,
    gemm_speedup,
    gemm_time_s,
    pad_multiple,
    predict,
    ridge_point,
    speedup_curve,
    wave_efficiency,
)
from .params import ASSUMED_EFFICIENCY, DEFAULT_EFFICIENCY, Efficiency, default_params, fit_summary
from .scenarios import DEFAULT_SCENARIO, SCENARIOS, check_scenario

__all__ = [
    "Efficiency",
    "DEFAULT_EFFICIENCY",
    "ASSUMED_EFFICIENCY",
    "SCENARIOS",
    "DEFAULT_SCENARIO",
    "check_scenario",
    "default_params",
    "fit_summary",
    "Prediction",
    "FitReport",
    "pad_multiple",
    "gemm_time_s",
    "predict",
    "gemm_speedup",
    "speedup_curve",
    "crossover_m",
    "ceilings",
    "ceiling_order",
    "arithmetic_intensity",
    "ridge_point",
    "wave_efficiency",
    "fit",
    # twofour.roofline.formats: 2:4 next to quantization
    "WeightFormat",
    "WEIGHT_FORMATS",
    "weight_format",
    "bits_per_weight",
    "model_weight_bytes",
    "decode_step_bytes",
    "decode_tokens_per_s",
    "kv_bytes_per_token",
    "Capacity",
    "capacity_at_tpot",
]
