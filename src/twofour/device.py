"""Which device to run on, and what this machine can do with 2:4 sparsity.

Every notebook and tool asks this module, so the same code runs on a GPU box, a T4 (no sparse
tensor cores) or a laptop, and says *why* the 2:4 path is or is not available. The rules:

* 2:4 sparse tensor cores need NVIDIA compute capability (CC) 8.0 or newer.
* PyTorch's CUTLASS backend is built and validated for CC 8.x only.
* PyTorch's cuSPARSELt backend covers CC 8.x and 9.0+ (Hopper needs cuSPARSELt >= 0.6).

Example:
    >>> from twofour.device import pick_device, environment
    >>> pick_device().type in ("cpu", "cuda")
    True
    >>> env = environment()
    >>> env.sparse_ok == (env.backends != ())
    True
"""

from __future__ import annotations

import html
import platform
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ._common.fit import fit, report_width
from .vocabulary import CUSPARSELT, CUTLASS

__all__ = ["Environment", "pick_device", "environment", "sparse_backends_for", "cpu_model"]

# Sparse tensor cores arrived with Ampere (sm80).
MIN_SPARSE_CC: tuple[int, int] = (8, 0)


def pick_device(prefer: str | None = None) -> torch.device:
    """Return the device to run on: CUDA when available, otherwise CPU.

    ``prefer="cuda"`` without a usable GPU raises (never CPU numbers reported as GPU numbers).

    Example:
        >>> pick_device("cpu")
        device(type='cpu')
    """
    if prefer is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(prefer, str) or prefer not in ("cuda", "cpu"):
        raise ValueError(f"prefer must be None, 'cuda' or 'cpu', got {prefer!r}")
    if prefer == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "prefer='cuda' but torch.cuda.is_available() is False: this torch build "
            f"({torch.__version__}) sees no CUDA GPU. Use prefer=None to fall back to the CPU."
        )
    return torch.device(prefer)


def sparse_backends_for(capability: tuple[int, int] | None) -> tuple[str, ...]:
    """The PyTorch 2:4 backends expected on a GPU of compute capability ``(major, minor)`` (None: no GPU).

    The architecture rule only; :func:`environment` also checks that torch ships cuSPARSELt.

    Example:
        >>> sparse_backends_for((7, 5))      # T4: no sparse tensor cores
        ()
        >>> sparse_backends_for((8, 0))      # A100
        ('cuSPARSELt', 'CUTLASS')
        >>> sparse_backends_for((9, 0))      # H100 / H200: CUTLASS path is 8.x-only
        ('cuSPARSELt',)
    """
    if capability is None:
        return ()
    ints = isinstance(capability, tuple) and all(type(v) is int for v in capability)  # not bool
    if not ints or len(capability) != 2:
        raise TypeError(f"capability must be a (major, minor) tuple of ints or None, got {capability!r}")
    if capability < MIN_SPARSE_CC:
        return ()
    if capability[0] == 8:
        return (CUSPARSELT.name, CUTLASS.name)
    return (CUSPARSELT.name,)


@dataclass(frozen=True)
class Environment:
    """What this machine offers for 2:4 sparsity (:func:`environment`); ``sparse_ok`` is a prediction."""

    torch_version: str
    python_version: str
    cuda_available: bool
    cuda_version: str | None  # CUDA toolkit torch was built with (None for CPU builds)
    gpu_name: str | None
    capability: tuple[int, int] | None
    cusparselt_available: bool
    cusparselt_version: int | None  # as torch reports it, e.g. 602 for 0.6.2
    backends: tuple[str, ...] = field(default=())  # usable 2:4 backends, preferred first
    reason: str = ""  # one plain-English sentence explaining the verdict

    @property
    def device(self) -> torch.device:
        """The device notebooks should use (same rule as :func:`pick_device`)."""
        return torch.device("cuda" if self.cuda_available else "cpu")

    @property
    def sparse_ok(self) -> bool:
        """True when 2:4 sparse matmuls are expected to run on sparse tensor cores here."""
        return bool(self.backends)

    @property
    def capability_str(self) -> str | None:
        """Compute capability as ``"8.0"``, or None without a GPU."""
        return None if self.capability is None else f"{self.capability[0]}.{self.capability[1]}"

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs, in display order; used by ``__str__`` and the HTML table."""

        def show(value: object) -> str:
            return "—" if value is None else str(value)

        return [
            ("torch", self.torch_version),
            ("Python", self.python_version),
            ("CUDA (torch build)", show(self.cuda_version)),
            ("GPU", show(self.gpu_name)),
            ("compute capability", show(self.capability_str)),
            (CUSPARSELT.name, show(self.cusparselt_version) if self.cusparselt_available else "not available"),
            ("2:4 sparse kernels", "expected to work" if self.sparse_ok else "not available here"),
            ("backend(s)", ", ".join(self.backends) if self.backends else "—"),
            ("why", self.reason),
        ]

    def __str__(self) -> str:
        # Fitted to the terminal (or COLUMNS): a long value (the "why" sentence) wraps under itself.
        width = max(len(label) for label, _ in self.rows())
        return "\n".join(fit([f"{label:<{width}}  {value}" for label, value in self.rows()], report_width()))

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th scope='row'>{html.escape(label)}</th><td>{html.escape(value)}</td></tr>"
            for label, value in self.rows()
        )
        return f"<table class='twofour-env'><tbody>{body}</tbody></table>"


def _cusparselt() -> tuple[bool, int | None]:
    """(available, version) of cuSPARSELt as torch sees it; old torch lacks the module."""
    module = getattr(torch.backends, "cusparselt", None)
    if module is None or not hasattr(module, "is_available"):
        return False, None
    try:
        available = bool(module.is_available())
        version = module.version() if available and hasattr(module, "version") else None
    except RuntimeError:  # a build without the library can raise instead of returning False
        return False, None
    return available, version


def _verdict(
    cuda_available: bool,
    capability: tuple[int, int] | None,
    cusparselt_available: bool,
) -> tuple[tuple[str, ...], str]:
    """Usable backends and the sentence explaining them."""
    if not cuda_available:
        return (), (
            "No CUDA GPU is visible to torch, so there are no sparse tensor cores; "
            "the notebooks check 2:4 correctness with dense float32 matmuls on the CPU "
            "and show recorded GPU timings instead."
        )
    by_arch = sparse_backends_for(capability)
    cc = f"{capability[0]}.{capability[1]}" if capability else "unknown"
    if not by_arch:
        return (), (
            f"This GPU has compute capability {cc}; 2:4 sparse tensor cores need 8.0 or "
            "newer (Ampere, e.g. A100), so sparse matmuls cannot run here."
        )
    backends = tuple(b for b in by_arch if b != CUSPARSELT.name or cusparselt_available)
    if not backends:
        return (), (
            f"Compute capability {cc} supports 2:4 only through cuSPARSELt, and this torch "
            "build does not ship cuSPARSELt."
        )
    if backends == (CUSPARSELT.name,):
        return backends, (
            f"Compute capability {cc} has sparse tensor cores; PyTorch's CUTLASS 2:4 path is "
            "limited to 8.x, so cuSPARSELt is the backend here."
        )
    either = " or ".join(backends)
    return backends, f"Compute capability {cc} has sparse tensor cores; PyTorch can use {either}."


def environment() -> Environment:
    """Probe torch, CUDA and cuSPARSELt and say whether 2:4 kernels should work here.

    Example:
        >>> env = environment()
        >>> env.cuda_available == torch.cuda.is_available()
        True
    """
    cuda_available = torch.cuda.is_available()
    gpu_name = capability = None
    if cuda_available:
        gpu_name = torch.cuda.get_device_name(0)
        capability = tuple(int(v) for v in torch.cuda.get_device_capability(0))
    cusparselt_available, cusparselt_version = _cusparselt()
    backends, reason = _verdict(cuda_available, capability, cusparselt_available)
    return Environment(
        torch_version=torch.__version__,
        python_version=platform.python_version(),
        cuda_available=cuda_available,
        cuda_version=torch.version.cuda,
        gpu_name=gpu_name,
        capability=capability,
        cusparselt_available=cusparselt_available,
        cusparselt_version=cusparselt_version,
        backends=backends,
        reason=reason,
    )


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows, else ``"unknown"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"
