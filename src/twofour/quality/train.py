"""Training, evaluation and masked fine-tuning of a :class:`~twofour.quality.model.TinyLM`.

Deterministic on a given machine: batches come from a seeded ``torch.Generator`` and
:func:`deterministic` fixes the thread count (float sums in a matmul depend on it).

>>> from twofour.quality.corpus import load_corpus
>>> from twofour.quality.model import ModelConfig
>>> corpus = load_corpus()
>>> cfg = ModelConfig(d_model=32, n_layers=1, n_heads=2, seq_len=32)
>>> model, log = train(cfg, corpus, TrainConfig(steps=20, batch_size=8), progress=False)
>>> log.losses[-1] < log.losses[0]
True
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .._common.args import require_positive_int
from .corpus import Corpus
from .model import ModelConfig, TinyLM

__all__ = [
    "TrainConfig",
    "TrainLog",
    "deterministic",
    "sample_batch",
    "train",
    "continue_training",
    "perplexity",
    "apply_masks",
    "masked_step",
    "make_optimizer",
]


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser recipe: AdamW, linear warm-up, cosine decay to ``min_lr_ratio * lr``."""

    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size"):
            require_positive_int(f"TrainConfig.{name}", getattr(self, name))
        for name in ("warmup_steps", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"TrainConfig.{name} must be a non-negative int, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ValueError(f"TrainConfig.lr must be a positive number, got {self.lr!r}")
        if not (isinstance(self.weight_decay, (int, float)) and self.weight_decay >= 0):
            raise ValueError(f"TrainConfig.weight_decay must be >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.min_lr_ratio, (int, float)) and 0 <= self.min_lr_ratio <= 1):
            raise ValueError(f"TrainConfig.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    def lr_at(self, step: int) -> float:
        """Learning rate at ``step`` (0-based)."""
        if step < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        progress = (step - self.warmup_steps) / max(1, self.steps - self.warmup_steps)
        cosine = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        return self.lr * (self.min_lr_ratio + (1 - self.min_lr_ratio) * cosine)


@dataclass
class TrainLog:
    """Loss per step (mean cross-entropy per byte, nats), training seconds, and whether it came from the cache."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    from_cache: bool = False


@contextlib.contextmanager
def deterministic(threads: int | None = 2):
    """Fix the thread count (None: keep it) and require deterministic kernels in the block; restored after."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a positive int or None, got {threads!r}")
    old_threads = torch.get_num_threads()
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(True)
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det, warn_only=old_warn)


def _require_data(data: torch.Tensor, seq_len: int, what: str) -> None:
    if not isinstance(data, torch.Tensor) or data.dim() != 1:
        raise ValueError(f"{what} must be a 1-D tensor of byte ids, got {type(data).__name__}")
    if data.numel() < seq_len + 2:
        raise ValueError(f"{what} has {data.numel()} bytes; it needs more than seq_len + 1 = {seq_len + 1}")


def sample_batch(data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator):
    """Random windows ``(inputs, targets)`` of shape ``[batch_size, seq_len]``; targets shifted by one."""
    _require_data(data, seq_len, "data")
    starts = torch.randint(0, data.numel() - seq_len - 1, (batch_size,), generator=generator)
    offsets = torch.arange(seq_len + 1)
    windows = data[starts[:, None] + offsets].long()
    return windows[:, :-1], windows[:, 1:]


@torch.no_grad()
def perplexity(model: TinyLM, val: torch.Tensor, *, max_windows: int | None = 256, batch_size: int = 64) -> float:
    """``exp`` of the mean next-byte cross-entropy over ``max_windows`` (None: all) fixed ``val`` windows."""
    seq_len = model.cfg.seq_len
    _require_data(val, seq_len, "val")
    n_windows = (val.numel() - 1) // seq_len
    if max_windows is not None:
        if isinstance(max_windows, bool) or not isinstance(max_windows, int) or max_windows < 1:
            raise ValueError(f"max_windows must be a positive int or None, got {max_windows!r}")
        n_windows = min(n_windows, max_windows)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    starts = torch.arange(n_windows) * seq_len
    offsets = torch.arange(seq_len + 1)
    for i in range(0, n_windows, batch_size):
        windows = val[starts[i : i + batch_size, None] + offsets].long()
        logits = model(windows[:, :-1])
        total += float(
            F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1), reduction="sum")
        )
        count += windows[:, 1:].numel()
    model.train(was_training)
    return math.exp(total / count)


def apply_masks(model: nn.Module, masks: dict[str, torch.Tensor]) -> None:
    """Zero every weight whose mask entry is False (in place), for each named linear layer."""
    modules = dict(model.named_modules())
    with torch.no_grad():
        for name, mask in masks.items():
            if name not in modules:
                raise KeyError(f"masks names layer {name!r}, which the model does not have")
            weight = modules[name].weight
            if mask.shape != weight.shape:
                raise ValueError(
                    f"mask for {name!r} has shape {tuple(mask.shape)}, but the weight is {tuple(weight.shape)}"
                )
            weight.mul_(mask)


def masked_step(
    model: TinyLM,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    masks: dict[str, torch.Tensor] | None = None,
) -> float:
    """One optimiser step; afterwards re-apply ``masks`` so pruned weights stay exactly zero.

    Masking only the gradients would not hold against an optimizer's momentum or weight decay.
    """
    optimizer.zero_grad(set_to_none=True)
    logits = model(inputs)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    if masks:
        apply_masks(model, masks)
    return float(loss.detach())


def make_optimizer(model: TinyLM, cfg: TrainConfig) -> torch.optim.Optimizer:
    """AdamW as used for training and recovery: decay on the 2-D block and head weights only."""
    # No weight decay on LayerNorm gains and embeddings (the usual GPT recipe).
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "emb" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "emb" not in n)]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )


def continue_training(
    model: TinyLM,
    corpus: Corpus,
    cfg: TrainConfig,
    *,
    masks: dict[str, torch.Tensor] | None = None,
    progress: bool | str = True,
) -> TrainLog:
    """Train ``model`` in place for ``cfg.steps`` steps; with ``masks``, masked fine-tuning (recovery).

    ``progress`` shows a tqdm bar (a string is used as its description).
    """
    from tqdm.auto import tqdm

    generator = torch.Generator().manual_seed(cfg.seed)
    optimizer = make_optimizer(model, cfg)
    if masks:
        apply_masks(model, masks)
    model.train()
    log = TrainLog()
    desc = progress if isinstance(progress, str) else ("recover" if masks else "train")
    for step in tqdm(range(cfg.steps), desc=desc, disable=not progress, leave=False):
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr_at(step)
        inputs, targets = sample_batch(corpus.train, cfg.batch_size, model.cfg.seq_len, generator)
        log.losses.append(masked_step(model, optimizer, inputs, targets, masks))
    model.eval()
    return log


def train(
    model_cfg: ModelConfig,
    corpus: Corpus,
    cfg: TrainConfig,
    *,
    progress: bool | str = True,
    cache: bool = False,
) -> tuple[TinyLM, TrainLog]:
    """Build a :class:`TinyLM` with seed ``cfg.seed`` and train it from scratch.

    ``cache=True`` keeps the result in ``$TWOFOUR_CACHE`` (else ``$XDG_CACHE_HOME/twofour``, else
    ``~/.cache/twofour``) and reads it back the next time the same model is asked for (same configs,
    corpus, torch version, thread count and determinism setting: the same bits), so chapter 5, its
    lab and the lab's solutions train their model once between them.
    """
    if not cache:
        return _train(model_cfg, corpus, cfg, progress)
    key = repr((model_cfg, cfg, corpus.sha256, torch.__version__, torch.get_num_threads(),
                torch.are_deterministic_algorithms_enabled()))
    folder = os.getenv("TWOFOUR_CACHE") or Path(os.getenv("XDG_CACHE_HOME") or Path.home() / ".cache") / "twofour"
    path = Path(folder) / f"tinylm-{hashlib.sha256(key.encode()).hexdigest()[:20]}.pt"
    try:
        with _only_one_trainer(path):  # a second process asking for the model waits, then reads it
            if path.is_file():
                try:
                    saved = torch.load(path, weights_only=True)
                    model = TinyLM(model_cfg)
                    model.load_state_dict(saved["state"])
                    return model.eval(), TrainLog(list(saved["losses"]), float(saved["seconds"]), from_cache=True)
                except Exception:  # a truncated or foreign file is not this model: train it again, over it
                    pass
            model, log = _train(model_cfg, corpus, cfg, progress)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            try:
                torch.save({"state": model.state_dict(), "losses": log.losses, "seconds": log.seconds}, tmp)
                os.replace(tmp, path)  # atomic: a reader never sees half a file
            except OSError:  # a cache that cannot be written (a folder in the way): the model is trained all the same
                tmp.unlink(missing_ok=True)
            return model, log
    except OSError:  # no cache folder or lock can be made: train without one
        return _train(model_cfg, corpus, cfg, progress)


def _train(model_cfg: ModelConfig, corpus: Corpus, cfg: TrainConfig, progress: bool | str) -> tuple[TinyLM, TrainLog]:
    start = time.perf_counter()
    # fork_rng: seed the initial weights without disturbing the caller's global RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = TinyLM(model_cfg)
    log = continue_training(model, corpus, cfg, progress=progress)
    log.seconds = time.perf_counter() - start
    return model, log


@contextlib.contextmanager
def _only_one_trainer(path: Path):
    """While held, no other process (a notebook beside this one) trains the same model."""
    try:
        import fcntl
    except ImportError:  # Windows: both may train; each writes the same bytes
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
