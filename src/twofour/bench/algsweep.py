"""The cuSPARSELt algorithm sweep: every ``alg_id`` the library accepts, on both call paths, with kernel names.

For one GEMM shape, :func:`sweep_case` tries algorithm IDs upward from 0 until one is refused
(:func:`accepted_alg_ids`; no maximum is assumed: torch's ``get_max_alg_id`` is recorded beside,
never used to stop), then times every accepted ID in graph mode two ways:

* ``"_cslt_sparse_mm"``: called directly on ``x`` padded to the row multiple (the library's
  kernel and nothing else);
* ``"F.linear"``: on a ``to_sparse_semi_structured`` weight carrying that ``alg_id`` (PyTorch's
  path: pad, copy, wrapper, the kernel).

:class:`CudaCase` does the device work on a GPU (``scripts/gpu_measure.py alg-search``);
:class:`RehearsalCase` runs the same control flow on a CPU (no GPU number), so it is tested without a GPU.

Example:
    >>> case = sweep_case(RehearsalCase(accepts=3, search_id=5), repeats=2)
    >>> case["accepted_alg_ids"], case["stopped"][:25], case["search_alg_id"], case["search_timed"]
    ([0, 1, 2], 'alg_id 3 refused: Runtime', 5, True)
    >>> sorted({c["path"] for c in case["configs"]})
    ['F.linear', '_cslt_sparse_mm']
"""

from __future__ import annotations

import re
import statistics
import time
from typing import Callable

import torch

from ..vocabulary import CUSPARSELT
from .gpu_timing import check_counts, copies_to_defeat_l2, l2_bytes, profile_kernels, time_graph
from .._common.text import one_line
from .measure import sparse_weight

__all__ = ["PATHS", "CudaCase", "RehearsalCase", "accepted_alg_ids", "sweep_case", "kernel_tile", "GUARD"]

PATHS = ("_cslt_sparse_mm", "F.linear")
# A loop guard, not a belief about the library: a run that reaches it says so in "stopped".
GUARD = 1024


def accepted_alg_ids(accepts: Callable[[int], object], *, guard: int = GUARD) -> tuple[list[int], str]:
    """IDs 0, 1, 2, ... for which ``accepts(alg_id)`` returns, up to the first that raises; and why it stopped.

    >>> def lib(i):
    ...     if i > 9:
    ...         raise RuntimeError("CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value")
    >>> ids, why = accepted_alg_ids(lib)
    >>> ids[-1], why
    (9, 'alg_id 10 refused: RuntimeError: CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value')
    """
    check_counts(guard=(guard, 1))
    ids: list[int] = []
    for alg in range(guard):
        try:
            accepts(alg)
        except Exception as exc:  # the library's refusal is the answer
            return ids, f"alg_id {alg} refused: {one_line(exc, 300)}"
        ids.append(alg)
    return ids, f"no refusal up to the loop guard ({guard} IDs); the library may accept more"


_TILE = re.compile(r"tile(?:size)?_?(\d+)x(\d+)(?:x(\d+))?", re.IGNORECASE)


def kernel_tile(name: str) -> str | None:
    """The tile a GEMM kernel's name states (``MxNxK`` as written there), or None.

    >>> kernel_tile("sm90_xmma_sparse_gemm_f16f16_f16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_kernel")
    '128x256x64'
    >>> kernel_tile("void at::native::vectorized_elementwise_kernel<4>") is None
    True
    """
    m = _TILE.search(name)
    return None if m is None else "x".join(g for g in m.groups() if g)


def sweep_case(ops, *, repeats: int = 10, tol: float = 1e-2) -> dict:
    """Sweep one shape: accepted IDs, each timed on both :data:`PATHS`, and the search's ID.

    ``ops`` (:class:`CudaCase`, :class:`RehearsalCase`) gives ``copies(path, alg_id)`` and
    ``dense_copies()`` (no-argument callables running the GEMM on distinct weight copies, timed in
    turn; ``copies`` raises if ``alg_id`` is refused), ``rel_err(y)`` (max abs error over max abs
    of dense), ``time_ms(fns, repeats)`` (ms per call, one value per repeat),
    ``kernel_names(fns)`` (``{kernel name: launches}`` per callable, one profile), ``search()`` (the
    library's own choice; raises where it does not exist) and ``library_max()`` (None where unknown).

    Returns ``accepted_alg_ids``, ``stopped`` (the refusal that ended the search for IDs),
    ``torch_max_alg_id``, ``search_alg_id`` (an int, or the error), ``search_timed``, ``dense_ms``
    and ``dense_kernels``, ``configs`` (one per (path, alg_id): ``ms`` and ``kernels`` and
    ``rel_err``, or ``error``) and ``best`` per path (the fastest config whose result matched).
    """
    ids, stopped = accepted_alg_ids(lambda alg: ops.copies("_cslt_sparse_mm", alg)[0]())
    case: dict = {"accepted_alg_ids": ids, "stopped": stopped, "torch_max_alg_id": ops.library_max()}
    try:
        case["search_alg_id"] = int(ops.search())
    except Exception as exc:  # deprecated or absent in some releases: recorded
        case["search_alg_id"] = one_line(exc, 300)
    dense = ops.dense_copies()
    case["dense_ms"] = statistics.median(ops.time_ms(dense, repeats))
    todo = list(ids)
    if isinstance(case["search_alg_id"], int) and case["search_alg_id"] not in todo:
        todo.append(case["search_alg_id"])  # the search's choice is timed even outside the accepted run
    configs, named = [], []
    for alg in todo:
        for path in PATHS:
            entry = {"path": path, "alg_id": alg, "split_k": 1}
            try:
                fns = ops.copies(path, alg)
                entry["rel_err"] = float(ops.rel_err(fns[0]()))
                entry["ms"] = statistics.median(ops.time_ms(fns, repeats))
                named.append((entry, fns[0]))
            except Exception as exc:
                entry["error"] = one_line(exc, 300)
            configs.append(entry)
    # the kernel names of every timed config and of dense, from one profile
    try:
        names = ops.kernel_names(dense[:1] + [fn for _, fn in named])
        case["dense_kernels"] = names[0]
        for (entry, _), kernels in zip(named, names[1:]):
            entry["kernels"] = kernels
            tiles = {t for t in map(kernel_tile, kernels) if t}
            entry["tile"] = "/".join(sorted(tiles)) if tiles else None
    except Exception as exc:  # names are evidence beside the timings; their loss is recorded
        case["kernels_error"] = one_line(exc, 300)
    case["configs"] = configs
    case["search_timed"] = any(c["alg_id"] == case["search_alg_id"] and "ms" in c for c in configs)
    case["best"] = {path: min((c for c in configs if c["path"] == path and "ms" in c and c["rel_err"] < tol),
                              key=lambda c: (c["ms"], c["alg_id"]), default=None) for path in PATHS}
    return case


class RehearsalCase:
    """The sweep's control flow on a CPU: dense float32 matmuls stand in for every call (no GPU number).

    ``accepts`` IDs are accepted (the next raises as cuSPARSELt would), the search answers
    ``search_id`` (accepted even outside that run, as on the H200), ``fail_path`` makes one path raise.
    """

    def __init__(self, M: int = 3, N: int = 32, K: int = 64, *, accepts: int = 4, search_id: int | None = None,
                 fail_path: str | None = None, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        self.x = torch.randn(M, K, generator=gen)
        self.W = torch.randn(N, K, generator=gen)
        self.ref = torch.nn.functional.linear(self.x, self.W)
        self.accepts, self.search_id, self.fail_path = accepts, search_id, fail_path

    def copies(self, path, alg_id):
        if path not in PATHS:
            raise ValueError(f"path must be one of {PATHS}, got {path!r}")
        if path == self.fail_path:
            raise RuntimeError(f"rehearsal: {path} refused")
        if alg_id >= self.accepts and alg_id != self.search_id:
            raise RuntimeError("CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value (rehearsal)")
        return self.dense_copies()

    def dense_copies(self):
        return [lambda: torch.nn.functional.linear(self.x, self.W)]

    def rel_err(self, y):
        return float((y - self.ref).abs().max() / self.ref.abs().max())

    def time_ms(self, fns, repeats):
        out = []
        for i in range(repeats):
            t0 = time.perf_counter()
            fns[i % len(fns)]()
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    def kernel_names(self, fns):
        return [{"rehearsal: CPU matmul (no kernel names without a GPU)": 1.0} for _ in fns]

    def search(self):
        if self.search_id is None:
            raise RuntimeError("rehearsal: no search")
        return self.search_id

    def library_max(self):
        return None


class CudaCase:
    """:func:`sweep_case`'s device on a CUDA GPU: a pruned weight ``W24`` ``[N, K]``, ``M`` rows, its dtype.

    ``F.linear`` runs on the weight :func:`twofour.bench.sparse_weight` converted, ``x`` at its real
    ``M``; the direct call on ``x`` padded to 8 rows; timed over enough weight copies to find each cold.
    """

    def __init__(self, W24, M: int, *, seed: int = 0):
        self.device, self.M = W24.device, M
        gen = torch.Generator().manual_seed(seed + M)
        self.x = torch.randn(M, W24.shape[1], generator=gen).to(W24.device, W24.dtype)
        self.xp = torch.nn.functional.pad(self.x, (0, 0, 0, -M % 8))  # the row multiple PyTorch pads to
        self.W24, self.Wc = W24, torch._cslt_compress(W24)
        self.ref = torch.nn.functional.linear(self.x, W24).float()
        self.n_packed = copies_to_defeat_l2(self.Wc.numel() * self.Wc.element_size(), l2_bytes(self.device))
        self.n_dense = copies_to_defeat_l2(W24.numel() * W24.element_size(), l2_bytes(self.device))
        self._compressed = [self.Wc] + [self.Wc.clone() for _ in range(self.n_packed - 1)]
        self._dense = [W24] + [W24.clone() for _ in range(self.n_dense - 1)]

    def copies(self, path, alg_id):
        if path == "_cslt_sparse_mm":
            xp, M = self.xp, self.M
            return [lambda Wc=Wc: torch._cslt_sparse_mm(Wc, xp.t(), alg_id=alg_id).t()[:M] for Wc in self._compressed]
        weights = [sparse_weight(self.W24, CUSPARSELT.name, alg_id) for _ in range(self.n_packed)]
        return [lambda W=W: torch.nn.functional.linear(self.x, W) for W in weights]

    def dense_copies(self):
        return [lambda W=W: torch.nn.functional.linear(self.x, W) for W in self._dense]

    def rel_err(self, y):
        return float((y.float() - self.ref).abs().max() / self.ref.abs().max())

    def time_ms(self, fns, repeats):
        return time_graph(fns, device=self.device, warmup=1, repeats=repeats)

    def kernel_names(self, fns):
        return profile_kernels(fns, device=self.device, warmup=1, calls=len(fns))["per_call"]

    def search(self):
        return torch._cslt_sparse_mm_search(self.Wc, self.xp.t())

    def library_max(self):
        top = getattr(torch.backends.cusparselt, "get_max_alg_id", lambda: None)()
        return int(top) if top is not None else None
