"""Lab 5 checkers: the solutions pass, typical mistakes get the matching hint, stubs say 'not done yet'.

The lab's own model (the "small" size, 1500 steps) takes tens of seconds to train, so these tests
swap in the "tiny" size for 300 steps: the checkers' logic is the same.
"""

from __future__ import annotations

import importlib

import pytest
import torch
import torch.nn.functional as F

from twofour.course.labs import lab5
from twofour.course.labs._common import CheckFailed
from twofour.quality import SIZES, TrainConfig, deterministic, load_corpus, prunable_linears, train


@pytest.fixture(autouse=True)
def tiny_lab_model(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("TWOFOUR_CACHE", str(tmp_path_factory.getbasetemp() / "lab5-cache"))
    monkeypatch.setattr(lab5, "LAB_SIZE", "tiny")
    monkeypatch.setattr(lab5, "LAB_TRAIN", TrainConfig(steps=300, batch_size=16, lr=3e-3, warmup_steps=10, seed=0))


def score(W, x_norm):
    return W.abs() * x_norm


def step(model, optimizer, inputs, targets, masks):
    optimizer.zero_grad()
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for name, module in model.named_modules():
            if name in masks:
                module.weight.mul_(masks[name])
    return loss.item()


def step_without_remask(model, optimizer, inputs, targets, masks):
    optimizer.zero_grad()
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def step_only_masking_grads(model, optimizer, inputs, targets, masks):
    """The other valid design: zero the gradients of pruned weights before the step."""
    optimizer.zero_grad()
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    for name, module in model.named_modules():
        if name in masks:
            module.weight.grad.mul_(masks[name])
    optimizer.step()
    return loss.item()


def test_solutions_pass(capsys):
    assert lab5.check_activation_score(score).passed is True
    assert lab5.check_score_beats_magnitude(score).passed is True
    assert lab5.check_masked_step(step).passed is True
    assert lab5.check_recovery(step, score).passed is True
    out = capsys.readouterr().out
    assert out.count("passed:") == 4
    assert "validation perplexity" in out


def test_equivalent_score_passes():
    # Any score that ranks the same inside every group is right: the square of Wanda's, or W * x
    # (twofour.prune ranks by |score|).
    assert lab5.check_activation_score(lambda W, x: (W * x) ** 2).passed is True
    assert lab5.check_activation_score(lambda W, x: W * x).passed is True


@pytest.mark.parametrize(
    "fn, hint",
    [
        (lambda W, x: W.abs().flip(1) * x, "by their size alone"),
        (lambda W, x: W.abs() + x, "keeps different weights"),
        (lambda W, x: W.abs(), "did not change when x_norm did"),
        (lambda W, x: W.abs() / x, "keeps different weights"),
        (lambda W, x: (W.abs().T * x[: W.shape[0]]).T, "did not change when x_norm did"),  # scaled rows
        (lambda W, x: W.abs().T, "broadcast along the"),
        (lambda W, x: "big", "return a torch.Tensor"),
        (lambda W, x: W.abs_(), "changed W or x_norm in place"),
    ],
)
def test_score_mistakes_get_hints(fn, hint):
    with pytest.raises(CheckFailed, match=hint):
        lab5.check_activation_score(fn)


def test_magnitude_does_not_beat_magnitude():
    with pytest.raises(CheckFailed, match="not below magnitude 2:4"):
        lab5.check_score_beats_magnitude(lambda W, x: W.abs())


def test_step_that_forgets_the_mask_is_caught():
    with pytest.raises(CheckFailed, match="no longer zero"):
        lab5.check_masked_step(step_without_remask)


def test_masking_gradients_instead_is_accepted():
    # With a fresh AdamW, zero gradients keep the moments at zero and weight decay cannot move an
    # exact zero, so this variant keeps the mask too; the checker judges behaviour, not style.
    assert lab5.check_masked_step(step_only_masking_grads).passed is True


def test_step_that_does_not_train_is_caught():
    def no_step(model, optimizer, inputs, targets, masks):
        return 1.0

    with pytest.raises(CheckFailed, match="no weight changed"):
        lab5.check_masked_step(no_step)


def test_step_returning_a_tensor_of_many_values_is_caught():
    def bad_return(model, optimizer, inputs, targets, masks):
        step(model, optimizer, inputs, targets, masks)
        return torch.ones(3)

    with pytest.raises(CheckFailed, match="one number"):
        lab5.check_masked_step(bad_return)


def test_stubs_say_not_done_yet(capsys):
    def stub(*args):
        raise NotImplementedError

    assert lab5.check_activation_score(stub).passed is False
    assert lab5.check_masked_step(stub).passed is False
    assert "not done yet" in capsys.readouterr().out


def test_provided_model_is_a_fresh_copy():
    a, norms_a = lab5.provided_model()
    b, _ = lab5.provided_model()
    with torch.no_grad():
        a.blocks[0].mlp.fc1.weight.zero_()
        norms_a["blocks.0.mlp.fc1"].zero_()
    assert bool((b.blocks[0].mlp.fc1.weight != 0).any())
    assert bool((lab5.provided_model()[1]["blocks.0.mlp.fc1"] != 0).any())


def test_the_provided_model_is_the_chapters_model(monkeypatch, tmp_path):
    monkeypatch.setenv("TWOFOUR_CACHE", str(tmp_path))
    cfg = TrainConfig(steps=20, batch_size=4, lr=3e-3, warmup_steps=2, seed=0)
    with deterministic(threads=1):  # as chapter 5 trains it
        chapters, _ = train(SIZES["tiny"].model, load_corpus(), cfg, progress=False, cache=True)
    monkeypatch.setattr(importlib.import_module("twofour.quality.train"), "continue_training",
                        lambda *a, **k: pytest.fail("trained again"))
    provided, norms = lab5._provided.__wrapped__("tiny", cfg)
    assert all(torch.equal(a, b) for a, b in zip(chapters.state_dict().values(), provided.state_dict().values()))
    assert set(norms) == set(prunable_linears(provided))
