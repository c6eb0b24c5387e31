"""The ratio of one figure per run and of one sample set per run, each one named function with
its formula. A comparison of sides (one run or several each) takes its ratios and CIs from
``parity.compare.bootstrap``, which with one run per side is the same ratio and the same
within-run bootstrap of the ratio of medians as :func:`sample_speed_ratio_ci`.

Per case, the ratio is the *speed of run B relative to run A* on identical work: for a rate
(FLOP/s, B/s, higher is better) ``rate_B / rate_A``; for a time (s, lower is better)
``time_A / time_B``. Both read "B is r times as fast as A", and for declared work they are the
same number, since ``rate = work / median time``. Its CI is a seeded percentile bootstrap of the
ratio of medians of the raw samples (independent resamples of each run's samples). Over cases,
the summary is the median of the per-case ratios with a seeded bootstrap CI over cases.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parity.stats.summary import DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_SEED, bootstrap_ci, ratio_ci

MIN_CASES_FOR_CI = 5  # the same floor the suites' own summaries use


def speed_ratio(value_a: float, value_b: float, *, higher_is_better: bool) -> float:
    """Speed of B relative to A from one figure per run: ``value_b / value_a`` for a rate,
    ``value_a / value_b`` for a time. Raises ValueError on a non-positive value."""
    if value_a <= 0 or value_b <= 0:
        raise ValueError(f"a speed ratio needs positive values, got {value_a!r} and {value_b!r}")
    return value_b / value_a if higher_is_better else value_a / value_b


def sample_speed_ratio_ci(
    times_a: Sequence[float], times_b: Sequence[float], *, resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, tuple[float, float]]:
    """Speed of B relative to A from raw time samples: ``median(times_a) / median(times_b)``,
    with the 95% percentile-bootstrap CI of that ratio of medians (each run's samples resampled
    independently, ``resamples`` times, seeded). Returns ``(ratio, (low, high))``.

    Hand case: A = [2, 2, 2] s, B = [1, 1, 1] s gives 2.0 with CI (2.0, 2.0).
    """
    ratio, low, high = ratio_ci(times_a, times_b, resamples=resamples, seed=seed)
    return ratio, (low, high)


def median_ratio(ratios: Sequence[float], *, seed: int = DEFAULT_SEED) -> tuple[float, tuple[float, float] | None]:
    """Median of per-case ratios with the 95% bootstrap CI of that median over cases (seeded);
    no CI below :data:`MIN_CASES_FOR_CI` cases. Raises ValueError on an empty list."""
    values = np.asarray(list(ratios), dtype=np.float64)
    if values.size == 0:
        raise ValueError("no ratios to summarise")
    ci = bootstrap_ci(values, seed=seed) if values.size >= MIN_CASES_FOR_CI else None
    return float(np.median(values)), ci
