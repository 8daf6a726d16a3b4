"""Input validation and block iteration shared by :mod:`twofour.structure` and :mod:`twofour.packing`.

Every public function of the toolkit checks its arguments here, so a bad input always gets the
same kind of message: which argument, what was wrong, what is valid.
"""

from __future__ import annotations

import torch

from .bits import SUPPORTED_DTYPES, nonzero_mask, same_size_int_view, unsupported_reason

__all__ = [
    "SUPPORTED_DTYPES",
    "require_weight",
    "require_nm",
    "nonzero_mask",
    "same_size_int_view",
    "blocks",
    "dtype_name",
]


def dtype_name(dtype) -> str:
    """``float16`` for ``torch.float16``."""
    return str(dtype).replace("torch.", "")


def require_nm(n: int, m: int) -> None:
    """Raise a clear error unless ``1 <= n < m`` are integers (``n=2, m=4`` is 2:4)."""
    for name, value in (("n", n), ("m", m)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if m < 2:
        raise ValueError(f"m must be at least 2 (group size), got m={m}; 2:4 sparsity is n=2, m=4")
    if not 1 <= n < m:
        raise ValueError(
            f"n must satisfy 1 <= n < m (at most n non-zeros in each group of m), got n={n}, m={m}; "
            "2:4 sparsity is n=2, m=4"
        )


def require_weight(W, m: int, *, arg: str = "W") -> torch.Tensor:
    """Check that ``W`` is a non-empty 2-D tensor of a supported dtype whose last dim divides by ``m``.

    Returns ``W`` detached from autograd (a view, never a copy), so callers can read its bits.

    >>> require_weight(torch.zeros(2, 8), 4).shape
    torch.Size([2, 8])
    """
    if not isinstance(W, torch.Tensor):
        raise TypeError(
            f"{arg} must be a torch.Tensor of shape [out_features, in_features], "
            f"got {type(W).__name__}; wrap arrays with torch.as_tensor(...)"
        )
    if type(W).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__ and not getattr(W, "is_nested", False):
        # a wrapper subclass (MaskedTensor, ...): its own dispatch answers with multi-line errors
        raise TypeError(f"{arg} is a {type(W).__name__} (a tensor subclass with its own dispatch); pass a plain dense "
                        f"tensor: {arg}.to_dense() for a packed 2:4 weight, {arg}.get_data() for a MaskedTensor")
    if getattr(W, "is_nested", False):  # torch.nested: its strided form even fails on .shape
        raise TypeError(f"{arg} is a nested tensor (torch.nested: components of different shapes); a weight is one "
                        f"dense 2-D tensor: pass each component, or {arg}.to_padded_tensor(0)")
    if W.is_sparse or W.layout != torch.strided:
        raise TypeError(f"{arg} must be a dense (strided) tensor, got layout {W.layout}; call .to_dense() first")
    if W.device.type == "meta":
        raise ValueError(f"{arg} is on the meta device: it has a shape but no values to check; load the real weight")
    if W.dim() != 2:
        hint = f"use {arg}.reshape(1, -1) for a single row" if W.dim() < 2 else (
            f"reshape it to 2-D with the reduction dimension last, e.g. {arg}.reshape(-1, {arg}.shape[-1]) "
            "(a conv weight [out, in, kh, kw] is usually flattened to [out, in*kh*kw])")
        raise ValueError(f"{arg} must be 2-D [out_features, in_features], got {W.dim()}-D shape {tuple(W.shape)}; {hint}")
    reason = unsupported_reason(W.dtype)
    if reason is not None:
        supported = ", ".join(dtype_name(d) for d in SUPPORTED_DTYPES)
        raise TypeError(f"{arg} has dtype {dtype_name(W.dtype)}: {reason}; supported: {supported}")
    if W.numel() == 0:
        raise ValueError(f"{arg} is empty (shape {tuple(W.shape)}); it needs at least one group of {m} elements")
    K = W.shape[-1]
    if K % m != 0:
        pad = m - K % m
        raise ValueError(
            f"{arg} has {K} columns (in_features), not a multiple of the group size m={m}: "
            f"{K % m} column(s) left over. Pad {pad} zero column(s) at the end, e.g. "
            f"torch.nn.functional.pad({arg}, (0, {pad})), or choose a compatible m"
        )
    return W.detach()


def blocks(n_rows: int, n_cols: int, *, unit: int = 1, target_elems: int | None = None):
    """Yield ``(r0, r1, c0, c1)`` blocks covering an ``[n_rows, n_cols]`` weight in row-major order.

    Each block holds about ``target_elems`` elements (default 1/16 of the weight, between 64 Ki
    and 256 Ki: temporaries near the CPU caches), whole rows when a row fits, else column ranges
    whose width is a multiple of ``unit`` (the group size, or more when metadata must start on a byte).

    >>> list(blocks(4, 8, target_elems=16))
    [(0, 2, 0, 8), (2, 4, 0, 8)]
    >>> list(blocks(1, 16, unit=4, target_elems=8))
    [(0, 1, 0, 8), (0, 1, 8, 16)]
    """
    total = n_rows * n_cols
    if target_elems is None:
        target_elems = min(max(total // 16, 1 << 16), 1 << 18)
    if n_cols <= max(target_elems, unit):
        rows = max(1, target_elems // max(n_cols, 1))
        for start in range(0, n_rows, rows):
            yield start, min(start + rows, n_rows), 0, n_cols
        return
    width = max(unit, target_elems // unit * unit)
    for row in range(n_rows):
        for c0 in range(0, n_cols, width):
            yield row, row + 1, c0, min(c0 + width, n_cols)
