"""A small byte-level transformer language model: the patient for the pruning experiments.

A standard pre-norm decoder (GPT-style): byte and learned position embeddings, ``n_layers``
blocks of causal self-attention and an MLP, a final LayerNorm and an LM head. The ``nn.Linear``
layers inside the blocks are the ones :mod:`twofour.quality.criteria` prunes; the embeddings and
the LM head stay dense, as in published 2:4 LLMs.

>>> import torch
>>> model = TinyLM(ModelConfig(d_model=32, n_layers=1, n_heads=2, seq_len=16))
>>> model(torch.zeros(2, 16, dtype=torch.long)).shape
torch.Size([2, 16, 256])
>>> sorted(prunable_linears(model))[:2]
['blocks.0.attn.k', 'blocks.0.attn.o']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .._common.args import require_positive_int

__all__ = ["ModelConfig", "TinyLM", "prunable_linears", "VOCAB_SIZE"]

VOCAB_SIZE = 256  # bytes


@dataclass(frozen=True)
class ModelConfig:
    """Shape of a :class:`TinyLM`; ``d_model`` a multiple of 8 (for 2:4 and 4:8 groups) and of ``n_heads``."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    seq_len: int = 64
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "seq_len", "mlp_ratio"):
            require_positive_int(f"ModelConfig.{name}", getattr(self, name))
        if self.d_model % 8:
            raise ValueError(
                f"ModelConfig.d_model must be a multiple of 8 so every weight's in_features splits into "
                f"groups of 4 and 8, got {self.d_model}"
            )
        if self.d_model % self.n_heads:
            raise ValueError(
                f"ModelConfig.d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )

    def to_dict(self) -> dict:
        return asdict(self)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        # Separate q/k/v/o projections (not one fused qkv) so results can be read per projection.
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq_len, d = x.shape
        heads = [
            proj(x).view(batch, seq_len, self.n_heads, d // self.n_heads).transpose(1, 2)
            for proj in (self.q, self.k, self.v)
        ]
        y = F.scaled_dot_product_attention(*heads, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(batch, seq_len, d))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=False)
        self.fc2 = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """Byte-level causal language model; ``forward(tokens [batch, seq_len]) -> logits [batch, seq_len, 256]``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if not isinstance(cfg, ModelConfig):
            raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.tok_emb = nn.Embedding(VOCAB_SIZE, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, VOCAB_SIZE, bias=False)
        self.apply(_init)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq_len = tokens.shape[1]
        if seq_len > self.cfg.seq_len:
            raise ValueError(f"tokens has {seq_len} positions, more than the model's seq_len={self.cfg.seq_len}")
        pos = torch.arange(seq_len, device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


def _init(module: nn.Module) -> None:
    # GPT-2's initialisation: small normal weights; it trains faster than PyTorch's default here.
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


def prunable_linears(model: TinyLM) -> dict[str, nn.Linear]:
    """The ``nn.Linear`` layers inside the blocks (``attn.q/k/v/o``, ``mlp.fc1/fc2``), by name, in order."""
    return {
        name: module
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and name.startswith("blocks.")
    }
