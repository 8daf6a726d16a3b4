"""Reproducible weights for the chapters: one small *trained* weight and three half-zero weights.

A random Gaussian matrix is a poor stand-in for a trained weight: training bunches the large
weights in the columns of the features that matter, which decides what a 2:4 pattern costs against
unstructured pruning. So the chapters also use a weight trained in seconds on a CPU, seeded: the first
layer, ``W = [hidden, in_features] = [N, K]``, of a ReLU MLP trained with AdamW (weight decay shrinks the
distractor columns) to imitate a random teacher that reads only ``informative`` of its inputs.

>>> ex = trained_example()
>>> tuple(ex.W.shape), ex.W.dtype
((512, 256), torch.float32)
>>> ex.loss_end < ex.loss_start
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .._common.args import require_positive_int
from .._passes.tensors import require_weight
from ..structure import prune

__all__ = ["TrainedExample", "trained_example", "prune_unstructured", "half_zero_weights"]


@dataclass(frozen=True)
class TrainedExample:
    """A trained student network and the data to evaluate it (:func:`trained_example`): ``W``, a float32
    copy of the first layer's weight; ``x_eval, y_eval``: the held-out set; ``informative``: the input
    features that carry signal; ``loss_start, loss_end``: held-out MSE before and after training;
    ``baseline_loss``: the error of always predicting zero."""

    W: torch.Tensor = field(repr=False)
    model: torch.nn.Sequential = field(repr=False)
    x_eval: torch.Tensor = field(repr=False)
    y_eval: torch.Tensor = field(repr=False)
    informative: torch.Tensor = field(repr=False)
    loss_start: float
    loss_end: float
    baseline_loss: float
    description: str = field(repr=False)

    def loss_with(self, W: torch.Tensor) -> float:
        """Held-out mean squared error of the student with its first-layer weight replaced by ``W``.

        >>> ex = trained_example(in_features=16, hidden=8, out_features=2, informative=4, steps=20)
        >>> abs(ex.loss_with(ex.W) - ex.loss_end) < 1e-6
        True
        """
        if not isinstance(W, torch.Tensor) or W.shape != self.W.shape:
            got = tuple(W.shape) if isinstance(W, torch.Tensor) else type(W).__name__
            raise ValueError(f"W must be a tensor of the trained weight's shape {tuple(self.W.shape)}, got {got}")
        first, act, second = self.model
        with torch.no_grad():
            hidden = act(torch.nn.functional.linear(self.x_eval, W.to(self.x_eval.dtype), first.bias))
            return float(torch.nn.functional.mse_loss(second(hidden), self.y_eval))


def trained_example(
    seed: int = 0,
    *,
    in_features: int = 256,
    hidden: int = 512,
    out_features: int = 16,
    informative: int = 64,
    steps: int = 400,
    batch: int = 256,
    n_eval: int = 2048,
) -> TrainedExample:
    """Train the student of the module docstring: ``steps`` AdamW steps of ``batch`` fresh samples,
    ``n_eval`` held out; deterministic for a ``seed`` (the global RNG state and thread count are kept)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    sizes = dict(in_features=in_features, hidden=hidden, out_features=out_features, informative=informative,
                 steps=steps, batch=batch, n_eval=n_eval)
    for name, value in sizes.items():
        require_positive_int(name, value)
    if informative > in_features:
        raise ValueError(f"informative must be at most in_features={in_features}, got {informative}")

    # Single-threaded: at this size extra threads only add synchronisation, and single-threaded
    # float sums give the same bits on every machine, so the trained weight is the same everywhere.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(seed)
        features = torch.randperm(in_features, generator=gen)[:informative].sort().values
        teacher_in = torch.randn(informative, 4 * out_features, generator=gen) / informative**0.5
        teacher_out = torch.randn(4 * out_features, out_features, generator=gen) / (4 * out_features) ** 0.5

        def sample(n: int) -> tuple[torch.Tensor, torch.Tensor]:
            x = torch.randn(n, in_features, generator=gen)
            return x, torch.relu(x[:, features] @ teacher_in) @ teacher_out

        x_eval, y_eval = sample(n_eval)
        with torch.random.fork_rng(devices=[]):  # nn.Linear's init draws from the global RNG
            torch.manual_seed(seed)
            model = torch.nn.Sequential(
                torch.nn.Linear(in_features, hidden),
                torch.nn.ReLU(),
                torch.nn.Linear(hidden, out_features),
            )

        def eval_loss() -> float:
            with torch.no_grad():
                return float(torch.nn.functional.mse_loss(model(x_eval), y_eval))

        loss_start = eval_loss()
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
        for _ in range(steps):
            x, y = sample(batch)
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        description = (
            f"First layer of a {in_features}->{hidden}->{out_features} ReLU MLP, trained for {steps} AdamW "
            f"steps (batch {batch}, lr 2e-3, weight decay 0.05, seed {seed}) to imitate a random teacher "
            f"network that reads only {informative} of its {in_features} standard-normal inputs."
        )
        return TrainedExample(
            W=model[0].weight.detach().clone(),
            model=model,
            x_eval=x_eval,
            y_eval=y_eval,
            informative=features,
            loss_start=loss_start,
            loss_end=eval_loss(),
            baseline_loss=float(y_eval.pow(2).mean()),
            description=description,
        )
    finally:
        torch.set_num_threads(threads)


def prune_unstructured(W: torch.Tensor, sparsity: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Zero the ``round(sparsity * numel)`` smallest-magnitude elements of ``W``, wherever they are (the
    baseline of 2:4), ties earlier in row-major order first: ``(W_pruned, mask)`` like :func:`twofour.prune`.

    >>> Wp, mask = prune_unstructured(torch.tensor([[4.0, -1.0, 3.0, 2.0]]))
    >>> Wp.tolist(), int(mask.sum())
    ([[4.0, 0.0, 3.0, 0.0]], 2)
    """
    W = require_weight(W, 1)
    if isinstance(sparsity, bool) or not isinstance(sparsity, (int, float)) or not 0 <= sparsity <= 1:
        raise ValueError(f"sparsity must be a number in [0, 1] (fraction of elements set to zero), got {sparsity!r}")
    magnitude = W.abs() if W.is_floating_point() else W.to(torch.float64).abs()
    if bool(torch.isnan(magnitude).any()):
        raise ValueError("W contains NaN, which has no magnitude to rank; fix or mask it before pruning")
    n_drop = round(sparsity * W.numel())
    order = torch.sort(magnitude.flatten(), stable=True).indices
    mask = torch.ones(W.numel(), dtype=torch.bool, device=W.device)
    mask[order[:n_drop]] = False
    mask = mask.view_as(W)
    return torch.where(mask, W, torch.zeros((), dtype=W.dtype, device=W.device)), mask


def half_zero_weights(W: torch.Tensor) -> dict[str, torch.Tensor]:
    """Three versions of ``W``, each with exactly half its elements zero, only one of them 2:4:
    ``"2:4 along K"`` (magnitude 2:4 along each row: valid), ``"unstructured 50%"`` (the smallest half of
    all magnitudes) and ``"2:4 along N (wrong dim)"`` (along each column, as mixing up ``[out, in]`` gives).

    >>> weights = half_zero_weights(torch.randn(8, 8))
    >>> sorted(weights)
    ['2:4 along K', '2:4 along N (wrong dim)', 'unstructured 50%']
    """
    W = require_weight(W, 4)
    if W.shape[0] % 4:
        raise ValueError(
            f"W has {W.shape[0]} rows; the wrong-dimension example prunes groups of 4 rows, so rows must be "
            "a multiple of 4"
        )
    return {
        "2:4 along K": prune(W)[0],
        "unstructured 50%": prune_unstructured(W, 0.5)[0],
        "2:4 along N (wrong dim)": prune(W.T.contiguous())[0].T.contiguous(),
    }
