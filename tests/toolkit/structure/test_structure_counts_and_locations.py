"""twofour.check and prune: counts and locations that a plausible one-token bug would get wrong.

Each test names the one-token mistake it catches (`make mutate` reports the ones no test catches).
"""

from __future__ import annotations

import pytest
import torch

import twofour
from twofour.structure import nonzeros_per_group


def _with_bad_groups(rows, K, bad):
    """A valid 2:4 float32 weight with three non-zeros in each ``(row, group)`` of ``bad``."""
    W = torch.zeros(rows, K)
    W[:, 0::4] = 1.0
    W[:, 1::4] = 2.0
    for r, g in bad:
        W[r, 4 * g + 2] = 3.0
    return W


def test_summary_counts_rows_not_groups():
    # Row 1 holds two bad groups, row 5 one: 3 bad groups in 2 of 8 rows (a summary that
    # counted bad groups as bad rows would say 3).
    report = twofour.check(_with_bad_groups(8, 16, [(1, 0), (1, 3), (5, 2)]))
    assert report.num_bad_groups == 3
    assert report.bad_groups_per_row.tolist() == [0, 2, 0, 0, 0, 1, 0, 0]
    assert report.bad_rows.tolist() == [1, 5]
    assert "3 of 32 groups (9.38%) hold more than 2 non-zeros, in 2 of 8 rows of 8x16 float32" in report.summary()


def test_valid_summary_states_the_pattern_and_the_nonzero_fraction():
    report = twofour.check(_with_bad_groups(2, 8, []))
    assert report.valid and report.fraction_bad == 0.0 and report.fraction_valid == 1.0
    assert report.summary() == "valid 2:4: all 4 groups of 2x8 float32 hold at most 2 non-zeros (50.0% of elements non-zero)"


def test_fractions_and_the_printed_report():
    report = twofour.check(_with_bad_groups(4, 8, [(2, 1)]))
    assert report.fraction_bad == 1 / 8
    assert report.fraction_valid == 7 / 8
    assert report.nonzero_fraction == (16 + 1) / 32
    text = str(report)
    assert "first offending groups (of 1):" in text
    assert "  row 2, group 1 (columns 4-7): 3 non-zeros [1, 2, 3, 0]" in text
    assert "twofour.prune(W)" in text


def test_locations_after_the_first_block_name_the_right_row():
    # 512 x 256 float32 is 128 Ki elements: check() counts it in blocks of 256 rows, so row 300
    # is in the second block and its location needs the block's first row added.
    report = twofour.check(_with_bad_groups(512, 256, [(7, 3), (300, 5)]))
    assert report.bad_locations.tolist() == [[7, 3], [300, 5]]
    assert [(v.row, v.group) for v in report.examples] == [(7, 3), (300, 5)]
    assert report.examples[1].columns == (20, 24)


def test_locations_in_a_row_cut_into_column_blocks_name_the_right_group():
    # One row of 2**18 elements is cut into column ranges of 64 Ki: group 17,500 starts at
    # column 70,000, in the second range.
    report = twofour.check(_with_bad_groups(2, 1 << 18, [(1, 17_500)]))
    assert report.bad_locations.tolist() == [[1, 17_500]]
    assert report.bad_groups_per_row.tolist() == [0, 1]
    assert report.bad_groups_per_row.dtype == torch.int64
    assert str(report.examples[0]).startswith("row 1, group 17500 (columns 70000-70003): 3 non-zeros")


def test_pack_refusal_names_the_first_bad_group_after_the_first_block():
    W = _with_bad_groups(512, 256, [(300, 5), (400, 1)])
    with pytest.raises(ValueError, match=r"2 of 32,768 groups .*first: row 300, group 5 \(columns 20-23\)"):
        twofour.pack(W)


def test_max_examples_and_max_locations_cap_what_is_kept():
    W = _with_bad_groups(4, 16, [(0, 0), (1, 1), (2, 2), (3, 3)])
    report = twofour.check(W, max_examples=2, max_locations=3)
    assert report.num_bad_groups == 4
    assert len(report.examples) == 2
    assert report.bad_locations.shape == (3, 2)
    assert not report.locations_complete
    assert twofour.check(W).locations_complete
    none = twofour.check(W, max_examples=0, max_locations=0)
    assert none.examples == () and none.bad_locations.shape == (0, 2) and none.num_bad_groups == 4


@pytest.mark.parametrize("value", [-1, 1.5, True])
def test_max_examples_must_be_a_non_negative_int(value):
    with pytest.raises(ValueError, match="max_examples must be a non-negative int"):
        twofour.check(torch.zeros(2, 4), max_examples=value)
    with pytest.raises(ValueError, match="max_locations must be a non-negative int"):
        twofour.check(torch.zeros(2, 4), max_locations=value)


def test_n_and_m_other_than_2_4():
    W = torch.tensor([[1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0]])
    assert twofour.check(W, 1, 4).num_bad_groups == 1  # 1:4 allows one non-zero per group
    assert twofour.check(W, 2, 8).num_bad_groups == 1  # three non-zeros in the group of 8
    assert twofour.check(W, 3, 8).valid
    assert nonzeros_per_group(W, 4).tolist() == [[2, 1]]
    assert nonzeros_per_group(W, 2).tolist() == [[1, 1, 0, 1]]


def test_prune_keeps_the_largest_and_breaks_ties_to_the_left():
    W = torch.tensor([[1.0, -1.0, 1.0, 0.5, 4.0, 3.0, -5.0, 0.0]])
    Wp, mask = twofour.prune(W)
    assert Wp.tolist() == [[1.0, -1.0, 0.0, 0.0, 4.0, 0.0, -5.0, 0.0]]
    assert mask.sum().item() == 4
    W1, _ = twofour.prune(W, 1, 4)
    assert W1.tolist() == [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, -5.0, 0.0]]


def test_prune_by_scores_ignores_the_magnitudes():
    W = torch.tensor([[4.0, 3.0, 2.0, 1.0]])
    scores = torch.tensor([[0.0, -1.0, 0.5, 2.0]])  # |score| ranks positions 3, 1, 2, 0
    Wp, mask = twofour.prune(W, scores=scores)
    assert Wp.tolist() == [[0.0, 3.0, 0.0, 1.0]]
    assert mask.tolist() == [[False, True, False, True]]


def test_html_marks_non_zeros_and_counts_the_rest():
    W = _with_bad_groups(4, 8, [(0, 0), (1, 1), (2, 0)])
    html = twofour.check(W, max_examples=2)._repr_html_()
    assert '<td style="padding:2px 6px;background:#f6d5d2;">3</td>' in html
    assert '<td style="padding:2px 6px;">0</td>' in html
    assert "<p>&hellip; and 1 more offending groups.</p>" in html
    assert "more offending groups" not in twofour.check(W)._repr_html_()


def test_prune_refuses_nan_scores_with_the_fix():
    W = torch.ones(2, 4)
    scores = torch.tensor([[1.0, float("nan"), 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="a NaN has no magnitude to rank, so fix or mask it before pruning$"):
        twofour.prune(W, scores=scores)


def test_column_blocks_of_a_wide_weight_never_split_a_group():
    # 5 rows of 1,048,580 columns: check() cuts each row into column ranges of about
    # 5 * 1,048,580 / 16 = 327,681 elements, which must be rounded to whole groups of 4. The bad
    # group 81,920 (columns 327,680-327,683) would otherwise straddle two ranges and be missed.
    W = _with_bad_groups(5, 1_048_580, [(3, 81_920)])
    report = twofour.check(W)
    assert report.num_bad_groups == 1
    assert report.bad_locations.tolist() == [[3, 81_920]]


def test_examples_keep_float64_values_exactly():
    # The values a violation reports are the weight's own: 0.1 in float64, not float32's 0.10000000149011612.
    W = torch.zeros(2, 8, dtype=torch.float64)
    W[1, 4:7] = 0.1
    [example] = twofour.check(W).examples
    assert example.values == (0.1, 0.1, 0.1, 0.0)
    assert all(type(v) is float for v in example.values)
    # int8 values stay ints.
    [example] = twofour.check(torch.tensor([[1, -2, 3, 0]], dtype=torch.int8)).examples
    assert example.values == (1, -2, 3, 0) and all(type(v) is int for v in example.values)


def test_a_stride_0_wide_row_locates_a_group_across_a_block_edge():  # no "expand" in the name: mutmut deselects -k expand
    # One stored row of 72,000 columns, expanded to 3 rows (stride 0: the view overlaps itself).
    # Its locations are read in column blocks of 65,535 (a multiple of m = 3); a block cut at
    # 65,536 would split group 21,845 (columns 65,535-65,537) and miss it.
    K = 3 * 24_000
    row = torch.zeros(K)
    row[65_535:65_538] = 1.0
    report = twofour.check(row.expand(3, K), 1, 3)
    assert report.num_bad_groups == 3
    assert report.bad_locations.tolist() == [[0, 21_845], [1, 21_845], [2, 21_845]]
    assert report.examples[0].columns == (65_535, 65_538) and report.examples[0].values == (1.0, 1.0, 1.0)


def test_the_report_text_is_the_summary_then_the_examples_then_the_fix():
    W = torch.tensor([[1.0, 2.0, 3.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    assert str(twofour.check(W)).split("\n") == [
        "NOT 2:4: 1 of 2 groups (50.00%) hold more than 2 non-zeros, in 1 of 1 rows of 1x8 float32",
        "first offending groups (of 1):",
        "  row 0, group 0 (columns 0-3): 3 non-zeros [1, 2, 3, 0]",
        "fix: twofour.prune(W) keeps the n largest-magnitude values of every group",
    ]


def test_the_summary_of_one_stored_row_repeated_counts_every_row_as_broken():
    # A weight whose rows are all one stored row (stride 0): when that row breaks 2:4, every row does.
    row = torch.tensor([[1.0, 2.0, 3.0, 0.0, 1.0, 0.0, 0.0, 0.0]])
    report = twofour.check(row.expand(10**12, 8), max_locations=0)
    assert report.summary() == (
        "NOT 2:4: 1,000,000,000,000 of 2,000,000,000,000 groups (50.00%) hold more than 2 non-zeros, "
        "in 1,000,000,000,000 of 1,000,000,000,000 rows of 1000000000000x8 float32"
    )


def test_prune_nan_message_names_the_tensor_that_holds_it():
    # The message says which argument to fix: W when ranking by magnitude, scores otherwise.
    W = torch.tensor([[1.0, float("nan"), 0.0, 2.0]])
    with pytest.raises(ValueError, match=r"^W contains NaN \(first at row 0, column 1\)"):
        twofour.prune(W)
    scores = torch.tensor([[1.0, 1.0, 1.0, float("nan")]])
    with pytest.raises(ValueError, match=r"^scores contains NaN \(first at row 0, column 3\)"):
        twofour.prune(torch.ones(1, 4), scores=scores)


def test_prune_refuses_nested_and_sparse_scores_by_what_they_are():
    # A nested tensor reports layout torch.strided, so the message must say "nested", not its layout.
    nested = torch.nested.nested_tensor([torch.zeros(4), torch.zeros(4)])
    assert nested.layout == torch.strided
    with pytest.raises(TypeError, match=r"^scores must be a dense \(strided\) tensor of W's shape \(2, 4\), got a nested tensor$"):
        twofour.prune(torch.ones(2, 4), scores=nested)
    with pytest.raises(TypeError, match=r"got layout torch\.sparse_coo$"):
        twofour.prune(torch.ones(2, 4), scores=torch.ones(2, 4).to_sparse())


def test_prune_refuses_scores_on_another_device_and_names_both():
    # The meta device stands in for a GPU: the check compares devices, whatever they are.
    scores = torch.ones(2, 4, device="meta")
    with pytest.raises(ValueError, match=r"^scores is on meta but W is on cpu; move one of them$"):
        twofour.prune(torch.ones(2, 4), scores=scores)


def test_identical_rows_are_one_lazy_range_not_an_index_list():
    from twofour.structure import _bad_row_runs, _overlap_candidates

    # (no "expand" in this test's name: make mutate deselects those with -k, as slow)
    same = torch.ones(1, dtype=torch.int64).expand(10**15)  # one stored row, 10**15 of them
    assert list(_bad_row_runs(same)) == [(0, 10**15)]
    assert list(_bad_row_runs(torch.zeros(1, dtype=torch.int64).expand(3))) == []
    assert list(_bad_row_runs(torch.tensor([0, 2, 0, 1]))) == [(1, 2), (3, 4)]
    assert list(_bad_row_runs(torch.tensor([3, 2, 0, 1, 1]))) == [(0, 2), (3, 5)]
    assert list(_bad_row_runs(torch.zeros(4, dtype=torch.int64))) == []
    # Listing reads a run of rows per block, in row order, and never a row without a bad group.
    blocks = _overlap_candidates(16, 4, torch.tensor([1, 1, 0, 1]))
    assert list(blocks) == [(0, 2, 0, 16), (3, 4, 0, 16)]
    first = next(_overlap_candidates(16, 4, same))
    assert first == (0, (1 << 16) // 16, 0, 16)
