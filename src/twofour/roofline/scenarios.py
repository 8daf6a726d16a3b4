"""How a GEMM call is run, and so which per-call costs it pays: the model's scenarios."""

from __future__ import annotations

# How a GEMM call is run, and so which per-call costs it pays (see Efficiency):
#   ideal  : kernel time only, max(t_compute, t_memory): no per-call cost at all
#   cached : + the device's per-call cost (launch, the 2:4 path's extra memset/padding kernels):
#            plans cached or CUDA graphs, as serving engines run
#   eager  : PyTorch eager inside a model, calls issued back to back: the host's per-call work
#            (Python dispatch; for cuSPARSELt, descriptors and a plan built on every call)
#            overlaps the previous call's kernels, so a call costs max(cached time, host time)
SCENARIOS = ("eager", "cached", "ideal")
DEFAULT_SCENARIO = "cached"


def _check_kind(kind) -> None:
    if kind not in ("dense", "sparse"):
        raise ValueError(f"kind must be 'dense' or 'sparse', got {kind!r}")


def check_scenario(scenario) -> str:
    """Return ``scenario`` if it is one of :data:`SCENARIOS`, else raise naming the valid ones."""
    if scenario not in SCENARIOS:
        raise ValueError(
            f"scenario must be one of {SCENARIOS} (eager: PyTorch eager, plan built per call; cached: plans "
            f"cached or CUDA graphs, as a serving engine runs; ideal: kernel time only), got {scenario!r}")
    return scenario
