"""Interval algebra: hand-computed cases and a brute-force cross-check on a unit grid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.trace.intervals import (
    IntervalSet,
    clip_intervals,
    concurrency_histogram,
    difference_length,
    grouped_merge,
    grouped_union_lengths,
    intersect_intervals,
    intersection_length,
    merge_intervals,
    pairwise_intersection_lengths,
    subtract_intervals,
    union_length,
)


def arr(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_merge_hand_case() -> None:
    # [0,10) [5,12) [12,15) [20,25) [21,22) -> [0,15) [20,25); the empty [30,30) is dropped
    s, e = arr(20, 0, 12, 5, 21, 30), arr(25, 10, 15, 12, 22, 30)
    ms, me = merge_intervals(s, e)
    assert ms.tolist() == [0, 20] and me.tolist() == [15, 25]
    assert union_length(s, e) == 20


def test_inputs_are_not_modified() -> None:
    s, e = arr(5, 0, 3), arr(9, 4, 6)
    s0, e0 = s.copy(), e.copy()
    merge_intervals(s, e)
    intersect_intervals((s, e), (e, e + 1))
    concurrency_histogram([(s, e)], 0, 10)
    grouped_union_lengths(arr(0, 1, 0), s, e, 2)
    assert (s == s0).all() and (e == e0).all()


def test_negative_duration_is_rejected() -> None:
    with pytest.raises(ValueError, match="ends before it starts"):
        merge_intervals(arr(5), arr(4))


def test_intersection_and_difference_hand_case() -> None:
    compute = (arr(0, 20), arr(10, 30))  # 20 ns of compute
    comm = (arr(5, 12), arr(15, 25))  # [5,15) and [12,25) -> [5,25): 20 ns
    assert intersect_intervals(compute, comm)[0].tolist() == [5, 20]
    assert intersect_intervals(compute, comm)[1].tolist() == [10, 25]
    assert intersection_length(compute, comm) == 5 + 5
    # exposed communication = comm minus compute = [10,20) = 10 ns
    assert difference_length(comm, compute) == 10
    s, e = subtract_intervals(comm, compute)
    assert s.tolist() == [10] and e.tolist() == [20]


def test_clip() -> None:
    s, e = clip_intervals(arr(0, 8, 20), arr(5, 12, 30), 3, 10)
    assert s.tolist() == [3, 8] and e.tolist() == [5, 10]


def test_grouped_union_lengths_hand_case() -> None:
    groups = arr(0, 0, 1, 1, 2)
    s, e = arr(0, 5, 0, 100, 7), arr(10, 15, 1, 101, 7)
    assert grouped_union_lengths(groups, s, e, 4).tolist() == [15, 2, 0, 0]


def test_concurrency_histogram_hand_case() -> None:
    # window [0,10): stream A busy [0,6), stream B busy [4,8) -> 0 streams: 2, 1: 6, 2: 2
    hist = concurrency_histogram([(arr(0), arr(6)), (arr(4), arr(8))], 0, 10)
    assert hist.tolist() == [2, 6, 2]
    # mean concurrency = Σ c·t / |W| = (6 + 4)/10 = Σ busy / |W|
    assert (hist * np.arange(3)).sum() == 6 + 4


def test_interval_set_api() -> None:
    a = IntervalSet.of(arr(0, 2), arr(3, 6))
    b = IntervalSet.of(arr(4), arr(10))
    assert a.length_ns == 6 and len(a) == 1
    assert a.intersect(b).length_ns == 2
    assert a.subtract(b).length_ns == 4
    assert a.union(b).length_ns == 10
    assert a.clip(1, 5).length_ns == 4
    assert IntervalSet.empty().length_ns == 0


def _grid(sets: list[tuple[np.ndarray, np.ndarray]], size: int) -> np.ndarray:
    cover = np.zeros((len(sets), size), dtype=bool)
    for k, (s, e) in enumerate(sets):
        for a, b in zip(s, e):
            cover[k, a:b] = True
    return cover


intervals = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 15)), min_size=0, max_size=12
).map(lambda xs: (arr(*[a for a, _ in xs]), arr(*[a + d for a, d in xs])))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(a=intervals, b=intervals, c=intervals)
def test_against_brute_force_grid(a, b, c) -> None:
    size = 80
    ga, gb, gc = _grid([a, b, c], size)
    assert union_length(*a) == ga.sum()
    assert intersection_length(a, b) == (ga & gb).sum()
    assert difference_length(a, b) == (ga & ~gb).sum()
    hist = concurrency_histogram([a, b, c], 10, 70)
    level = (ga.astype(int) + gb + gc)[10:70]
    assert hist.tolist() == [int((level == k).sum()) for k in range(4)]
    groups = np.concatenate([np.full(len(x[0]), g) for g, x in enumerate([a, b, c])])
    s = np.concatenate([a[0], b[0], c[0]])
    e = np.concatenate([a[1], b[1], c[1]])
    assert grouped_union_lengths(groups, s, e, 3).tolist() == [ga.sum(), gb.sum(), gc.sum()]


def test_pairwise_intersection_lengths_hand_computed() -> None:
    # A = [0,10) ∪ [20,30); B = [5,25); C = [28,40)
    a = (np.array([0, 20]), np.array([10, 30]))
    b = (np.array([5]), np.array([25]))
    c = (np.array([28]), np.array([40]))
    m = pairwise_intersection_lengths([a, b, c])
    # A∩B = [5,10) ∪ [20,25) = 10; A∩C = [28,30) = 2; B∩C = 0; diagonal = lengths 20, 20, 12
    assert m.tolist() == [[20, 10, 2], [10, 20, 0], [2, 0, 12]]
    assert pairwise_intersection_lengths([]).shape == (0, 0)
    assert pairwise_intersection_lengths([a, (np.empty(0, np.int64), np.empty(0, np.int64))]).tolist() == [[20, 0], [0, 0]]


@pytest.mark.parametrize("n_sets", [9, 14])  # a slot per possible mask; distinct masks found by sorting
def test_pairwise_intersection_lengths_match_the_pair_formula_on_random_sets(n_sets: int) -> None:
    rng = np.random.default_rng(7)
    sets = []
    for _ in range(n_sets):
        s = rng.integers(0, 10_000, 40)
        sets.append(merge_intervals(s, s + rng.integers(0, 300, 40)))
    m = pairwise_intersection_lengths(sets)
    for i in range(len(sets)):
        for j in range(len(sets)):
            assert m[i, j] == intersection_length(sets[i], sets[j])


@pytest.mark.parametrize("far", [False, True])  # far: the shifted line would overflow, so groups merge one by one
def test_grouped_merge_gives_each_groups_merged_set(far: bool) -> None:
    groups = np.array([1, 0, 1, 1, 2, 3])
    s = np.array([0, 5, 3, 20, 7, 2**61 if far else 30], dtype=np.int64)
    e = np.array([4, 9, 6, 25, 7, 2**61 + 1 if far else 31], dtype=np.int64)
    owner, ms, me = grouped_merge(groups, s, e, 4)
    # group 0: [5,9); group 1: [0,4) ∪ [3,6) = [0,6), [20,25); group 2: only an empty interval
    assert owner.tolist() == [0, 1, 1, 3]
    assert ms.tolist() == [5, 0, 20, s[-1]] and me.tolist() == [9, 6, 25, e[-1]]
    assert grouped_union_lengths(groups, s, e, 4).tolist() == [4, 11, 0, 1]


def test_grouped_sets_split_the_grouped_merge_by_group() -> None:
    from parity.trace.intervals import grouped_sets

    groups = np.array([1, 0, 1, 1])
    s, e = np.array([0, 5, 3, 20]), np.array([4, 9, 6, 25])
    sets, lengths = grouped_sets(groups, s, e, 3)
    assert [(a.tolist(), b.tolist()) for a, b in sets] == [([5], [9]), ([0, 20], [6, 25]), ([], [])]
    assert lengths.tolist() == [4, 11, 0]
