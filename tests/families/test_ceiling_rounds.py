"""The compute ceiling's statistic and dispersion (``parity.metrics.ceiling``) and its finding."""

from __future__ import annotations

import pytest

from parity.families.gemm.measure_case import ceiling_findings
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
    assert slow.to_dict()["own_flops"] == [8.0, 8.1, 7.9, 8.0, 8.0]
    with pytest.raises(ValueError):
        own_shape_fraction([], [1.0])


def test_paired_own_shape_fraction_hand_computed_case() -> None:
    from parity.metrics.ceiling import paired_own_shape_fraction
    from parity.stats import ratio_ci

    # Own 8, 9, 9 beside rounds of 10: 9 / 10 = 0.9; every resample's own median is 8 or 9.
    low = paired_own_shape_fraction([8.0, 9.0, 9.0], [10.0, 10.0, 10.0])
    assert low.fraction == pytest.approx(0.9) and low.ci95[1] <= 0.9 + 1e-12 and not low.reproduced
    assert "beside" in low.to_dict()["statistic"]
    # The machine's speed moved 4x between pairs; each pair is alike: 1.0 exactly, in every resample.
    same = paired_own_shape_fraction([5.0, 10.0, 20.0], [5.0, 10.0, 20.0])
    assert same.fraction == 1.0 and same.ci95 == (1.0, 1.0) and same.reproduced
    # A 2% shortfall in every pair shows through that drift: pairs keep their order under
    # resampling, so the median pair is one pair and every resample reads 1 / 1.02.
    short = paired_own_shape_fraction([5.0, 10.0, 20.0], [5.1, 10.2, 20.4])
    assert short.ci95 == pytest.approx((1 / 1.02, 1 / 1.02)) and not short.reproduced
    # Drawn independently, the same numbers leave 1.0 well inside a wide interval.
    _, lo, hi = ratio_ci([5.0, 10.0, 20.0], [5.1, 10.2, 20.4])
    assert lo < 0.6 and hi > 1.5
    # ratio_ci's docstring case: num 9, 11 over den 10, 10, paired -> resamples 0.9, 1.0 or 1.1.
    ratio, lo, hi = ratio_ci([9.0, 11.0], [10.0, 10.0], paired=True)
    assert ratio == 1.0 and lo == pytest.approx(0.9) and hi == pytest.approx(1.1)
    with pytest.raises(ValueError, match="one numerator per denominator"):
        ratio_ci([1.0, 2.0], [1.0], paired=True)
    with pytest.raises(ValueError):
        ratio_ci([1.0], [0.0], paired=True)

