"""A :class:`~twofour.serve.model.Decoder` from a Llama-style model folder's own shapes and weights.

``twofour bench --decode --checkpoint DIR`` times the folder's model instead of random weights.
The folder is read as data (:func:`twofour.checkpoint.open`): ``config.json`` gives the shapes,
the weights come through that reader (a compressed-tensors 2:4 folder is rebuilt and checked;
fp8 and int8 weights are dequantized with their ``weight_scale``).

>>> from importlib.resources import files
>>> folder = str(files("twofour") / "data" / "compressed-tensors" / "sparse24-fp16")
>>> m = from_checkpoint(folder)
>>> m.cfg.hidden, m.cfg.layers, m.blocks[0].linears["up_proj"].shape, all_24(m)
(64, 1, torch.Size([128, 64]), True)
"""

from __future__ import annotations

import math

import torch

from .._common.text import printable
from ..models import TransformerConfig, linear_shapes
from ..structure import check
from .model import BLOCK_LINEARS, MAX_POSITIONS, ROPE_THETA, Block, Decoder, rope_tables

__all__ = ["config_from", "from_checkpoint", "all_24"]

_FIELDS = {"layers": "num_hidden_layers", "hidden": "hidden_size", "intermediate": "intermediate_size",
           "heads": "num_attention_heads", "vocab": "vocab_size"}
_MAX_DIM = 1 << 20


def _int(config: dict, key: str, default=None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_DIM:
        raise ValueError(f"config.json: {key} must be an integer from 1 to {_MAX_DIM:,}, got {printable(repr(value), 40)}")
    return value


def config_from(config: dict | None, name: str = "checkpoint") -> TransformerConfig:
    """The decoder's shapes from a parsed ``config.json`` (a Llama-style model)."""
    if not isinstance(config, dict):
        raise ValueError("the folder has no config.json: --checkpoint needs a Hugging Face model folder with one")
    values = {field: _int(config, key) for field, key in _FIELDS.items()}
    values["kv_heads"] = _int(config, "num_key_value_heads", values["heads"])
    tied = config.get("tie_word_embeddings", False)
    return TransformerConfig(name=printable(name, 80), tied_embeddings=tied is True, source="config.json", **values)


def _weight(view, name: str, dtype: torch.dtype, device, shape) -> torch.Tensor:
    if name not in view.names():
        raise ValueError(f"the checkpoint has no {name!r}: not a Llama-style model folder")
    W = view.tensor(name)
    if tuple(W.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(W.shape)}, but config.json implies {tuple(shape)}")
    scale_name = name[: -len("weight")] + "weight_scale"
    if view.has_raw(scale_name):
        W = W.float() * view.raw(scale_name).float()  # per tensor [1] or per channel [N, 1]
    return W.to(device=device, dtype=dtype)


def from_checkpoint(path, *, dtype=torch.float32, device="cpu", n_layers: int | None = None,
                    max_positions: int = MAX_POSITIONS) -> Decoder:
    """The folder's model, weights cast to ``dtype`` on ``device``, one layer at a time (``n_layers`` blocks)."""
    from .. import checkpoint

    with checkpoint.open(path) as view:
        cfg = config_from(view.config, name=str(path).rstrip("/").rsplit("/", 1)[-1])
        n = cfg.layers if n_layers is None else n_layers
        if not 1 <= n <= cfg.layers:
            raise ValueError(f"n_layers must be from 1 to {cfg.layers}, got {n}")
        h = cfg.hidden
        shapes = {s.name: (s.out_features, s.in_features) for s in linear_shapes(cfg, include_lm_head=False)}
        where = {n_: ("self_attn" if n_.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp") for n_ in BLOCK_LINEARS}
        blocks = []
        for i in range(n):
            p = f"model.layers.{i}"
            linears = {k: _weight(view, f"{p}.{where[k]}.{k}.weight", dtype, device, shapes[k]) for k in BLOCK_LINEARS}
            blocks.append(Block(attn_norm=_weight(view, f"{p}.input_layernorm.weight", dtype, device, (h,)),
                                mlp_norm=_weight(view, f"{p}.post_attention_layernorm.weight", dtype, device, (h,)),
                                linears=linears))
        embedding = _weight(view, "model.embed_tokens.weight", dtype, device, (cfg.vocab, h))
        head = embedding if cfg.tied_embeddings else _weight(view, "lm_head.weight", dtype, device, (cfg.vocab, h))
        final = _weight(view, "model.norm.weight", dtype, device, (h,))
        theta = view.config.get("rope_theta", ROPE_THETA)
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not math.isfinite(theta) or theta <= 1:
            raise ValueError(f"config.json: rope_theta must be a number above 1, got {printable(repr(theta), 40)}")
    cos, sin = rope_tables(cfg.head_dim, max_positions, theta=float(theta), device=device, dtype=dtype)
    built = cfg if n == cfg.layers else cfg.with_(layers=n, name=f"{cfg.name} ({n} of {cfg.layers} layers)")
    return Decoder(cfg=built, embedding=embedding, blocks=blocks, final_norm=final, lm_head=head, cos=cos, sin=sin,
                   full_layers=cfg.layers)


def all_24(model: Decoder) -> bool:
    """Whether every block linear is 2:4 along K (the 2:4 arm of a benchmark needs it)."""
    return all(check(W, 2, 4, max_examples=0, max_locations=0).valid for b in model.blocks for W in b.linears.values())
