"""Stage 5 of the answer: what did pruning to 2:4 cost, measured on a model you can retrain in a minute.

A small byte-level transformer (:mod:`.model`) is trained on Python's standard library source
(:mod:`.corpus`), pruned with several criteria (:mod:`.criteria`), recovered by masked
fine-tuning (:mod:`.train`) and compared over model sizes (:mod:`.experiments`); :mod:`.published`
holds the cited numbers they are compared with.

>>> from twofour.quality import SIZES, load_corpus, run_size, TrainConfig
>>> table = run_size(SIZES["tiny"], load_corpus(), TrainConfig(steps=30), TrainConfig(steps=5),
...                  criteria=["random 2:4", "magnitude 2:4"], progress=False)
>>> len(table), table.criteria()
(2, ['random 2:4', 'magnitude 2:4'])
"""

from .corpus import STDLIB_FILES, Corpus, load_corpus
from .criteria import (
    CRITERIA,
    Criterion,
    activation_aware_scores,
    activation_norms,
    masks_for,
    masks_from_scores,
    pruned_copy,
    verify_masks,
    weight_mass_kept,
)
from .experiments import (
    BASE_WIDTH,
    DEFAULT_RECOVER,
    DEFAULT_TRAIN,
    SIZES,
    LR_RULES,
    SWEEP_SIZES,
    QualityRow,
    QualityTable,
    SizeSpec,
    recipe_for,
    run_size,
    run_sweep,
    stored_sweep_path,
)
from .model import ModelConfig, TinyLM, prunable_linears
from .train import TrainConfig, apply_masks, continue_training, deterministic, masked_step, perplexity, train

__all__ = [
    "STDLIB_FILES", "Corpus", "load_corpus",
    "CRITERIA", "Criterion", "activation_aware_scores", "activation_norms", "masks_for", "masks_from_scores",
    "pruned_copy", "verify_masks", "weight_mass_kept",
    "DEFAULT_RECOVER", "DEFAULT_TRAIN", "SIZES", "SWEEP_SIZES", "QualityRow", "QualityTable", "SizeSpec",
    "BASE_WIDTH", "LR_RULES", "recipe_for", "run_size", "run_sweep", "stored_sweep_path",
    "ModelConfig", "TinyLM", "prunable_linears",
    "TrainConfig", "apply_masks", "continue_training", "deterministic", "masked_step", "perplexity", "train",
]
