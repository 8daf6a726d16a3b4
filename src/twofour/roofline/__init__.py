"""The GEMM model: predicted time of ``y = x @ W.T``, dense vs 2:4, from the kernel each side runs.

One file per concern (:mod:`.tiles`, :mod:`.model`, :mod:`.scenarios`, :mod:`.params`,
:mod:`.fitting`, :mod:`.evidence`, :mod:`.published`, :mod:`.calibration`, and :mod:`.formats`
for 2:4 next to quantization); this package only re-exports their public names.
"""

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
    ALGORITHMS,
    L2_STATES,
    KernelTime,
    Prediction,
    arithmetic_intensity,
    ceilings,
    crossover_m,
    gemm_speedup,
    kernel_time,
    pad_multiple,
    predict,
    ridge_point,
    speedup_curve,
)
from .params import (ASSUMED_PARAMS, DEFAULT_PARAMS, DEFAULT_TILE_TABLES, FAMILIES, KernelFamily, KernelParams,
                     default_params, fit_summary)
from .scenarios import DEFAULT_SCENARIO, SCENARIOS, check_scenario
from .tiles import Launch, launch, wave_efficiency

__all__ = [
    "KernelFamily",
    "KernelParams",
    "FAMILIES",
    "DEFAULT_TILE_TABLES",
    "ASSUMED_PARAMS",
    "DEFAULT_PARAMS",
    "SCENARIOS",
    "DEFAULT_SCENARIO",
    "ALGORITHMS",
    "L2_STATES",
    "check_scenario",
    "default_params",
    "fit_summary",
    "Launch",
    "launch",
    "wave_efficiency",
    "KernelTime",
    "Prediction",
    "kernel_time",
    "pad_multiple",
    "predict",
    "gemm_speedup",
    "speedup_curve",
    "crossover_m",
    "ceilings",
    "arithmetic_intensity",
    "ridge_point",
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
