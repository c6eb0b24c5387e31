"""The compute ceiling's statistic and dispersion (``parity.metrics.ceiling``) and its finding."""

from __future__ import annotations

import pytest

from parity.bench.gemm.measure_case import ceiling_findings
from parity.metrics.ceiling import UNSTABLE_SPREAD, ceiling_rounds
from parity.metrics.roofline import MIN_SHAPES_FOR_CI, median_efficiency


def test_rounds_hand_computed_case() -> None:
    rounds = ceiling_rounds([9.0, 10.0, 11.0])
    assert rounds.median_flops == 10.0
    assert rounds.best_flops == 11.0
    assert rounds.spread == pytest.approx(0.2)  # (11 - 9) / 10
    assert rounds.unstable
    assert rounds.ci95_flops is not None
    assert rounds.ci95_flops[0] <= 10.0 <= rounds.ci95_flops[1]


def test_tight_rounds_are_stable_and_the_median_ceiling_is_its_own_fraction_one() -> None:
    rates = [1.00e12, 1.01e12, 0.99e12, 1.00e12, 1.02e12, 0.995e12, 1.005e12]
    rounds = ceiling_rounds(rates)
    assert not rounds.unstable
    assert rounds.spread == pytest.approx((1.02 - 0.99) / 1.00)
    low, high = rounds.ci95_flops
    # The ceiling shape's own fraction of P (median round over P) is 1.0 within its CI.
    assert low / rounds.median_flops <= 1.0 <= high / rounds.median_flops
    assert ceiling_findings(rounds) == []


def test_spread_rounds_give_an_unstable_ceiling_finding_with_the_rounds() -> None:
    rates = [1.21e12, 3.17e12, 2.29e12, 1.23e12, 1.5e12]
    rounds = ceiling_rounds(rates)
    assert rounds.spread > UNSTABLE_SPREAD
    (finding,) = ceiling_findings(rounds)
    assert finding.code == "unstable-ceiling"
    for shown in ("1.21", "3.17", "2.29", "1.23", "1.5"):
        assert shown in finding.message
    assert "--ceiling-from" in finding.hint


def test_two_rounds_have_no_ci() -> None:
    rounds = ceiling_rounds([1.0, 1.05])
    assert rounds.ci95_flops is None
    assert "too few rounds" in ceiling_findings(ceiling_rounds([1.0, 2.0]))[0].message


def test_rounds_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ceiling_rounds([])
    with pytest.raises(ValueError):
        ceiling_rounds([1.0, 0.0])


def test_median_efficiency_of_too_few_shapes_has_no_ci() -> None:
    one = median_efficiency([0.158])
    assert one["ci95_low"] is None and one["ci95_high"] is None
    assert "too few for a CI" in one["note"]
    enough = median_efficiency([0.4, 0.5, 0.3, 0.6, 0.45][:MIN_SHAPES_FOR_CI])
    assert enough["ci95_low"] is not None and enough["note"] == ""


def test_own_shape_fraction_hand_computed_case() -> None:
    from parity.metrics.ceiling import own_shape_fraction

    same = own_shape_fraction([9.0, 10.0, 11.0], [10.0, 10.0, 10.0])
    assert same.fraction == 1.0 and same.ci95[0] <= 1.0 <= same.ci95[1] and same.reproduced
    # Timed again at 80% of P in every round: 0.8, and 1.0 is outside the CI.
    slow = own_shape_fraction([8.0, 8.1, 7.9, 8.0, 8.0], [10.0, 10.1, 9.9, 10.0, 10.0])
    assert slow.fraction == pytest.approx(0.8)
    assert slow.ci95[1] < 1.0 and not slow.reproduced
    assert slow.to_dict()["rounds_flops"] == [8.0, 8.1, 7.9, 8.0, 8.0]
    with pytest.raises(ValueError):
        own_shape_fraction([], [1.0])


def test_pooled_own_shape_fraction_hand_computed_case() -> None:
    from parity.metrics.ceiling import pooled_own_shape_fraction
    from parity.stats import ratio_ci

    # P = median(8, 8, 8, 10, 10, 10) = 9: sentinels at 8 read 8/9 of P, every resample too.
    low = pooled_own_shape_fraction([8.0, 8.0, 8.0], [10.0, 10.0, 10.0])
    assert low.fraction == pytest.approx(8 / 9) and low.ci95 == pytest.approx((8 / 9, 8 / 9))
    assert not low.reproduced and "sentinel" in low.to_dict()["statistic"]
    # Sentinels 9, 10, 11 beside confirmation rounds of 10: P = 10, fraction 1.0, and 1.0 in the CI.
    same = pooled_own_shape_fraction([9.0, 10.0, 11.0], [10.0, 10.0, 10.0])
    assert same.fraction == 1.0 and same.reproduced and same.ci95[0] < 1.0 < same.ci95[1]
    # The resamples draw the two sets independently and share the part's draw in both medians:
    # part 1, 3 and rest 2 -> ratios 1/1.5, 3/2.5, 1/2, 3/3 (by draw), every one within [0.5, 1.2].
    ratio, lo, hi = ratio_ci([1.0, 3.0], [2.0], pooled=True)
    assert ratio == 2 / 2 and 0.5 <= lo <= hi <= 1.2
    with pytest.raises(ValueError):
        ratio_ci([1.0], [0.0], pooled=True)
