"""Cross-case outlier check (``parity.stats.trend.off_trend``)."""

from __future__ import annotations

import pytest

from parity.stats.trend import off_trend


def test_hand_computed_cases() -> None:
    assert off_trend([6.8, 0.2, 20.8]) == [1]  # 0.2 < 6.8 / 2
    assert off_trend([6.8, 10.0, 20.8]) == []
    assert off_trend([5.0, 5.0, 20.0, 20.0]) == []  # a step between regimes is no outlier
    assert off_trend([5.0, 50.0, 6.0]) == [1]  # 50 > 6 * 2
    assert off_trend([1.0, 9.0]) == [] and off_trend([]) == []  # endpoints are never judged
    assert off_trend([6.8, 3.0, 20.8], factor=3.0) == []


def test_factor_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        off_trend([1.0, 2.0, 3.0], factor=0.5)
