"""twofour.course.meta_layout and twofour.course.figures.layouts: the traced permutation is the one
to_cutlass applies, and the chapter figures build from real data."""

from __future__ import annotations

import doctest

import matplotlib
import pytest
import torch

import twofour
from twofour.course import meta_layout
from twofour.course.figures import layouts
from twofour.course.meta_layout import cutlass_meta_slots

matplotlib.use("Agg")


@pytest.mark.parametrize("dtype, shape", [(torch.float16, (64, 128)), (torch.bfloat16, (32, 64)), (torch.int8, (32, 128))])
def test_slots_are_the_permutation_to_cutlass_applies(dtype, shape):
    slots = cutlass_meta_slots(*shape, dtype=dtype)
    assert sorted(slots.flatten().tolist()) == list(range(slots.numel()))
    W = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    W = twofour.prune(W.to(dtype) if dtype != torch.int8 else (W * 20).to(torch.int8))[0]
    packed = twofour.pack(W)
    meta_dtype = torch.int16 if dtype != torch.int8 else torch.int32
    logical = packed.meta.contiguous().view(meta_dtype).view(shape[0], -1)
    _, reordered = twofour.to_cutlass(packed)
    assert torch.equal(reordered.flatten()[slots.flatten()], logical.flatten())


@pytest.mark.parametrize(
    "args, message",
    [((30, 64), "rows must be a positive multiple of 32"), ((32, 48), "cols must be a positive multiple of 32")],
)
def test_slots_bad_shapes(args, message):
    with pytest.raises(ValueError, match=message):
        cutlass_meta_slots(*args)


def test_slots_bad_dtype():
    with pytest.raises(ValueError, match="float16, bfloat16 or int8"):
        cutlass_meta_slots(32, 64, torch.float32)


def test_figures_build():
    counts = {"a": torch.tensor([[2, 3], [1, 4]], dtype=torch.uint8), "b": torch.zeros(2, 2, dtype=torch.uint8)}
    fig = layouts.nonzeros_heatmaps(counts, title="t")
    assert "2 of 4 groups > 2" in fig.axes[0].get_title()
    fig = layouts.kept_bars({"w": {"2:4": 0.8, "free": 0.9}}, ylabel="kept")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["w"]
    fig = layouts.meta_slots_figure(cutlass_meta_slots(32, 64))
    assert len(fig.axes[0].texts) == 32 * 4
    with pytest.raises(ValueError, match="counts must map"):
        layouts.nonzeros_heatmaps({})
    with pytest.raises(ValueError, match="slots must be"):
        layouts.meta_slots_figure(torch.zeros(3))
    with pytest.raises(ValueError, match="highlight must be at most"):
        layouts.meta_slots_figure(cutlass_meta_slots(32, 64), highlight=9)


def test_doctests():
    for module in (meta_layout, layouts):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
