"""The decoder's 2:4 version: prune, check, pack (with a chosen cuSPARSELt algorithm), compare with dense.

The 2:4 model is the pruned dense model with its block linears packed: the same values, so
the logits must agree up to rounding; :func:`check_agreement` measures that.

Example (CPU: pruning and the masked reference; packing needs a GPU):
    >>> import torch
    >>> from twofour.serve import Decoder, TINY
    >>> dense = Decoder.random(TINY, pruned=False)
    >>> pruned = prune_blocks(dense)
    >>> from twofour import check
    >>> all(check(W).valid for b in pruned.blocks for W in b.linears.values())
    True
    >>> pruned.lm_head is dense.lm_head          # the LM head stays dense and shared
    True
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from ..structure import check, prune
from .model import BLOCK_LINEARS, Decoder
from .ops import Ops

__all__ = ["prune_blocks", "pack_blocks", "search_algorithms", "algorithm_per_linear", "Agreement",
           "check_agreement", "AGREEMENT_TOL"]

# Largest |2:4 logits - dense logits| / largest |dense logits| accepted, per dtype. The GEMMs
# add the same products in another order; half precision rounds each partial sum, and the
# difference grows a little with every layer. float32 is the CPU rehearsal.
AGREEMENT_TOL = {torch.float16: 1e-2, torch.bfloat16: 3e-2, torch.float32: 1e-4}


def prune_blocks(model: Decoder) -> Decoder:
    """The model with every block linear pruned to 2:4 by magnitude (:func:`twofour.prune`); the rest shared."""
    return model.with_linears([{name: prune(W)[0] for name, W in b.linears.items()} for b in model.blocks])


def pack_blocks(model: Decoder, ops: Ops, alg_ids: dict[str, int] | None = None) -> Decoder:
    """The model with every block linear packed as the device's 2:4 tensor; the rest shared.

    ``alg_ids`` (``{linear name: cuSPARSELt algorithm}``, e.g. from :func:`search_algorithms`)
    pins those linears' algorithm at conversion; the others keep PyTorch's default, 0. Every
    weight is checked to be 2:4 first (PyTorch's packing does not check): ``ValueError``.
    """
    alg_ids = dict(alg_ids or {})
    unknown = sorted(set(alg_ids) - set(BLOCK_LINEARS))
    if unknown:
        raise ValueError(f"alg_ids names {unknown}, which are not block linears; valid: {list(BLOCK_LINEARS)}")
    linears = []
    for i, block in enumerate(model.blocks):
        packed = {}
        for name in BLOCK_LINEARS:
            W = block.linears[name]
            report = check(W)
            if not report.valid:
                raise ValueError(f"layer {i} {name} is not 2:4 ({report.num_bad_groups} bad groups); "
                                 "make the model with pruned=True or prune_blocks() before packing")
            packed[name] = ops.pack(W, alg_ids.get(name))
        linears.append(packed)
    return model.with_linears(linears)


def search_algorithms(dense: Decoder, M: int, ops: Ops) -> dict[str, dict]:
    """The fastest cuSPARSELt algorithm for each block-linear shape of ``dense`` at ``M`` rows.

    One search per distinct ``(N, K)`` (layer 0's weight; the choice does not depend on values).
    Returns ``{"NxK": {"alg_id", "method", "candidates", "linears"}}``.
    """
    gen = torch.Generator(device="cpu").manual_seed(M)
    by_shape: dict[tuple[int, int], list[str]] = {}
    for name in BLOCK_LINEARS:
        W = dense.blocks[0].linears[name]
        by_shape.setdefault((W.shape[0], W.shape[1]), []).append(name)
    found = {}
    for (N, K), names in by_shape.items():
        x = torch.randn(M, K, generator=gen).to(dense.device, dense.dtype)
        result = ops.search_algorithm(dense.blocks[0].linears[names[0]], x)
        result["linears"] = names
        found[f"{N}x{K}"] = result
    return found


def algorithm_per_linear(found: dict[str, dict]) -> dict[str, int]:
    """``{linear name: alg_id}`` from :func:`search_algorithms`' answer.

    >>> algorithm_per_linear({"4096x4096": {"alg_id": 9, "linears": ["q_proj", "o_proj"]}})
    {'q_proj': 9, 'o_proj': 9}
    """
    return {name: int(entry["alg_id"]) for entry in found.values() for name in entry["linears"]}


@dataclass(frozen=True)
class Agreement:
    """How closely two models' logits agree on the same tokens (prefill, then decode steps)."""

    dtype: str
    rel_err: float  # max |a - b| / max |b| over every logit compared
    top1_match: float  # share of positions whose most likely token is the same
    tol: float
    tokens: int

    @property
    def passed(self) -> bool:
        return self.rel_err <= self.tol

    def to_dict(self) -> dict:
        return dict(asdict(self), passed=self.passed)


def check_agreement(model: Decoder, reference: Decoder, *, batch: int = 2, prompt_len: int = 16,
                    decode_steps: int = 4, seed: int = 0) -> Agreement:
    """Compare two models' logits on a random prompt, then ``decode_steps`` steps fed the reference's tokens.

    Example (a model agrees with itself):
        >>> from twofour.serve import Decoder, TINY
        >>> m = Decoder.random(TINY)
        >>> a = check_agreement(m, m)
        >>> a.rel_err, a.top1_match, a.passed
        (0.0, 1.0, True)
    """
    if model.cfg.vocab != reference.cfg.vocab or model.dtype != reference.dtype:
        raise ValueError("model and reference must have the same vocab and dtype to compare logits, got "
                         f"{model.cfg.vocab}/{model.dtype} and {reference.cfg.vocab}/{reference.dtype}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    tokens = torch.randint(0, reference.cfg.vocab, (batch, prompt_len), generator=gen).to(reference.device)
    caches = [m.new_cache(batch, prompt_len + decode_steps) for m in (model, reference)]
    with torch.inference_mode():
        got = [model.prefill(tokens, caches[0], all_logits=True)]
        want = [reference.prefill(tokens, caches[1], all_logits=True)]
        for step in range(decode_steps):
            nxt = want[-1][:, -1:].argmax(-1)
            pos = torch.tensor([prompt_len + step], device=reference.device)
            got.append(model.decode(nxt, pos, caches[0]))
            want.append(reference.decode(nxt, pos, caches[1]))
    a, b = torch.cat(got, dim=1).float(), torch.cat(want, dim=1).float()
    scale = b.abs().max().item() or 1.0
    return Agreement(
        dtype=str(reference.dtype).replace("torch.", ""),
        rel_err=(a - b).abs().max().item() / scale,
        top1_match=(a.argmax(-1) == b.argmax(-1)).float().mean().item(),
        tol=AGREEMENT_TOL.get(reference.dtype, 1e-2),
        tokens=batch * (prompt_len + decode_steps),
    )
