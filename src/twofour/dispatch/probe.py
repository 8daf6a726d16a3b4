"""What this machine (or a GPU you name) offers each PyTorch 2:4 backend, and why.

:func:`probe` adds to :func:`twofour.device.environment` the per-backend view dispatch needs:
the backend ``to_sparse_semi_structured`` picks now, the dtypes each backend accepts in this
torch, and whether each can run here and, if not, why not. :func:`hypothetical_gpu` describes a
GPU you do not have (``hypothetical_gpu((9, 0))``: an H100), so :func:`twofour.dispatch.explain`
can answer "what would happen there" on a laptop.

>>> p = probe()
>>> p.default_backend in ("cusparselt", "cutlass")
True
>>> h100 = hypothetical_gpu((9, 0), name="H100")
>>> [b.name for b in h100.backends if b.usable]
['cusparselt']
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field

import torch

from .._passes.tensors import dtype_name
from ..device import Environment, environment, sparse_backends_for
from ..vocabulary import BACKENDS, CUSPARSELT, CUTLASS
from .rules import backend_rules, cusparselt_version_str, default_backend

__all__ = ["BackendStatus", "LiveCheck", "Probe", "probe", "hypothetical_gpu", "as_environment"]


@dataclass(frozen=True)
class BackendStatus:
    """One backend on one machine: can it run, why (not), which dtypes it takes."""

    name: str  # "cusparselt" | "cutlass"
    label: str  # "cuSPARSELt" | "CUTLASS"
    usable: bool
    why: str
    dtypes: tuple[torch.dtype, ...]


@dataclass(frozen=True)
class LiveCheck:
    """Result of actually packing and multiplying a small 2:4 matrix with one backend."""

    backend: str
    ok: bool
    detail: str  # "max |sparse - dense| = 0" or the exception, one line


@dataclass(frozen=True)
class Probe:
    """The dispatch view of a machine. Build it with :func:`probe` or :func:`hypothetical_gpu`."""

    env: Environment
    default_backend: str
    backends: tuple[BackendStatus, ...]
    hypothetical: bool = False
    live: tuple[LiveCheck, ...] = field(default=())

    def status(self, backend: str) -> BackendStatus:
        """The :class:`BackendStatus` of ``backend`` (``"cusparselt"`` or ``"cutlass"``)."""
        for b in self.backends:
            if b.name == backend:
                return b
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")

    @property
    def usable_backends(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends if b.usable)

    def rows(self) -> list[tuple[str, str]]:
        gpu = self.env.gpu_name or "—"
        if self.hypothetical:
            gpu += " (hypothetical: described, not detected)"
        rows = [
            ("torch", self.env.torch_version),
            ("CUDA (torch build)", self.env.cuda_version or "—"),
            ("GPU", gpu),
            ("compute capability", self.env.capability_str or "—"),
            (
                CUSPARSELT.name,
                cusparselt_version_str(self.env.cusparselt_version) if self.env.cusparselt_available else "not available",
            ),
            ("default backend", f"{BACKENDS[self.default_backend].name} (torch.sparse.SparseSemiStructuredTensor._FORCE_CUTLASS)"),
        ]
        for b in self.backends:
            dtypes = ", ".join(dtype_name(d) for d in b.dtypes)
            rows.append((b.label, f"{'usable' if b.usable else 'NOT usable'}: {b.why} [dtypes: {dtypes}]"))
        for c in self.live:
            rows.append((f"tried {BACKENDS[c.backend].name}", f"{'ran' if c.ok else 'FAILED'}: {c.detail}"))
        return rows

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th scope='row'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in self.rows()
        )
        return f"<table class='twofour-probe'><tbody>{body}</tbody></table>"


# What both probe() and explain() say when the build lacks cuSPARSELt (one place for the check).
NO_CUSPARSELT = "this torch build has no cuSPARSELt (torch.backends.cusparselt.is_available() is False"


def build_lacks(backend: str, env: Environment) -> bool:
    """True when ``backend`` is missing from the torch build ``env`` describes (only cuSPARSELt can be)."""
    return backend == CUSPARSELT.key and not env.cusparselt_available


def _statuses(env: Environment) -> tuple[BackendStatus, ...]:
    out = []
    for name in BACKENDS:
        rules = backend_rules(name)
        if not env.cuda_available:
            usable, why = False, "no CUDA GPU: to_sparse_semi_structured accepts CUDA tensors only"
        else:
            problem = rules.capability_problem(env.capability, env.cusparselt_version)
            if problem is None and build_lacks(name, env):
                problem = f"{NO_CUSPARSELT}; pytorch#115077)"
            usable = problem is None
            why = problem or f"compute capability {env.capability_str} is supported"
        out.append(BackendStatus(name, rules.label, usable, why, rules.dtypes))
    return tuple(out)


def as_environment(target) -> Environment:
    """Accept a :class:`Probe`, an ``Environment`` or None (this machine) and return the Environment."""
    if target is None:
        return environment()
    if isinstance(target, Probe):
        return target.env
    if isinstance(target, Environment):
        return target
    raise TypeError(
        "target must be None (this machine), a twofour.dispatch.Probe (probe() or hypothetical_gpu(...)) "
        f"or a twofour.device.Environment, got {type(target).__name__}"
    )


def probe(*, try_kernels: bool = False) -> Probe:
    """Describe this machine for 2:4 dispatch.

    Args:
        try_kernels: on a CUDA GPU, also pack a 64 x 128 float16 2:4 matrix with each backend
            and multiply it, recording success (and the largest difference from the dense
            result) or the exact error. Ignored without CUDA.

    Example:
        >>> print(probe())  # doctest: +SKIP
        torch               2.13.0+cpu
        ...
        cuSPARSELt          NOT usable: no CUDA GPU: to_sparse_semi_structured accepts CUDA tensors only ...
    """
    env = environment()
    live = _try_kernels(env) if try_kernels and env.cuda_available else ()
    return Probe(env=env, default_backend=default_backend(), backends=_statuses(env), live=live)


def hypothetical_gpu(
    capability: tuple[int, int],
    *,
    name: str | None = None,
    cusparselt_version: int | None = None,
    cusparselt_available: bool = True,
) -> Probe:
    """A :class:`Probe` for a GPU you describe instead of one torch detected.

    Args:
        capability: ``(major, minor)``, e.g. ``(8, 0)`` A100, ``(8, 9)`` L4, ``(9, 0)`` H100/H200,
            ``(7, 5)`` T4.
        name: a label for printouts.
        cusparselt_version: as torch reports it (``602`` for 0.6.2); None means unknown, which
            is taken as recent enough.
        cusparselt_available: whether the torch build there ships cuSPARSELt.

    >>> [b.usable for b in hypothetical_gpu((7, 5)).backends]
    [False, False]
    """
    if (
        not isinstance(capability, tuple)
        or len(capability) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in capability)
    ):
        raise TypeError(f"capability must be a (major, minor) tuple of non-negative ints such as (9, 0), got {capability!r}")
    backends = sparse_backends_for(capability)
    if not cusparselt_available:
        backends = tuple(b for b in backends if b != CUSPARSELT.name)
    env = Environment(
        torch_version=torch.__version__,
        python_version=environment().python_version,
        cuda_available=True,
        cuda_version=None,
        gpu_name=name or "hypothetical GPU",
        capability=capability,
        cusparselt_available=cusparselt_available,
        cusparselt_version=cusparselt_version,
        backends=backends,
        reason="described by hand with hypothetical_gpu(), not detected",
    )
    return Probe(env=env, default_backend=default_backend(), backends=_statuses(env), hypothetical=True)


def _try_kernels(env: Environment) -> tuple[LiveCheck, ...]:  # pragma: no cover - needs a GPU
    """Pack and multiply a tiny 2:4 matrix with each backend; restore torch's backend flag after."""
    from ..structure import prune

    base = torch.sparse.SparseSemiStructuredTensor
    saved = base._FORCE_CUTLASS
    gen = torch.Generator(device="cuda").manual_seed(0)
    W, _ = prune(torch.randn(64, 128, device="cuda", generator=gen).half())
    x = torch.randn(64, 128, device="cuda", generator=gen).half()
    dense = x @ W.t()
    results = []
    try:
        for name in BACKENDS:
            base._FORCE_CUTLASS = name == CUTLASS.key
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*prototype.*")
                    Ws = torch.sparse.to_sparse_semi_structured(W)
                    y = torch.nn.functional.linear(x, Ws)
                    torch.cuda.synchronize()
                diff = float((y.float() - dense.float()).abs().max())
                results.append(LiveCheck(name, True, f"{type(Ws).__name__}; max |sparse - dense| = {diff:.3g}"))
            except Exception as exc:  # the point is to record whatever PyTorch raises
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                results.append(LiveCheck(name, False, f"{type(exc).__name__}: {first}"))
    finally:
        base._FORCE_CUTLASS = saved
    return tuple(results)
