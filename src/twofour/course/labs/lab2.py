"""Lab 2, "Pack it by hand": checkers for the learner's byte count, pack, metadata encoder and unpack.

The learner writes, for 2:4 along K, ``packed_nbytes(shape, dtype)``, ``pack_2to4(W) -> (values
[N, K/2], indices [N, K/4, 2])``, ``encode_meta(indices) -> uint8 [N, K/8]`` (the positions as sparse
tensor cores read them) and ``unpack_2to4(values, indices, K)``. Every checker compares with
:mod:`twofour.packing` bit for bit.
"""

from __future__ import annotations

import torch

from ..._passes.tensors import same_size_int_view
from ...packing import dense_bytes, pack, packed_bytes
from ...structure import prune
from ._common import CheckFailed, exercise_check

__all__ = ["SIZE_CASES", "weights", "check_packed_nbytes", "check_pack_2to4", "check_encode_meta", "check_unpack_2to4"]

SEED = 2024

# (shape, dtype) pairs the byte count is checked on: real Llama-3-8B projection shapes and small ones.
SIZE_CASES: tuple[tuple[tuple[int, int], torch.dtype], ...] = (
    ((4096, 4096), torch.float16),
    ((14336, 4096), torch.bfloat16),
    ((4096, 14336), torch.int8),
    ((1024, 4096), torch.float8_e4m3fn),
    ((32, 64), torch.float32),
    ((8, 8), torch.float16),
)


@exercise_check("packed_nbytes")
def check_packed_nbytes(packed_nbytes) -> str:
    """Compare ``packed_nbytes(shape, dtype)`` with :func:`twofour.packed_bytes` (2:4, 2-bit positions).

    >>> check_packed_nbytes(lambda shape, dtype: shape[0] * shape[1])   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: for shape (4096, 4096) float16 you returned 16,777,216 bytes: that is the kept values alone; ...
    """
    for shape, dtype in SIZE_CASES:
        got = packed_nbytes(shape, dtype)
        want = packed_bytes(shape, dtype)
        where = f"for shape {shape} {str(dtype).replace('torch.', '')}"
        if isinstance(got, bool) or not isinstance(got, (int, float)) or (isinstance(got, float) and not got.is_integer()):
            raise CheckFailed(f"{where} you returned {got!r}; return a whole number of bytes (an int)")
        got = int(got)
        if got == want:
            continue
        dense = dense_bytes(shape, dtype)
        kept = shape[0] * shape[1] // 2
        bits = torch.empty((), dtype=dtype).element_size() * 8
        if got == dense:
            hint = "that is the dense size; only half the values are stored"
        elif got == dense // 2:
            hint = "that is the kept values alone; each kept value also needs its position in the group"
        elif got == want * 8:
            hint = "that looks like bits, not bytes"
        elif got == kept * (bits + 4) // 8:
            hint = "a position in a group of 4 needs 2 bits (4 possibilities), not 4"
        elif got == kept * (bits + 2) // 8 // 2 or got * 2 == want:
            hint = "count every group: each of the N*K/4 groups keeps 2 values"
        else:
            hint = f"off by {got - want:+,} bytes ({(got - want) / want:+.1%}); count value bits and position bits per kept value"
        raise CheckFailed(f"{where} you returned {got:,} bytes: {hint}")
    return f"packed sizes right for {len(SIZE_CASES)} shapes and {len({d for _, d in SIZE_CASES})} dtypes"


def weights() -> dict[str, torch.Tensor]:
    """Valid 2:4 weights for the packing exercises, rebuilt identically on every call: ``float32``
    ``[32, 64]`` and ``float16`` ``[64, 128]`` (2 non-zeros in every group), and ``with_sparse_groups``
    ``[16, 32]`` float32 (groups of 0, 1 or 2 non-zeros, some ``-0.0``)."""
    gen = torch.Generator().manual_seed(SEED)
    w32 = prune(torch.randn(32, 64, generator=gen))[0]
    w16 = prune(torch.randn(64, 128, generator=gen))[0].to(torch.float16)
    sparse = prune(torch.randn(16, 32, generator=gen))[0]
    sparse = torch.where(torch.rand(16, 32, generator=gen) < 0.4, torch.zeros_like(sparse), sparse)
    sparse[0, 4:8] = torch.tensor([-0.0, 0.0, -0.0, 0.0])
    return {"float32": w32, "float16": w16, "with_sparse_groups": sparse}


def _read_pack(result, name: str, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        raise CheckFailed(f"on weight {name!r}: return a tuple (values, indices) of two tensors")
    values, indices = result
    N, K = W.shape
    if tuple(values.shape) != (N, K // 2) or values.dtype != W.dtype:
        raise CheckFailed(
            f"on weight {name!r}: values must be [N, K/2] = [{N}, {K // 2}] in W's dtype {W.dtype}, "
            f"got {tuple(values.shape)} {values.dtype}"
        )
    if tuple(indices.shape) != (N, K // 4, 2) or indices.is_floating_point() or indices.dtype == torch.bool:
        raise CheckFailed(
            f"on weight {name!r}: indices must be an integer tensor [N, K/4, 2] = [{N}, {K // 4}, 2], "
            f"got {tuple(indices.shape)} {indices.dtype}"
        )
    indices = indices.to(torch.int64)
    bad = ((indices < 0) | (indices > 3)).any(-1) | (indices[..., 1] <= indices[..., 0])
    if bool(bad.any()):
        r, g = torch.nonzero(bad)[0].tolist()
        raise CheckFailed(
            f"on weight {name!r}: row {r}, group {g} has positions {indices[r, g].tolist()}; positions are 0-3 "
            "and increase within a group (the hardware treats a repeated position as undefined)"
        )
    return values, indices


@exercise_check("pack_2to4")
def check_pack_2to4(pack_2to4) -> str:
    """Compare the learner's ``(values, indices)`` with :func:`twofour.pack`.

    With exactly 2 non-zeros per group the answer must match bit for bit; with fewer, any filler
    positions are accepted, as long as unpacking gives ``W`` back.

    >>> check_pack_2to4(lambda W: W)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: on weight 'float32': return a tuple (values, indices) of two tensors
    """
    for name, W in weights().items():
        values, indices = _read_pack(pack_2to4(W.clone()), name, W)
        ref = pack(W)
        if bool(((W != 0).view(W.shape[0], -1, 4).sum(-1) == 2).all()):  # the answer is unique
            if not torch.equal(indices, ref.indices()):
                r, g = torch.nonzero((indices != ref.indices()).any(-1))[0].tolist()
                raise CheckFailed(
                    f"on weight {name!r}: row {r}, group {g} (columns {4 * g}-{4 * g + 3}): the positions you "
                    "stored are not the positions of that group's two non-zeros"
                )
            if not torch.equal(same_size_int_view(values), same_size_int_view(ref.values)):
                wrong = (same_size_int_view(values) != same_size_int_view(ref.values)).view(W.shape[0], -1, 2).any(-1)
                r, g = torch.nonzero(wrong)[0].tolist()
                raise CheckFailed(
                    f"on weight {name!r}: row {r}, group {g}: the values must be the group's non-zeros, copied "
                    "bit for bit, in position order"
                )
        else:
            N, K = W.shape
            bits = same_size_int_view(values).view(N, K // 4, 2)
            back = bits.new_zeros(N, K // 4, 4).scatter_(-1, indices, bits).view(N, K).view(W.dtype)
            if not torch.equal(back, W):
                r, g = torch.nonzero((back != W).view(W.shape[0], -1, 4).any(-1))[0].tolist()
                raise CheckFailed(
                    f"on weight {name!r}: row {r}, group {g} does not come back from (values, indices); a group "
                    "with fewer than 2 non-zeros still stores 2 values: its non-zeros plus zeros to fill the slots"
                )
    return "pack_2to4 matches twofour.pack on 3 weights"


@exercise_check("encode_meta")
def check_encode_meta(encode_meta) -> str:
    """Compare ``encode_meta(indices)`` with :attr:`twofour.Packed.meta`, byte for byte.

    >>> check_encode_meta(lambda indices: indices)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: on weight 'float32': return a uint8 tensor [N, K/8] = [32, 8] ...
    """
    for name, W in weights().items():
        ref = pack(W)
        got = encode_meta(ref.indices().clone())
        N, K = W.shape
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != (N, K // 8) or got.dtype != torch.uint8:
            shape = f"{tuple(got.shape)} {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise CheckFailed(
                f"on weight {name!r}: return a uint8 tensor [N, K/8] = [{N}, {K // 8}] (two 4-bit groups per byte), "
                f"got {shape}"
            )
        if torch.equal(got, ref.meta):
            continue
        r, b = torch.nonzero(got != ref.meta)[0].tolist()
        g0 = 2 * b
        m = got.to(torch.int64)  # below: the two 2-bit fields of each nibble swapped
        if torch.equal(((got >> 4) | (got << 4)).to(torch.uint8), ref.meta):
            hint = "the two groups of each byte are swapped: the first group goes in the low 4 bits"
        elif torch.equal((((m & 0x33) << 2) | ((m & 0xCC) >> 2)).to(torch.uint8), ref.meta):
            hint = "the two positions inside each group are swapped: the first position goes in the low 2 bits"
        else:
            hint = "each group is 4 bits: first position in bits 0-1, second in bits 2-3; byte = group0 | group1 << 4"
        raise CheckFailed(f"on weight {name!r}: byte {b} of row {r} (groups {g0} and {g0 + 1}) differs: {hint}")
    return "encode_meta matches twofour.pack's metadata on 3 weights"


@exercise_check("unpack_2to4")
def check_unpack_2to4(unpack_2to4) -> str:
    """Check that ``unpack_2to4(values, indices, K)`` rebuilds every lab weight exactly.

    >>> check_unpack_2to4(lambda values, indices, K: values.repeat(1, 2))   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twofour.course.labs._common.CheckFailed: on weight 'float32': row 0, group 0 (columns 0-3) comes back wrong: ...
    """
    for name, W in weights().items():
        ref = pack(W)
        got = unpack_2to4(ref.values.clone(), ref.indices(), W.shape[1])
        if not isinstance(got, torch.Tensor) or got.shape != W.shape or got.dtype != W.dtype:
            shape = f"{tuple(got.shape)} {got.dtype}" if isinstance(got, torch.Tensor) else type(got).__name__
            raise CheckFailed(f"on weight {name!r}: return W's shape {tuple(W.shape)} and dtype {W.dtype}, got {shape}")
        if torch.equal(got, W):  # == on values: -0.0 and +0.0 compare equal, as they should
            continue
        r, g = torch.nonzero((got != W).view(W.shape[0], -1, 4).any(-1))[0].tolist()
        raise CheckFailed(
            f"on weight {name!r}: row {r}, group {g} (columns {4 * g}-{4 * g + 3}) comes back wrong: value j of the "
            "group's pair belongs at position indices[r, g, j] inside the group, every other position is zero"
        )
    return "unpack_2to4 rebuilds all 3 weights exactly"
