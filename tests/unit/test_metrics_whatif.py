"""What-if formulas against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from parity.metrics.whatif import (
    BIMODAL_THRESHOLD,
    bimodality_coefficient,
    first_order_step,
    first_order_step_multi,
    half_drift,
    half_drift_z,
    prediction_error,
    run_queue_share,
    saved_fraction,
    scaled_duration,
    speedup,
    speedup_bounds,
)
from parity.model.errors import ParityError


def test_saved_fraction_and_scaled_duration() -> None:
    assert saved_fraction(2) == 0.5
    assert saved_fraction(4) == 0.75
    assert saved_fraction(math.inf) == 1.0
    assert saved_fraction(1) == 0.0
    assert saved_fraction(0.5) == -1.0  # twice as slow costs the duration again
    assert scaled_duration(10, 4) == 2.5
    assert scaled_duration(10, math.inf) == 0.0


def test_first_order_step_hand_computed() -> None:
    # T = 10, T_c = 4, k = 2: T' = 10 - 0.5 * 4 = 8, speedup 1.25.
    assert first_order_step(10, 4, 2) == 8
    assert speedup(10, first_order_step(10, 4, 2)) == 1.25
    # The published case: a step whose matrix time is 48.5% of the critical stream, k = 2,
    # gives 1 / (1 - 0.2425) = 1.32x.
    assert speedup(1.0, first_order_step(1.0, 0.485, 2)) == pytest.approx(1.32, abs=0.005)
    assert first_order_step(10, 4, 1) == 10  # k = 1 reproduces the step exactly
    assert first_order_step(10, 4, math.inf) == 6


def test_first_order_multi_adds_disjoint_savings() -> None:
    # matrix 4 at k=2 saves 2; comm 3 at k=1.5 saves 1: T' = 10 - 3 = 7.
    assert first_order_step_multi(10, [(4, 2), (3, 1.5)]) == pytest.approx(7)


def test_speedup_bounds_hand_computed() -> None:
    # T = 10, E = 2, U = 6, k = 2: L = 10 / (10 - 1) = 10/9, U = 10 / (10 - 3) = 10/7.
    low, high = speedup_bounds(10, [(2, 6, 2)])
    assert low == pytest.approx(10 / 9)
    assert high == pytest.approx(10 / 7)
    # Slower work (k < 1) swaps the roles so low <= high still.
    low, high = speedup_bounds(10, [(2, 6, 0.5)])
    assert low == pytest.approx(10 / 16) and high == pytest.approx(10 / 12)


def test_speedup_of_a_vanished_step_is_infinite() -> None:
    assert speedup(10, 0) == math.inf


@pytest.mark.parametrize("k", [0, -1, float("nan"), "fast"])
def test_bad_factors_are_refused(k) -> None:
    with pytest.raises(ParityError, match="speed factor"):
        saved_fraction(k)


def test_inconsistent_times_are_refused() -> None:
    with pytest.raises(ParityError, match="outside"):
        first_order_step(10, 11, 2)
    with pytest.raises(ParityError, match="exposed"):
        speedup_bounds(10, [(5, 4, 2)])
    with pytest.raises(ParityError, match="step time"):
        first_order_step(0, 0, 2)


def test_prediction_error_hand_computed() -> None:
    assert prediction_error(9, 10) == pytest.approx(-0.1)
    assert prediction_error(11, 10) == pytest.approx(0.1)
    with pytest.raises(ParityError, match="measured step"):
        prediction_error(1, 0)


def test_half_drift_hand_computed() -> None:
    assert half_drift([1, 1, 2, 2]) == pytest.approx(2 / 3)  # |2 - 1| / 1.5
    assert half_drift([3, 1, 2, 3, 1, 2]) == 0.0  # same level in both halves, in any order
    assert half_drift([1, 2, 4]) == pytest.approx(2 / 2)  # halves [1] and [2, 4]: |3 - 1| / 2
    with pytest.raises(ParityError, match="at least 2"):
        half_drift([1.0])


def test_bimodality_coefficient_hand_computed() -> None:
    # Ten 0s and ten 1s: skewness 0, excess kurtosis 19/306·(21·(1 - 3) + 6) = -2.235...
    kurt = 19 / 306 * (21 * -2 + 6)
    assert bimodality_coefficient([0.0] * 10 + [1.0] * 10) == pytest.approx(
        1 / (kurt + 3 * 19**2 / (18 * 17)))
    assert bimodality_coefficient([0.0] * 10 + [1.0] * 10) > BIMODAL_THRESHOLD
    # Evenly spaced values (a discrete uniform) sit just below the uniform's 5/9.
    assert bimodality_coefficient(list(range(20))) < BIMODAL_THRESHOLD
    assert bimodality_coefficient([5.0] * 8) == 0.0
    with pytest.raises(ParityError, match="at least 4"):
        bimodality_coefficient([1.0, 2.0, 3.0])


def test_run_queue_share_hand_computed() -> None:
    assert run_queue_share(2_000_000, 40_000_000) == pytest.approx(0.05)
    with pytest.raises(ParityError, match="wall time"):
        run_queue_share(1, 0)


def test_half_drift_z_hand_computed() -> None:
    assert half_drift_z([1, 2, 3, 2, 3, 4]) == pytest.approx(
        1 / (1.2533 * 1.4826 * 1.0 * math.sqrt(2 / 3)))
    assert half_drift_z([1, 1, 2, 2]) == math.inf  # a clean step between two levels
    assert half_drift_z([2, 2, 2, 2]) == 0.0
    noisy = [1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.2, 0.8, 1.1, 0.9]
    assert half_drift_z(noisy) == 0.0  # same medians: no drift at all
