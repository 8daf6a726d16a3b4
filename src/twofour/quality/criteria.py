"""Which weights to zero: the pruning criteria compared in chapter 5.

Every criterion produces one boolean ``mask`` (True = keep) per layer of
:func:`~twofour.quality.model.prunable_linears`, built with :func:`twofour.prune` and verified
with :func:`twofour.check`:

==========================  ==========  ==============================================================
criterion                   pattern     score ranked inside each group (or the whole layer)
==========================  ==========  ==============================================================
``random 2:4``              2:4         a random number (seeded): the floor any criterion must beat
``magnitude 2:4``           2:4         ``|W|``
``activation-aware 2:4``    2:4         ``|W| * x_norm``, Wanda-style (``x_norm[k]``: L2 norm of input
                                        feature ``k`` over calibration tokens)
``magnitude 4:8``           4:8         ``|W|`` in groups of 8: same 50% sparsity, more freedom
``unstructured 50%``        none        ``|W|`` over the whole layer: the half with the smallest ``|W|``
                                        goes, wherever it is (not runnable on sparse tensor cores)
==========================  ==========  ==============================================================

>>> import torch
>>> from twofour.quality.model import ModelConfig, TinyLM
>>> model = TinyLM(ModelConfig(d_model=32, n_layers=1, n_heads=2, seq_len=16))
>>> masks = masks_for(model, "magnitude 2:4")
>>> verify_masks(model, masks, "magnitude 2:4")  # raises if any layer is not 2:4
>>> round(sum(int(m.sum()) for m in masks.values()) / sum(m.numel() for m in masks.values()), 2)
0.5
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from .._common.args import require_positive_int
from ..structure import check, prune
from .model import TinyLM, prunable_linears
from .train import apply_masks, sample_batch

__all__ = [
    "Criterion",
    "CRITERIA",
    "criterion",
    "activation_norms",
    "activation_aware_scores",
    "masks_for",
    "masks_from_scores",
    "unstructured_mask",
    "verify_masks",
    "pruned_copy",
    "weight_mass_kept",
]


@dataclass(frozen=True)
class Criterion:
    """A pruning criterion: what is ranked (``score``), and ``n`` of every ``m`` (None: 50% unstructured)."""

    name: str
    score: str  # "random" | "magnitude" | "activation"
    n: int | None
    m: int | None

    @property
    def pattern(self) -> str:
        return "unstructured" if self.m is None else f"{self.n}:{self.m}"

    @property
    def runs_on_sparse_tensor_cores(self) -> bool:
        """2:4 is the pattern NVIDIA's sparse tensor cores run for fp16/bf16/int8/fp8."""
        return (self.n, self.m) == (2, 4)


CRITERIA: dict[str, Criterion] = {
    c.name: c
    for c in (
        Criterion("random 2:4", "random", 2, 4),
        Criterion("magnitude 2:4", "magnitude", 2, 4),
        Criterion("activation-aware 2:4", "activation", 2, 4),
        Criterion("magnitude 4:8", "magnitude", 4, 8),
        Criterion("unstructured 50%", "magnitude", None, None),
    )
}


def criterion(name: str | Criterion) -> Criterion:
    """Look up a criterion by name (``"magnitude 2:4"``), with a clear error listing the valid ones."""
    if isinstance(name, Criterion):
        return name
    try:
        return CRITERIA[name]
    except (KeyError, TypeError):
        raise ValueError(f"criterion must be one of {list(CRITERIA)}, got {name!r}") from None


# Seed of the calibration batches (a fixed set of training windows).
CALIBRATION_SEED = 1234


@torch.no_grad()
def activation_norms(
    model: TinyLM,
    data: torch.Tensor,
    *,
    batches: int = 8,
    batch_size: int = 16,
    seed: int = CALIBRATION_SEED,
) -> dict[str, torch.Tensor]:
    """``{layer name: x_norm [K]}``: L2 norm of each input feature of each prunable layer over calibration.

    One pass of the dense model over ``batches`` seeded windows of ``data`` (Wanda re-measures each
    block after pruning the ones before it; at this depth it makes little difference).
    """
    require_positive_int("batches", batches)
    layers = prunable_linears(model)
    sums = {name: torch.zeros(layer.in_features) for name, layer in layers.items()}

    def hook_for(name: str):
        def hook(_module: nn.Module, args: tuple[torch.Tensor, ...], _out: torch.Tensor) -> None:
            x = args[0].reshape(-1, args[0].shape[-1])
            sums[name] += (x.float() ** 2).sum(dim=0)

        return hook

    handles = [layer.register_forward_hook(hook_for(name)) for name, layer in layers.items()]
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    try:
        for _ in range(batches):
            inputs, _targets = sample_batch(data, batch_size, model.cfg.seq_len, generator)
            model(inputs)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return {name: s.sqrt() for name, s in sums.items()}


def activation_aware_scores(W: torch.Tensor, x_norm: torch.Tensor) -> torch.Tensor:
    """Wanda's score ``|W[n, k]| * x_norm[k]``: a weight matters as much as the inputs it multiplies.

    >>> W = torch.tensor([[1.0, -2.0, 3.0, 0.5]])
    >>> activation_aware_scores(W, torch.tensor([4.0, 1.0, 0.1, 2.0])).tolist()
    [[4.0, 2.0, 0.30000001192092896, 1.0]]
    """
    if x_norm.dim() != 1 or x_norm.numel() != W.shape[1]:
        raise ValueError(
            f"x_norm must be 1-D with one entry per input feature (K={W.shape[1]}), got shape {tuple(x_norm.shape)}"
        )
    return W.abs() * x_norm.to(W.dtype)[None, :]


def unstructured_mask(W: torch.Tensor) -> torch.Tensor:
    """Keep the half (``round(0.5 * W.numel())``) of ``W`` with the largest ``|W|`` (ties: lower index)."""
    n_keep = round(0.5 * W.numel())
    order = torch.sort(W.abs().flatten(), descending=True, stable=True).indices[:n_keep]
    mask = torch.zeros(W.numel(), dtype=torch.bool)
    mask[order] = True
    return mask.view(W.shape)


@torch.no_grad()
def masks_from_scores(
    model: TinyLM,
    score_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    act_norms: dict[str, torch.Tensor],
    n: int = 2,
    m: int = 4,
) -> dict[str, torch.Tensor]:
    """N:M masks from any score ``score_fn(W, x_norm) -> scores`` (the lab plugs its own in here)."""
    masks = {}
    for name, layer in prunable_linears(model).items():
        if name not in act_norms:
            raise KeyError(f"act_norms has no entry for layer {name!r}; compute it with activation_norms(model, data)")
        scores = score_fn(layer.weight.detach(), act_norms[name])
        _, masks[name] = prune(layer.weight.detach(), n, m, scores=scores)
    return masks


@torch.no_grad()
def masks_for(
    model: TinyLM,
    name: str | Criterion,
    *,
    act_norms: dict[str, torch.Tensor] | None = None,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """One keep-mask per prunable layer for ``name`` (``act_norms``: activation-aware; ``seed``: random)."""
    crit = criterion(name)
    if crit.score == "activation":
        if act_norms is None:
            raise ValueError(f"criterion {crit.name!r} needs act_norms: pass activation_norms(model, corpus.train)")
        return masks_from_scores(model, activation_aware_scores, act_norms, crit.n, crit.m)
    generator = torch.Generator().manual_seed(seed)
    masks = {}
    for layer_name, layer in prunable_linears(model).items():
        W = layer.weight.detach()
        if crit.m is None:
            masks[layer_name] = unstructured_mask(W)
        else:
            scores = torch.rand(W.shape, generator=generator) if crit.score == "random" else None
            _, masks[layer_name] = prune(W, crit.n, crit.m, scores=scores)
    return masks


@torch.no_grad()
def verify_masks(model: TinyLM, masks: dict[str, torch.Tensor], name: str | Criterion) -> None:
    """Raise ``AssertionError`` unless every masked prunable weight of ``model`` obeys the criterion.

    N:M: :func:`twofour.check` with that N:M; unstructured 50%: exactly half of each layer kept.
    """
    crit = criterion(name)
    layers = prunable_linears(model)
    missing = sorted(set(layers) - set(masks))
    if missing:
        raise AssertionError(f"no mask for layers {missing}")
    for layer_name, layer in layers.items():
        W = layer.weight.detach() * masks[layer_name]
        if crit.m is None:
            kept = int(masks[layer_name].sum())
            if kept * 2 != W.numel():
                raise AssertionError(f"{layer_name}: unstructured 50% keeps {kept} of {W.numel()} weights")
            continue
        report = check(W, crit.n, crit.m)
        if not report.valid:
            raise AssertionError(f"{layer_name} is not {crit.pattern} after pruning: {report.summary()}")


def pruned_copy(model: TinyLM, masks: dict[str, torch.Tensor]) -> TinyLM:
    """A deep copy of ``model`` with ``masks`` applied; ``model`` itself is left dense."""
    pruned = copy.deepcopy(model)
    apply_masks(pruned, masks)
    return pruned


@torch.no_grad()
def weight_mass_kept(model: TinyLM, masks: dict[str, torch.Tensor]) -> float:
    """Share of the total ``|W|`` of the prunable layers that the masks keep (1.0 = nothing lost).

    Magnitude criteria maximise it by construction, which is why it is not the same as quality.
    """
    layers = prunable_linears(model)
    kept = sum(float((layers[n].weight.abs() * masks[n]).sum()) for n in masks)
    return kept / sum(float(layers[n].weight.abs().sum()) for n in masks)
