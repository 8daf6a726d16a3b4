"""What a tensor's name and shape say it is: a linear weight, an embedding, or not a weight at all.

>>> weight_kind("model.layers.0.mlp.up_proj.weight", (14336, 4096))
'linear'
>>> weight_kind("model.embed_tokens.weight", (128256, 4096)), weight_kind("norm.weight", (4096,))
('embedding', None)
"""

from __future__ import annotations

import re

__all__ = ["weight_kind", "EMBEDDING_MARKERS", "CONV1D_MODEL_TYPES", "is_conv1d"]

# Names that mark an embedding table in common checkpoints (Llama, GPT-2, BERT, T5...).
# Embeddings are lookups, not GEMMs, so 2:4 kernels never apply to them.
EMBEDDING_MARKERS = ("embed", "wte", "wpe", "word_embeddings", "position_embeddings", "token_type_embeddings",
                     "shared.weight")

# Hugging Face models whose linear layers are ``Conv1D``: the weight is stored [in_features, out_features].
CONV1D_MODEL_TYPES = ("gpt2", "openai-gpt", "imagegpt", "decision_transformer")
_CONV1D_LAYER = re.compile(r"(^|\.)(c_attn|c_proj|c_fc|q_attn)\.weight$")


def weight_kind(name: str, shape: tuple[int, ...]) -> str | None:
    """``"linear"``, ``"embedding"``, or None when the tensor is not a 2-D weight.

    >>> weight_kind("fc.weight#2", (8, 8))  # a second tensor whose name collided keeps its kind
    'linear'
    >>> weight_kind("notaweight", (8, 8)), weight_kind("weight", (8, 8))  # the last name part must be "weight"
    (None, 'linear')
    """
    base = re.sub(r"#\d+$", "", name)
    if len(shape) != 2 or not (base == "weight" or base.endswith(".weight")):
        return None
    low = name.lower()
    return "embedding" if any(m in low for m in EMBEDDING_MARKERS) else "linear"


def is_conv1d(config, name: str) -> bool:
    """Whether ``name`` is a Hugging Face ``Conv1D`` weight ([in, out]) in a model whose ``config.json`` is ``config``.

    >>> is_conv1d({"model_type": "gpt2"}, "transformer.h.0.attn.c_attn.weight"), is_conv1d({}, "h.0.attn.c_attn.weight")
    (True, False)
    """
    return isinstance(config, dict) and config.get("model_type") in CONV1D_MODEL_TYPES and bool(_CONV1D_LAYER.search(name))
