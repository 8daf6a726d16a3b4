"""twofour.quality: corpus, model, training, pruning criteria, recovery, results table and CLI.

Everything runs on the "tiny" size (one block, d_model 32) for a few hundred steps at most, so
the module stays fast on 2 CPU cores, but the assertions are about real behaviour: training
lowers the loss, magnitude beats random pruning, masks survive recovery, runs are repeatable.
"""

from __future__ import annotations

import dataclasses
import importlib
import json

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import twofour
from twofour.cli import main
from twofour.quality import (
    CRITERIA,
    SIZES,
    STDLIB_FILES,
    ModelConfig,
    QualityTable,
    TinyLM,
    TrainConfig,
    activation_aware_scores,
    activation_norms,
    apply_masks,
    continue_training,
    deterministic,
    load_corpus,
    masks_for,
    perplexity,
    prunable_linears,
    pruned_copy,
    run_size,
    stored_sweep_path,
    train,
    verify_masks,
    weight_mass_kept,
)
from twofour.quality.corpus import stdlib_dir
from twofour.quality.experiments import BASE_WIDTH, DEFAULT_RECOVER, DEFAULT_TRAIN, RESULTS_VERSION, recipe_for

TINY = SIZES["tiny"].model
TINY_TRAIN = TrainConfig(steps=150, batch_size=16, lr=3e-3, warmup_steps=10, seed=0)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def trained(corpus):
    with deterministic(1):
        model, log = train(TINY, corpus, TINY_TRAIN, progress=False)
        norms = activation_norms(model, corpus.train)
    return model, log, norms


# ---- corpus ------------------------------------------------------------------------------


def test_corpus_is_the_fixed_sorted_stdlib_list(corpus):
    assert corpus.files == STDLIB_FILES == tuple(sorted(STDLIB_FILES))
    total = sum((stdlib_dir() / f).stat().st_size for f in STDLIB_FILES)
    assert corpus.train.numel() + corpus.val.numel() == total  # nothing dropped
    assert 0.09 < corpus.val.numel() / total < 0.11
    assert load_corpus().sha256 == corpus.sha256
    assert corpus.python_version.startswith("3.")


def test_corpus_split_is_per_file_tail(corpus):
    first = (stdlib_dir() / STDLIB_FILES[0]).read_bytes()
    cut = len(first) - int(len(first) * 0.1)
    assert bytes(corpus.train[:cut].tolist()) == first[:cut]
    assert bytes(corpus.val[: len(first) - cut].tolist()) == first[cut:]


def test_corpus_hash_changes_with_files():
    assert load_corpus(files=("bisect.py",)).sha256 != load_corpus(files=("abc.py",)).sha256


@pytest.mark.parametrize("bad", [0, 0.6, -0.1, True, "0.1"])
def test_corpus_rejects_bad_val_fraction(bad):
    with pytest.raises(ValueError, match="val_fraction"):
        load_corpus(val_fraction=bad)


def test_corpus_missing_file_names_it():
    with pytest.raises(FileNotFoundError, match="no_such_module.py"):
        load_corpus(files=("no_such_module.py",))
    with pytest.raises(ValueError, match="files must be"):
        load_corpus(files="abc.py")


# ---- model -------------------------------------------------------------------------------


def test_model_shapes_and_prunable_layers():
    model = TinyLM(ModelConfig(d_model=32, n_layers=2, n_heads=2, seq_len=16))
    assert model(torch.zeros(3, 16, dtype=torch.long)).shape == (3, 16, 256)
    names = list(prunable_linears(model))
    assert len(names) == 2 * 6
    assert all(n.startswith("blocks.") for n in names)
    assert not any("emb" in n or n == "head" for n in names)  # embeddings and LM head stay dense
    with pytest.raises(ValueError, match="seq_len=16"):
        model(torch.zeros(1, 17, dtype=torch.long))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d_model": 36, "n_heads": 4}, "multiple of 8"),
        ({"d_model": 64, "n_heads": 3}, "divisible by n_heads"),
        ({"n_layers": 0}, "n_layers must be a positive int"),
        ({"seq_len": 2.5}, "seq_len must be a positive int"),
    ],
)
def test_model_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**kwargs)
    with pytest.raises(TypeError, match="ModelConfig"):
        TinyLM({"d_model": 32})


# ---- training ----------------------------------------------------------------------------


def test_training_lowers_loss_and_perplexity(trained, corpus):
    model, log, _ = trained
    assert len(log.losses) == TINY_TRAIN.steps
    assert sum(log.losses[-10:]) / 10 < sum(log.losses[:10]) / 10 - 1.0
    untrained = TinyLM(TINY)
    assert perplexity(model, corpus.val) < 0.5 * perplexity(untrained, corpus.val)


def test_same_seed_gives_identical_perplexity(corpus):
    cfg = dataclasses.replace(TINY_TRAIN, steps=25)
    ppls = []
    for _ in range(2):
        with deterministic(1):
            model, _ = train(TINY, corpus, cfg, progress=False)
            ppls.append(perplexity(model, corpus.val, max_windows=32))
    assert ppls[0] == ppls[1]
    with deterministic(1):
        other, _ = train(TINY, corpus, dataclasses.replace(cfg, seed=1), progress=False)
        assert perplexity(other, corpus.val, max_windows=32) != ppls[0]


def test_a_cached_model_is_trained_once_and_read_back_bit_for_bit(corpus, monkeypatch, tmp_path):
    monkeypatch.setenv("TWOFOUR_CACHE", str(tmp_path))
    cfg = dataclasses.replace(TINY_TRAIN, steps=20)
    with deterministic(1):
        trained, log = train(TINY, corpus, cfg, progress=False, cache=True)
        monkeypatch.setattr(importlib.import_module("twofour.quality.train"), "continue_training",
                            lambda *a, **k: pytest.fail("trained again"))
        read, read_log = train(TINY, corpus, cfg, progress=False, cache=True)
    assert len(list(tmp_path.glob("*.pt"))) == 1 and not log.from_cache and read_log.from_cache
    assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), read.state_dict().values()))
    assert read_log.losses == log.losses and read_log.seconds == log.seconds > 0 and not read.training
    # Anything the bits depend on makes another file: the recipe, and the thread count.
    monkeypatch.undo()
    monkeypatch.setenv("TWOFOUR_CACHE", str(tmp_path))
    with deterministic(1):
        train(TINY, corpus, dataclasses.replace(cfg, steps=21), progress=False, cache=True)
    with deterministic(2):
        train(TINY, corpus, cfg, progress=False, cache=True)
    assert len(list(tmp_path.glob("*.pt"))) == 3


@pytest.mark.parametrize("content", [b"", b"not a torch file", None])
def test_a_cached_file_that_is_not_the_model_is_trained_over(corpus, monkeypatch, tmp_path, content):
    monkeypatch.setenv("TWOFOUR_CACHE", str(tmp_path))
    cfg = dataclasses.replace(TINY_TRAIN, steps=5)
    with deterministic(1):
        model, _ = train(TINY, corpus, cfg, progress=False, cache=True)
        path = next(tmp_path.glob("*.pt"))
        if content is None:  # a readable file of another model's weights
            torch.save({"state": {"wrong": torch.zeros(2)}, "losses": [1.0], "seconds": 1.0}, path)
        else:
            path.write_bytes(content)
        again, log = train(TINY, corpus, cfg, progress=False, cache=True)
        read, read_log = train(TINY, corpus, cfg, progress=False, cache=True)
    assert not log.from_cache and read_log.from_cache
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), read.state_dict().values()))


def test_deterministic_restores_settings():
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    with deterministic(1):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == before
    with pytest.raises(ValueError, match="threads"):
        with deterministic(0):
            pass


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"steps": 0}, "steps"),
        ({"batch_size": -1}, "batch_size"),
        ({"lr": 0}, "lr"),
        ({"min_lr_ratio": 2}, "min_lr_ratio"),
        ({"seed": -1}, "seed"),
    ],
)
def test_train_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_lr_schedule_warms_up_then_decays():
    cfg = TrainConfig(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    lrs = [cfg.lr_at(s) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lrs[-1] >= 0.1


def test_perplexity_rejects_too_little_text():
    with pytest.raises(ValueError, match="val has 10 bytes"):
        perplexity(TinyLM(TINY), torch.zeros(10, dtype=torch.uint8))


# ---- criteria ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CRITERIA))
def test_every_criterion_prunes_half_and_passes_check(trained, name):
    model, _, norms = trained
    masks = masks_for(model, name, act_norms=norms)
    pruned = pruned_copy(model, masks)
    verify_masks(pruned, masks, name)
    kept = sum(int(m.sum()) for m in masks.values())
    assert kept * 2 == sum(m.numel() for m in masks.values())
    crit = CRITERIA[name]
    for layer in prunable_linears(pruned).values():
        if crit.m is not None:
            assert twofour.check(layer.weight.detach(), crit.n, crit.m).valid
    # the dense model is untouched
    assert all(bool((layer.weight != 0).all()) for layer in prunable_linears(model).values())


def test_unstructured_half_is_not_2to4(trained):
    model, _, _ = trained
    masks = masks_for(model, "unstructured 50%")
    reports = [twofour.check(layer.weight.detach() * masks[n]) for n, layer in prunable_linears(model).items()]
    assert not any(r.valid for r in reports)
    with pytest.raises(AssertionError, match="not 2:4"):
        verify_masks(pruned_copy(model, masks), masks, "magnitude 2:4")


def test_weight_mass_kept_orders_criteria(trained):
    """Magnitude 2:4 keeps the most |W| of any 2:4 mask; 4:8 and unstructured relax the pattern further."""
    model, _, norms = trained
    mass = {name: weight_mass_kept(model, masks_for(model, name, act_norms=norms)) for name in CRITERIA}
    assert mass["magnitude 2:4"] >= mass["activation-aware 2:4"] > mass["random 2:4"]
    assert mass["unstructured 50%"] >= mass["magnitude 4:8"] >= mass["magnitude 2:4"]
    assert 0.4 < mass["random 2:4"] < 0.6


def test_magnitude_beats_random_on_trained_model(trained, corpus):
    model, _, _ = trained
    ppl = {name: perplexity(pruned_copy(model, masks_for(model, name)), corpus.val) for name in ("random 2:4", "magnitude 2:4")}
    assert ppl["magnitude 2:4"] < ppl["random 2:4"]


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(0.01, 100), seed=st.integers(0, 1000))
def test_activation_scores_rank_invariant_to_norm_scale(scale, seed):
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(8, 16, generator=g)
    x_norm = torch.rand(16, generator=g) + 0.1
    m1 = twofour.prune(W, scores=activation_aware_scores(W, x_norm))[1]
    m2 = twofour.prune(W, scores=activation_aware_scores(W, x_norm * scale))[1]
    assert torch.equal(m1, m2)
    # equal input norms: activation-aware is magnitude
    assert torch.equal(twofour.prune(W, scores=activation_aware_scores(W, torch.ones(16)))[1], twofour.prune(W)[1])


def test_activation_norms_match_a_manual_computation(trained, corpus):
    model, _, _ = trained
    norms = activation_norms(model, corpus.train, batches=2, batch_size=4, seed=7)
    assert set(norms) == set(prunable_linears(model))
    captured = []
    layer = prunable_linears(model)["blocks.0.mlp.fc2"]
    handle = layer.register_forward_hook(lambda _m, args, _o: captured.append(args[0].reshape(-1, args[0].shape[-1])))
    g = torch.Generator().manual_seed(7)
    from twofour.quality.train import sample_batch

    with torch.no_grad():
        for _ in range(2):
            model(sample_batch(corpus.train, 4, model.cfg.seq_len, g)[0])
    handle.remove()
    torch.testing.assert_close(norms["blocks.0.mlp.fc2"], torch.cat(captured).norm(dim=0))


def test_criteria_errors(trained):
    model, _, _ = trained
    with pytest.raises(ValueError, match="criterion must be one of"):
        masks_for(model, "magnitude 3:4")
    with pytest.raises(ValueError, match="needs act_norms"):
        masks_for(model, "activation-aware 2:4")
    with pytest.raises(ValueError, match="one entry per input feature"):
        activation_aware_scores(torch.ones(4, 8), torch.ones(4))
    with pytest.raises(AssertionError, match="no mask for layers"):
        verify_masks(model, {}, "magnitude 2:4")


# ---- recovery ----------------------------------------------------------------------------


def test_masked_finetuning_keeps_masks_and_lowers_perplexity(trained, corpus):
    model, _, _ = trained
    masks = masks_for(model, "magnitude 2:4")
    pruned = pruned_copy(model, masks)
    before = perplexity(pruned, corpus.val)
    with deterministic(1):
        continue_training(pruned, corpus, TrainConfig(steps=60, lr=1e-3, warmup_steps=5, seed=1), masks=masks, progress=False)
    verify_masks(pruned, masks, "magnitude 2:4")
    for name, layer in prunable_linears(pruned).items():
        assert twofour.check(layer.weight.detach()).valid
        assert bool((layer.weight[~masks[name]] == 0).all())
    assert perplexity(pruned, corpus.val) < before


def test_unmasked_finetuning_breaks_the_pattern(trained, corpus):
    """Why masks are re-applied: a plain optimizer step refills the zeros."""
    model, _, _ = trained
    masks = masks_for(model, "magnitude 2:4")
    pruned = pruned_copy(model, masks)
    with deterministic(1):
        continue_training(pruned, corpus, TrainConfig(steps=2, warmup_steps=0), progress=False)
    assert not any(twofour.check(l.weight.detach()).valid for l in prunable_linears(pruned).values())


def test_apply_masks_errors(trained):
    model, _, _ = trained
    with pytest.raises(KeyError, match="nope"):
        apply_masks(pruned_copy(model, {}), {"nope": torch.ones(1, dtype=torch.bool)})
    with pytest.raises(ValueError, match="has shape"):
        apply_masks(pruned_copy(model, {}), {"blocks.0.mlp.fc1": torch.ones(2, 2, dtype=torch.bool)})


# ---- experiments, table, results file ----------------------------------------------------


TINY_RECOVER = TrainConfig(steps=10, lr=1e-3, warmup_steps=2, seed=1)


@pytest.fixture(scope="module")
def tiny_table(corpus):
    # run_size takes base-width recipes and scales them by width (tiny is half the base width, so
    # twice the rate); pass rates that the rule turns back into TINY_TRAIN's and TINY_RECOVER's.
    to_base = TINY.d_model / BASE_WIDTH
    return run_size(
        SIZES["tiny"], corpus,
        dataclasses.replace(TINY_TRAIN, lr=TINY_TRAIN.lr * to_base),
        dataclasses.replace(TINY_RECOVER, lr=TINY_RECOVER.lr * to_base),
        criteria=["random 2:4", "magnitude 2:4"], eval_windows=32, progress=False,
    )


def test_recipe_for_scales_the_learning_rate_as_one_over_width():
    base = TrainConfig(steps=10, lr=3e-3)
    at_base = ModelConfig(d_model=BASE_WIDTH, n_layers=1, n_heads=2, seq_len=16)
    assert recipe_for(base, at_base) == base  # the base width keeps its recipe exactly
    for d_model in (32, 96, 128, 256):
        cfg = ModelConfig(d_model=d_model, n_layers=1, n_heads=2, seq_len=16)
        scaled = recipe_for(base, cfg)
        assert scaled.lr * d_model == pytest.approx(base.lr * BASE_WIDTH)
        assert dataclasses.replace(scaled, lr=base.lr) == base  # nothing but the learning rate changes
        assert recipe_for(base, cfg, "none") == base
    # the stored sweep's small size is the base width, so the chapter's live run uses DEFAULT_TRAIN as is
    assert SIZES["small"].model.d_model == BASE_WIDTH
    with pytest.raises(ValueError, match="lr_rule must be one of"):
        recipe_for(base, at_base, "sqrt")


def test_run_size_rows(tiny_table):
    assert [r.criterion for r in tiny_table] == ["random 2:4", "magnitude 2:4"]
    # the rows record the learning rates the width rule gave this size
    for r in tiny_table:
        assert r.train_lr == pytest.approx(TINY_TRAIN.lr) and r.recover_lr == pytest.approx(TINY_RECOVER.lr)
    assert tiny_table.settings["sizes"]["tiny"]["train_lr"] == tiny_table.rows[0].train_lr
    assert tiny_table.settings["train"]["lr"] == pytest.approx(TINY_TRAIN.lr / 2)  # the base recipe, before the rule
    rnd, mag = tiny_table.rows
    assert rnd.ppl_dense == mag.ppl_dense and rnd.ppl_dense_extra == mag.ppl_dense_extra
    assert mag.ppl_pruned < rnd.ppl_pruned
    assert all(r.ppl_pruned > r.ppl_dense for r in tiny_table)
    assert mag.pattern == "2:4" and mag.sparse_tensor_cores
    assert tiny_table.settings["corpus"]["files"] == list(STDLIB_FILES)


def test_table_rows_print_and_round_trip(tiny_table, tmp_path):
    rows = tiny_table.to_rows()
    assert rows[1]["criterion"] == "magnitude 2:4" and rows[1]["gap_pruned"] == pytest.approx(rows[1]["ppl_pruned"] / rows[1]["ppl_dense"])
    text = str(tiny_table)
    assert "magnitude 2:4" in text and "mass kept" in text
    assert "<table>" in tiny_table._repr_html_()
    assert len(tiny_table.where(criterion="magnitude 2:4")) == 1
    with pytest.raises(ValueError, match="unknown field"):
        tiny_table.where(colour="red")
    path = tiny_table.save(tmp_path / "q.json")
    again = QualityTable.load(path)
    assert again.rows == tiny_table.rows and again.settings == json.loads(json.dumps(tiny_table.settings))


def test_load_rejects_other_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"kind": "twofour.bench"}))
    with pytest.raises(ValueError, match="not a twofour quality results file"):
        QualityTable.load(bad)
    bad.write_text(json.dumps({"kind": "twofour.quality", "version": RESULTS_VERSION, "rows": [{"size": "x"}]}))
    with pytest.raises(ValueError, match=r"rows/0 lacks fields \['criterion'"):
        QualityTable.load(bad)
    bad.write_text(json.dumps({"kind": "twofour.quality", "version": RESULTS_VERSION,
                               "rows": [{**json.loads(stored_sweep_path().read_text())["rows"][0], "colour": "red"}]}))
    with pytest.raises(ValueError, match=r"rows/0: Additional properties are not allowed \('colour' was unexpected\)"):
        QualityTable.load(bad)


def test_stored_sweep_has_provenance_and_every_criterion():
    table = QualityTable.load(stored_sweep_path())
    prov = table.provenance
    for key in ("cpu_model", "torch_version", "python_version", "corpus_sha256", "date_utc", "command", "seeds", "wall_time_s"):
        assert prov.get(key) not in (None, ""), key
    assert prov["command"].startswith("twofour quality --out")
    assert "CPU" in prov["label"]
    assert len(table.sizes()) >= 3 and table.criteria() == list(CRITERIA)
    assert table.settings["corpus"]["files"] == list(STDLIB_FILES)
    for size in table.sizes():
        rows = {r.criterion: r for r in table.where(size=size)}
        assert rows["magnitude 2:4"].ppl_pruned < rows["random 2:4"].ppl_pruned
        assert all(r.ppl_pruned > r.ppl_dense for r in rows.values())
    sizes = [table.where(size=s).rows[0].n_params for s in table.sizes()]
    assert sizes == sorted(sizes)
    # every size was trained with the learning rates the width rule gives it, from the defaults
    assert table.settings["train"] == DEFAULT_TRAIN.to_dict() and table.settings["recover"] == DEFAULT_RECOVER.to_dict()
    assert "--lr-rule width" in prov["command"]
    for row in table:
        cfg = SIZES[row.size].model
        assert (row.d_model, row.n_layers) == (cfg.d_model, cfg.n_layers)
        assert row.train_lr == recipe_for(DEFAULT_TRAIN, cfg).lr and row.recover_lr == recipe_for(DEFAULT_RECOVER, cfg).lr


# ---- CLI ---------------------------------------------------------------------------------


def test_cli_writes_results_with_provenance(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    code = main([
        "quality", "--out", str(out), "--sizes", "tiny", "--criteria", "magnitude 2:4",
        "--train-steps", "20", "--recover-steps", "3", "--no-progress",
    ])
    assert code == 0
    table = QualityTable.load(out)
    assert len(table) == 1 and table.rows[0].train_steps == 20 and table.rows[0].recover_steps == 3
    assert table.provenance["command"].startswith(f"twofour quality --out {out} --sizes tiny")
    assert "--lr-rule width" in table.provenance["command"]
    assert table.made_here(load_corpus())
    table.provenance["platform"] = "elsewhere"
    assert not table.made_here(load_corpus())
    assert table.provenance["corpus_sha256"] == load_corpus().sha256
    assert f"wrote 1 rows to {out}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, match",
    [
        (["--sizes", "huge"], "--sizes: unknown size"),
        (["--criteria", "magnitude 3:4"], "--criteria: unknown criterion"),
        (["--seed", "-2"], "--seed must be an integer from 0 to 9,223,372,036,854,775,806"),
        # past torch's 64-bit seeds: a one-line refusal, not "ValueError: Overflow when unpacking long long"
        (["--seed", str(10**23)], "--seed must be an integer from 0 to"),
        (["--seed", str(2**64 - 1)], "--seed must be an integer from 0 to"),
        # the same rows trained twice
        (["--sizes", "tiny,tiny"], "--sizes: 'tiny' given more than once"),
        (["--sizes", "tiny", "--criteria", "magnitude 2:4,magnitude 2:4"], "--criteria: 'magnitude 2:4' given more than once"),
    ],
)
def test_cli_bad_input(tmp_path, capsys, args, match):
    assert main(["quality", "--out", str(tmp_path / "x.json"), *args]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_rejects_an_unknown_lr_rule(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["quality", "--out", str(tmp_path / "x.json"), "--lr-rule", "sqrt"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--lr-rule" in err and "invalid choice" in err and "width" in err


def test_cli_out_must_not_be_a_directory(tmp_path, capsys):
    assert main(["quality", "--out", str(tmp_path), "--sizes", "tiny"]) == 2
    assert "is a directory" in capsys.readouterr().err



# ---- figures and cited numbers -----------------------------------------------------------


def test_figures_draw_what_the_table_holds(tiny_table):
    from twofour.course.figures import quality as figures

    fig, ax = figures.plot_criteria(tiny_table)
    assert len(ax.lines) == 2 * len(tiny_table) + 2  # one-shot + recovered per criterion, two dense lines
    fig, ax = figures.plot_mass_vs_quality(tiny_table)
    assert len(ax.collections) == 1  # random 2:4 is left out by default
    fig, ax = figures.plot_mass_vs_quality(tiny_table, exclude=())
    assert len(ax.collections) == 2
    with pytest.raises(ValueError, match="nothing left to plot"):
        figures.plot_size_sweep(tiny_table.where(criterion="random 2:4"))
    with pytest.raises(ValueError, match="size must be one of"):
        figures.plot_criteria(tiny_table, size="huge")
    fig, ax = figures.plot_published()
    assert len(ax.lines) == 5 + 1


def test_published_ratios():
    from twofour.quality import published

    assert published.ratio("LLaMA-2-7B", "2:4 magnitude") == pytest.approx(54.59 / 5.12)
    for model, row in published.WANDA_LLAMA2.items():
        # the README's ordering at every size: unstructured 50% <= 4:8 <= 2:4 for Wanda
        assert row["50% Wanda"] <= row["4:8 Wanda"] <= row["2:4 Wanda"], model
    with pytest.raises(ValueError, match="model must be one of"):
        published.ratio("LLaMA-3-8B", "dense")
    with pytest.raises(ValueError, match="method must be one of"):
        published.ratio("LLaMA-2-7B", "2:4 random")
