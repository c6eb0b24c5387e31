"""The hierarchical bootstrap of a comparison, on inputs small enough to enumerate by hand."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from parity.compare.bootstrap import (BETWEEN_RUN, WITHIN_RUN, Medians, bootstrap_medians, case_interval,
                                      ci_kind, expansion, hierarchical_log_ratios, median_interval, side_runs,
                                      t_975, welch_df)
from parity.compare.wording import NO_DIFFERENCE, claim, verdict
from parity.model.figure import format_value, ratio_number, ratio_text


def test_t_quantiles_and_the_expansion_factor_hand_values() -> None:
    assert t_975(4) == pytest.approx(2.7764) and t_975(30) == pytest.approx(2.0423)
    assert t_975(60) == pytest.approx(2.0003, abs=2e-4)  # the series beyond the table
    assert t_975(10_000) == pytest.approx(1.96, abs=1e-3)
    assert expansion(1, 1) == 1.0 and expansion(1, 3) == 1.0
    assert expansion(3, 3) == pytest.approx(math.sqrt(3 / 2) * 2.7764 / 1.959964, rel=1e-6)  # 1.7349
    assert expansion(2, 2) == pytest.approx(math.sqrt(2) * 4.3027 / 1.959964, rel=1e-6)
    assert ci_kind(1, 3) == WITHIN_RUN and ci_kind(2, 3) == BETWEEN_RUN
    # Welch: equal spreads, 3 and 3 runs: (2v)^2 / (2 v^2 / 2) = 4; all on one side: 2 (the floor)
    assert welch_df(1.0, 1.0, 3, 3) == 4 and welch_df(1.0, 0.0, 3, 3) == 2 and welch_df(0.0, 0.0, 3, 5) == 6
    assert welch_df(1.0, 0.5, 3, 3) == pytest.approx(3.6)  # (1.5)^2 / ((1 + 1/4) / 2)
    assert 2.9401 <= t_975(3.5) <= 2.945 and 6.0167 <= t_975(1.5) <= 6.2  # exact 2.9401, 6.0167
    assert t_975(3) == pytest.approx(3.1824)
    assert expansion(3, 3, 2) == pytest.approx(math.sqrt(3 / 2) * 4.3027 / 1.959964, rel=1e-6)  # 2.689


def test_runs_only_matches_the_enumerated_bootstrap_distribution() -> None:
    # A's two runs have log speeds 0 and 0.2, B's 0.1 and 0.3 (no raw times: run level only).
    # Each side's resampled mean is its low run (1/4), the mean (1/2) or its high run (1/4):
    # enumerate the 16 x 16 equally likely draws of run indices for the exact distribution.
    a = side_runs([[1.0, math.exp(0.2)]], [[None, None]], higher_is_better=[True])
    b = side_runs([[math.exp(0.1), math.exp(0.3)]], [[None, None]], higher_is_better=[True])
    draws = hierarchical_log_ratios(a, b, resamples=20_000, seed=7)
    exact: Counter[float] = Counter()
    for pa, pb in itertools.product(itertools.product([0.0, 0.2], repeat=2), itertools.product([0.1, 0.3], repeat=2)):
        exact[round(np.mean(pb) - np.mean(pa), 6)] += 1
    seen = Counter(round(float(x), 6) for x in draws.draws[0])
    assert set(seen) == set(exact)
    for value, count in exact.items():
        assert seen[value] / 20_000 == pytest.approx(count / 16, abs=0.01)
    # Point 0.1; the 2.5th and 97.5th percentiles are the extremes -0.1 and 0.3 (each 1/16 likely),
    # widened by c = sqrt(2) t(2) / z = 3.1046 about the point: 0.1 -/+ 3.1046 x 0.2.
    ratio, ci = case_interval(draws, 0)
    c = expansion(2, 2)
    assert ratio == pytest.approx(math.exp(0.1))
    # (the resampled spreads of the two sides are equal in law, so Welch gives df = 2 up to resampling)
    assert ci == pytest.approx((math.exp(0.1 - c * 0.2), math.exp(0.1 + c * 0.2)), rel=1e-3)
    assert draws.kind == BETWEEN_RUN


def test_one_run_per_side_is_the_within_run_ratio_of_medians() -> None:
    # A's times 1, 2, 3 s (median 2), B's 1 s: B is 2x as fast. A's resampled median is 1, 2 or 3
    # (P = 7/27, 13/27, 7/27), so the ratio's 2.5th and 97.5th percentiles are 1 and 3, not widened.
    a = side_runs([[2.0]], [[[1.0, 2.0, 3.0]]], higher_is_better=[False])
    b = side_runs([[1.0]], [[[1.0]]], higher_is_better=[False])
    draws = hierarchical_log_ratios(a, b)
    assert set(np.round(np.exp(draws.draws[0]), 9)) == {1.0, 2.0, 3.0}
    ratio, ci = case_interval(draws, 0)
    assert ratio == pytest.approx(2.0) and ci == pytest.approx((1.0, 3.0)) and draws.kind == WITHIN_RUN


def test_a_rate_and_a_time_give_the_same_ratio_and_no_samples_no_ci() -> None:
    rate = hierarchical_log_ratios(side_runs([[2e12]], [[None]], higher_is_better=[True]),
                                   side_runs([[4e12]], [[None]], higher_is_better=[True]))
    time = hierarchical_log_ratios(side_runs([[2.0]], [[None]], higher_is_better=[False]),
                                   side_runs([[1.0]], [[None]], higher_is_better=[False]))
    assert case_interval(rate, 0) == (pytest.approx(2.0), None)
    assert case_interval(time, 0) == (pytest.approx(2.0), None)


def test_the_median_resamples_runs_together_across_cases() -> None:
    # Two cases; on both, A's runs are 1 and 2 (rates) and B's 2 and 4: every case ratio is 2x and
    # so is the median, in every resample where the two sides drew the same run pattern.
    a = side_runs([[1.0, 2.0], [1.0, 2.0]], [[None, None]] * 2, higher_is_better=[True, True])
    b = side_runs([[2.0, 4.0], [2.0, 4.0]], [[None, None]] * 2, higher_is_better=[True, True])
    draws = hierarchical_log_ratios(a, b, seed=3)
    assert np.array_equal(draws.draws[0], draws.draws[1])  # one run draw for every case
    value, ci = median_interval(draws, [0, 1])
    assert value == pytest.approx(2.0) and ci is not None and ci[0] < 2.0 < ci[1]
    assert median_interval(draws, [0]) == case_interval(draws, 0)
    with pytest.raises(ValueError, match="no cases"):
        median_interval(draws, [])


def test_bootstrap_medians_of_many_samples_follow_the_resampled_distribution() -> None:
    # Above 200 samples the median is drawn from its order statistic's normal approximation: its
    # spread matches brute-force resampling within a few percent (1001 and 1000 samples).
    rng = np.random.default_rng(5)
    for m in (1001, 1000):
        times = rng.lognormal(0.0, 0.3, m)
        fast = bootstrap_medians(times, np.random.default_rng(1), 4000)
        brute = np.median(times[np.random.default_rng(2).integers(0, m, (4000, m))], axis=1)
        assert np.median(fast) == pytest.approx(np.median(brute), rel=2e-3)
        assert np.percentile(fast, [2.5, 97.5]) == pytest.approx(np.percentile(brute, [2.5, 97.5]), rel=5e-3)
        assert np.std(fast) == pytest.approx(np.std(brute), rel=0.08)


def test_seeded_and_fast_enough_for_a_real_comparison() -> None:
    rng = np.random.default_rng(0)
    times = [[rng.lognormal(0, 0.1, 2000) for _ in range(3)] for _ in range(40)]
    values = [[float(np.median(t)) for t in row] for row in times]
    side = side_runs(values, times, higher_is_better=[False] * 40)
    import time as clock

    begin = clock.perf_counter()
    first = hierarchical_log_ratios(side, side)
    assert clock.perf_counter() - begin < 10.0  # 40 cases x 3 runs x 2000 samples, 2 cores shared
    again = hierarchical_log_ratios(side, side)
    assert np.array_equal(first.draws, again.draws)
    assert all(ci is not None and ci[0] <= 1.0 <= ci[1] for ci in (case_interval(first, i)[1] for i in range(40)))


def test_a_headline_made_of_two_sets_medians_resamples_each() -> None:
    """A latency slope: ``T = (m_long - m_short) / 2``. Hand values: short [1, 2, 3] and long
    [5, 7, 9] give ``(7 - 2) / 2 = 2.5``; with one run a side its CI is within-run, from every
    resampled pair of medians, and holds the point. Against a side whose short set can take a
    median above the long one's (``T* <= 0``), the case has no CI rather than a log of a negative."""
    slope = Medians(weights=(-0.5, 0.5), sets=(np.array([1.0, 2.0, 3.0]), np.array([5.0, 7.0, 9.0])))
    assert slope.time() == 2.5
    a = side_runs([[2.5]], [[slope]], higher_is_better=[False])
    b = side_runs([[1.5]], [[Medians(weights=(-0.5, 0.5), sets=(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])))]],
                  higher_is_better=[False])  # (5 - 2) / 2
    d = hierarchical_log_ratios(a, b)
    ratio, ci = case_interval(d, 0)
    assert d.kind == WITHIN_RUN and ratio == pytest.approx(2.5 / 1.5) and ci is not None and ci[0] < ratio < ci[1]
    # every resampled T_a is one of (m_long - m_short) / 2 over medians in {1,2,3} x {5,7,9}: 1 to 4
    assert np.all(np.exp(d.sides[0]) >= 1 / 4 - 1e-12) and np.all(np.exp(d.sides[0]) <= 1.0 + 1e-12)
    crossing = Medians(weights=(-0.5, 0.5), sets=(np.array([1.0, 2.0, 9.0]), np.array([3.0, 4.0, 5.0])))
    c = side_runs([[1.0]], [[crossing]], higher_is_better=[False])
    assert case_interval(hierarchical_log_ratios(a, c), 0)[1] is None


def test_one_set_of_weight_one_draws_exactly_what_raw_times_draw() -> None:
    times = np.random.default_rng(3).lognormal(0, 0.2, 50)
    raw = side_runs([[float(np.median(times))]], [[times]], higher_is_better=[False])
    one = side_runs([[float(np.median(times))]], [[Medians(weights=(1.0,), sets=(times,))]], higher_is_better=[False])
    assert np.array_equal(hierarchical_log_ratios(raw, raw).draws, hierarchical_log_ratios(one, one).draws)


def test_wording_follows_the_ci() -> None:
    assert verdict(1.3, (0.9, 1.5)) == NO_DIFFERENCE
    assert verdict(1.3, (1.1, 1.5)) == "faster" and verdict(0.7, (0.6, 0.8)) == "slower"
    assert verdict(1.3, None) == "no CI"
    text = claim(scope="these 15 compute-bound bf16 gemm shapes", pair=("A", "B"), ratio=1.31, ci=(1.22, 1.40),
                 runs=(3, 3), kind=BETWEEN_RUN)
    assert text.startswith("on these 15 compute-bound bf16 gemm shapes, B ran a median of 1.31x [1.22, 1.4] "
                           "the speed of A, over 3 runs per side (between-run CI)")
    held = claim(scope="these 4 cases", pair=("A", "B"), ratio=1.31, ci=(0.9, 1.40), runs=(1, 1), kind=WITHIN_RUN)
    assert NO_DIFFERENCE in held and " ran " not in held and "within-run CI only" in held


def test_a_bound_near_one_keeps_the_digits_that_say_which_side_of_one_it_is() -> None:
    # 3 significant digits, more only where 3 would print a value that is not 1 as "1"
    assert ratio_number(1.31) == "1.31" and ratio_number(0.736) == "0.736" and ratio_number(1.0) == "1"
    assert ratio_number(1.0004) == "1.0004" and ratio_number(0.9996) == "0.9996" and ratio_number(1.0049) == "1.005"
    assert ratio_text(1.01, (1.0004, 1.03)) == "1.01x [1.0004, 1.03]"  # excludes 1: a difference, as printed
    assert ratio_text(1.0, (0.9996, 1.004)) == "1x [0.9996, 1.004]"  # holds 1
    assert format_value(1.0004, "x") == "1.0004 x" and format_value(2.5, "x") == "2.5 x"
    # a time reads at its scale: an L1 load is 1.08 ns, not 0.00108 us
    assert format_value(1.08e-9, "s") == "1.08 ns" and format_value(17.1e-6, "s") == "17.1 us"
    assert format_value(5.7e-3, "s") == "5.7 ms" and format_value(None, "s") == "n/a"
    faster = claim(scope="these 4 cases", pair=("A", "B"), ratio=1.01, ci=(1.0004, 1.03), runs=(3, 3), kind=BETWEEN_RUN)
    assert "1.01x [1.0004, 1.03]" in faster and NO_DIFFERENCE not in faster


def test_row_medians_are_numpys_to_the_bit() -> None:
    """Hand rows: [3, 1, 2] -> 2; [4, 1, 3, 2] -> (2 + 3) / 2 = 2.5; then random rows of every
    length up to the resampling limit, with ties, equal to numpy.median bit for bit."""
    from parity.compare.bootstrap import EXACT_UP_TO, _row_medians

    assert _row_medians(np.array([[3.0, 1.0, 2.0]])).tolist() == [2.0]
    assert _row_medians(np.array([[4.0, 1.0, 3.0, 2.0]])).tolist() == [2.5]
    rng = np.random.default_rng(1)
    for m in range(1, EXACT_UP_TO + 1):
        rows = rng.lognormal(0, 0.3, (20, m))
        rows[:, : m // 3] = np.round(rows[:, : m // 3], 1)
        assert np.array_equal(_row_medians(rows), np.median(rows, axis=1)), m
