"""Shapes of decoder-only transformers: which weights are linear layers that 2:4 can prune.

Only shapes (no weights); the presets follow Meta's published Llama 3 configs, written down once here.

>>> cfg = LLAMA_3_8B
>>> [(s.name, s.out_features, s.in_features) for s in linear_shapes(cfg)][:2]
[('q_proj', 4096, 4096), ('k_proj', 1024, 4096)]
>>> round(eligible_weight_fraction(cfg), 3)
0.869
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ._common.args import require_positive_int

__all__ = [
    "TransformerConfig",
    "LinearShape",
    "LLAMA_3_8B",
    "LLAMA_3_70B",
    "PRESETS",
    "get_preset",
    "linear_shapes",
    "parameter_counts",
    "eligible_weight_fraction",
]


@dataclass(frozen=True)
class TransformerConfig:
    """Shape of a Llama-style decoder: attention with grouped KV heads (``kv_heads``) and a SwiGLU MLP.

    ``hidden`` is the model width, ``intermediate`` the MLP's; ``tied_embeddings``: the LM head
    reuses the embedding matrix; ``source``: where the numbers come from.
    """

    name: str
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    vocab: int
    tied_embeddings: bool = False
    source: str = "custom"

    def __post_init__(self):
        for field_name in ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab"):
            require_positive_int(field_name, getattr(self, field_name))
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of the K (and of the V) projection output: ``kv_heads * head_dim``."""
        return self.kv_heads * self.head_dim

    def with_(self, **changes) -> "TransformerConfig":
        """A copy with some fields changed (name becomes ``custom`` unless given)."""
        changes.setdefault("name", "custom")
        changes.setdefault("source", "custom")
        return replace(self, **changes)


@dataclass(frozen=True)
class LinearShape:
    """One kind of linear layer: ``W`` is ``[out_features, in_features]``, ``count`` copies in the model."""

    name: str
    out_features: int
    in_features: int
    count: int
    prunable: bool  # inside a transformer block (2:4-eligible), as in Sparse-Llama's recipe

    @property
    def params(self) -> int:
        return self.out_features * self.in_features * self.count


# Llama 3 8B / 70B: Meta's released config.json files (meta-llama/Meta-Llama-3-8B and -70B on Hugging Face).
LLAMA_3_8B = TransformerConfig(name="Llama-3-8B", layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8, vocab=128256,
                               source="meta-llama/Meta-Llama-3-8B config.json (Hugging Face)")
LLAMA_3_70B = TransformerConfig(name="Llama-3-70B", layers=80, hidden=8192, intermediate=28672, heads=64, kv_heads=8, vocab=128256,
                               source="meta-llama/Meta-Llama-3-70B config.json (Hugging Face)")
PRESETS = {cfg.name: cfg for cfg in (LLAMA_3_8B, LLAMA_3_70B)}


def get_preset(name: str) -> TransformerConfig:
    """Look up a preset by name (case-insensitive), e.g. ``"llama-3-8b"``."""
    for key, cfg in PRESETS.items():
        if key.lower() == str(name).lower():
            return cfg
    raise ValueError(f"unknown model preset {name!r}; choose one of {sorted(PRESETS)}")


def linear_shapes(cfg: TransformerConfig, *, include_lm_head: bool = True) -> list[LinearShape]:
    """Every kind of linear layer of ``cfg``: the 2:4-eligible block projections, then the LM head."""
    h, L = cfg.hidden, cfg.layers
    shapes = [
        LinearShape("q_proj", h, h, L, True),
        LinearShape("k_proj", cfg.kv_dim, h, L, True),
        LinearShape("v_proj", cfg.kv_dim, h, L, True),
        LinearShape("o_proj", h, h, L, True),
        LinearShape("gate_proj", cfg.intermediate, h, L, True),
        LinearShape("up_proj", cfg.intermediate, h, L, True),
        LinearShape("down_proj", h, cfg.intermediate, L, True),
    ]
    if include_lm_head:
        shapes.append(LinearShape("lm_head", cfg.vocab, h, 1, False))
    return shapes


def parameter_counts(cfg: TransformerConfig) -> dict[str, int]:
    """Parameter counts by role: ``eligible`` (block linears), ``lm_head``, ``embedding``, ``norms``, ``total``.

    >>> parameter_counts(LLAMA_3_8B)["total"]
    8030261248
    """
    eligible = sum(s.params for s in linear_shapes(cfg, include_lm_head=False))
    embedding = cfg.vocab * cfg.hidden
    lm_head = 0 if cfg.tied_embeddings else cfg.vocab * cfg.hidden
    norms = (2 * cfg.layers + 1) * cfg.hidden  # two RMSNorms per block plus the final one
    return {
        "eligible": eligible,
        "lm_head": lm_head,
        "embedding": embedding,
        "norms": norms,
        "total": eligible + lm_head + embedding + norms,
    }


def eligible_weight_fraction(cfg: TransformerConfig) -> float:
    """Fraction of all weight bytes that sit in 2:4-eligible block linears (same dtype for all)."""
    counts = parameter_counts(cfg)
    return counts["eligible"] / counts["total"]
