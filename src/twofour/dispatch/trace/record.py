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

    from ..._common.stderr import without_profiler_chatter
    from ..kernels import profile_calls

    if not callable(fn):
        raise TypeError(f"fn must be callable (one step, e.g. lambda: model(tokens)), got {type(fn).__name__}")
    prof = profile_calls(fn, steps, warmup, calls_name="steps", step_name=name)
    if path is None:
        fd, path = tempfile.mkstemp(prefix="twofour-trace-", suffix=".json")
        os.close(fd)
    path = Path(path)
    with without_profiler_chatter():
        prof.export_chrome_trace(str(path))
    return path
