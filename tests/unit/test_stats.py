"""Statistics against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from parity.model import Samples, Severity
from parity.stats import (
    bootstrap_ci,
    check_samples,
    iqr,
    median,
    percentile,
    ratio_ci,
    summarize,
    tukey_outliers,
)


def test_median_and_iqr_by_hand() -> None:
    # sorted [1, 2, 3, 4]: p25 = 1 + 0.75*(2-1) = 1.75; p75 = 3 + 0.25*(4-3) = 3.25
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert iqr([4.0, 1.0, 3.0, 2.0]) == pytest.approx(1.5)
    assert percentile([10.0, 20.0, 30.0], 50) == 20.0
    assert percentile([10.0, 20.0, 30.0], 0) == 10.0


def test_bootstrap_ci_brackets_median_and_is_reproducible() -> None:
    values = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 1.01, 0.99, 1.0]
    low, high = bootstrap_ci(values)
    assert low <= median(values) <= high
    assert (low, high) == bootstrap_ci(values)
    assert 0.9 <= low and high <= 1.1


def test_bootstrap_single_value_collapses() -> None:
    assert bootstrap_ci([3.0]) == (3.0, 3.0)


def test_ratio_ci_of_constant_samples_is_exact() -> None:
    ratio, low, high = ratio_ci([2.0] * 5, [1.0] * 7)
    assert (ratio, low, high) == (2.0, 2.0, 2.0)


def test_tukey_outliers_flag_without_dropping() -> None:
    values = [1.0, 1.0, 1.0, 1.0, 10.0]
    # p25 = p75 = 1, IQR 0: fences at 1, so only 10 is outside
    assert tukey_outliers(values) == [4]
    assert summarize(values).n == 5


def test_summary_fields() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.median, s.p25, s.p75, s.iqr, s.min, s.max) == (2.5, 1.75, 3.25, 1.5, 1.0, 4.0)
    assert s.relative_iqr == pytest.approx(0.6)


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        median([1.0, math.nan])
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_checks_raise_expected_findings() -> None:
    noisy = Samples(values_s=(1.0, 2.0, 1.0, 2.0, 1.0, 2.0), method="fake")
    codes = {f.code for f in check_samples(noisy)}
    assert "high-variance" in codes
    tiny = Samples(values_s=(1e-7,) * 10, method="fake", resolution_s=1e-8)
    assert {f.code for f in check_samples(tiny)} == {"below-resolution"}
    few = Samples(values_s=(1.0, 1.0), method="fake")
    assert {f.code for f in check_samples(few)} == {"too-few-samples"}
    empty = Samples(values_s=(), method="fake")
    assert [f.severity for f in check_samples(empty)] == [Severity.ERROR]
