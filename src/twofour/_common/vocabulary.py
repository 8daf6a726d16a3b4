"""The project's vocabulary: one definition per concept, imported by every module that names it.

Each concept has one canonical spelling here and everything else derives from it: the 2:4
backends (key, display name, kernel class), the kernel classes the dispatch and trace stages
sort kernels into, the timing modes of ``twofour bench`` and the model scenario each measures,
and the figure palette that the trace timeline and the course's figures share. The calculators
get the same values through ``docs/js/calc/data.js`` (``VOCABULARY``, written by
``scripts/js_data.py``), so a new backend, class or mode is added here once.

>>> BACKENDS["cusparselt"].name, BACKENDS["cutlass"].kernel_class
('cuSPARSELt', 'sparse-cutlass')
>>> backend_key("CUTLASS"), MODE_SCENARIO["graph"]
('cutlass', 'cached')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backend:
    """One 2:4 backend of PyTorch: its key (lower case, as options take it), shown name and kernel class."""

    key: str
    name: str
    kernel_class: str


# Kernel classes (twofour.dispatch.kernels sorts profiler kernels into these; the trace adds two).
SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL = "sparse-cusparselt", "sparse-cutlass", "sparse-general"
DENSE, OTHER = "dense-gemm", "other"
KERNEL_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE, OTHER)
SPARSE_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL)  # the 2:4 set
ATTENTION, UNCLASSIFIED = "attention", "unclassified"  # trace only: attention kernels, unknown GPU work

BACKENDS: dict[str, Backend] = {
    "cusparselt": Backend("cusparselt", "cuSPARSELt", SPARSE_CUSPARSELT),
    "cutlass": Backend("cutlass", "CUTLASS", SPARSE_CUTLASS),
}
BACKEND_NAMES: tuple[str, ...] = tuple(b.name for b in BACKENDS.values())


def backend_key(name: str) -> str:
    """The key of a backend given by key or display name, in any case; ValueError naming the valid ones."""
    key = str(name).strip().lower()
    if key not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKEND_NAMES)}, got {name!r}")
    return key


# How `twofour bench` times a call (GPU only beyond "eager"): eager = one lone eager call, host
# set-up included; graph = CUDA-graph replay (plans cached); stream = eager calls back to back
# (the host overlaps the device); kernel = the kernels' own time, as the profiler records it.
TIMING_MODES: tuple[str, ...] = ("eager", "graph", "stream", "kernel")
# The roofline scenario each mode measures. "eager" (a lone call after an idle device adds host
# and device set-up) stands for no scenario: it is kept as evidence only.
MODE_SCENARIO: dict[str, str] = {"kernel": "kernel", "graph": "cached", "stream": "eager"}

# The figure palette: Okabe-Ito hues (distinct for every common colour-vision deficiency); yellow
# is left out, it has too little contrast on white.
PALETTE: dict[str, str] = {
    "blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "purple": "#CC79A7",
    "vermillion": "#D55E00", "sky": "#56B4E9", "black": "#000000", "grey": "#6E6E6E", "light grey": "#999999",
}
# The kernel classes' colours (trace timeline): dense blue and 2:4 orange, as in every figure.
CLASS_COLORS: dict[str, str] = {
    SPARSE_CUSPARSELT: PALETTE["orange"], SPARSE_CUTLASS: PALETTE["orange"], SPARSE_GENERAL: PALETTE["vermillion"],
    DENSE: PALETTE["blue"], ATTENTION: PALETTE["green"], OTHER: PALETTE["light grey"], UNCLASSIFIED: PALETTE["purple"],
}


def to_json() -> dict:
    """The vocabulary as the calculators read it (``VOCABULARY`` in ``docs/js/calc/data.js``)."""
    return {"backends": {k: {"name": b.name, "kernel_class": b.kernel_class} for k, b in BACKENDS.items()},
            "kernel_classes": list(KERNEL_CLASSES), "sparse_classes": list(SPARSE_CLASSES),
            "timing_modes": list(TIMING_MODES), "mode_scenario": dict(MODE_SCENARIO),
            "palette": dict(PALETTE), "class_colors": dict(CLASS_COLORS)}
