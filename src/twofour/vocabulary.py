"""The project's vocabulary: one definition per concept, imported by every module that names it.

The calculators get the same values through ``docs/js/calc/data.js`` (``scripts/js_data.py``).

>>> BACKENDS["cusparselt"].name, CUTLASS.kernel_class
('cuSPARSELt', 'sparse-cutlass')
>>> MODE_SCENARIO["graph"], DTYPES["bf16"].packed_ratio, dtype_key("torch.float16")
('cached', 0.5625, 'fp16')

What a :data:`DTYPES` row says, and where each fact comes from:

* ``in_bytes``: bytes per element of the GEMM inputs and, by default, of every other tensor the
  request model reads; ``out_bytes``: of the GEMM output (8-bit GEMMs are assumed to write bf16);
* ``value_bits, n, m, meta_bits``: the packed form on sparse tensor cores: ``n`` of every ``m``
  values kept, each with ``meta_bits`` of position (2:4 with a 2-bit index; 32-bit values run as
  1:2 with 4 bits per kept value; PyTorch's ``docs/source/sparse.rst``);
* ``packed_ratio``: packed / dense bytes, ``n/m * (value_bits + meta_bits) / value_bits``;
* ``pad_multiple``: the dense operand's row multiple of PyTorch's 2:4 path per backend
  (``torch/sparse/semi_structured.py``, ``_DTYPE_SHAPE_CONSTRAINTS``; CUTLASS has no fp8 path).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Backend:
    """One 2:4 backend of PyTorch: its key (lower case, as options take it), shown name, kernel class and torch class."""

    key: str
    name: str
    kernel_class: str
    torch_class: str  # its torch.sparse subclass of SparseSemiStructuredTensor


# Kernel classes (twofour.dispatch.kernels sorts profiler kernels into these; the trace adds two).
SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL = "sparse-cusparselt", "sparse-cutlass", "sparse-general"
DENSE, OTHER = "dense-gemm", "other"
KERNEL_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL, DENSE, OTHER)
SPARSE_CLASSES: tuple[str, ...] = (SPARSE_CUSPARSELT, SPARSE_CUTLASS, SPARSE_GENERAL)  # the 2:4 set
ATTENTION, UNCLASSIFIED = "attention", "unclassified"  # trace only: attention kernels, unknown GPU work

CUSPARSELT = Backend("cusparselt", "cuSPARSELt", SPARSE_CUSPARSELT, "SparseSemiStructuredTensorCUSPARSELT")
CUTLASS = Backend("cutlass", "CUTLASS", SPARSE_CUTLASS, "SparseSemiStructuredTensorCUTLASS")
BACKENDS: dict[str, Backend] = {b.key: b for b in (CUSPARSELT, CUTLASS)}
BACKEND_NAMES: tuple[str, ...] = tuple(b.name for b in BACKENDS.values())

# The phases of a request: the prompt's forward pass, then one step per generated token.
PHASES: tuple[str, ...] = ("prefill", "decode")

# How `twofour bench` times a call: lone = one call on an idle device, host set-up included; graph =
# CUDA-graph replay; stream = eager calls back to back; kernel = the kernels' own time (profiler).
TIMING_MODES: tuple[str, ...] = ("lone", "graph", "stream", "kernel")
# How the roofline model's GEMM calls run (twofour.roofline.scenarios describes each).
SCENARIOS: tuple[str, ...] = ("eager", "cached", "kernel")
DEFAULT_SCENARIO = "cached"
# The roofline scenario each mode measures ("lone" stands for none: it is kept as evidence only).
MODE_SCENARIO: dict[str, str] = {"kernel": "kernel", "graph": "cached", "stream": "eager"}
# How `twofour bench --decode` times one decode step of a whole model (twofour.serve.measure).
DECODE_MODES: tuple[str, ...] = ("eager", "graph", "graph-searched", "compile")

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


# The names a dtype may be given by. fp32 is here for the hardware table (CUDA-core peaks), but
# has no row in DTYPES: float32 on tensor cores is tf32.
DTYPE_KEYS: tuple[str, ...] = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
_ALIASES = {
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8": "fp8", "e4m3": "fp8",
    "int8": "int8",
    "tf32": "tf32",
    "float32": "fp32", "float": "fp32", "fp32": "fp32",
}

# The 2:4 pattern of 16- and 8-bit types: (n kept, of m, metadata bits per kept value).
SPARSE_24: tuple[int, int, int] = (2, 4, 2)


def nm_ratio(value_bits: int | float, n: int, m: int, meta_bits: int | float) -> float:
    """Packed / dense bytes of an n:m form, in the operation order the JavaScript calculators repeat.

    >>> nm_ratio(16, 2, 4, 2), nm_ratio(8, 2, 4, 2), nm_ratio(4, 4, 8, 1)
    (0.5625, 0.625, 0.625)
    """
    return n / m * (value_bits + meta_bits) / value_bits


@dataclass(frozen=True)
class DtypeFacts:
    """One GEMM dtype: what its elements cost and how its 2:4 (or 1:2) form is stored."""

    key: str
    label: str  # how a page names it
    torch_name: str
    in_bytes: int
    out_bytes: int
    n: int
    m: int
    meta_bits: int
    pad_multiple: Mapping[str, int] = field(default_factory=dict)

    @property
    def value_bits(self) -> int:
        return 8 * self.in_bytes

    @property
    def packed_ratio(self) -> float:
        return nm_ratio(self.value_bits, self.n, self.m, self.meta_bits)

    def to_dict(self) -> dict:
        """Plain JSON-able values, as ``docs/js/calc/data.js`` carries them to the calculators."""
        return {"label": self.label, "torch_name": self.torch_name, "in_bytes": self.in_bytes, "out_bytes": self.out_bytes,
                "value_bits": self.value_bits, "n": self.n, "m": self.m, "meta_bits": self.meta_bits,
                "packed_ratio": self.packed_ratio, "pad_multiple": dict(self.pad_multiple)}


def _row(key, label, torch_name, in_bytes, out_bytes, nmk, pads) -> DtypeFacts:
    n, m, meta = nmk
    return DtypeFacts(key, label, torch_name, in_bytes, out_bytes, n, m, meta, MappingProxyType(pads))


DTYPES: Mapping[str, DtypeFacts] = MappingProxyType({
    f.key: f
    for f in (
        _row("fp16", "float16", "float16", 2, 2, SPARSE_24, {CUSPARSELT.name: 8, CUTLASS.name: 8}),
        _row("bf16", "bfloat16", "bfloat16", 2, 2, SPARSE_24, {CUSPARSELT.name: 8, CUTLASS.name: 8}),
        _row("fp8", "float8 (e4m3 / e5m2)", "float8_e4m3fn", 1, 2, SPARSE_24, {CUSPARSELT.name: 16}),
        _row("int8", "int8", "int8", 1, 2, SPARSE_24, {CUSPARSELT.name: 16, CUTLASS.name: 16}),
        # float32 on sparse tensor cores: 1:2, 4 metadata bits per kept value.
        _row("tf32", "float32 / tf32 (runs as 1:2)", "float32", 4, 4, (1, 2, 4), {CUSPARSELT.name: 4, CUTLASS.name: 4}),
    )
})
GEMM_DTYPES: tuple[str, ...] = tuple(DTYPES)
# The 2:4 dtypes the GPU runs here measure, and the torch name of each dtype key ("float16").
MEASURED_DTYPES: tuple[str, ...] = ("fp16", "bf16")
TORCH_NAMES: Mapping[str, str] = MappingProxyType({"fp32": "float32", **{k: f.torch_name for k, f in DTYPES.items()}})
# The dtypes a decode step is timed in, by torch name: the measured 2:4 ones, and float32 (the CPU).
DECODE_DTYPES: tuple[str, ...] = tuple(TORCH_NAMES[k] for k in (*MEASURED_DTYPES, "fp32"))
# The dtypes of 2:4 proper (n=2 of m=4): what the request model and the calculators accept.
SPARSE_24_DTYPES: tuple[str, ...] = tuple(k for k, f in DTYPES.items() if (f.n, f.m, f.meta_bits) == SPARSE_24)


@dataclass(frozen=True)
class PackedForm:
    """One n:m form sparse tensor cores store (what the packing calculator offers): element bits,
    ``n`` kept of every ``m``, metadata bits per kept value."""

    label: str
    value_bits: int
    n: int
    m: int
    meta_bits: int

    def to_dict(self) -> dict:
        return {"label": self.label, "value_bits": self.value_bits, "n": self.n, "m": self.m, "meta_bits": self.meta_bits}


# Every GEMM dtype's form, plus FP4 on Blackwell (no GEMM dtype row: no FP4 peaks): *paired* 4:8
# (a 2-bit index per pair of values) and element-wise 2:4 (derived from the bit counts).
PACKED_FORMS: Mapping[str, PackedForm] = MappingProxyType({
    **{k: PackedForm(f.label, f.value_bits, f.n, f.m, f.meta_bits) for k, f in DTYPES.items()},
    "fp4_paired": PackedForm("fp4 e2m1, paired 4:8", 4, 4, 8, 1),
    "fp4_elementwise": PackedForm("fp4, element-wise 2:4", 4, *SPARSE_24),
})


def dtype_key(dtype) -> str:
    """Normalise ``torch.float16`` / ``"float16"`` / ``"fp16"`` to a key of :data:`DTYPE_KEYS`.

    >>> dtype_key("FP16"), dtype_key("float32")
    ('fp16', 'fp32')
    """
    name = str(dtype).replace("torch.", "").lower()
    if name not in _ALIASES:
        raise ValueError(f"dtype must be one of {DTYPE_KEYS} (or the torch dtype), got {dtype!r}")
    return _ALIASES[name]


def to_json() -> dict:
    """The vocabulary as the calculators read it (``VOCABULARY`` in ``docs/js/calc/data.js``)."""
    return {"backends": {k: {"name": b.name, "kernel_class": b.kernel_class} for k, b in BACKENDS.items()},
            "kernel_classes": list(KERNEL_CLASSES), "sparse_classes": list(SPARSE_CLASSES),
            "timing_modes": list(TIMING_MODES), "mode_scenario": dict(MODE_SCENARIO),
            "palette": dict(PALETTE), "class_colors": dict(CLASS_COLORS)}
