"""The experiment of chapter 5: train, prune with every criterion, recover, compare; over model sizes.

For one model size (:func:`run_size`): train a dense :class:`~twofour.quality.model.TinyLM`; prune a
copy with each criterion, measure perplexity and weight mass kept; *recover* each copy by fine-tuning
with its mask fixed and measure again; give the dense model the same extra steps (``ppl_dense_extra``),
so "recovery helped" is not confused with "more training helped". :func:`run_sweep` repeats that
for several sizes into a :class:`QualityTable` (``twofour quality --out FILE``).
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import platform
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch

from .._common.jsonfile import check_schema, read_json
from ..device import cpu_model  # re-exported: the provenance of a sweep names the CPU it ran on
from .corpus import Corpus
from .criteria import CALIBRATION_SEED, CRITERIA, activation_norms, criterion, masks_for, pruned_copy, verify_masks, weight_mass_kept
from .model import ModelConfig, prunable_linears
from .train import TrainConfig, continue_training, deterministic, perplexity, train

__all__ = [
    "SizeSpec",
    "SIZES",
    "SWEEP_SIZES",
    "DEFAULT_TRAIN",
    "DEFAULT_RECOVER",
    "BASE_WIDTH",
    "LR_RULES",
    "recipe_for",
    "QualityRow",
    "QualityTable",
    "run_size",
    "run_sweep",
    "cpu_model",
]

RESULTS_KIND = "twofour.quality"
RESULTS_VERSION = 2  # 2: rows record their learning rates (train_lr, recover_lr)


@dataclass(frozen=True)
class SizeSpec:
    """A named model size."""

    name: str
    model: ModelConfig


SIZES: dict[str, SizeSpec] = {
    s.name: s
    for s in (
        # "tiny" exists for tests and doctests only: seconds to train, too small to mean much.
        SizeSpec("tiny", ModelConfig(d_model=32, n_layers=1, n_heads=2, seq_len=32)),
        # Width only, at 2 blocks: the learning-rate rule below is a width rule; the sweep takes minutes.
        SizeSpec("small", ModelConfig(d_model=64, n_layers=2, n_heads=4, seq_len=64)),
        SizeSpec("medium", ModelConfig(d_model=96, n_layers=2, n_heads=4, seq_len=64)),
        SizeSpec("large", ModelConfig(d_model=128, n_layers=2, n_heads=4, seq_len=64)),
    )
}
SWEEP_SIZES: tuple[str, ...] = ("small", "medium", "large")

# The recipe of the stored sweep, at the base width ("small"). 1500 steps: at 600 the small model is
# far from converged (perplexity ~8 vs ~5) and barely notices pruning, flattering every criterion.
DEFAULT_TRAIN = TrainConfig(steps=1500, batch_size=16, lr=3e-3, warmup_steps=30, seed=0)
DEFAULT_RECOVER = TrainConfig(steps=200, batch_size=16, lr=1e-3, warmup_steps=10, seed=1)

# One learning-rate rule for every size (one rate at every width leaves the larger models worse
# trained): Adam moves every weight by about ``lr`` per step, so a layer with ``d_model`` inputs
# changes its output about ``d_model`` times as much; muP ("Tensor Programs V", arXiv 2203.03466)
# scales the rate as 1/width. Here on every parameter, for training and recovery, fixed in advance
# (no per-size search on the validation text): lr(size) = base lr * BASE_WIDTH / d_model
BASE_WIDTH = 64
LR_RULES = ("width", "none")


def recipe_for(cfg: TrainConfig, model: ModelConfig, lr_rule: str = "width") -> TrainConfig:
    """``cfg`` with its learning rate scaled for ``model``'s width: ``"width"`` (see above) or ``"none"``.

    >>> round(recipe_for(DEFAULT_TRAIN, SIZES["large"].model).lr, 6)  # d_model 128: half the base rate
    0.0015
    >>> recipe_for(DEFAULT_TRAIN, SIZES["small"].model) == DEFAULT_TRAIN
    True
    """
    if lr_rule not in LR_RULES:
        raise ValueError(f"lr_rule must be one of {LR_RULES}, got {lr_rule!r}")
    if lr_rule == "none" or model.d_model == BASE_WIDTH:
        return cfg
    return replace(cfg, lr=cfg.lr * BASE_WIDTH / model.d_model)


@dataclass(frozen=True)
class QualityRow:
    """One (model size, criterion) result. Perplexities are validation perplexity per byte."""

    size: str
    d_model: int
    n_layers: int
    n_params: int
    n_prunable: int  # weights in the pruned layers (attention projections + MLP)
    criterion: str
    pattern: str  # "2:4", "4:8" or "unstructured"
    sparse_tensor_cores: bool  # can NVIDIA's 2:4 sparse tensor cores run this pattern?
    ppl_dense: float
    ppl_pruned: float  # one-shot, no retraining
    ppl_recovered: float  # after masked fine-tuning, mask held fixed
    ppl_dense_extra: float  # the dense model after the same number of extra steps
    mass_kept: float  # share of sum |W| of the pruned layers that survives
    train_steps: int
    recover_steps: int
    train_lr: float  # peak learning rate of dense training at this size
    recover_lr: float  # peak learning rate of recovery (and of the dense extra steps)

    @property
    def gap_pruned(self) -> float:
        """Perplexity ratio pruned / dense (1.0 = no loss)."""
        return self.ppl_pruned / self.ppl_dense

    @property
    def gap_recovered(self) -> float:
        """Perplexity ratio recovered / dense-with-the-same-extra-steps."""
        return self.ppl_recovered / self.ppl_dense_extra


_COLUMNS = (
    ("size", "size", "{}"),
    ("params", "n_params", "{:,}"),
    ("criterion", "criterion", "{}"),
    ("dense", "ppl_dense", "{:.3f}"),
    ("pruned", "ppl_pruned", "{:.3f}"),
    ("recovered", "ppl_recovered", "{:.3f}"),
    ("dense+extra", "ppl_dense_extra", "{:.3f}"),
    ("mass kept", "mass_kept", "{:.1%}"),
)


@dataclass
class QualityTable:
    """Rows of :class:`QualityRow` plus the settings and provenance (JSON: ``save``/``load``)."""

    rows: list[QualityRow] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_rows(self) -> list[dict]:
        """Plain dicts, one per row, with every field (and the two gap ratios)."""
        return [asdict(r) | {"gap_pruned": r.gap_pruned, "gap_recovered": r.gap_recovered} for r in self.rows]

    def where(self, **conditions) -> QualityTable:
        """Rows whose fields equal the given values, e.g. ``table.where(size="small")``."""
        names = {f.name for f in fields(QualityRow)}
        unknown = sorted(set(conditions) - names)
        if unknown:
            raise ValueError(f"where() got unknown field(s) {unknown}; valid fields: {sorted(names)}")
        kept = [r for r in self.rows if all(getattr(r, k) == v for k, v in conditions.items())]
        return QualityTable(kept, self.settings, self.provenance)

    def sizes(self) -> list[str]:
        """Model sizes in the table, in first-seen order."""
        return list(dict.fromkeys(r.size for r in self.rows))

    def criteria(self) -> list[str]:
        return list(dict.fromkeys(r.criterion for r in self.rows))

    def made_here(self, corpus: Corpus) -> bool:
        """Did this CPU, platform, torch, Python and ``corpus`` write these results (reruns repeat them)?"""
        prov = self.provenance
        here = (cpu_model(), platform.platform(), torch.__version__, platform.python_version(), corpus.sha256)
        return (prov.get("cpu_model"), prov.get("platform"), prov.get("torch_version"),
                prov.get("python_version"), prov.get("corpus_sha256")) == here

    def _cells(self) -> tuple[list[str], list[list[str]]]:
        header = [h for h, _, _ in _COLUMNS]
        return header, [[fmt.format(getattr(r, attr)) for _, attr, fmt in _COLUMNS] for r in self.rows]

    def __str__(self) -> str:
        header, body = self._cells()
        widths = [max(len(x) for x in col) for col in zip(header, *body)]
        line = lambda cells: "  ".join(c.rjust(w) if i >= 3 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
        return "\n".join([line(header), line(["-" * w for w in widths])] + [line(b) for b in body])

    def _repr_html_(self) -> str:
        import html

        header, body = self._cells()
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in b) + "</tr>" for b in body)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"

    def to_json(self) -> dict:
        return {
            "kind": RESULTS_KIND,
            "version": RESULTS_VERSION,
            "provenance": self.provenance,
            "settings": self.settings,
            "rows": [asdict(r) for r in self.rows],
        }

    def save(self, path: str | Path, inputs=()) -> Path:
        """Write the table as JSON, atomically and never over one of ``inputs`` (:mod:`twofour._common.atomic`)."""
        from .._common.atomic import write_text

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(self.to_json(), indent=1) + "\n", inputs)
        return path

    @classmethod
    def load(cls, path: str | Path) -> QualityTable:
        """Read a results file written by :meth:`save` (e.g. the stored sweep)."""
        path = Path(path)
        data, source = read_json(path, "quality results file"), repr(str(path))
        if not isinstance(data, dict) or data.get("kind") != RESULTS_KIND:
            raise ValueError(f"{source} is not a twofour quality results file (expected kind {RESULTS_KIND!r})")
        if data.get("version") != RESULTS_VERSION:
            raise ValueError(f"{source} has results version {data.get('version')!r}; this toolkit reads {RESULTS_VERSION}")
        names = [f.name for f in fields(QualityRow)]  # every field of a row, nothing else
        row = {"type": "object", "required": names, "additionalProperties": False,
               "properties": {name: {} for name in names}}
        properties = {"rows": {"type": "array", "items": row}, "settings": {"type": "object"},
                      "provenance": {"type": "object"}}
        check_schema(data, {"type": "object", "required": ["rows"], "properties": properties}, source)
        rows = [QualityRow(**raw) for raw in data["rows"]]
        return cls(rows, data.get("settings", {}), data.get("provenance", {}))


def stored_sweep_path() -> Path:
    """The sweep committed with the package (``twofour quality --out`` wrote it)."""
    return Path(__file__).resolve().parent.parent / "data" / "quality-sweep.json"


def run_size(
    spec: SizeSpec,
    corpus: Corpus,
    train_cfg: TrainConfig = DEFAULT_TRAIN,
    recover_cfg: TrainConfig = DEFAULT_RECOVER,
    *,
    criteria: list[str] | None = None,
    threads: int | None = 1,
    eval_windows: int | None = 256,
    lr_rule: str = "width",
    progress: bool = True,
) -> QualityTable:
    """Train one model size, prune it with each criterion, recover each, and measure.

    ``train_cfg`` and ``recover_cfg`` are the base-width recipes, scaled by :func:`recipe_for`.
    Every pruned model is verified after pruning and after recovery; a violation raises.
    """
    if not isinstance(spec, SizeSpec):
        raise TypeError(f"spec must be a SizeSpec (e.g. SIZES['small']), got {type(spec).__name__}")
    base_train, base_recover = train_cfg, recover_cfg  # the settings record the base recipes
    train_cfg = recipe_for(base_train, spec.model, lr_rule)
    recover_cfg = recipe_for(base_recover, spec.model, lr_rule)
    names = list(CRITERIA) if criteria is None else [criterion(c).name for c in criteria]
    from tqdm.auto import tqdm

    rows = []
    with deterministic(threads):
        dense, _ = train(spec.model, corpus, train_cfg, progress=f"train {spec.name}" if progress else False)
        ppl_dense = perplexity(dense, corpus.val, max_windows=eval_windows)
        extra = copy.deepcopy(dense)
        continue_training(extra, corpus, recover_cfg, progress=f"dense +{recover_cfg.steps} steps" if progress else False)
        ppl_dense_extra = perplexity(extra, corpus.val, max_windows=eval_windows)
        act_norms = activation_norms(dense, corpus.train) if any(CRITERIA[n].score == "activation" for n in names) else None
        for name in tqdm(names, desc=f"criteria {spec.name}", disable=not progress, leave=False):
            crit = CRITERIA[name]
            masks = masks_for(dense, crit, act_norms=act_norms, seed=train_cfg.seed)
            model = pruned_copy(dense, masks)
            verify_masks(model, masks, crit)
            ppl_pruned = perplexity(model, corpus.val, max_windows=eval_windows)
            continue_training(model, corpus, recover_cfg, masks=masks, progress=f"recover {name}" if progress else False)
            verify_masks(model, masks, crit)
            rows.append(
                QualityRow(
                    size=spec.name,
                    d_model=spec.model.d_model,
                    n_layers=spec.model.n_layers,
                    n_params=dense.num_params(),
                    n_prunable=sum(layer.weight.numel() for layer in prunable_linears(dense).values()),
                    criterion=name,
                    pattern=crit.pattern,
                    sparse_tensor_cores=crit.runs_on_sparse_tensor_cores,
                    ppl_dense=ppl_dense,
                    ppl_pruned=ppl_pruned,
                    ppl_recovered=perplexity(model, corpus.val, max_windows=eval_windows),
                    ppl_dense_extra=ppl_dense_extra,
                    mass_kept=weight_mass_kept(dense, masks),
                    train_steps=train_cfg.steps,
                    recover_steps=recover_cfg.steps,
                    train_lr=train_cfg.lr,
                    recover_lr=recover_cfg.lr,
                )
            )
    settings = _settings([spec], corpus, base_train, base_recover, threads, eval_windows, lr_rule)
    return QualityTable(rows, settings, {})


def _settings(specs, corpus: Corpus, train_cfg, recover_cfg, threads, eval_windows, lr_rule) -> dict:
    return {
        "sizes": {
            s.name: s.model.to_dict()
            | {"train_lr": recipe_for(train_cfg, s.model, lr_rule).lr, "recover_lr": recipe_for(recover_cfg, s.model, lr_rule).lr}
            for s in specs
        },
        "train": train_cfg.to_dict(),
        "recover": recover_cfg.to_dict(),
        "lr_rule": (
            f"width: lr = base lr * {BASE_WIDTH} / d_model (muP-style), for training and recovery; "
            "'train' and 'recover' give the base recipes"
            if lr_rule == "width" else "none: every size uses the 'train' and 'recover' learning rates as given"
        ),
        "threads": threads,
        "eval_windows": eval_windows,
        "corpus": {
            "files": list(corpus.files),
            "python_version": corpus.python_version,
            "sha256": corpus.sha256,
            "val_fraction": corpus.val_fraction,
            "train_bytes": corpus.train.numel(),
            "val_bytes": corpus.val.numel(),
        },
        "pruned_layers": "attention q/k/v/o and MLP fc1/fc2 of every block; embeddings and LM head dense",
        "calibration": "activation norms from 8 batches x 16 windows of training text, dense model, one pass",
    }


def run_sweep(
    sizes: list[str] | tuple[str, ...] = SWEEP_SIZES,
    corpus: Corpus | None = None,
    train_cfg: TrainConfig = DEFAULT_TRAIN,
    recover_cfg: TrainConfig = DEFAULT_RECOVER,
    *,
    criteria: list[str] | None = None,
    threads: int | None = 1,
    eval_windows: int | None = 256,
    lr_rule: str = "width",
    command: str = "",
    progress: bool = True,
) -> QualityTable:
    """:func:`run_size` for each size in ``sizes``, with provenance; what ``twofour quality`` runs."""
    from .corpus import load_corpus

    unknown = [s for s in sizes if s not in SIZES]
    if unknown or not sizes:
        raise ValueError(f"sizes must be a non-empty list drawn from {list(SIZES)}, got {list(sizes)!r}")
    corpus = corpus if corpus is not None else load_corpus()
    start = time.perf_counter()
    table = QualityTable()
    for name in sizes:
        table.rows += run_size(
            SIZES[name], corpus, train_cfg, recover_cfg,
            criteria=criteria, threads=threads, eval_windows=eval_windows, lr_rule=lr_rule, progress=progress,
        ).rows
    table.settings = _settings([SIZES[s] for s in sizes], corpus, train_cfg, recover_cfg, threads, eval_windows, lr_rule)
    table.provenance = {
        "label": "CPU measurement (perplexity does not depend on the device; times are this CPU's)",
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "cpu_model": cpu_model(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "threads": threads,
        "corpus_sha256": corpus.sha256,
        "seeds": {
            "train": train_cfg.seed,
            "recover": recover_cfg.seed,
            "random_mask": train_cfg.seed,
            "calibration": CALIBRATION_SEED,
        },
        "wall_time_s": round(time.perf_counter() - start, 1),
    }
    return table
