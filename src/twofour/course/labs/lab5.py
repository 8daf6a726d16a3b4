"""Lab 5, "Prune and recover": checkers for an activation-aware 2:4 score and a masked fine-tuning step.

The learner writes ``activation_aware_score(W, x_norm)`` (one score per weight, given each input
feature's L2 norm over calibration tokens) and ``masked_step(model, optimizer, inputs, targets, masks)``
(one training step that returns the loss and keeps every pruned weight zero). The checkers run them on
:func:`provided_model` and compare with magnitude 2:4 pruning.

>>> check_activation_score(lambda W, x_norm: W.abs())   # magnitude ignores x_norm  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
twofour.course.labs._common.CheckFailed: ...the scores did not change when x_norm did...
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import torch
from torch import nn

from ...quality import (
    DEFAULT_RECOVER,
    DEFAULT_TRAIN,
    SIZES,
    TinyLM,
    activation_norms,
    apply_masks,
    deterministic,
    load_corpus,
    masks_for,
    masks_from_scores,
    perplexity,
    prunable_linears,
    pruned_copy,
    train,
)
from ...quality.train import make_optimizer, sample_batch
from ...structure import check, prune
from ._common import CheckFailed, exercise_check

__all__ = [
    "provided_model",
    "check_activation_score",
    "check_score_beats_magnitude",
    "check_masked_step",
    "check_recovery",
    "RECOVER_STEPS",
]

SEED = 5
RECOVER_STEPS = DEFAULT_RECOVER.steps
# The lab's model: the chapter's "small" size and recipe. (Tests swap in "tiny" to stay fast.)
LAB_SIZE = "small"
LAB_TRAIN = DEFAULT_TRAIN


@functools.lru_cache(maxsize=2)
def _provided(size: str, train_cfg) -> tuple[TinyLM, dict[str, torch.Tensor]]:
    corpus = load_corpus()
    with deterministic(1):  # as the chapter trains it: one model between them (train's cache)
        model, _ = train(SIZES[size].model, corpus, train_cfg, progress="training the lab's model", cache=True)
        norms = activation_norms(model, corpus.train)
    return model, norms


def provided_model() -> tuple[TinyLM, dict[str, torch.Tensor]]:
    """The lab's trained dense model and its calibration ``x_norm`` per prunable layer.

    Returns a fresh copy each call, so nothing a learner does to it leaks into the next check.
    """
    model, norms = _provided(LAB_SIZE, LAB_TRAIN)
    return copy.deepcopy(model), {k: v.clone() for k, v in norms.items()}


def _mask(W: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    return prune(W, 2, 4, scores=scores)[1]


def _call_score(fn, W: torch.Tensor, x_norm: torch.Tensor, case: str) -> torch.Tensor:
    W_before, x_before = W.clone(), x_norm.clone()
    scores = fn(W, x_norm)
    if not torch.equal(W, W_before) or not torch.equal(x_norm, x_before):
        raise CheckFailed(f"{case}: your function changed W or x_norm in place; compute a new tensor instead")
    if not isinstance(scores, torch.Tensor):
        raise CheckFailed(f"{case}: return a torch.Tensor of scores, got {type(scores).__name__}")
    if scores.shape != W.shape:
        hint = (
            " x_norm has one entry per input feature (column k of W, length K): it must broadcast along the "
            "columns, not the rows"
            if scores.dim() == 2 and scores.shape == W.shape[::-1]
            else ""
        )
        raise CheckFailed(
            f"{case}: scores must have W's shape {tuple(W.shape)} (one score per weight), got {tuple(scores.shape)}.{hint}"
        )
    if torch.isnan(scores).any():
        raise CheckFailed(f"{case}: your scores contain NaN")
    return scores


@exercise_check("activation_aware_score")
def check_activation_score(fn) -> str:
    """Check the learner's score on small weights where the right 2:4 choice is known.

    The score only has to *rank* like Wanda's ``|W| * x_norm`` inside every group of 4.
    """
    g = torch.Generator().manual_seed(SEED)
    case, W = "random W [24, 48]", torch.randn(24, 48, generator=g)
    x_norm = torch.rand(48, generator=g) * 10 + 0.1
    scores = _call_score(fn, W, x_norm, case)
    if torch.equal(_mask(W, scores), _mask(W, W.abs() * x_norm)):
        return "your score ranks weights like |W| scaled by the input-feature norm"
    # Diagnose the most common mistakes with targeted inputs.
    if not torch.equal(_mask(W, _call_score(fn, W, torch.ones_like(x_norm), case)), _mask(W, W.abs())):
        raise CheckFailed(
            f"{case}: with every x_norm equal to 1 your score should rank the weights of a group by their "
            "size alone, and it does not. Does each score come from the weight at the same position?"
        )
    if torch.equal(_mask(W, _call_score(fn, W, x_norm.flip(0), case)), _mask(W, scores)):
        raise CheckFailed(
            f"{case}: the scores did not change when x_norm did; a weight that multiplies a large input "
            "should count for more"
        )
    raise CheckFailed(
        f"{case}: your score keeps different weights than the activation-aware criterion in some groups. "
        "It should grow with |W| and with the norm of the input feature (column) the weight multiplies"
    )


def _ppl(model: TinyLM) -> float:
    with deterministic(1):
        return perplexity(model, load_corpus().val)


@exercise_check("activation_aware_score")
def check_score_beats_magnitude(fn) -> str:
    """Prune the provided model with the learner's score; it must beat magnitude 2:4 on perplexity."""
    model, norms = provided_model()
    masks = masks_from_scores(model, lambda W, x: _call_score(fn, W, x, "on the provided model"), norms)
    mine = pruned_copy(model, masks)
    for name, layer in prunable_linears(mine).items():
        report = check(layer.weight.detach())
        if not report.valid:
            raise CheckFailed(f"layer {name} is not 2:4 after pruning with your score: {report.summary()}")
    ppl_mine = _ppl(mine)
    ppl_mag = _ppl(pruned_copy(model, masks_for(model, "magnitude 2:4")))
    ppl_dense = _ppl(model)
    if not ppl_mine < ppl_mag:
        raise CheckFailed(
            f"perplexity with your score is {ppl_mine:.3f}, not below magnitude 2:4's {ppl_mag:.3f} "
            f"(dense: {ppl_dense:.3f}); run check_activation_score first"
        )
    return f"dense {ppl_dense:.3f}; magnitude 2:4 {ppl_mag:.3f}; your activation-aware 2:4 {ppl_mine:.3f}"


def _violations(model: nn.Module, masks: dict[str, torch.Tensor]) -> tuple[str, int] | None:
    """First layer where a pruned weight is non-zero, and how many are."""
    layers = dict(model.named_modules())
    for name, mask in masks.items():
        W = layers[name].weight.detach()
        bad = int(((W != 0) & ~mask).sum())
        if bad or not check(W).valid:
            return name, bad
    return None


def _run_steps(fn, model: TinyLM, masks, steps: int, seed: int, progress: bool | str = False) -> list[float]:
    from tqdm.auto import tqdm

    corpus = load_corpus()
    generator = torch.Generator().manual_seed(seed)
    cfg = dataclasses.replace(DEFAULT_RECOVER, steps=steps, seed=seed)
    optimizer = make_optimizer(model, cfg)
    model.train()
    losses = []
    for step in tqdm(range(steps), desc=progress or "", disable=not progress, leave=False):
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr_at(step)
        inputs, targets = sample_batch(corpus.train, cfg.batch_size, model.cfg.seq_len, generator)
        loss = fn(model, optimizer, inputs, targets, masks)
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise CheckFailed(f"step {step}: return the loss as one number, got a tensor of shape {tuple(loss.shape)}")
            loss = float(loss.detach())
        if not isinstance(loss, float):
            raise CheckFailed(f"step {step}: return the loss as a float, got {type(loss).__name__}")
        if broken := _violations(model, masks):
            name, count = broken
            raise CheckFailed(
                f"after step {step + 1}, {count} pruned weight(s) of {name} are no longer zero. Their gradients are "
                "not zero, so optimizer.step() moves them: make them zero again after the step"
            )
        losses.append(loss)
    model.eval()
    return losses


@exercise_check("masked_step")
def check_masked_step(fn) -> str:
    """Run 20 of the learner's steps on the magnitude-2:4 model: masks must hold, loss must fall."""
    model, _ = provided_model()
    masks = masks_for(model, "magnitude 2:4")
    apply_masks(model, masks)
    before = [p.detach().clone() for p in model.parameters()]
    with deterministic(1):
        losses = _run_steps(fn, model, masks, steps=20, seed=SEED)
    if all(torch.equal(a, b) for a, b in zip(before, model.parameters())):
        raise CheckFailed("after 20 steps no weight changed: did you call loss.backward() and optimizer.step()?")
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    if not last < first:
        raise CheckFailed(
            f"the loss did not fall over 20 steps (mean of the first 5: {first:.3f}, last 5: {last:.3f}); "
            "are you zeroing the gradients before backward()?"
        )
    return f"masks held for 20 steps; loss {first:.3f} -> {last:.3f} (mean of first and last 5 steps)"


@exercise_check("masked_step")
def check_recovery(fn, score_fn=None) -> str:
    """Recover the pruned model for :data:`RECOVER_STEPS` steps with the learner's step.

    Prunes the provided model with ``score_fn`` (the learner's score; ``None``: magnitude 2:4);
    the mask must still hold at the end and the validation perplexity must have fallen.
    """
    model, norms = provided_model()
    if score_fn is not None:
        try:
            score_fn(torch.ones(4, 8), torch.ones(8))
        except NotImplementedError:
            print("note: activation_aware_score is not done yet, so this check prunes by magnitude instead")
            score_fn = None
    if score_fn is None:
        masks = masks_for(model, "magnitude 2:4")
    else:
        masks = masks_from_scores(model, lambda W, x: _call_score(score_fn, W, x, "on the provided model"), norms)
    apply_masks(model, masks)
    ppl_before = _ppl(model)
    with deterministic(1):
        _run_steps(fn, model, masks, steps=RECOVER_STEPS, seed=DEFAULT_RECOVER.seed, progress="recovering")
    ppl_after = _ppl(model)
    if _violations(model, masks):
        raise CheckFailed("the mask is no longer valid after recovery")
    if not ppl_after < ppl_before:
        raise CheckFailed(
            f"recovery did not lower perplexity ({ppl_before:.3f} -> {ppl_after:.3f}); check that your step "
            "minimises the loss on (inputs, targets)"
        )
    return (
        f"after {RECOVER_STEPS} masked steps every layer is still 2:4; "
        f"validation perplexity {ppl_before:.3f} -> {ppl_after:.3f}"
    )
