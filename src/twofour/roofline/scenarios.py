"""How a GEMM call is run, and so which costs beyond its kernel it pays: the model's scenarios.

``kernel``
    The kernels' own time, as the profiler sums it (``twofour bench --modes kernel``): the GEMM
    kernel and the call's helper kernels (split-K reduce, workspace memset, the padding of ``x``).
``cached``
    Plans cached, the calls replayed from a CUDA graph, as a serving engine runs: kernel time
    plus the idle time between kernels inside a captured chain of calls (``graph_dense_us`` /
    ``graph_sparse_us``, from the GEMM-chain traces).
``eager``
    PyTorch eager calls back to back (``twofour bench --modes stream``): the host's work per call
    (for cuSPARSELt, descriptors and a plan built on every call) overlaps the previous call's
    kernels, so a call costs ``max(kernel time, host time)``.
"""

from __future__ import annotations

from ..vocabulary import DEFAULT_SCENARIO, SCENARIOS

_MEANING = ("eager: PyTorch eager, calls back to back, a plan built per call; cached: plans cached or a CUDA-graph "
            "replay, as a serving engine runs; kernel: the kernels' own time, as the profiler records it")


def check_scenario(scenario) -> str:
    """Return ``scenario`` if it is one of :data:`SCENARIOS`, else raise naming the valid ones.

    Example:
        >>> check_scenario("cached")
        'cached'
        >>> check_scenario("graph")  # a timing mode's name: MODE_SCENARIO maps it to "cached"
        Traceback (most recent call last):
        ...
        ValueError: scenario must be one of ('eager', 'cached', 'kernel') (eager: PyTorch eager, calls back to back, a plan built per call; cached: plans cached or a CUDA-graph replay, as a serving engine runs; kernel: the kernels' own time, as the profiler records it), got 'graph'
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS} ({_MEANING}), got {scenario!r}")
    return scenario


def scenario_us(kernel_us: float, scenario: str, *, graph_us: float, host_us: float) -> tuple[float, bool]:
    """One call's time in a checked ``scenario`` from its kernel time, and whether the host bounds it.

    Example:
        >>> scenario_us(30.0, "cached", graph_us=8.0, host_us=500.0)
        (38.0, False)
        >>> scenario_us(30.0, "eager", graph_us=8.0, host_us=500.0)
        (500.0, True)
    """
    if scenario == "kernel":
        return kernel_us, False
    if scenario == "cached":
        return kernel_us + graph_us, False
    return max(kernel_us, host_us), host_us > kernel_us
