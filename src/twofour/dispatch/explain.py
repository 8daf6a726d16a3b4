"""Before you run it: which kernel will ``F.linear(x, W)`` use, and why?

:func:`explain` walks the same checks PyTorch makes, in the same order, and one step further
(PyTorch never checks that the weight really is 2:4). It returns a :class:`Verdict`:

* ``path``: what runs with ``W`` as it is now: ``"dense"`` (a dense tensor always takes the
  dense GEMM, zeros and all), ``"sparse-cusparselt"`` / ``"sparse-cutlass"`` (a packed
  ``SparseSemiStructuredTensor``) or ``"error"`` (PyTorch raises);
* ``if_packed``: what would run after ``torch.sparse.to_sparse_semi_structured(W)`` on the
  target GPU (equal to ``path`` when ``W`` is packed already);
* ``checks``: every rule with its outcome and the reason (rules: :mod:`twofour.dispatch.rules`).

>>> import torch, twofour
>>> from twofour.dispatch import explain, hypothetical_gpu
>>> W, _ = twofour.prune(torch.randn(4096, 4096).half())
>>> v = explain(W, (2048, 4096), target=hypothetical_gpu((8, 0), name="A100"))
>>> v.path, v.if_packed
('dense', 'sparse-cusparselt')
>>> explain(W.float(), (2048, 4096), target=hypothetical_gpu((8, 0))).if_packed
'error'
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import torch

from .._passes.tensors import SUPPORTED_DTYPES, dtype_name
from ..structure import StructureReport, check
from .probe import NO_CUSPARSELT, as_environment, build_lacks
from ..vocabulary import BACKENDS, CUTLASS
from .rules import backend_rules, default_backend, is_packed, packed_backend

__all__ = ["Check", "Verdict", "explain", "PATHS", "STATUSES"]

PATHS = ("sparse-cusparselt", "sparse-cutlass", "dense", "error")
# ok: this rule is satisfied. error: PyTorch raises. dense: the dense GEMM runs instead.
# wrong: the sparse kernel runs but computes something else than the dense layer.
# slow: it runs, with wasted work. info: context, changes nothing.
STATUSES = ("ok", "error", "dense", "wrong", "slow", "info")
_MARK = {"ok": "ok   ", "error": "ERROR", "dense": "DENSE", "wrong": "WRONG", "slow": "SLOW ", "info": "info "}

# Below this many tokens a GEMM with a Llama-sized weight is memory-bound, where published
# measurements of PyTorch's sparse path are slower than dense (pytorch#111339 at 1 token;
# ao#1460: gains only beyond batch 64, per the maintainer).
_FEW_TOKENS = 64


@dataclass(frozen=True)
class Check:
    """One rule and its outcome. ``status`` is one of :data:`STATUSES`."""

    topic: str
    status: str
    message: str
    source: str = ""

    def __str__(self) -> str:
        src = f"  [{self.source}]" if self.source else ""
        return f"{_MARK[self.status]} {self.topic:<10} {self.message}{src}"


@dataclass(frozen=True)
class Verdict:
    """What :func:`explain` found. ``print(verdict)`` gives the full report."""

    path: str
    if_packed: str
    backend: str
    target: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    packed: bool
    checks: tuple[Check, ...]
    M: int | None = None
    M_padded: int | None = None

    @property
    def sparse(self) -> bool:
        """True when ``F.linear(x, W)`` as it stands runs a sparse kernel."""
        return self.path.startswith("sparse")

    @property
    def would_be_sparse(self) -> bool:
        """True when packing ``W`` would make the matmul run a sparse kernel."""
        return self.if_packed.startswith("sparse")

    def problems(self, *statuses: str) -> tuple[Check, ...]:
        """The checks whose status is in ``statuses`` (default: everything but ok and info)."""
        wanted = statuses or ("error", "dense", "wrong", "slow")
        return tuple(c for c in self.checks if c.status in wanted)

    @property
    def topics(self) -> tuple[str, ...]:
        """Topics of the problems, e.g. ``("packed", "dtype")``; handy for tests and labs."""
        return tuple(dict.fromkeys(c.topic for c in self.problems()))

    @property
    def reasons(self) -> tuple[str, ...]:
        """One sentence per problem."""
        return tuple(c.message for c in self.problems())

    def summary(self) -> str:
        shape = "x".join(map(str, self.shape))
        what = f"W {shape} {dtype_name(self.dtype)} ({'packed' if self.packed else 'dense tensor'})"
        now = "" if self.packed else f" now, {self.if_packed} if packed"
        return f"{what} on {self.target}: {self.path}{now}"

    def __str__(self) -> str:
        return "\n".join([self.summary(), *(f"  {c}" for c in self.checks)])

    def _repr_html_(self) -> str:
        colour = {"ok": "#1b7f3b", "info": "#555", "slow": "#8a5a00"}
        rows = "".join(
            f"<tr><td style='color:{colour.get(c.status, '#b3261e')};font-weight:600'>{html.escape(c.status)}</td>"
            f"<td>{html.escape(c.topic)}</td><td>{html.escape(c.message)}"
            + (f" <small>[{html.escape(c.source)}]</small>" if c.source else "")
            + "</td></tr>"
            for c in self.checks
        )
        return f"<p><strong>{html.escape(self.summary())}</strong></p><table>{rows}</table>"


def _parse_x_shape(x_shape, K: int) -> tuple[int | None, int | None]:
    """(M, K_x) from ``x_shape``: an int M (tokens), or a shape ``(..., K)`` whose leading dims multiply to M."""
    if x_shape is None:
        return None, None
    if isinstance(x_shape, (bool, str, bytes)):
        raise TypeError(f"x_shape must be an int (tokens M) or a shape such as (batch, seq_len, K), got {x_shape!r}")
    if isinstance(x_shape, int):
        if x_shape < 1:
            raise ValueError(f"x_shape as an int is the number of tokens M and must be >= 1, got {x_shape}")
        return x_shape, K
    try:
        dims = [int(d) for d in x_shape]
    except (TypeError, ValueError):
        raise TypeError(
            f"x_shape must be an int (tokens M) or a shape such as (M, K) or (batch, seq_len, K), got {x_shape!r}"
        ) from None
    if len(dims) < 2 or any(d < 1 for d in dims):
        raise ValueError(
            f"x_shape must have at least 2 positive dims, (M, K) or (batch, seq_len, K), got {tuple(dims)}; "
            "pass an int for the token count alone"
        )
    return math.prod(dims[:-1]), dims[-1]


def explain(
    W,
    x_shape=None,
    *,
    x_dtype: torch.dtype | None = None,
    backend: str | None = None,
    target=None,
    structure: StructureReport | None = None,
) -> Verdict:
    """Say which kernel ``F.linear(x, W)`` takes on ``target``, and every reason why.

    Args:
        W: the weight ``[N, K]``: a dense tensor (CPU, CUDA or ``device="meta"`` for shape-only
            questions) or a packed ``torch.sparse.SparseSemiStructuredTensor``.
        x_shape: the activation's shape ``(M, K)`` or ``(batch, seq_len, K)``, or just the token
            count ``M`` as an int. None skips the checks that need it (padding of M).
        x_dtype: the activation's dtype; defaults to ``W``'s.
        backend: ``"cusparselt"`` or ``"cutlass"`` to ask about one backend; None means the one
            ``to_sparse_semi_structured`` picks now (``_FORCE_CUTLASS``), or ``W``'s own if packed.
        target: where the matmul runs: None (this machine), :func:`~twofour.dispatch.probe` or
            :func:`~twofour.dispatch.hypothetical_gpu`. A CPU ``W`` is judged as if moved there.
        structure: a ``twofour.check(W, n, m)`` report you already have, reused instead of checking
            ``W`` again: on ``W``'s shape, dtype and stored pattern (1:2 for float32), else ValueError.

    >>> import torch
    >>> from twofour.dispatch import hypothetical_gpu
    >>> v = explain(torch.zeros(8, 64, dtype=torch.float16), 1, target=hypothetical_gpu((9, 0)))
    >>> v.if_packed, v.topics
    ('error', ('packed', 'shape', 'padding'))
    """
    if not isinstance(W, torch.Tensor):
        raise TypeError(
            f"W must be a torch.Tensor [out_features, in_features] (dense or packed), got {type(W).__name__}; "
            "for a whole model use twofour.dispatch.audit(model)"
        )
    if x_dtype is not None and not isinstance(x_dtype, torch.dtype):
        raise TypeError(f"x_dtype must be a torch.dtype such as torch.float16, got {x_dtype!r}")
    env = as_environment(target)
    packed = is_packed(W)
    if packed:
        own = packed_backend(W)
        if backend is not None and backend != own:
            raise ValueError(f"backend={backend!r} but W is already packed for {own!r}; omit backend for a packed W")
        backend = own
    elif backend is None:
        backend = default_backend()
    rules = backend_rules(backend)  # validates the name
    if W.dim() != 2:
        raise ValueError(
            f"W must be 2-D [out_features, in_features], got shape {tuple(W.shape)}; "
            "F.linear weights are 2-D (flatten conv weights to [out, in*kh*kw] first)"
        )
    N, K = (int(d) for d in W.shape)
    M, K_x = _parse_x_shape(x_shape, K)
    if structure is not None:
        _require_report_on(structure, W, rules.pattern(W.dtype))
    case = _Case(W, packed, backend, rules, env, N, K, M, K_x, x_dtype or W.dtype, structure,
                 bool(env.cuda_available))

    # What decides the path as W stands, then after packing, in the order PyTorch meets them.
    dense_checks = [*_activation_rule(case), *_representation_rule(case)]
    pack_rules = (_device_rule, _capability_rule, _backend_rule, _dtype_rule, _contiguity_rule, _shape_rule, _structure_rule)
    pack_checks = [check for rule in pack_rules for check in rule(case)]
    padding, M_padded = _padding_rule(case)
    pack_checks += padding

    # Any error breaks the path it belongs to.
    x_broken = any(c.status == "error" for c in dense_checks)
    if_packed = "error" if x_broken or any(c.status == "error" for c in pack_checks) else f"sparse-{backend}"
    path = if_packed if packed else ("error" if x_broken else "dense")
    target_name = (
        f"{env.gpu_name} (compute capability {env.capability_str})" if case.on_gpu else "CPU (no CUDA GPU)"
    )
    return Verdict(
        path=path,
        if_packed=if_packed,
        backend=backend,
        target=target_name,
        shape=(N, K),
        dtype=W.dtype,
        packed=packed,
        checks=tuple(dense_checks + pack_checks),
        M=M,
        M_padded=M_padded,
    )


# ---------------------------------------------------------------------------------------------
# The rules. Each takes the question (a _Case) and returns its findings: a list of Checks, empty
# when the rule has nothing to say. explain() runs them in order and reads the outcome.


@dataclass(frozen=True)
class _Case:
    """Everything the rules need to know about one ``F.linear(x, W)`` question."""

    W: torch.Tensor
    packed: bool
    backend: str
    rules: object  # twofour.dispatch.rules.BackendRules of ``backend``
    env: object  # twofour.dispatch.Environment of the target
    N: int
    K: int
    M: int | None
    K_x: int | None
    x_dtype: torch.dtype
    structure: StructureReport | None
    on_gpu: bool


def _activation_rule(case: _Case) -> list[Check]:
    """x must fit W whatever the kernel: the same K and the same dtype."""
    found = []
    if case.K_x is not None and case.K_x != case.K:
        found.append(
            Check("x", "error", f"x has K={case.K_x} columns but W has K={case.K} (in_features); F.linear raises a shape error")
        )
    if case.x_dtype != case.W.dtype:
        found.append(
            Check(
                "x",
                "error",
                f"x is {dtype_name(case.x_dtype)} but W is {dtype_name(case.W.dtype)}; F.linear needs one dtype "
                "(cuSPARSELt also refuses mixed dtypes)",
                "torch/sparse/semi_structured.py, _mm",
            )
        )
    return found


def _representation_rule(case: _Case) -> list[Check]:
    """A dense tensor takes the dense GEMM, zeros and all; only a packed one dispatches to 2:4."""
    if case.packed:
        return [Check("packed", "ok", f"W is a {type(case.W).__name__}: matmuls dispatch to the {case.rules.label} sparse kernel")]
    return [
        Check(
            "packed",
            "dense",
            "W is a dense tensor: F.linear runs the dense GEMM and multiplies every zero; only "
            "torch.sparse.to_sparse_semi_structured(W) makes it sparse",
            "ao sparsity README; PyTorch semi-structured tutorial",
        )
    ]


def _device_rule(case: _Case) -> list[Check]:
    """The conversion takes CUDA tensors only; a CPU W is judged as if moved to the GPU."""
    if not case.on_gpu:
        return [
            Check(
                "device",
                "error",
                "no CUDA GPU: to_sparse_semi_structured accepts CUDA tensors only and PyTorch has no 2:4 kernel "
                "for the CPU",
                "torch/sparse/semi_structured.py, _validate_device_dim_dtype_shape",
            )
        ]
    if not case.packed and case.W.device.type not in ("cuda", "meta"):
        return [Check("device", "info", f"W is on {case.W.device}; judged as if moved with W.to('cuda') first")]
    return [Check("device", "ok", "CUDA")]


def _capability_rule(case: _Case) -> list[Check]:
    """The GPU's compute capability must run the backend (nothing to say without a GPU)."""
    if not case.on_gpu:
        return []
    problem = case.rules.capability_problem(case.env.capability, case.env.cusparselt_version)
    if problem:
        return [Check("capability", "error", problem)]
    return [Check("capability", "ok", f"compute capability {case.env.capability_str} runs {case.rules.label}")]


def _backend_rule(case: _Case) -> list[Check]:
    """The backend must be in the torch build; for a dense W, say which one packing would use."""
    found = []
    if case.on_gpu and build_lacks(case.backend, case.env):
        found.append(
            Check(
                "backend",
                "error",
                f"{NO_CUSPARSELT}); "
                "on 8.x, torch.sparse.SparseSemiStructuredTensor._FORCE_CUTLASS = True selects CUTLASS",
                "pytorch#115077",
            )
        )
    if not case.packed:
        default = default_backend()
        forced = "" if case.backend == default else f" (asked for explicitly; torch's default is {BACKENDS[default].name})"
        found.append(Check("backend", "info", f"to_sparse_semi_structured would use {case.rules.label}{forced}"))
    return found


def _dtype_rule(case: _Case) -> list[Check]:
    """The backend must take W's dtype, on this GPU, and compute the right result with it."""
    rules, dtype = case.rules, case.W.dtype
    if rules.shapes.get(dtype) is None:
        others = [
            BACKENDS[b].name for b in BACKENDS if b != case.backend and dtype in backend_rules(b).shapes
        ]
        hint = f"; {', '.join(others)} takes it" if others else ""
        return [
            Check(
                "dtype",
                "error",
                f"{rules.label} in this torch takes {', '.join(dtype_name(d) for d in rules.dtypes)}, "
                f"not {dtype_name(dtype)}{hint}; convert W (and x) to float16 or bfloat16",
                rules.source,
            )
        ]
    gpu_problem = rules.dtype_problem(dtype, case.env.capability, case.env.cusparselt_version) if case.on_gpu else None
    errors = [p for p in (gpu_problem, rules.mm_problem(dtype)) if p]
    if errors:
        return [Check("dtype", "error", "; ".join(errors))]
    if rules.mm_result_problem(dtype):
        return [Check("dtype", "wrong", rules.mm_result_problem(dtype), rules.source)]
    return [Check("dtype", "ok", f"{dtype_name(dtype)}", rules.source)]


def _contiguity_rule(case: _Case) -> list[Check]:
    """The conversion refuses a non-contiguous W (a transposed view, say)."""
    if case.packed or case.W.is_contiguous():
        return []
    return [
        Check(
            "contiguous",
            "error",
            f"W is not contiguous (strides {tuple(case.W.stride())}, e.g. a transposed view); conversion raises: "
            "pass W.contiguous()",
            "torch/sparse/semi_structured.py, _validate_device_dim_dtype_shape",
        )
    ]


def _shape_rule(case: _Case) -> list[Check]:
    """N and K must reach the dtype's minimum and be multiples of it (nothing to say once packed)."""
    shape_rule = case.rules.shapes.get(case.W.dtype)
    if shape_rule is None or case.packed:
        return []
    r, c = shape_rule.sparse_min_rows, shape_rule.sparse_min_cols
    N, K, rules = case.N, case.K, case.rules
    bad = []
    if N < r or N % r:
        bad.append(f"N={N} rows (out_features) must be >= and a multiple of {r}")
    if K < c or K % c:
        bad.append(f"K={K} columns (in_features) must be >= and a multiple of {c}")
    if bad:
        return [
            Check(
                "shape",
                "error",
                f"{rules.label} {dtype_name(case.W.dtype)}: " + "; ".join(bad) + " (pad W with zeros, slice the output)",
                rules.source,
            )
        ]
    return [Check("shape", "ok", f"{N}x{K} fits the {r}x{c} minimum and multiples", rules.source)]


def _structure_rule(case: _Case) -> list[Check]:
    """Is W really n:m along K? PyTorch never checks it (a packed W has no zeros left to check).
    If not, is it 2:4 along the wrong axis, or merely half zeros?"""
    if case.packed:
        return []
    W = case.W
    pattern = n, m = case.rules.pattern(W.dtype)
    name = f"{n}:{m}"
    src = "PyTorch does not check the pattern: torch/sparse/_semi_structured_conversions.py"
    if W.device.type == "meta":
        return [Check("structure", "info", f"W is a meta tensor (no values): {name} validity not checked")]
    if W.dtype not in SUPPORTED_DTYPES:
        return [Check("structure", "info", f"{dtype_name(W.dtype)} has no {name} check here")]
    if W.shape[1] % m:
        return [Check("structure", "error", f"K={W.shape[1]} is not a multiple of the group size {m}")]
    # explain() checked that a caller's report answers this W
    report = case.structure if case.structure is not None else _count(W, n, m)
    if report.valid:
        extra = " (float32 is stored as 1:2 pairs)" if pattern == (1, 2) else ""
        return [Check("structure", "ok", f"every group of {m} along K holds at most {n} non-zeros{extra}")]
    consequence = (
        "packing silently drops the extra non-zeros, so the sparse result differs from the dense layer"
        if case.backend == CUTLASS.key
        else "packing does not check it, so the sparse result differs from the dense layer"
    )
    if pattern == (1, 2):
        detail = f"{report.num_bad_groups:,} of {report.num_groups:,} pairs ({report.fraction_bad:.1%}) hold 2 non-zeros"
        if _count(W, 2, 4).valid:
            detail += "; W is 2:4, but float32 is stored 1:2 (one non-zero per pair), which is stricter"
        else:
            detail += "; float32 is stored 1:2 (one non-zero per pair)"
    else:
        detail = f"{report.num_bad_groups:,} of {report.num_groups:,} groups ({report.fraction_bad:.1%}) break {name} along K"
        if report.nonzero_fraction <= n / m + 1e-9:
            if W.shape[0] % m == 0 and _count(W.t(), n, m).valid:  # a view: checked block by block, never copied whole
                detail += f"; W.t() is {name}: the zeros run along out_features (pruned along the wrong axis)"
            else:
                detail += f"; {1 - report.nonzero_fraction:.0%} of W is zero, but not {n} in every {m} along K (unstructured)"
    return [Check("structure", "wrong", f"{detail}; {consequence}", src)]


def _padding_rule(case: _Case) -> tuple[list[Check], int | None]:
    """The sparse kernel pads x's M rows to a multiple (``M_padded``); short GEMMs are slow anyway."""
    x_rule = case.rules.shapes.get(case.x_dtype)
    M = case.M
    if M is None or x_rule is None:
        return [], None
    mult = x_rule.dense_min_rows
    M_padded = -(-M // mult) * mult
    if M_padded != M:
        found = Check(
            "padding",
            "slow",
            f"x has M={M} rows; the sparse kernel zero-pads them to {M_padded} (a multiple of {mult}), "
            f"so {1 - M / M_padded:.1%} of its rows are padding",
            f"{case.rules.source}; pytorch#111339",
        )
    elif M <= _FEW_TOKENS:
        found = Check(
            "padding",
            "slow",
            f"M={M} tokens: no padding, but a GEMM this short is memory-bound, where published runs of "
            "PyTorch's sparse path were slower than dense",
            "pytorch#111339; ao#1460",
        )
    else:
        found = Check("padding", "ok", f"M={M} is a multiple of {mult}: no padding")
    return [found], M_padded


def _count(W: torch.Tensor, n: int, m: int) -> StructureReport:
    """``check(W, n, m)``'s counts, without locating the bad groups."""
    return check(W, n, m, max_examples=0, max_locations=0)


def _require_report_on(report, W: torch.Tensor, pattern: tuple[int, int]) -> None:
    """A caller's ``structure=`` must be on a weight like ``W``, for the pattern ``W`` is stored in."""
    if not isinstance(report, StructureReport):
        raise TypeError(f"structure must be a twofour.check(W) report (StructureReport), got {type(report).__name__}")
    shape = "x".join(map(str, W.shape))
    if tuple(report.shape) != tuple(W.shape):
        raise ValueError(f"structure= is a report on a {'x'.join(map(str, report.shape))} weight, but W is {shape}; "
                         "pass twofour.check(W) of this W, or omit structure")
    if report.dtype != W.dtype:
        raise ValueError(f"structure= is a report on a {dtype_name(report.dtype)} weight, but W is "
                         f"{dtype_name(W.dtype)}; pass twofour.check(W) of this W, or omit structure")
    n, m = pattern
    if (report.n, report.m) != (n, m):
        raise ValueError(f"structure= checked {report.n}:{report.m}, but a {dtype_name(W.dtype)} W is stored {n}:{m}: "
                         f"pass twofour.check(W, {n}, {m}) or omit structure")
