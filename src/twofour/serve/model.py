"""A minimal Llama-3-style decoder in plain PyTorch, built to time whole decode steps.

It runs the kernels a real decode step runs, in the same order: per block an RMSNorm, the
q/k/v projections, RoPE, grouped-query attention over a static KV cache, the o projection, a
second RMSNorm and the SwiGLU MLP (gate, up, down); then the final norm and the LM head.
Weights are random with a real model's shapes: a GEMM takes the same time whatever the values.

The block linears are pruned to 2:4 when the model is made (``pruned=True``): the dense model
*is* the 2:4 model stored dense (:mod:`twofour.serve.sparse`). Shapes are static, so a decode step
can be captured in a CUDA graph: the cache is allocated once, the position is a device tensor.

Example (a tiny config on the CPU, float32):
    >>> import torch
    >>> model = Decoder.random(TINY, seed=0)
    >>> cache = model.new_cache(batch=2, max_seq_len=16)
    >>> tokens = torch.randint(0, TINY.vocab, (2, 5), generator=torch.Generator().manual_seed(0))
    >>> model.prefill(tokens, cache).shape          # logits of the last prompt token
    torch.Size([2, 1, 256])
    >>> model.decode(tokens[:, :1], torch.tensor([5]), cache).shape
    torch.Size([2, 1, 256])
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from .._common.args import require_positive_int
from ..models import LLAMA_3_8B, TransformerConfig, linear_shapes
from ..request.workload import BLOCK_LINEARS
from ..structure import prune

__all__ = [
    "TINY",
    "ROPE_THETA",
    "NORM_EPS",
    "BLOCK_LINEARS",
    "ELIGIBLE_LABEL",
    "Block",
    "KVCache",
    "Decoder",
    "rms_norm",
    "rope_tables",
    "apply_rope",
    "weight_bytes",
]

ROPE_THETA = 500_000.0  # Llama 3's rope_theta (config.json)
NORM_EPS = 1e-5  # Llama 3's rms_norm_eps
MAX_POSITIONS = 8192  # Llama 3's max_position_embeddings: the RoPE table's length
# The profiler label around every block linear (when labelling is on): how a profile tells the
# 2:4-eligible GEMMs from the LM head and from attention's own matmuls.
ELIGIBLE_LABEL = "twofour.serve.block_linear"

# Small enough for a CPU test in milliseconds; every dimension a multiple of 16, so the same
# config also packs to 2:4 on a GPU (cuSPARSELt wants rows and columns in multiples of 16).
TINY = TransformerConfig(
    name="tiny", layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, vocab=256,
    source="twofour.serve: a tiny config for CPU runs and tests",
)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = NORM_EPS) -> torch.Tensor:
    """Llama's RMSNorm: ``x / rms(x) * weight``, the mean square taken in float32.

    Example:
        >>> rms_norm(torch.tensor([[3.0, 4.0]]), torch.ones(2))
        tensor([[0.8485, 1.1314]])
    """
    # float32 for the reduction: a half-precision sum of squares over 4096 values loses digits.
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return normed.to(x.dtype) * weight


def rope_tables(head_dim: int, max_positions: int = MAX_POSITIONS, theta: float = ROPE_THETA,
                *, device=None, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cos, sin)``, each ``[max_positions, head_dim]``, for rotary embeddings (rotate-half layout).

    Example:
        >>> cos, sin = rope_tables(4, max_positions=3)
        >>> cos.shape, cos[0].tolist(), sin[0].tolist()
        (torch.Size([3, 4]), [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0])
    """
    if head_dim % 2:
        raise ValueError(f"head_dim must be even for rotary embeddings (pairs of features), got {head_dim}")
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(max_positions, dtype=torch.float64), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)  # the rotate-half layout repeats each frequency
    return angles.cos().to(device=device, dtype=dtype), angles.sin().to(device=device, dtype=dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` ``[batch, heads, T, head_dim]`` by the angles of its ``T`` positions (``cos``/``sin`` ``[T, head_dim]``).

    Example (position 0 is the identity):
        >>> cos, sin = rope_tables(4, max_positions=1)
        >>> apply_rope(torch.ones(1, 1, 1, 4), cos, sin).tolist()
        [[[[1.0, 1.0, 1.0, 1.0]]]]
    """
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


@dataclass
class Block:
    """One transformer block's weights: two RMSNorm vectors and the seven linear weights ``[N, K]``."""

    attn_norm: torch.Tensor
    mlp_norm: torch.Tensor
    linears: dict[str, torch.Tensor]


@dataclass
class KVCache:
    """Keys and values of every layer, ``[batch, kv_heads, max_seq_len, head_dim]`` each, allocated once."""

    k: list[torch.Tensor]
    v: list[torch.Tensor]

    @property
    def batch(self) -> int:
        return self.k[0].shape[0]

    @property
    def max_seq_len(self) -> int:
        return self.k[0].shape[2]


@dataclass
class Decoder:
    """A Llama-3-style decoder: embedding, blocks, final norm, LM head, RoPE tables.

    Make one with :meth:`random`. ``cfg.layers`` blocks were built of ``full_layers``. Linear
    weights may be dense tensors or PyTorch's semi-structured 2:4 tensors.
    """

    cfg: TransformerConfig
    embedding: torch.Tensor
    blocks: list[Block]
    final_norm: torch.Tensor
    lm_head: torch.Tensor
    cos: torch.Tensor
    sin: torch.Tensor
    full_layers: int
    label_linears: bool = field(default=False, repr=False)  # profiler labels; off when timing

    @property
    def dtype(self) -> torch.dtype:
        return self.embedding.dtype

    @property
    def device(self) -> torch.device:
        return self.embedding.device

    @classmethod
    def random(cls, cfg: TransformerConfig = LLAMA_3_8B, *, n_layers: int | None = None,
               dtype=torch.float32, device="cpu", seed: int = 0, pruned: bool = True) -> "Decoder":
        """Random weights with ``cfg``'s shapes, made on ``device`` directly, one layer at a time.

        ``n_layers`` blocks are built (default all; embedding and LM head stay whole). Each
        weight's values depend only on ``seed``, its layer and its name. ``pruned``: each block
        linear is pruned to 2:4 by magnitude as it is made (no second copy of the model).

        Example:
            >>> m = Decoder.random(TINY, n_layers=1)
            >>> m.cfg.layers, m.full_layers, m.blocks[0].linears["down_proj"].shape
            (1, 2, torch.Size([64, 128]))
        """
        n_layers = cfg.layers if n_layers is None else n_layers
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 1 <= n_layers <= cfg.layers:
            raise ValueError(f"n_layers must be an int from 1 to {cfg.layers} (the layers of {cfg.name}), got {n_layers!r}")
        device = torch.device(device)
        cos, sin = rope_tables(cfg.head_dim, device=device, dtype=dtype)
        built = cfg if n_layers == cfg.layers else replace(cfg, layers=n_layers, name=f"{cfg.name} ({n_layers} of {cfg.layers} layers)")

        def weight(shape, *key) -> torch.Tensor:
            # One generator per weight on the target device, seeded by a hash of (seed, *key) (stable
            # across runs and machines): the values do not depend on the build order, and no
            # full-size copy is made on the CPU first.
            digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
            gen = torch.Generator(device=device).manual_seed(int.from_bytes(digest[:8], "little") >> 1)
            return torch.randn(shape, generator=gen, device=device, dtype=dtype) / math.sqrt(shape[-1])

        h = cfg.hidden
        out_in = {s.name: (s.out_features, s.in_features) for s in linear_shapes(cfg, include_lm_head=False)}
        keep = (lambda W: prune(W)[0]) if pruned else (lambda W: W)  # the dense W is freed at once
        blocks = []
        for layer in range(n_layers):
            linears = {name: keep(weight(out_in[name], layer, name)) for name in BLOCK_LINEARS}
            ones = torch.ones(h, device=device, dtype=dtype)
            blocks.append(Block(attn_norm=ones, mlp_norm=ones.clone(), linears=linears))
        # The embedding is a table lookup, not a matmul: unit-scale rows, as trained models have.
        embedding = weight((cfg.vocab, h), "embedding") * math.sqrt(h)
        return cls(cfg=built, embedding=embedding, blocks=blocks, final_norm=torch.ones(h, device=device, dtype=dtype),
                   lm_head=weight((cfg.vocab, h), "lm_head"), cos=cos, sin=sin, full_layers=cfg.layers)

    def with_linears(self, linears: list[dict[str, torch.Tensor]]) -> "Decoder":
        """The same model with other block-linear weights (one dict per block); the rest is shared, not copied."""
        if len(linears) != len(self.blocks):
            raise ValueError(f"linears must hold one dict per block ({len(self.blocks)}), got {len(linears)}")
        blocks = [Block(b.attn_norm, b.mlp_norm, dict(new)) for b, new in zip(self.blocks, linears)]
        return replace(self, blocks=blocks)

    def new_cache(self, batch: int, max_seq_len: int) -> KVCache:
        """An empty (zero) KV cache for ``batch`` sequences of up to ``max_seq_len`` tokens."""
        require_positive_int("batch", batch)
        require_positive_int("max_seq_len", max_seq_len)
        if max_seq_len > self.cos.shape[0]:
            raise ValueError(f"max_seq_len must be at most {self.cos.shape[0]} (the RoPE table's length), got {max_seq_len}")
        shape = (batch, self.cfg.kv_heads, max_seq_len, self.cfg.head_dim)
        zeros = lambda: torch.zeros(shape, device=self.device, dtype=self.dtype)  # noqa: E731
        return KVCache(k=[zeros() for _ in self.blocks], v=[zeros() for _ in self.blocks])

    def prefill(self, tokens: torch.Tensor, cache: KVCache, *, all_logits: bool = False) -> torch.Tensor:
        """Run prompt ``tokens`` ``[batch, T]`` from position 0, fill the cache; last (or all) logits."""
        T = self._check_tokens(tokens, cache)
        if T > cache.max_seq_len:
            raise ValueError(f"tokens holds {T} positions but the cache only {cache.max_seq_len}")
        cos, sin = self.cos[:T], self.sin[:T]

        def attend(i, q, k, v):
            cache.k[i][:, :, :T] = k
            cache.v[i][:, :, :T] = v
            # Causal attention within the prompt: the fast fused kernels apply (no explicit mask).
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

        x = self._blocks(F.embedding(tokens, self.embedding), cos, sin, attend)
        if not all_logits:
            x = x[:, -1:]
        return self._linear(rms_norm(x, self.final_norm), self.lm_head, eligible=False)

    def decode(self, tokens: torch.Tensor, pos: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """One decode step: ``tokens`` ``[batch, 1]`` at ``pos`` (a 1-element long tensor on the device)."""
        self._check_tokens(tokens, cache)
        if tokens.shape[1] != 1:
            raise ValueError(f"decode takes one token per sequence, tokens [batch, 1]; got shape {tuple(tokens.shape)}")
        if pos.dtype != torch.long or pos.numel() != 1:
            raise ValueError(f"pos must be a 1-element torch.long tensor (the position), got {pos.dtype} with {pos.numel()} elements")
        cos, sin = self.cos[pos], self.sin[pos]
        # [1, S]: this position and the earlier ones; broadcast over batch, heads and the query
        visible = (torch.arange(cache.max_seq_len, device=pos.device) <= pos)[None, :]

        B, H, KVH, d = tokens.shape[0], self.cfg.heads, self.cfg.kv_heads, self.cfg.head_dim

        def attend(i, q, k, v):
            cache.k[i].index_copy_(2, pos, k)
            cache.v[i].index_copy_(2, pos, v)
            # Grouped-query attention without copying the cache: the H / KVH query heads that share a
            # key/value head become that head's queries ([B, KVH, group, d]), so every attention
            # kernel applies and the cache is read once per KV head, as a decode kernel should.
            out = F.scaled_dot_product_attention(q.reshape(B, KVH, H // KVH, d), cache.k[i], cache.v[i],
                                                 attn_mask=visible)
            return out.reshape(B, H, 1, d)

        x = self._blocks(F.embedding(tokens, self.embedding), cos, sin, attend)
        return self._linear(rms_norm(x, self.final_norm), self.lm_head, eligible=False)

    def _check_tokens(self, tokens: torch.Tensor, cache: KVCache) -> int:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError("tokens must be a [batch, T] torch.long tensor of token ids, got "
                             f"{type(tokens).__name__} {getattr(tokens, 'dtype', '')} {tuple(getattr(tokens, 'shape', ()))}")
        if tokens.shape[0] != cache.batch:
            raise ValueError(f"tokens has batch {tokens.shape[0]} but the cache was made for batch {cache.batch}")
        return tokens.shape[1]

    def _blocks(self, x, cos, sin, attend) -> torch.Tensor:
        B, T, _ = x.shape
        H, KVH, d = self.cfg.heads, self.cfg.kv_heads, self.cfg.head_dim
        for i, block in enumerate(self.blocks):
            h = rms_norm(x, block.attn_norm)
            W = block.linears
            q = self._linear(h, W["q_proj"]).reshape(B, T, H, d).transpose(1, 2)
            k = self._linear(h, W["k_proj"]).reshape(B, T, KVH, d).transpose(1, 2)
            v = self._linear(h, W["v_proj"]).reshape(B, T, KVH, d).transpose(1, 2)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
            a = attend(i, q, k, v).transpose(1, 2).reshape(B, T, H * d)
            x = x + self._linear(a, W["o_proj"])
            h = rms_norm(x, block.mlp_norm)
            x = x + self._linear(F.silu(self._linear(h, W["gate_proj"])) * self._linear(h, W["up_proj"]), W["down_proj"])
        return x

    def _linear(self, x: torch.Tensor, W: torch.Tensor, *, eligible: bool = True) -> torch.Tensor:
        # 2-D in, as the semi-structured tensor's matmul wants; [batch, T, K] -> [batch*T, K].
        label = (torch.profiler.record_function(ELIGIBLE_LABEL) if self.label_linears and eligible
                 else contextlib.nullcontext())
        with label:
            y = F.linear(x.reshape(-1, x.shape[-1]), W)
        # reshape, not view: a 2:4 matmul may hand back its result transposed in memory
        return y.reshape(*x.shape[:-1], y.shape[-1])


def weight_bytes(cfg: TransformerConfig, dtype, *, packed: bool = False) -> int:
    """Bytes of the weights of ``cfg`` in ``dtype``: dense, or with the block linears packed 2:4.

    Example:
        >>> round(weight_bytes(LLAMA_3_8B, torch.float16) / 1e9, 1)
        16.1
        >>> round(weight_bytes(LLAMA_3_8B, torch.float16, packed=True) / 1e9, 1)
        10.0
    """
    from ..models import parameter_counts
    from ..packing import packed_ratio

    b = torch.empty((), dtype=dtype).element_size()
    counts = parameter_counts(cfg)
    eligible = counts["eligible"] * b
    if packed:
        eligible = int(eligible * packed_ratio(dtype))
    return eligible + (counts["total"] - counts["eligible"]) * b
