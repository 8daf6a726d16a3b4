"""The cuSPARSELt algorithm sweep: every ``alg_id`` the library accepts, on both call paths, with kernel names.

For one GEMM shape, :func:`sweep_case` asks the library which algorithm IDs it accepts by trying
them upward from 0 until one is refused (:func:`accepted_alg_ids`; no maximum is assumed: torch's
``get_max_alg_id`` is recorded beside, never used to stop), then times every accepted ID two ways:

* ``"_cslt_sparse_mm"``: ``torch._cslt_sparse_mm`` called directly on ``x`` padded to the
  backend's row multiple (the library's kernel and nothing else);
* ``"F.linear"``: ``F.linear(x, W)`` on a ``to_sparse_semi_structured`` weight carrying that
  ``alg_id`` (PyTorch's path: pad, copy, wrapper, the kernel), ``x`` at its real ``M``;

records the kernel names each call launched, checks each result against dense, and times the
ID the library's own search (``torch._cslt_sparse_mm_search``) returns, accepted range or not.

The device work is behind a small interface (:class:`CaseOps`): ``scripts/gpu_measure.py
alg-search`` passes the CUDA one, and :class:`RehearsalCase` runs the same control flow on a
CPU with dense float32 stand-ins (no GPU number is produced), so the flow is tested without a GPU.

Example:
    >>> case = sweep_case(RehearsalCase(accepts=3, search_id=5), repeats=2)
    >>> case["accepted_alg_ids"], case["stopped"][:25], case["search_alg_id"], case["search_timed"]
    ([0, 1, 2], 'alg_id 3 refused: Runtime', 5, True)
    >>> sorted({c["path"] for c in case["configs"]})
    ['F.linear', '_cslt_sparse_mm']
"""

from __future__ import annotations

import statistics
from typing import Callable

__all__ = ["PATHS", "CaseOps", "RehearsalCase", "accepted_alg_ids", "sweep_case", "GUARD"]

PATHS = ("_cslt_sparse_mm", "F.linear")
# A loop guard, not a belief about the library: a run that reaches it says so in "stopped".
GUARD = 1024


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def accepted_alg_ids(accepts: Callable[[int], object], *, guard: int = GUARD) -> tuple[list[int], str]:
    """IDs 0, 1, 2, ... for which ``accepts(alg_id)`` returns, up to the first that raises; and why it stopped.

    >>> def lib(i):
    ...     if i > 9:
    ...         raise RuntimeError("CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value")
    >>> ids, why = accepted_alg_ids(lib)
    >>> ids[-1], why
    (9, 'alg_id 10 refused: RuntimeError: CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value')
    """
    if isinstance(guard, bool) or not isinstance(guard, int) or guard < 1:
        raise ValueError(f"guard must be an int >= 1, got {guard!r}")
    ids: list[int] = []
    for alg in range(guard):
        try:
            accepts(alg)
        except Exception as exc:  # the library's refusal is the answer
            return ids, f"alg_id {alg} refused: {_one_line(exc)}"
        ids.append(alg)
    return ids, f"no refusal up to the loop guard ({guard} IDs); the library may accept more"


class CaseOps:
    """What :func:`sweep_case` needs from a device for one shape (see :class:`RehearsalCase` for a CPU one)."""

    def call(self, path: str, alg_id: int) -> Callable[[], object]:
        """A no-argument callable running the GEMM on ``path`` with ``alg_id`` (raises if refused)."""
        raise NotImplementedError

    def dense(self) -> Callable[[], object]:
        raise NotImplementedError

    def rel_err(self, y) -> float:
        """``y`` (the output of a call) against dense: max abs error over max abs of dense."""
        raise NotImplementedError

    def time_ms(self, fn: Callable[[], object], repeats: int) -> list[float]:
        raise NotImplementedError

    def kernel_names(self, fn: Callable[[], object]) -> dict[str, int]:
        """``{kernel name: launches per call}``."""
        raise NotImplementedError

    def search(self) -> int:
        """The library's own choice of algorithm (raises where the search does not exist)."""
        raise NotImplementedError

    def library_max(self):
        """What torch says the library's largest ``alg_id`` is (None where it does not know)."""
        return None


def sweep_case(ops: CaseOps, *, repeats: int = 10, tol: float = 1e-2) -> dict:
    """Sweep one shape: accepted IDs, each timed on both :data:`PATHS`, and the search's ID.

    Returns ``accepted_alg_ids``, ``stopped`` (the refusal that ended the search for IDs),
    ``torch_max_alg_id``, ``search_alg_id`` (an int, or the error), ``search_timed``, ``dense_ms``
    and ``dense_kernels``, ``configs`` (one per (path, alg_id): ``ms`` and ``kernels`` and
    ``rel_err``, or ``error``) and ``best`` per path (the fastest config whose result matched).
    """
    ids, stopped = accepted_alg_ids(lambda alg: ops.call("_cslt_sparse_mm", alg)())
    case: dict = {"accepted_alg_ids": ids, "stopped": stopped, "torch_max_alg_id": ops.library_max()}
    try:
        case["search_alg_id"] = int(ops.search())
    except Exception as exc:  # deprecated or absent in some releases: recorded
        case["search_alg_id"] = _one_line(exc)
    dense = ops.dense()
    case["dense_ms"] = statistics.median(ops.time_ms(dense, repeats))
    case["dense_kernels"] = ops.kernel_names(dense)
    todo = list(ids)
    if isinstance(case["search_alg_id"], int) and case["search_alg_id"] not in todo:
        todo.append(case["search_alg_id"])  # the search's choice is timed even outside the accepted run
    configs = []
    for alg in todo:
        for path in PATHS:
            entry = {"path": path, "alg_id": alg, "split_k": 1}
            try:
                fn = ops.call(path, alg)
                entry["rel_err"] = float(ops.rel_err(fn()))
                entry["ms"] = statistics.median(ops.time_ms(fn, repeats))
                entry["kernels"] = ops.kernel_names(fn)
            except Exception as exc:
                entry["error"] = _one_line(exc)
            configs.append(entry)
    case["configs"] = configs
    case["search_timed"] = any(c["alg_id"] == case["search_alg_id"] and "ms" in c for c in configs)
    case["best"] = {}
    for path in PATHS:
        ok = [c for c in configs if c["path"] == path and "ms" in c and c["rel_err"] < tol]
        case["best"][path] = min(ok, key=lambda c: (c["ms"], c["alg_id"])) if ok else None
    return case


class RehearsalCase(CaseOps):
    """The sweep's control flow on a CPU: dense float32 matmuls stand in for every call (no GPU number).

    ``accepts`` IDs are accepted (the next raises as cuSPARSELt would), the search answers
    ``search_id`` (an ID outside the accepted run is accepted when timed alone, as the
    recorded H200 run's search chose IDs above the timed range), ``fail_path`` makes one path raise.
    """

    def __init__(self, M: int = 3, N: int = 32, K: int = 64, *, accepts: int = 4, search_id: int | None = None,
                 fail_path: str | None = None, seed: int = 0):
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.x = torch.randn(M, K, generator=gen)
        self.W = torch.randn(N, K, generator=gen)
        self.ref = torch.nn.functional.linear(self.x, self.W)
        self.accepts, self.search_id, self.fail_path = accepts, search_id, fail_path

    def call(self, path, alg_id):
        import torch

        if path not in PATHS:
            raise ValueError(f"path must be one of {PATHS}, got {path!r}")
        if path == self.fail_path:
            raise RuntimeError(f"rehearsal: {path} refused")
        if alg_id >= self.accepts and alg_id != self.search_id:
            raise RuntimeError("CUSPARSELT_MATMUL_ALG_CONFIG_ID: invalid value (rehearsal)")
        return lambda: torch.nn.functional.linear(self.x, self.W)

    def dense(self):
        import torch

        return lambda: torch.nn.functional.linear(self.x, self.W)

    def rel_err(self, y):
        return float((y - self.ref).abs().max() / self.ref.abs().max())

    def time_ms(self, fn, repeats):
        import time

        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
        return out

    def kernel_names(self, fn):
        return {"rehearsal: CPU matmul (no kernel names without a GPU)": 1}

    def search(self):
        if self.search_id is None:
            raise RuntimeError("rehearsal: no search")
        return self.search_id
