"""GPU spec table: peak dense and 2:4 FLOP/s per dtype, memory bandwidth, SMs, compute capability.

Every number carries a :class:`Citation` (where it comes from) and a status:

* ``secondary`` — NVIDIA's data sheet (or whitepaper) value, read in a reproduction of it;
* ``derived`` — arithmetic on a cited number (data sheets print Tensor Core peaks *with
  sparsity*; dense is half);
* ``unconfirmed`` — not checked against any NVIDIA document (e.g. the AWS-only A10G). Show
  these with the label.

Peaks are marketing maxima at boost clock; :mod:`twofour.roofline` applies efficiency factors.
Dtype keys: :data:`twofour.vocabulary.DTYPE_KEYS` (int8 in TOPS; fp32 on CUDA cores, no sparse mode).

Example:
    >>> from twofour.hardware import get_gpu
    >>> h100 = get_gpu("H100")
    >>> h100.peak_tflops("fp16"), h100.peak_tflops("fp16", sparse=True)
    (989.5, 1979.0)
    >>> h100.mem_bw_gbs, h100.sms, h100.capability, h100.backends
    (3350.0, 132, (9, 0), ('cuSPARSELt',))
    >>> get_gpu("T4").sparse_24
    False
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .device import sparse_backends_for
from .vocabulary import DTYPE_KEYS, dtype_key

__all__ = [
    "Citation",
    "GPUSpec",
    "GPUS",
    "get_gpu",
    "match_device_name",
    "spec_rows",
    "unconfirmed_fields",
]

STATUSES: tuple[str, ...] = ("verified", "secondary", "derived", "unconfirmed")


@dataclass(frozen=True)
class Citation:
    """Where a number comes from and how sure we are of it (one of :data:`STATUSES`)."""

    source: str
    status: str

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


@dataclass(frozen=True)
class GPUSpec:
    """One GPU's peaks, in TFLOP/s (TOPS for int8) and GB/s; ``None`` where it has no mode for a dtype.

    ``cite[key]`` explains every number: keys are ``"dense.<dtype>"``, ``"sparse.<dtype>"``,
    ``"mem_bw_gbs"``, ``"sms"``, ``"capability"``.
    """

    name: str
    arch: str
    capability: tuple[int, int]
    sms: int
    mem_bw_gbs: float
    dense_tflops: dict[str, float | None]
    sparse_tflops: dict[str, float | None]
    cite: dict[str, Citation] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    @property
    def sparse_24(self) -> bool:
        """True when the GPU has sparse tensor cores (compute capability >= 8.0)."""
        return bool(self.backends)

    @property
    def backends(self) -> tuple[str, ...]:
        """PyTorch 2:4 backends for this architecture, preferred first."""
        return sparse_backends_for(self.capability)

    def peak_tflops(self, dtype: str, *, sparse: bool = False) -> float:
        """Peak TFLOP/s for ``dtype``; raises a clear error where the GPU has no such mode.

        Example:
            >>> get_gpu("A100").peak_tflops("bf16", sparse=True)
            624.0
        """
        d = dtype_key(dtype)
        table = self.sparse_tflops if sparse else self.dense_tflops
        value = table.get(d)
        if value is None:
            kind = "2:4 sparse" if sparse else "dense"
            have = [k for k, v in table.items() if v is not None]
            raise ValueError(
                f"{self.name} has no {kind} tensor-core peak for dtype {d!r}; "
                f"it has {kind} peaks for {have or 'no dtype'}"
            )
        return value


# Sources. Short names; the Sources page of the site expands them.

_H100_DS = "NVIDIA H100 Tensor Core GPU data sheet (SXM column), as reproduced by HPC Tech (archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html)"
_H200_DS = "NVIDIA H200 Tensor Core GPU data sheet, as reproduced by lzwjava.github.io/nvidia-h200-gpu-specs-en and ai-hpc.github.io (8x-H200 page)"
_A100_DS = "NVIDIA A100 data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf), as tabulated by glennklockwood.com/garden/processors/A100"
_AMPERE_WP = "NVIDIA Ampere GA100 architecture whitepaper, as summarised by fudzilla.com (A100 Tensor Core GPU announcement)"
_L4_DS = "NVIDIA L4 Tensor Core GPU data sheet, as reproduced by store.sourcecode.com (L4 spec comparison) and grokipedia.com (NVIDIA L4 vs L40S)"
_T4_DS = "NVIDIA T4 data sheet figures (65 FP16 TFLOPS, 130 INT8 TOPS, 8.1 FP32 TFLOPS, 320 GB/s), as reported by geektopia.es and aiminingco.com/gpu/t4/specs"
_B200_DS = "NVIDIA HGX B200 (1,000 W) per-GPU peaks from NVIDIA's Blackwell data sheet, as tabulated by glennklockwood.com/garden/processors/B200"
_A10G = "AWS EC2 G5 (A10G) — no NVIDIA data sheet; baseten.co blog 'NVIDIA A10 vs A10G for ML model inference'"
_SM_LIST = "the cuSPARSELt documentation's list of supported SM architectures (docs.nvidia.com/cuda/cusparselt)"
_HALF = "data sheet sparse peak / 2 (data sheets print Tensor Core peaks with sparsity; dense is half)"


_c = Citation


def _spec(name, arch, cc, sms, bw, dense, sparse, cite, aliases=(), cc_cite=None):
    """Assemble a GPUSpec (every number cited: tests/toolkit/hardware checks it)."""
    cite = {**cite, "capability": cc_cite or _c(_SM_LIST, "secondary")}
    return GPUSpec(name, arch, cc, sms, float(bw), {d: dense.get(d) for d in DTYPE_KEYS},
                   {d: sparse.get(d) for d in DTYPE_KEYS}, cite, tuple(aliases))


def _sparse_halved(ds: str, sparse: dict[str, float], fp32: float) -> tuple[dict, dict, dict]:
    """Data sheets list sparse Tensor Core peaks; dense = sparse / 2 (derived); fp32 as printed."""
    dense = {d: v / 2 for d, v in sparse.items()} | {"fp32": fp32}
    cite = {f"sparse.{d}": _c(ds, "secondary") for d in sparse}
    cite.update({f"dense.{d}": _c(_HALF, "derived") for d in sparse})
    cite["dense.fp32"] = _c(ds, "secondary")
    return dense, dict(sparse), cite


def _build() -> dict[str, GPUSpec]:
    gpus: list[GPUSpec] = []

    # T4 (Turing, 7.5): tensor cores but no sparse mode. Data sheet lists dense peaks only.
    gpus.append(_spec(
        "T4", "Turing", (7, 5), 40, 320,
        dense={"fp32": 8.1, "fp16": 65.0, "int8": 130.0},
        sparse={},
        cite={
            **{k: _c(_T4_DS, "secondary") for k in ("dense.fp32", "dense.fp16", "dense.int8", "mem_bw_gbs")},
            "sms": _c("40 SMs (TU104 in T4): sysrqmts.com/en/gpus/nvidia/tesla/t4; not in the data sheet", "unconfirmed"),
        },
        aliases=("Tesla T4",),
    ))

    # A10G (Ampere GA102, 8.6): AWS-only, no NVIDIA data sheet; only its memory (as the A10's) is sourced.
    gpus.append(_spec(
        "A10G", "Ampere", (8, 6), 80, 600,
        dense={"fp32": 31.2, "tf32": 35.0, "fp16": 70.0, "bf16": 70.0, "int8": 140.0},
        sparse={"tf32": 70.0, "fp16": 140.0, "bf16": 140.0, "int8": 280.0},
        cite={
            **{f"dense.{d}": _c(_A10G + " (value not confirmed against any NVIDIA document)", "unconfirmed")
               for d in ("fp32", "tf32", "fp16", "bf16", "int8")},
            **{f"sparse.{d}": _c("2 x the unconfirmed dense value (Ampere sparse tensor cores double dense math)", "unconfirmed")
               for d in ("tf32", "fp16", "bf16", "int8")},
            "mem_bw_gbs": _c(_A10G + ": 24 GB GDDR6 at 600 GB/s, same as the A10", "secondary"),
            "sms": _c(_A10G + ": 80 SMs", "unconfirmed"),
        },
        aliases=("NVIDIA A10G", "A10G"),
        cc_cite=_c("GA102-based Ampere parts are compute capability 8.6; not checked for the AWS-only A10G", "unconfirmed"),
    ))

    # L4 (Ada, 8.9). Data sheet prints sparse peaks (marked *) and fp32 without sparsity.
    dense, sparse, cite = _sparse_halved(_L4_DS, {"tf32": 120.0, "fp16": 242.0, "bf16": 242.0, "fp8": 485.0,
                                                  "int8": 485.0}, 30.3)
    gpus.append(_spec(
        "L4", "Ada Lovelace", (8, 9), 58, 300, dense, sparse,
        {**cite,
         "mem_bw_gbs": _c(_L4_DS, "secondary"),
         "sms": _c("58 SMs = 7,424 CUDA cores / 128 per SM (fpsbench.com lists 7,424 cores); not in the data sheet", "unconfirmed")},
        aliases=("NVIDIA L4",),
    ))

    # A100 SXM 80GB (Ampere, 8.0). The data sheet prints dense | sparse pairs.
    a100_sparse = {"tf32": 312.0, "fp16": 624.0, "bf16": 624.0, "int8": 1248.0}
    a100_dense = {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0, "int8": 624.0}
    gpus.append(_spec(
        "A100", "Ampere", (8, 0), 108, 2039, a100_dense, a100_sparse,
        {**{f"dense.{d}": _c(_A100_DS, "secondary") for d in a100_dense},
         **{f"sparse.{d}": _c(_A100_DS, "secondary") for d in a100_sparse},
         "mem_bw_gbs": _c(_A100_DS + " (80 GB SXM: 2,039 GB/s)", "secondary"),
         "sms": _c(_AMPERE_WP + ": 108 SMs", "secondary")},
        # The A800 is the A100 with a slower interconnect: same SMs, clocks and memory.
        aliases=("A100 SXM 80GB", "A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "A100 80GB", "A100-80GB", "A100-SXM4",
                 "A800"),
        cc_cite=_c("pytorch/pytorch#132928 (the CUTLASS 2:4 path is limited to CC 8.x) and " + _SM_LIST, "verified"),
    ))

    # H100 SXM (Hopper, 9.0). Data sheet: sparse peaks marked *, "1/2 lower without sparsity".
    hopper = {"tf32": 989.0, "fp16": 1979.0, "bf16": 1979.0, "fp8": 3958.0, "int8": 3958.0}
    dense, sparse, cite = _sparse_halved(_H100_DS, hopper, 67.0)
    gpus.append(_spec(
        "H100", "Hopper", (9, 0), 132, 3350, dense, sparse,
        {**cite,
         "mem_bw_gbs": _c(_H100_DS, "secondary"),
         "sms": _c(_H100_DS + ": 132 SMs", "secondary")},
        aliases=("H100 SXM", "H100 SXM5", "NVIDIA H100 80GB HBM3", "H100-SXM5-80GB", "H100-class", "H100 (Hopper)"),
        cc_cite=_c("pytorch/pytorch#132009 (cuSPARSELt on Hopper) and #132928 (CUTLASS 2:4 limited to CC 8.x)", "verified"),
    ))

    # H200 SXM (Hopper, 9.0): the H100's compute with HBM3e.
    dense, sparse, cite = _sparse_halved(_H200_DS, hopper, 67.0)
    cite["dense.fp32"] = _c(_H200_DS + " (same FP32 as H100 SXM)", "unconfirmed")
    for d in ("tf32", "int8"):  # the reproductions checked list FP8 and BF16/FP16 only
        cite[f"sparse.{d}"] = _c(_H200_DS + " (not in the reproductions read; assumed equal to H100 SXM)", "unconfirmed")
        cite[f"dense.{d}"] = _c(_HALF + ", of an unconfirmed sparse value", "unconfirmed")
    gpus.append(_spec(
        "H200", "Hopper", (9, 0), 132, 4800, dense, sparse,
        {**cite,
         "mem_bw_gbs": _c(_H200_DS + ": 4.8 TB/s", "secondary"),
         "sms": _c("132 SMs, same GH100 configuration as H100 SXM (saulelectric.com H200 page)", "secondary")},
        aliases=("H200 SXM", "NVIDIA H200", "H200 SXM 141GB"),
        cc_cite=_c("Hopper is CC 9.0: pytorch/pytorch#132928 and " + _SM_LIST, "verified"),
    ))

    # B200 (Blackwell, 10.0), HGX 1,000 W configuration. fp4 peaks exist but fp4 2:4 is a
    # different pattern (paired 4:8), so fp4 is not in this table.
    b200_sparse = {"tf32": 2200.0, "fp16": 4500.0, "bf16": 4500.0, "fp8": 9000.0, "int8": 9000.0}
    b200_dense = {"fp32": 80.0, "tf32": 1100.0, "fp16": 2250.0, "bf16": 2250.0, "fp8": 4500.0, "int8": 4500.0}
    gpus.append(_spec(
        "B200", "Blackwell", (10, 0), 148, 8000, b200_dense, b200_sparse,
        {**{f"dense.{d}": _c(_B200_DS, "secondary") for d in b200_dense},
         **{f"sparse.{d}": _c(_B200_DS, "secondary") for d in b200_sparse},
         "mem_bw_gbs": _c(_B200_DS + ": 8 TB/s (hmc-tech.com lists 7.7 TB/s)", "secondary"),
         "sms": _c("148 SMs (hmc-tech.com B200 spec page); NVIDIA has not published an SM count in a data sheet", "unconfirmed")},
        aliases=("NVIDIA B200", "HGX B200"),
        cc_cite=_c("Blackwell sm100 is CC 10.0: " + _SM_LIST, "secondary"),
    ))
    return {g.name: g for g in gpus}


GPUS: dict[str, GPUSpec] = _build()


def get_gpu(name) -> GPUSpec:
    """Look up a GPU by name or alias, case-insensitively; a :class:`GPUSpec` passes through.

    Example:
        >>> get_gpu("h200").mem_bw_gbs
        4800.0
    """
    if isinstance(name, GPUSpec):
        return name
    key = str(name).strip().lower()
    for spec in GPUS.values():
        if key == spec.name.lower() or key in (a.lower() for a in spec.aliases):
            return spec
    raise ValueError(f"gpu must be one of {sorted(GPUS)} (or a GPUSpec), got {name!r}")


def match_device_name(device_name: str | None) -> GPUSpec | None:
    """Map ``torch.cuda.get_device_name()`` (e.g. ``"NVIDIA H200"``) to a spec, or None (never a guess).

    Matching is by the model token in the name, longest first, so ``"NVIDIA A100-SXM4-40GB"``
    maps to A100 (with the 80 GB part's bandwidth: a caveat the caller should show).

    Example:
        >>> match_device_name("NVIDIA H100 80GB HBM3").name
        'H100'
        >>> match_device_name("NVIDIA GeForce RTX 4090") is None
        True
    """
    if not device_name:
        return None
    upper = device_name.upper()
    for spec in sorted(GPUS.values(), key=lambda s: -len(s.name)):
        token = spec.name.upper()
        # "A10G" must not match "A100", and "H100" must not match "H1000".
        idx = upper.find(token)
        if idx >= 0 and not upper[idx + len(token): idx + len(token) + 1].isalnum():
            return spec
    return None


def spec_rows(*, dtypes: tuple[str, ...] = ("fp16", "bf16", "fp8", "int8")) -> list[dict]:
    """One dict per GPU for a table: peaks, bandwidth, SMs, CC, backends; ``*_label``: marked if unconfirmed.

    Example:
        >>> rows = spec_rows()
        >>> [r["gpu"] for r in rows][:3]
        ['T4', 'A10G', 'L4']
        >>> rows[1]["fp16 dense_label"]
        '70 (unconfirmed)'
    """
    rows = []
    for g in GPUS.values():
        row: dict = {
            "gpu": g.name,
            "arch": g.arch,
            "capability": f"{g.capability[0]}.{g.capability[1]}",
            "sms": g.sms,
            "mem_bw_gbs": g.mem_bw_gbs,
            "sparse_24": g.sparse_24,
            "backends": ", ".join(g.backends) or "none",
        }
        for key in ("capability", "sms", "mem_bw_gbs"):
            row[f"{key}_label"] = _label(row[key], g.cite.get(key))
        for d in dtypes:
            for kind in ("dense", "sparse"):
                value = (g.dense_tflops if kind == "dense" else g.sparse_tflops).get(d)
                row[f"{d} {kind}"] = value
                row[f"{d} {kind}_label"] = _label(value, g.cite.get(f"{kind}.{d}"))
        rows.append(row)
    return rows


def _label(value, citation: Citation | None) -> str:
    if value is None:
        return "—"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    if citation is not None and citation.status == "unconfirmed":
        text += " (unconfirmed)"
    return text


def unconfirmed_fields() -> list[tuple[str, str]]:
    """``(gpu, field)`` for every number whose source is unconfirmed.

    Example:
        >>> ("A10G", "dense.fp16") in unconfirmed_fields()
        True
    """
    return [(g.name, key) for g in GPUS.values() for key, c in g.cite.items() if c.status == "unconfirmed"]
