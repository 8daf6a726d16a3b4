"""Record a trace of your own code: the recipe, as one function."""

from __future__ import annotations

import os
from pathlib import Path


def record(fn, path=None, *, steps: int = 4, name: str = "decode_step", warmup: int = 1) -> Path:
    """Profile ``fn()`` once per step and save the trace: a file for :func:`analyze` or ``twofour trace``.

    Equivalent to the usual recipe, which is what to run on your own serving code::

        with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(steps):
                with torch.profiler.record_function(f"decode_step_{i}"):
                    fn()
            torch.cuda.synchronize()
        prof.export_chrome_trace(path)

    GPU kernels are recorded when CUDA is available. ``name`` should say the phase
    (``decode_step`` or ``prefill``) so the report can tell phases apart.

    >>> import torch
    >>> from twofour.dispatch.trace import analyze
    >>> W, x = torch.randn(64, 128), torch.randn(8, 128)
    >>> path = record(lambda: torch.nn.functional.linear(x, W), steps=3)
    >>> analyze(path).phase("decode").gemms
    3
    """
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from ..._common.stderr import without_profiler_chatter

    if not callable(fn):
        raise TypeError(f"fn must be callable (one step, e.g. lambda: model(tokens)), got {type(fn).__name__}")
    for arg, value, low in (("steps", steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{arg} must be an int >= {low}, got {value!r}")
    if path is None:
        fd, path = tempfile.mkstemp(prefix="twofour-trace-", suffix=".json")
        os.close(fd)
    path = Path(path)
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    with without_profiler_chatter():
        with profile(activities=activities) as prof:
            for i in range(steps):
                with record_function(f"{name}_{i}"):
                    fn()
            if cuda:
                torch.cuda.synchronize()
        prof.export_chrome_trace(str(path))
    return path
