"""The kernel a GEMM runs: its tile, its split-K, the CTAs it launches and the SMs they keep busy.

A GEMM library cuts ``y = x @ W.T`` into output **tiles** of ``tile_n`` (along N) by ``tile_m``
(along M, tokens), each one CTA on one SM; with few tiles it can also cut K into ``split``
pieces (**split-K**), so that ``tiles * split`` CTAs keep more SMs busy, at the price of fp32
partial tiles. Which tile and split it picks decides how many SMs pull the weight from memory.

Tables read off the H200 run's kernel names and launch grids (:func:`tile_table_from_names`):
**cuBLAS** (``nvjet_...``) picks a tile per shape; **cuSPARSELt algorithm 0** ran
``tilesize128x256x64`` everywhere, so at decode 255 of 256 token columns are padding; the
**searched** algorithm's tile (``64x256``) is inferred by the fit; **CUTLASS** ``128x128`` is
assumed, never measured. The split factor is not in any name; one rule reproduces every launch grid
in the traces and every split flag below one wave::

    tiles = ceil(N / tile_n) * ceil(M / tile_m)
    split = max(1, min(max_split, floor(cta_target / tiles), floor(K / (64 * min_k_iters))))
    ctas  = tiles * split;  waves = ceil(ctas / sms);  busy_sms = min(ctas, sms)

``cta_target`` 0 means the GPU's SM count; ``docs/js/calc/roofline.js`` mirrors it.

Example:
    >>> from twofour.roofline.tiles import launch
    >>> launch(8, 1024, 4096, ((None, None, 128, 256),), 132, cta_target=120, max_split=4, min_k_iters=16)
    Launch(tile_n=128, tile_m=256, tiles=8, split=4, ctas=32, waves=1, busy_sms=32)
    >>> parse_kernel_name("nvjet_sm90_hsh_128x8_64x12_4x1_v_bz_splitK_TNT").tile
    (128, 8)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .._common.args import require_positive_int
from ..vocabulary import CUSPARSELT

__all__ = ["Launch", "KernelName", "ROLES", "check_tile_table", "choose_tile", "split_k", "launch", "wave_efficiency",
           "parse_kernel_name", "kernel_role", "tile_table_from_names"]

@dataclass(frozen=True)
class Launch:
    """What one GEMM kernel launches: its tile, how many tiles, the split-K factor, CTAs, waves, busy SMs."""

    tile_n: int
    tile_m: int
    tiles: int
    split: int
    ctas: int
    waves: int
    busy_sms: int


def check_tile_table(name: str, rows) -> tuple:
    """``rows`` as a tuple of ``(m_max, n_max, tile_n, tile_m)`` tuples (bounds ints or None), checked.

    Example:
        >>> check_tile_table("t", [[8, None, 64, 8], [None, None, 128, 64]])
        ((8, None, 64, 8), (None, None, 128, 64))
        >>> check_tile_table("t", [[8, None, 64, 8]])
        Traceback (most recent call last):
        ...
        ValueError: t: the last row must be (None, None, tile_n, tile_m) so that every GEMM has a tile, got (8, None, 64, 8)
    """
    try:
        out = tuple(tuple(r) for r in rows)
    except TypeError:
        raise ValueError(f"{name} must be a list of rows (m_max, n_max, tile_n, tile_m), got {rows!r}") from None
    if not out:
        raise ValueError(f"{name} must hold at least one row (m_max, n_max, tile_n, tile_m)")
    for r in out:
        if len(r) != 4:
            raise ValueError(f"{name}: each row is (m_max, n_max, tile_n, tile_m), got {r!r}")
        for v, label in zip(r, ("m_max", "n_max", "tile_n", "tile_m")):
            if v is not None or label.startswith("tile"):  # a bound may be None (no bound), a tile never
                require_positive_int(f"{name} {label}", v)
    if out[-1][0] is not None or out[-1][1] is not None:
        raise ValueError(f"{name}: the last row must be (None, None, tile_n, tile_m) so that every GEMM has a tile, "
                         f"got {out[-1]!r}")
    return out


def choose_tile(rows, M: int, N: int) -> tuple[int, int]:
    """``(tile_n, tile_m)`` of the first row of ``rows`` with ``M <= m_max`` and ``N <= n_max``.

    Example:
        >>> rows = ((8, 1024, 64, 8), (8, None, 128, 8), (None, None, 256, 128))
        >>> choose_tile(rows, 1, 1024), choose_tile(rows, 8, 4096), choose_tile(rows, 9, 1024)
        ((64, 8), (128, 8), (256, 128))
    """
    for m_max, n_max, tile_n, tile_m in rows:
        if (m_max is None or M <= m_max) and (n_max is None or N <= n_max):
            return tile_n, tile_m
    raise ValueError(f"tile table has no row for M={M}, N={N}; its last row must be unbounded")


def split_k(tiles: int, K: int, sms: int, *, cta_target: int, max_split: int, min_k_iters: int) -> int:
    """The split-K factor (module doc): as many K pieces as fill ``cta_target`` CTAs, within limits.

    Each piece keeps at least ``min_k_iters`` steps of 64 along K; ``cta_target`` 0 is ``sms``.

    Example:
        >>> split_k(32, 4096, 132, cta_target=120, max_split=4, min_k_iters=16)   # q_proj, alg 0, decode
        3
        >>> split_k(112, 4096, 132, cta_target=120, max_split=4, min_k_iters=16)  # gate_proj: one wave already
        1
    """
    return max(1, min(max_split, (cta_target or sms) // tiles, K // (64 * min_k_iters)))


def launch(M: int, N: int, K: int, rows, sms: int, *, cta_target: int, max_split: int, min_k_iters: int) -> Launch:
    """Tile, tiles, split-K, CTAs, waves and busy SMs of one GEMM (module doc). ``M`` as the kernel sees it (padded)."""
    tile_n, tile_m = choose_tile(rows, M, N)
    tiles = math.ceil(N / tile_n) * math.ceil(M / tile_m)
    split = split_k(tiles, K, sms, cta_target=cta_target, max_split=max_split, min_k_iters=min_k_iters)
    ctas = tiles * split
    return Launch(tile_n, tile_m, tiles, split, ctas, math.ceil(ctas / sms), min(ctas, sms))


def wave_efficiency(M: int, N: int, sms: int, tile_m: int = 128, tile_n: int = 128) -> float:
    """Fraction of SM slots with a tile, one tile per SM, no split-K (:func:`launch` adds split-K).

    Example:
        >>> wave_efficiency(1, 4096, 132)        # 32 tiles on 132 SMs
        0.24242424242424243
    """
    for name, v, need_int in (("M", M, False), ("N", N, False), ("sms", sms, True), ("tile_m", tile_m, True),
                              ("tile_n", tile_n, True)):
        # M and N may be fractional (a mean token count) but at least 1: below it no tile exists,
        # and 5e-324 / 128 rounds to 0 tiles
        ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and (isinstance(v, int) or not need_int)
              and 1 <= v < 2**63)
        if not ok:
            kind = "an int" if need_int else "a number"
            shown = v if not isinstance(v, int) or v < 10**30 else f"an int of {len(str(v)) if v < 10**4000 else 'over 4,000'} digits"
            raise ValueError(f"{name} must be {kind} from 1 to below 2**63, got {shown!r}")
    # exact integer ceilings: 10**12 / 128 as a float would round the tile count
    tiles = _ceil_div(M, tile_m) * _ceil_div(N, tile_n)
    waves = -(-tiles // sms)
    return tiles / (waves * sms)


def _ceil_div(a, b: int) -> int:
    """``ceil(a / b)`` exact for ints of any size (and for floats, through math.ceil)."""
    return -(-a // b) if isinstance(a, int) else math.ceil(a / b)


# ---------------------------------------------------------------------------------------------
# Kernel names: what the profiler recorded

_NVJET = re.compile(
    r"^nvjet_(?P<arch>sm\d+)_(?P<types>[a-z]+)_(?P<a>\d+)x(?P<b>\d+)_(?P<k>\d+)x(?P<stages>\d+)_"
    r"(?P<cluster>\d+x\d+)_(?P<raster>[vh])_bz(?P<rest>(?:_[A-Za-z]+)*)$")
_XMMA = re.compile(
    r"^(?P<arch>sm\d+)_xmma_sparse_gemm_(?P<types>[a-z0-9]+_[a-z0-9]+)_.*?tilesize(?P<a>\d+)x(?P<b>\d+)x(?P<k>\d+)"
    r"_cgasize(?P<cluster>\d+x\d+x\d+)_warpgroupsize(?P<wg>\d+x\d+x\d+)_execute_segment_k_(?P<seg>on|off)_")

# The part a kernel plays in one F.linear call (kernel_role).
ROLES = ("gemm", "splitk_reduce", "memset", "pad_fill", "pad_copy", "other")


@dataclass(frozen=True)
class KernelName:
    """What one GEMM kernel's name says, in GEMM terms.

    cuBLAS is column-major (``y.T = W @ x.T``) and cuSPARSELt's sparse operand is ``W``, so in
    both a tile's first number runs along N, the second along M (tokens). ``split_k_named``:
    ``splitK`` or ``segment_k_on`` in the name (the factor itself is only in the launch grid).
    """

    name: str
    library: str  # "cuBLAS" | "cuSPARSELt"
    tile_n: int
    tile_m: int
    tile_k: int
    cluster: str
    split_k_named: bool

    @property
    def tile(self) -> tuple[int, int]:
        return self.tile_n, self.tile_m


def parse_kernel_name(name: str) -> KernelName | None:
    """The tile, cluster and split-K flag of a cuBLAS ``nvjet`` or cuSPARSELt ``xmma_sparse`` GEMM; None otherwise.

    Example:
        >>> k = parse_kernel_name("sm90_xmma_sparse_gemm_f16f16_f16f32_f32_tn_t_tilesize128x256x64_cgasize4x1x1_"
        ...                       "warpgroupsize2x1x1_execute_segment_k_on_kernel_5x_cusparselt")
        >>> k.library, k.tile, k.tile_k, k.split_k_named
        ('cuSPARSELt', (128, 256), 64, True)
        >>> parse_kernel_name("Memset (Device)") is None
        True
    """
    m = _NVJET.match(name)
    if m:
        return KernelName(name, "cuBLAS", int(m["a"]), int(m["b"]), int(m["k"]), m["cluster"],
                          "splitK" in m["rest"].split("_"))
    m = _XMMA.match(name)
    if m:
        return KernelName(name, CUSPARSELT.name, int(m["a"]), int(m["b"]), int(m["k"]), m["cluster"], m["seg"] == "on")
    return None


def kernel_role(name: str) -> str:
    """The part a kernel plays in one ``F.linear`` call (one of :data:`ROLES`).

    Besides the GEMM: split-K reduction, workspace memsets, and the 2:4 path's padding of ``x``.

    Example:
        >>> kernel_role("void cublasLt::splitKreduce_kernel<32, 16, int>(...)"), kernel_role("Memcpy DtoD (Device -> Device)")
        ('splitk_reduce', 'pad_copy')
    """
    if parse_kernel_name(name) is not None:
        return "gemm"
    if "splitKreduce" in name:
        return "splitk_reduce"
    if name.startswith("Memset"):
        return "memset"
    if "FillFunctor" in name:
        return "pad_fill"
    if name.startswith("Memcpy DtoD"):
        return "pad_copy"
    return "other"


def tile_table_from_names(observed) -> tuple:
    """A tile table read off recorded names: ``observed`` holds ``(M, N, K, tile_n, tile_m)`` of one model's shapes.

    One N class per distinct N (where two shapes share an N, the smaller K decides) and one M
    bucket per measured M, the largest of each unbounded. Consecutive M buckets with the same tiles
    merge, and within a bucket an N class that repeats the next one's tile is dropped.

    Example:
        >>> obs = [(1, 1024, 4096, 64, 8), (1, 4096, 4096, 128, 8), (16, 1024, 4096, 64, 16), (16, 4096, 4096, 64, 16)]
        >>> tile_table_from_names(obs)
        ((1, 1024, 64, 8), (1, None, 128, 8), (None, None, 64, 16))
    """
    by = {(M, N, K): (tn, tm) for M, N, K, tn, tm in observed}
    if not by:
        raise ValueError("observed must hold at least one (M, N, K, tile_n, tile_m)")
    Ns = sorted({N for _, N, _ in by})
    # (n_max, N, the K that decides)
    classes = [(None if i == len(Ns) - 1 else N, N, min(k for _, n, k in by if n == N)) for i, N in enumerate(Ns)]
    Ms = sorted({M for M, _, _ in by})
    blocks = []
    for i, M in enumerate(Ms):
        m_max = None if i == len(Ms) - 1 else M
        missing = [(N, K) for _, N, K in classes if (M, N, K) not in by]
        if missing:
            raise ValueError(f"no recorded tile for M={M} at (N, K) {missing}: every M needs every shape")
        block = [(m_max, n_max) + by[(M, N, K)] for n_max, N, K in classes]
        if blocks and [r[2:] for r in blocks[-1]] == [r[2:] for r in block]:
            blocks[-1] = [(m_max,) + r[1:] for r in blocks[-1]]
        else:
            blocks.append(block)
    return tuple(r for block in blocks for k, r in enumerate(block)
                 if k == len(block) - 1 or r[2:] != block[k + 1][2:])
