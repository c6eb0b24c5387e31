"""Each fleet figure on a hand-computed case (definitions: docs/definitions.md, Fleet trace analysis)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parity.trace.fleet import figures as fig
from parity.trace.fleet import stragglers as st
from parity.trace.fleet.matching import canonical_op, order_by, parse_ranks

# two collectives: ranks 0, 1, 2 arrive at 10, 40, 25 (ends 100, 70, 100); ranks 0, 1 at 5, 5
ARRIVAL = np.array([10, 40, 25, 5, 5], dtype=np.int64)
END = np.array([100, 70, 100, 50, 60], dtype=np.int64)
RANKS = np.array([0, 1, 2, 0, 1], dtype=np.int64)
STARTS = np.array([0, 3])
SEG = fig.segment_ids(STARTS, 5)


def test_segments_and_medians():
    assert SEG.tolist() == [0, 0, 0, 1, 1]
    assert fig.grouped_median_ns(np.zeros(4, int), np.array([1, 3, 10, 20]), 1).tolist() == [6]
    assert fig.grouped_median_ns(np.zeros(3, int), np.array([5, 1, 9]), 1).tolist() == [5]
    assert fig.grouped_median_ns(np.array([1, 1]), np.array([-3, -4]), 3).tolist() == [0, -4, 0]
    big = np.array([2**62 + 1, 2**62 + 3])
    assert fig.grouped_median_ns(np.zeros(2, int), big, 1).tolist() == [2**62 + 2]
    assert fig.grouped_sum_ns(np.array([2, 0, 2]), np.array([5, 7, 11]), 3).tolist() == [7, 0, 16]


def test_skew_wait_lateness():
    first, last = fig.first_arrival_ns(ARRIVAL, STARTS), fig.last_arrival_ns(ARRIVAL, STARTS)
    assert first.tolist() == [10, 5] and last.tolist() == [40, 5]
    assert fig.arrival_skew_ns(first, last).tolist() == [30, 0]
    assert fig.wait_ns(ARRIVAL, last[SEG]).tolist() == [30, 0, 15, 0, 0]
    median = fig.grouped_median_ns(SEG, ARRIVAL, 2)
    assert median.tolist() == [25, 5]
    assert fig.lateness_ns(ARRIVAL, median[SEG]).tolist() == [-15, 15, 0, 0, 0]


def test_last_arrivers_ties_name_no_one():
    last = fig.last_arrival_ns(ARRIVAL, STARTS)
    last_rank, is_last = fig.last_arrivers(ARRIVAL, last[SEG], SEG, RANKS, 2)
    assert last_rank.tolist() == [1, -1]
    assert is_last.tolist() == [False, True, False, False, False]
    assert fig.last_margin_ns(ARRIVAL, SEG, 2).tolist() == [15, 0]
    # a collective of one member has no last arriver
    one, flag = fig.last_arrivers(np.array([7]), np.array([7]), np.array([0]), np.array([3]), 1)
    assert one.tolist() == [-1] and flag.tolist() == [False]


def test_comm_time_is_the_shortest_duration():
    assert fig.comm_ns(ARRIVAL, END, STARTS).tolist() == [30, 45]


def test_bandwidths_use_nccl_tests_factors():
    size = np.array([1_000_000, 1_000_000, -1])
    comm = np.array([1_000_000, 0, 5])
    algbw = fig.algbw_bps(size, comm)
    assert algbw[0] == pytest.approx(1e9) and np.isnan(algbw[1:]).all()
    ops = np.array(["all_reduce", "all_gather", "barrier"])
    members = np.array([4, 4, 4])
    bus = fig.busbw_bps(np.array([1e9, 1e9, 1e9]), ops, members)
    assert bus[0] == pytest.approx(1.5e9) and bus[1] == pytest.approx(0.75e9) and np.isnan(bus[2])


def test_scope_and_size_imbalance():
    node = np.array([0, 0, 1, 3, 3, -1, 2], dtype=np.int64)
    starts = np.array([0, 3, 5])
    assert fig.collective_scope(node, starts).tolist() == ["inter-node", "intra-node", "unknown"]
    sizes = np.array([10, 30, 20, 8, 8, -1, 4])
    seg = fig.segment_ids(starts, 7)
    imbalance = fig.size_imbalance(sizes, seg, starts)
    assert imbalance[0] == pytest.approx(1.5) and imbalance[1] == 1.0 and np.isnan(imbalance[2])
    assert fig.collective_bytes(sizes, starts).tolist() == [30, 8, -1]


def test_vote_arithmetic():
    assert st.share_last(np.array([30, 0]), np.array([120, 0])).tolist() == [0.25, 0.0]
    assert st.expected_share(np.array([60 / 8 + 60 / 4]), np.array([120]))[0] == pytest.approx(0.1875)
    exponent = st.chernoff_exponent(np.array([100]), np.array([0.5]), np.array([0.25]))[0]
    assert exponent == pytest.approx(100 * (0.5 * math.log(2) + 0.5 * math.log(2 / 3)))
    assert exponent == pytest.approx(14.38, abs=0.01)
    assert st.chernoff_exponent(np.array([100]), np.array([0.2]), np.array([0.25]))[0] == 0.0
    assert st.vote_threshold(8) == pytest.approx(math.log(800))


def _order(times_last, voted, expected, margin, held=None, fair=None, margin_sq=None):
    n = len(times_last)
    z = np.zeros(n, dtype=np.int64)
    return st.RankOrder(ranks=np.arange(n), collectives=np.array(voted), voted=np.array(voted),
                        times_last=np.array(times_last), wait_ns=z, median_lateness_ns=z,
                        expected_share=np.array(expected, dtype=float), median_margin_ns=np.array(margin),
                        step_cost_ns=z, mean_step_cost_ns=z, held_ns=np.array(held if held else z),
                        fair_held_ns=np.array(fair if fair else z, dtype=float),
                        margin_sq_sum=np.array(margin_sq if margin_sq else z, dtype=float))


def test_vote_rule_each_condition():
    # rank 0: 50 of 100 at p = 1/4 (exponent 14.4 > ln(4/0.01) = 6.0), margin 5 us: straggler
    # rank 1: same but margin 500 ns (below the 1 us floor); rank 2: 45 of 100 at p = 1/4 but
    # with expected 0.25 and share 0.45 < 2 x 0.25; rank 3: 3 of 4 (exponent 2.1, too few)
    # (threshold ln(8 / 0.01) = 6.7: two tests a rank, counts and time; no time held here)
    order = _order([50, 50, 45, 3], [100, 100, 100, 4], [0.25] * 4, [5_000, 500, 5_000, 5_000])
    straggler, named_by, tests = st.straggler_vote(order)
    assert straggler.tolist() == [True, False, False, False] and named_by == {0: [-1]} and tests == 8


def test_step_cost_first_order():
    # rank 0: margins 40 and 10 in step 1, nothing in steps 2 and 3 -> sums (50, 0, 0):
    # median 0, mean floor(50 / 3) = 16; rank 1: the same in step 1, nothing in step 2 ->
    # sums (50, 0): median 25, mean 25
    rank = np.array([0, 0, 0, 0, 1, 1, 1])
    step = np.array([1, 1, 2, 3, 1, 1, 2])
    margin = np.array([40, 10, 0, 0, 40, 10, 0])
    median, mean = st.step_costs_ns(rank, step, margin, 2)
    assert median.tolist() == [0, 25] and mean.tolist() == [16, 25]


def test_canonical_op_names_and_ranks():
    assert canonical_op("allreduce") == "all_reduce"
    assert canonical_op("nccl:all_reduce") == "all_reduce"
    assert canonical_op("hcom_allReduce_") == "all_reduce"
    assert canonical_op("_allgather_base") == "all_gather"
    assert canonical_op("all_to_allv") == "all_to_all"
    assert canonical_op("reduce_scatter_tensor") == "reduce_scatter"
    assert canonical_op("send") == canonical_op("recv") == "p2p"
    assert canonical_op("Barrier") == "barrier"
    assert parse_ranks("[0, 1, 2]") == (0, 1, 2) and parse_ranks("") == () and parse_ranks("3,1") == (1, 3)


def test_order_by_matches_lexsort():
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(0, 5, 200) for _ in range(3))
    assert (order_by(a, b, c) == np.lexsort((c, b, a))).all()
    huge = np.array([2**61, 0, 2**61])
    assert (order_by(huge, np.array([3, 1, 2])) == np.lexsort((np.array([3, 1, 2]), huge))).all()


def test_sort_within_falls_back_on_wide_spans():
    seg = np.array([1, 0, 1, 0])
    values = np.array([2**62, -(2**62), 0, 5])
    order = fig.sort_within(seg, values, 2)
    assert order.tolist() == np.lexsort((values, seg)).tolist()


def test_early_end_measures_a_clock_offset():
    assert fig.early_end_ns(np.array([100, 35]), np.array([40, 40])).tolist() == [0, 5]


def test_clock_suspect_collectives_and_the_lasts_at_them():
    # collectives 0 (rows 0, 1) and 1 (rows 2, 3): a member of 0 ended 5 us before the last
    # arrival, one of 1 only 400 ns (under the 1 us floor)
    seg = np.array([0, 0, 1, 1])
    suspect = st.clock_suspect_rows(np.array([0, 5_000, 0, 400]), seg, 2)
    assert suspect.tolist() == [True, True, False, False]
    # rank 1 last at both collectives, rank 0 at none: one of rank 1's lasts is clock-suspect
    rank, last = np.array([0, 1, 0, 1]), np.array([False, True, False, True])
    assert st.clock_suspect_lasts(rank, last, suspect, 2).tolist() == [0, 1]
    assert st.clock_suspect_rows(np.zeros(0, np.int64), np.zeros(0, np.int64), 0).tolist() == []


def test_codes_unify_each_files_dictionary():
    import pyarrow as pa

    from parity.trace.fleet.matching import _codes

    column = pa.chunked_array([pa.array(["b", "a", None]).dictionary_encode(),
                               pa.array(["c", "b"]).dictionary_encode()])
    codes, names = _codes(column)
    assert names == ["", "a", "b", "c"] and codes.tolist() == [2, 1, 0, 3, 2]


def test_vote_cells_per_rank_and_group():
    # rank 0 in groups 0 and 1, rank 1 in group 0 only (no cells: its pooled count is its group's)
    rank = np.array([0, 0, 0, 1, 1])
    group = np.array([0, 0, 1, 0, 0])
    members = np.array([2, 2, 4, 2, 2])
    last = np.array([True, False, True, False, True])
    margin = np.array([7, 0, 3, 0, 9])
    cells = st.VoteCells.of(rank, group, members, last, margin)
    assert cells.rank.tolist() == [0, 0] and cells.group.tolist() == [0, 1]
    assert cells.voted.tolist() == [2, 1] and cells.times_last.tolist() == [1, 1]
    assert cells.expected_share.tolist() == [0.5, 0.25] and cells.median_margin_ns.tolist() == [7, 3]


def test_a_rank_late_in_one_group_is_named_by_that_group():
    # 19 ranks, 120 ops each at p = 1/8; rank 0 last in 30: share 0.25 = 2 p, but the exponent
    # 120 KL(0.25 | 0.125) = 6.9 < ln(38 / 0.01) = 8.24 (two tests a rank). All 30 in its group
    # of 4 members (40 of its ops): 40 KL(0.75 | 0.25) = 22.0 >= ln(40 / 0.01) = 8.29 (two
    # cells more)
    order = _order([30] + [0] * 18, [120] * 19, [0.125] * 19, [50_000] + [0] * 18)
    pooled, _, tests = st.straggler_vote(order)
    assert not pooled[0] and tests == 38
    cells = st.VoteCells(rank=np.array([0, 0]), group=np.array([1, 0]), voted=np.array([40, 80]),
                         times_last=np.array([30, 0]), expected_share=np.array([0.25, 1 / 16]),
                         median_margin_ns=np.array([50_000, 0]))
    both, named_by, tests = st.straggler_vote(order, cells)
    assert both.tolist() == [True] + [False] * 18 and named_by == {0: [1]} and tests == 40


def test_time_vote_arithmetic():
    # margins 120 us in a 4-member collective and 30 us in a 24-member one: fair 31.25 us
    fair = st.fair_held_ns(np.array([0, 0]), np.array([120_000, 30_000]), np.array([4, 24]), 1)
    assert fair.tolist() == [31_250.0]
    # held 480, fair 120, four margins of 120: 2 x 360^2 / (4 x 120^2) = 4.5; held at or below fair: 0
    assert st.hoeffding_exponent(np.array([480]), np.array([120.0]), np.array([57_600.0]))[0] == pytest.approx(4.5)
    assert st.hoeffding_exponent(np.array([100, 5]), np.array([120.0, 0.0]), np.array([57_600.0, 0.0])).tolist() == [0, 0]


def test_time_vote_rule_each_condition():
    # threshold ln(16 / 0.01) = 7.38 (8 ranks, two tests each). Ranks 0, 1, 4-7: 300 collectives
    # of 4 members, 100 with a margin of 120 us and 200 of 1 us: fair = (100 x 120 + 200) / 4
    # = 3,050 us, Σ m² = 100 x 120² + 200 = 1,440,200 us².
    # rank 0: last at the 100 big ones and 6 small: held 12,006 us >= 2 x fair, exponent
    #   2 x 8,956² / 1,440,200 = 111: named by time alone (last in 106 of 300 at p = 1/4: the
    #   counts fail, 0.35 < 2 p);
    # rank 1: held 6,000 us: exponent 2 x 2,950² / 1,440,200 = 12.1, but held < 2 x fair;
    # rank 2: 3,000 collectives of 0.5 us (a clock offset), last at 1,500: held 750 >= 2 x 375,
    #   exponent 2 x 375² / 750 = 375, but a mean margin of 0.5 us, below the 1 us floor (its
    #   counts pass the first two tests and stop at the same floor);
    # rank 3: last at 2 of 4 collectives of 120 us: held 240 >= 2 x 60, exponent 2 x 180² /
    #   57,600 = 1.1: too few.
    us = 1_000
    fair, sq = 3_050 * us, (100 * 120**2 + 200) * us * us
    order = _order([106, 90, 1_500, 2] + [0] * 4, [300, 300, 3_000, 4] + [300] * 4, [0.25] * 8,
                   [120 * us, 120 * us, 500, 120 * us] + [0] * 4,
                   held=[12_006 * us, 6_000 * us, 750 * us, 240 * us] + [0] * 4,
                   fair=[fair, fair, 375 * us, 60 * us] + [fair] * 4,
                   margin_sq=[sq, sq, 750 * us * us, 4 * (120 * us) ** 2] + [sq] * 4)  # fmt: skip
    straggler, named_by, tests = st.straggler_vote(order)
    assert tests == 16 and straggler.tolist() == [True] + [False] * 7 and named_by == {0: [st.TIME_VOTE]}
    exponent = st.hoeffding_exponent(order.held_ns, order.fair_held_ns, order.margin_sq_sum)
    assert exponent[:4] == pytest.approx([111.38, 12.08, 375.0, 1.125], abs=0.01)
