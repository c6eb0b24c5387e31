"""Summary statistics of raw samples.

Percentiles use linear interpolation between order statistics (numpy's default, "type 7" in
Hyndman and Fan), so the median of ``[1, 2, 3, 4]`` is 2.5 and its IQR is ``3.25 - 1.75 = 1.5``.
Bootstrap intervals are percentile bootstraps with a fixed seed, so a summary is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_BOOTSTRAP_RESAMPLES = 2000
DEFAULT_SEED = 0x5EED


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"need a non-empty 1-d sequence of numbers, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("samples contain NaN or infinity")
    return arr


def median(values: Sequence[float] | np.ndarray) -> float:
    """The 50th percentile."""
    return float(np.median(_as_array(values)))


def percentile(values: Sequence[float] | np.ndarray, q: float) -> float:
    """The ``q``-th percentile (0..100), linear interpolation between order statistics."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q!r} is outside 0..100")
    return float(np.percentile(_as_array(values), q))


def iqr(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile range ``p75 - p25``."""
    arr = _as_array(values)
    p25, p75 = np.percentile(arr, [25.0, 75.0])
    return float(p75 - p25)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    confidence: float = 0.95,
    resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``statistic`` (default: the median).

    ``statistic`` receives a 2-d array of resamples (one per row) and returns one value per row.
    With a single sample the interval collapses to that sample.
    """
    arr = _as_array(values)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r} must lie strictly between 0 and 1")
    stat = statistic or (lambda a: np.median(a, axis=1))
    if arr.size == 1:
        value = float(stat(arr[None, :])[0])
        return value, value
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(resamples, arr.size))
    return _central_interval(np.asarray(stat(arr[idx]), dtype=np.float64), confidence)


def ratio_ci(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
    *,
    paired: bool = False,
    confidence: float = 0.95,
    resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float, float]:
    """Ratio of medians ``median(num) / median(den)`` with a bootstrap CI.

    Returns ``(ratio, low, high)``. Used to say "device A is 1.8x [1.7, 1.9] device B".
    The two samples are resampled independently; ``paired``: ``num[i]`` and ``den[i]`` were
    measured together (side by side, at one moment), so each resample draws pairs, the same
    indices on both sides, and what moved both members of a pair cancels in the ratio.
    Example: num 9, 11 and den 10, 10 -> 1.0; paired, the resamples read 0.9, 1.0 or 1.1.
    """
    num = _as_array(numerator)
    den = _as_array(denominator)
    if np.any(den <= 0):
        raise ValueError("denominator samples must be positive")
    if paired and num.size != den.size:
        raise ValueError(f"paired samples need one numerator per denominator, got {num.size} and {den.size}")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, num.size, size=(resamples, num.size))
    draws_num = num[picks]
    draws_den = den[picks if paired else rng.integers(0, den.size, size=(resamples, den.size))]
    ratios = np.median(draws_num, axis=1) / np.median(draws_den, axis=1)
    return (float(np.median(num) / np.median(den)), *_central_interval(ratios, confidence))


def _central_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval holding the central ``confidence`` share of ``values``."""
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(low), float(high)


def tukey_outliers(values: Sequence[float] | np.ndarray, *, fence: float = 1.5) -> list[int]:
    """Indices of samples outside ``[p25 - fence*IQR, p75 + fence*IQR]``; flagged, never dropped."""
    arr = _as_array(values)
    p25, p75 = np.percentile(arr, [25.0, 75.0])
    spread = p75 - p25
    low, high = p25 - fence * spread, p75 + fence * spread
    return [int(i) for i in np.flatnonzero((arr < low) | (arr > high))]


@dataclass(frozen=True, kw_only=True)
class Summary:
    """Derived statistics of one sample set, all in the samples' unit (seconds for timings)."""

    n: int
    median: float
    mean: float
    min: float
    max: float
    p25: float
    p75: float
    iqr: float
    ci_low: float
    ci_high: float
    outliers: tuple[int, ...]

    @property
    def relative_iqr(self) -> float:
        """``IQR / median``: the spread the high-variance check looks at."""
        return self.iqr / self.median if self.median > 0 else float("inf")

    def to_dict(self) -> dict[str, float | int | list[int]]:
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "p25": self.p25,
            "p75": self.p75,
            "iqr": self.iqr,
            "ci95_low": self.ci_low,
            "ci95_high": self.ci_high,
            "outliers": list(self.outliers),
        }


def summarize(values: Sequence[float] | np.ndarray, *, seed: int = DEFAULT_SEED) -> Summary:
    """Median, quartiles, IQR, a 95% bootstrap CI of the median, and flagged outliers."""
    arr = _as_array(values)
    p25, p50, p75 = np.percentile(arr, [25.0, 50.0, 75.0])
    low, high = bootstrap_ci(arr, seed=seed)
    return Summary(
        n=int(arr.size),
        median=float(p50),
        mean=float(arr.mean()),
        min=float(arr.min()),
        max=float(arr.max()),
        p25=float(p25),
        p75=float(p75),
        iqr=float(p75 - p25),
        ci_low=low,
        ci_high=high,
        outliers=tuple(tukey_outliers(arr)),
    )
