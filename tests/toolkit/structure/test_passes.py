"""The fast passes agree with the definition, whatever the layout, block size or thread count.

The reference is the definition written the slow, obvious way: non-zero by torch's own value
conversion, groups by reshaping a contiguous copy. Every fast path (word arithmetic counts,
2:4 word packing, storage-based counting of self-overlapping views, worker threads) is
compared with it on random weights that include ``-0.0``, NaN, inf, the fnuz NaN and
integer minimums.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.sparse._semi_structured_conversions import sparse_semi_structured_from_dense_cutlass

import twofour
import twofour._passes.tensors as tensors
from twofour._passes import threads as _threads, wordpack as _wordpack
from twofour._passes.bits import SUPPORTED_DTYPES
from twofour._passes.overlap import overlaps


def reference_nonzero(W: torch.Tensor) -> torch.Tensor:
    if W.is_floating_point():
        v = W.to(torch.float64) if W.element_size() > 1 else W.float()
        return (v != 0) | torch.isnan(v)
    return W.to(torch.int64) != 0


def reference_counts(W: torch.Tensor, m: int) -> torch.Tensor:
    rows, K = W.shape
    return reference_nonzero(W.contiguous()).reshape(rows, K // m, m).sum(dim=-1)


def random_weight(rows: int, K: int, dtype: torch.dtype, seed: int, zero_prob: float) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        W = torch.randn(rows, K, generator=g, dtype=torch.float64) * 3
        specials = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-30])
        pick = torch.randint(0, len(specials), (rows, K), generator=g)
        W = torch.where(torch.rand(rows, K, generator=g) < 0.3, specials[pick].double(), W)
        W = torch.where(torch.rand(rows, K, generator=g) < zero_prob, -0.0 * torch.ones((), dtype=torch.float64), W)
        W = W.to(dtype)
        if W.element_size() == 1:  # raw codes too: 0x80 is NaN in the fnuz formats, -0.0 elsewhere
            codes = W.view(torch.uint8).clone()
            codes[torch.rand(rows, K, generator=g) < 0.1] = 0x80
            W = codes.view(dtype)
        return W
    info = torch.iinfo(dtype)
    W = torch.randint(info.min, info.max + 1, (rows, K), generator=g, dtype=torch.int64)
    W = torch.where(torch.rand(rows, K, generator=g) < zero_prob, torch.zeros((), dtype=torch.int64), W)
    W[0, 0] = info.min  # -128 / -32768: the sign bit alone, still non-zero
    return W.to(dtype)


def assert_check_matches(W: torch.Tensor, n: int, m: int):
    counts = reference_counts(W, m)
    bad = counts > n
    report = twofour.check(W, n, m)
    assert torch.equal(report.bad_groups_per_row, bad.sum(dim=1))
    assert report.num_bad_groups == int(bad.sum())
    assert report.nonzero_fraction == pytest.approx(int(counts.sum()) / W.numel(), abs=1e-12)
    where = torch.nonzero(bad)[: report.bad_locations.shape[0]]
    assert torch.equal(report.bad_locations, where)
    assert torch.equal(twofour.nonzeros_per_group(W, m).long(), counts)


@settings(max_examples=120, deadline=None)
@given(
    rows=st.integers(1, 9),
    groups=st.integers(1, 12),
    nm=st.sampled_from([(2, 4), (1, 4), (3, 4), (1, 2), (2, 3), (4, 8), (2, 8), (1, 16)]),
    dtype=st.sampled_from(SUPPORTED_DTYPES),
    seed=st.integers(0, 2**16),
    zero_prob=st.floats(0.0, 1.0),
)
def test_check_matches_the_definition(rows, groups, nm, dtype, seed, zero_prob):
    n, m = nm
    assert_check_matches(random_weight(rows, groups * m, dtype, seed, zero_prob), n, m)


@pytest.mark.parametrize("target", [8, 16, 64, 1 << 18])  # column blocks of a row ... many rows per block
@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.float32, torch.float8_e4m3fnuz], ids=str)
def test_blocks_of_any_size_agree(monkeypatch, target, dtype):
    W = random_weight(7, 96, dtype, seed=3, zero_prob=0.5)
    original = tensors.blocks

    def small_blocks(r, c, unit=1, target_elems=None):
        return original(r, c, unit=unit, target_elems=target)

    for module in ("twofour.structure", "twofour.packing.packed"):
        monkeypatch.setattr(f"{module}.blocks", small_blocks)
    assert_check_matches(W, 2, 4)
    W24 = sparse_24(dtype, 7, 96, seed=4) if dtype != torch.float32 else twofour.prune(W.nan_to_num(0.0))[0]
    assert_round_trip(W24, twofour.pack(W24))


def test_a_single_very_wide_row_is_cut_into_blocks():
    assert list(tensors.blocks(1, 1 << 24, unit=32))[:2] == [(0, 1, 0, 1 << 18), (0, 1, 1 << 18, 2 << 18)]
    W = torch.zeros(1, 1 << 20, dtype=torch.float16)
    W[0, 5::4] = 1.0
    W[0, -4:] = 2.0
    report = twofour.check(W)
    assert report.num_bad_groups == 1 and report.bad_locations.tolist() == [[0, (1 << 18) - 1]]


@pytest.mark.parametrize(
    "make",
    [
        lambda W: W.t(),  # transposed
        lambda W: W[:, ::2],  # every other column
        lambda W: W[1:, 4:],  # an offset slice
        lambda W: W.t().contiguous().t(),  # column-major storage
    ],
    ids=["transposed", "strided columns", "slice", "column-major"],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.bfloat16], ids=str)
def test_non_contiguous_views(make, dtype):
    base = random_weight(16, 32, dtype, seed=5, zero_prob=0.6)
    W = make(base)
    assert not W.is_contiguous() or W.data_ptr() != base.data_ptr()
    assert_check_matches(W, 2, 4)
    W24 = sparse_24(dtype, *W.shape, seed=6)
    view = make(make(W24).contiguous()) if make(W24).shape == W.shape else W24.t().contiguous().t()
    assert not view.is_contiguous() and view.shape == W.shape
    assert_round_trip(view, twofour.pack(view))


@pytest.mark.parametrize(
    "make",
    [
        lambda s: s[:16].expand(5000, 16),  # row stride 0
        lambda s: s[:1].expand(64, 64),  # both strides 0: one element everywhere
        lambda s: s[:200].view(50, 4)[:, :1].expand(50, 64),  # column stride 0
        lambda s: torch.as_strided(s, (300, 64), (1, 1)),  # sliding windows
        lambda s: torch.as_strided(s, (200, 32), (3, 2)),  # overlapping, strided columns
    ],
    ids=["expand rows", "one element", "expand columns", "sliding window", "strided window"],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int8, torch.float8_e5m2fnuz], ids=str)
def test_self_overlapping_views_are_counted_by_their_storage(make, dtype):
    storage = random_weight(1, 1024, dtype, seed=11, zero_prob=0.5).reshape(-1)
    W = make(storage)
    assert overlaps(W)
    for n, m in ((2, 4), (1, 2)):
        assert_check_matches(W, n, m)


@pytest.mark.slow
def test_a_huge_expanded_view_is_checked_in_storage_time():
    row = torch.tensor([[1.0, 0.0, 2.0, 3.0] * 4, [0.0] * 16])
    W = row.repeat(1, 1).view(1, 32)[:, :16].expand(10**7, 16)  # 160 M elements, 16 stored
    report = twofour.check(W)
    assert report.num_bad_groups == 4 * 10**7 and report.num_groups == 4 * 10**7
    assert report.bad_locations.shape[0] == 1_000_000  # capped, says so
    assert not report.locations_complete
    W1 = torch.ones(()).expand(1 << 20, 1 << 20)  # 2**40 elements of one stored 1.0
    assert twofour.check(W1, max_locations=0).num_bad_groups == 1 << 38


def bits_of(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8)


def assert_round_trip(W: torch.Tensor, p) -> None:
    """``unpack(p)`` is ``W`` bit for bit, except that positions not kept (all zero) come back +0."""
    rows, K = W.shape
    kept = torch.zeros(rows, K // p.m, p.m, dtype=torch.bool)
    kept.scatter_(-1, p.indices(), True)
    kept = kept.view(rows, K)
    assert not reference_nonzero(W)[~kept].any()
    expected = W.contiguous().clone()
    expected.view(torch.uint8 if W.element_size() == 1 else torch.int16 if W.element_size() == 2 else torch.int32)[~kept] = 0
    assert torch.equal(bits_of(twofour.unpack(p)), bits_of(expected))


def sparse_24(dtype: torch.dtype, rows: int, K: int, seed: int) -> torch.Tensor:
    """A 2:4 weight whose groups hold 0, 1 or 2 non-zeros, -0.0 and NaN included."""
    g = torch.Generator().manual_seed(seed)
    W = random_weight(rows, K, dtype, seed, zero_prob=0.2)
    keep = torch.rand(rows, K // 4, 4, generator=g).argsort(-1)[..., :2]
    mask = torch.zeros(rows, K // 4, 4, dtype=torch.bool).scatter_(-1, keep, True).view(rows, K)
    mask &= torch.rand(rows, K, generator=g) < 0.8
    bits = W.view(torch.uint8 if W.element_size() == 1 else torch.int16 if W.element_size() == 2 else torch.int32)
    neg_zero = torch.tensor(1 << (8 * W.element_size() - 1)).to(bits.dtype) if W.is_floating_point() else 0
    fill = torch.where(torch.rand(rows, K, generator=g) < 0.3, neg_zero, 0) if W.is_floating_point() else 0
    out = torch.where(mask, bits, torch.as_tensor(fill).to(bits.dtype)).view(dtype)
    if dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz):  # 0x80 is NaN there: a non-zero
        out = torch.where(mask, out.view(torch.uint8), 0).view(dtype)
    return out


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.float8_e4m3fn], ids=str)
def test_word_packing_matches_the_general_path_and_pytorch(monkeypatch, dtype):
    W24 = sparse_24(dtype, 64, 128, seed=2)
    assert twofour.check(W24).valid
    assert _wordpack.supports(dtype, 2, 4, W24.shape[1])
    fast = twofour.pack(W24)
    assert_round_trip(W24, fast)
    monkeypatch.setattr("twofour._passes.wordpack.supports", lambda *a: False)
    general = twofour.pack(W24)
    assert torch.equal(fast.meta, general.meta)
    assert torch.equal(bits_of(fast.values), bits_of(general.values))
    assert torch.equal(bits_of(twofour.unpack(general)), bits_of(twofour.unpack(fast)))
    if dtype in (torch.float16, torch.bfloat16, torch.int8):
        values, meta = twofour.to_cutlass(fast)
        ref_values, ref_meta = sparse_semi_structured_from_dense_cutlass(twofour.unpack(fast))
        assert torch.equal(bits_of(values), bits_of(ref_values)) and torch.equal(meta, ref_meta)


def test_corrupt_meta_is_found_by_the_word_path():
    W24, _ = twofour.prune(torch.randn(8, 64, dtype=torch.float16))
    p = twofour.pack(W24)
    meta = p.meta.clone()
    meta[3, 2] = 0xEB  # group 4: a=3, b=2 (not increasing); group 5: a=2, b=3 (fine)
    bad = twofour.Packed(p.values, meta, p.shape, p.dtype)
    with pytest.raises(ValueError, match=r"1 groups .* \(first: row 3, group 4, positions \[3, 2\]\)"):
        twofour.unpack(bad)


# ------------------------------------------------------------------------------------------
# threads: the caller's setting is untouched, errors travel, one worker or several agree


def test_passes_leave_the_callers_thread_count_alone():
    before = torch.get_num_threads()
    W = torch.randn(64, 64)
    W24, _ = twofour.prune(W)
    twofour.check(W)
    twofour.unpack(twofour.pack(W24))
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="not 2:4"):
        twofour.pack(W)
    with pytest.raises(ValueError, match="NaN"):
        twofour.prune(torch.full((64, 64), float("nan")))
    assert torch.get_num_threads() == before


def test_one_thread_restores_on_error_and_nests():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="boom"):
        with _threads.one_thread():
            with _threads.one_thread():
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
            raise RuntimeError("boom")
    assert torch.get_num_threads() == before


def test_map_blocks_keeps_order_and_raises_the_first_error(monkeypatch):
    monkeypatch.setattr(_threads, "PASS_WORKERS", 2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    seen_threads = set()

    def square(item, state):
        seen_threads.add(torch.get_num_threads())
        return item * item

    assert _threads.map_blocks(square, range(100), state=lambda: None) == [i * i for i in range(100)]
    assert seen_threads == {1}

    def fail(item, state):
        if item == 7:
            raise KeyError("seven")
        return item

    with pytest.raises(KeyError, match="seven"):
        _threads.map_blocks(fail, range(50), state=lambda: None)


@pytest.mark.parametrize("workers", [1, 2])
def test_one_worker_or_two_give_the_same_answers(monkeypatch, workers):
    monkeypatch.setattr(_threads, "PASS_WORKERS", workers)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    W = random_weight(300, 1024, torch.float16, seed=9, zero_prob=0.5)
    assert_check_matches(W, 2, 4)
    W24, mask = twofour.prune(W.float().nan_to_num(0.0).half())
    assert int(mask.sum()) == W.numel() // 2
    assert_round_trip(W24, twofour.pack(W24))


def test_new_threads_still_get_the_callers_thread_count(monkeypatch):
    """A pass sets one thread per operation only for itself: a thread made afterwards sees the default."""
    import threading

    monkeypatch.setattr(_threads, "PASS_WORKERS", 2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    before = torch.get_num_threads()
    twofour.check(random_weight(256, 1024, torch.float16, seed=1, zero_prob=0.5))
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    t.start()
    t.join()
    assert seen == [before] and torch.get_num_threads() == before


def test_passes_from_two_threads_at_once(monkeypatch):
    import concurrent.futures

    monkeypatch.setattr(_threads, "PASS_WORKERS", 2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    weights = [random_weight(200, 512, torch.float16, seed=s, zero_prob=0.5) for s in range(6)]
    expected = [int((reference_counts(W, 4) > 2).sum()) for W in weights]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda W: twofour.check(W).num_bad_groups, weights * 3))
    assert got == expected * 3


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_helpers(monkeypatch):
    monkeypatch.setattr(_threads, "PASS_WORKERS", 2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    W = random_weight(256, 1024, torch.float16, seed=2, zero_prob=0.5)
    expected = twofour.check(W).num_bad_groups  # helpers exist in the parent now
    pid = os.fork()
    if pid == 0:  # the child: its helper threads did not survive the fork
        ok = twofour.check(W).num_bad_groups == expected
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
