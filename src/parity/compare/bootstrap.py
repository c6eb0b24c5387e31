"""The CI of a comparison: a hierarchical bootstrap over runs, then samples within each run.

Two sides (A, the reference, and B) measured the same K cases, side A in ``n_A`` runs and side
B in ``n_B``. Run ``r`` of a side gives each case a headline value ``v`` and, where that value is
the median of the run's raw times, those times. Speeds are taken in logs, so a rate and a time
give the same ratio: ``s = log v`` for a rate, ``s = -log v`` for a time.

- Point: ``log ratio = mean_r s_B,r - mean_r s_A,r`` (the ratio of the geometric means of the
  runs' speeds; with one run per side ``v_B / v_A``, or ``t_A / t_B`` for a time).
- Resample ``b`` (of ``R = 2000``, seeded): per side draw ``n`` runs with replacement (the same
  draw for every case, so that a run that ran slow everywhere moves every case together, as it
  would in the summary); for each drawn run, one bootstrap median ``m*`` of its times (picked at
  random from ``W = 400`` bootstrap medians of them, :func:`bootstrap_medians`) replaces its
  median ``m``: ``s* = s + log(m / m*)``. A headline made of several sets' medians (a latency
  slope, a decode step: :class:`Medians`, ``T = Σ_k w_k·m_k``, the headline ``T`` for a time and
  ``1 / T`` for a rate) resamples each set's median: ``s* = s + log(T / T*)``. No change where the
  headline is neither, or where some ``T*`` is not above 0 (the case then has no within-run
  spread). The side's speed is the mean of its drawn runs' ``s*``; the resample's log ratio is
  B's minus A's.
- Interval: the 2.5th and 97.5th percentiles ``(lo, hi)`` of the resampled log ratios, widened
  about the point ``p`` by ``c``: ``(p - c·(p - lo), p + c·(hi - p))``. With one run on either side
  nothing is known of run-to-run variation, ``c = 1`` and the CI is *within-run only*. With two or
  more runs per side the CI is *between-run* and ``c = sqrt(n/(n-1)) · t(0.975, df) / z(0.975)``,
  ``n = min(n_A, n_B)``: resampling ``n`` runs shrinks their variance by ``(n-1)/n``, and a spread
  estimated from so few runs needs Student's quantile, not the normal one (the expanded
  percentile interval of Hesterberg, "What teachers should know about the bootstrap", 2015),
  with Welch's degrees of freedom from each side's resampled spread (:func:`welch_df`: from
  ``min(n_A, n_B) - 1`` when one side holds all the spread to ``n_A + n_B - 2`` when both hold
  as much). With 3 runs a side and equal spreads, ``c = 1.735``; all on one side, ``2.689``.

Resampling samples inside runs that were themselves resampled counts the within-run spread a
second time (it is already part of how runs differ): the interval errs wide, never narrow, which
``benchmarks/compare_coverage.py`` measures on identical runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from parity.stats.summary import DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_SEED

WITHIN_RESAMPLES = 400  # bootstrap medians drawn per run and case, picked from at random
EXACT_UP_TO = 200  # samples up to which a bootstrap median is drawn by resampling; above, by its order statistic
Z_975 = 1.959963984540054
# Student's t, 97.5th percentile, by degrees of freedom 1..30 (above 30: a Cornish-Fisher series)
T_975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788,
         2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
         2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)

BETWEEN_RUN = "between-run"
WITHIN_RUN = "within-run only"


def t_975(df: float) -> float:
    """Student's t 97.5th percentile for ``df >= 1`` degrees of freedom (t(4) = 2.776); between
    whole degrees of freedom, ``log t`` linear in ``1/df`` (t(3.5) = 2.944 against 2.940 exactly,
    t(1.5) = 6.17 against 6.02: a little wide, never narrow)."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if df < len(T_975):
        low = int(math.floor(df))
        if df == low:
            return T_975[low - 1]
        share = (1 / low - 1 / df) / (1 / low - 1 / (low + 1))
        return math.exp(math.log(T_975[low - 1]) + share * (math.log(T_975[low]) - math.log(T_975[low - 1])))
    if df == len(T_975):
        return T_975[-1]
    z = Z_975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def ci_kind(runs_a: int, runs_b: int) -> str:
    """``between-run`` with two or more runs on each side, else ``within-run only``."""
    return BETWEEN_RUN if min(runs_a, runs_b) >= 2 else WITHIN_RUN


def welch_df(var_a: float, var_b: float, runs_a: int, runs_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom of a difference of two sides' means,
    ``(v_A + v_B)^2 / (v_A^2/(n_A-1) + v_B^2/(n_B-1))`` with ``v`` each side's resampled variance,
    kept within ``[min(n_A, n_B) - 1, n_A + n_B - 2]`` (the pooled value when neither side
    varies). Hand case: equal variances, 3 and 3 runs: 4; all of it on one side: 2."""
    low, high = min(runs_a, runs_b) - 1, runs_a + runs_b - 2
    denominator = var_a**2 / (runs_a - 1) + var_b**2 / (runs_b - 1)
    if denominator <= 0:
        return high
    df = (var_a + var_b) ** 2 / denominator
    return float(min(max(df, low), high))


def expansion(runs_a: int, runs_b: int, df: float | None = None) -> float:
    """The factor ``c`` that widens the percentile interval (module docstring): 1 for a
    within-run CI; ``sqrt(n/(n-1)) · t(0.975, df) / z(0.975)`` with ``n = min(n_A, n_B)`` and
    ``df`` the Welch degrees of freedom (:func:`welch_df`; ``n_A + n_B - 2`` when not given).

    Hand case: 3 and 3 runs, df 4: ``sqrt(3/2) · 2.7764 / 1.96 = 1.7349``."""
    if ci_kind(runs_a, runs_b) == WITHIN_RUN:
        return 1.0
    n = min(runs_a, runs_b)
    return math.sqrt(n / (n - 1)) * t_975(df if df is not None else runs_a + runs_b - 2) / Z_975


@dataclass(frozen=True)
class Medians:
    """A headline's time as a weighted sum of sample sets' medians, ``T = Σ_k w_k·median(sets_k)``
    (a time headline is ``T``, a rate headline ``1 / T``): one set of weight 1 for the median of
    raw times, two for a latency slope, ``(t_long - t_short) / (N_long - N_short)``."""

    weights: tuple[float, ...]
    sets: tuple[np.ndarray, ...]

    def time(self) -> float:
        """``T`` from the sets' own medians."""
        return float(sum(w * np.median(s) for w, s in zip(self.weights, self.sets)))


@dataclass(frozen=True, kw_only=True)
class SideRuns:
    """One side's runs on the K compared cases: ``log_speed[c, r]`` (``log v`` for a rate,
    ``-log v`` for a time), and ``times[c][r]``, the sample sets whose medians make run r's
    headline on case c (:class:`Medians`), or None where the headline is not made of them."""

    log_speed: np.ndarray
    times: tuple[tuple[Medians | None, ...], ...]

    @property
    def runs(self) -> int:
        return int(self.log_speed.shape[1])


@dataclass(frozen=True, kw_only=True)
class RatioDraws:
    """Per case the point log ratio (B's speed over A's) and its ``R`` resampled log ratios;
    ``sampled[c]`` is true when case c's draws vary with something (runs or raw times)."""

    point: np.ndarray
    draws: np.ndarray
    runs: tuple[int, int]
    sampled: np.ndarray
    sides: tuple[np.ndarray, np.ndarray]  # each side's resampled mean log speed per case (K, R)

    @property
    def kind(self) -> str:
        return ci_kind(*self.runs)


def side_runs(values: Sequence[Sequence[float]], times: Sequence[Sequence[Medians | Sequence[float] | None]], *,
              higher_is_better: Sequence[bool]) -> SideRuns:
    """A :class:`SideRuns` from per case, per run headline values (positive, SI) and the sample
    sets behind them: :class:`Medians`, raw times whose median is the headline, or None."""
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.size == 0 or np.any(v <= 0):
        raise ValueError("a side needs positive values, one row per case and one column per run")
    sign = np.where(np.asarray(higher_is_better, dtype=bool), 1.0, -1.0)[:, None]
    return SideRuns(log_speed=sign * np.log(v), times=tuple(tuple(_medians(t) for t in row) for row in times))


def _medians(times: Medians | Sequence[float] | None) -> Medians | None:
    """``times`` as :class:`Medians` (raw times: one set of weight 1); None where a set is empty."""
    if isinstance(times, Medians):
        return times if all(len(s) for s in times.sets) else None
    if times is None or not len(times):
        return None
    return Medians(weights=(1.0,), sets=(np.asarray(times, dtype=np.float64),))


def _within_deltas(side: SideRuns, rng: np.random.Generator, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """``log(T / T*)`` per case, run and within-run resample (zeros where no sample sets, or a
    set of fewer than 2 positive times), and per case whether some ``T*`` was not above 0."""
    out = np.zeros((side.log_speed.shape[0], side.runs, draws))
    failed = np.zeros(side.log_speed.shape[0], dtype=bool)
    for c, row in enumerate(side.times):
        for r, medians in enumerate(row):
            if medians is None or any(s.size < 2 or np.any(s <= 0) for s in medians.sets):
                continue
            resampled = sum(w * bootstrap_medians(s, rng, draws) for w, s in zip(medians.weights, medians.sets))
            time = medians.time()
            if time <= 0 or np.any(resampled <= 0):
                failed[c] = True
                continue
            out[c, r] = np.log(time) - np.log(resampled)
    return out, failed


def bootstrap_medians(times: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """``draws`` medians of resamples (with replacement, of the same size) of ``times``.

    Up to :data:`EXACT_UP_TO` samples, by resampling. Above, from the distribution of the
    resample's ``k``-th smallest value: it is at most the ``j``-th smallest sample when at least
    ``k`` of the ``m`` draws are, ``P = P(Bin(m, j/m) >= k)``, which near the middle is
    ``Phi((j - k + 1/2) / (sqrt(m)/2))`` within ``O(1/sqrt(m))``; so the index is
    ``ceil(k - 1/2 + Z·sqrt(m)/2)`` for a standard normal ``Z`` (``k = (m+1)/2``; for an even ``m``
    the mean of the ``m/2``-th and the next, as :func:`numpy.median` takes)."""
    m = times.size
    if m <= EXACT_UP_TO:
        return _row_medians(times[rng.integers(0, m, size=(draws, m))])
    ordered = np.sort(times)
    k = (m + 1) // 2
    index = np.clip(np.ceil(k - 0.5 + rng.standard_normal(draws) * math.sqrt(m) / 2.0).astype(np.int64) - 1, 0, m - 1)
    if m % 2:
        return np.asarray(ordered[index])
    return np.asarray((ordered[index] + ordered[np.minimum(index + 1, m - 1)]) / 2.0)


def _row_medians(values: np.ndarray) -> np.ndarray:
    """Each row's median, as :func:`numpy.median` gives it (the middle value; of an even count,
    ``(a + b) / 2`` of the middle two), by one partition per row: the times are finite, so
    numpy's extra pass for a NaN is not needed (5x faster on 51 samples, 1.6x on 150)."""
    k = values.shape[1] // 2
    if values.shape[1] % 2:
        return np.asarray(np.partition(values, k, axis=1)[:, k])
    part = np.partition(values, k - 1, axis=1)
    return np.asarray((part[:, k - 1] + part[:, k:].min(axis=1)) / 2.0)


def _side_draws(side: SideRuns, rng: np.random.Generator, resamples: int,
                within: int) -> tuple[np.ndarray, np.ndarray]:
    """``(K, R)`` resampled mean log speeds of one side (runs drawn, then a within-run median
    each) and per case whether its within-run resampling failed (:func:`_within_deltas`)."""
    n = side.runs
    picks = rng.integers(0, n, size=(resamples, n)) if n > 1 else np.zeros((resamples, 1), dtype=np.int64)
    deltas, failed = _within_deltas(side, rng, within)
    inner = rng.integers(0, within, size=(resamples, n))
    return (side.log_speed[:, picks] + deltas[:, picks, inner]).mean(axis=2), failed


def hierarchical_log_ratios(a: SideRuns, b: SideRuns, *, resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
                            seed: int = DEFAULT_SEED, within: int = WITHIN_RESAMPLES) -> RatioDraws:
    """B's speed over A's per case, in logs, with the resamples of the hierarchical bootstrap
    (runs, then raw times within each drawn run; module docstring for the formula)."""
    if a.log_speed.shape[0] != b.log_speed.shape[0]:
        raise ValueError("both sides need the same cases")
    rng = np.random.default_rng(seed)
    side_b, failed_b = _side_draws(b, rng, resamples, within)
    side_a, failed_a = _side_draws(a, rng, resamples, within)
    draws = side_b - side_a
    point = b.log_speed.mean(axis=1) - a.log_speed.mean(axis=1)
    timed = np.array([all(t is not None for t in ra + rb) for ra, rb in zip(a.times, b.times)], dtype=bool)
    timed &= ~(failed_a | failed_b)
    sampled = timed | (min(a.runs, b.runs) >= 2)
    return RatioDraws(point=point, draws=draws, runs=(a.runs, b.runs), sampled=np.asarray(sampled),
                      sides=(side_a, side_b))


def expanded_interval(point: float, draws: np.ndarray, runs: tuple[int, int],
                      side_draws: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, float]:
    """The 95% interval of a log ratio from its resamples, widened by :func:`expansion` (the
    degrees of freedom from each side's resampled spread, ``side_draws``, when given), as a
    ratio ``(low, high)``; it always holds the point."""
    lo, hi = np.percentile(draws, [2.5, 97.5])
    df = None
    if side_draws is not None and ci_kind(*runs) == BETWEEN_RUN:
        df = welch_df(float(np.var(side_draws[0])), float(np.var(side_draws[1])), *runs)
    c = expansion(*runs, df)
    return (math.exp(point - c * max(point - float(lo), 0.0)), math.exp(point + c * max(float(hi) - point, 0.0)))


def case_interval(d: RatioDraws, index: int) -> tuple[float, tuple[float, float] | None]:
    """Case ``index``'s speed ratio and its CI (None when nothing in it was resampled)."""
    point = float(d.point[index])
    if not d.sampled[index]:
        return math.exp(point), None
    return math.exp(point), expanded_interval(point, d.draws[index], d.runs,
                                              (d.sides[0][index], d.sides[1][index]))


def median_interval(d: RatioDraws, indices: Sequence[int]) -> tuple[float, tuple[float, float] | None]:
    """The median over cases ``indices`` of their speed ratios (taken in logs: of an even count,
    the geometric mean of the middle two), and its CI from the same resamples, the cases fixed
    and the runs drawn together; None unless every case in it was resampled."""
    rows = np.asarray(list(indices), dtype=np.int64)
    if rows.size == 0:
        raise ValueError("no cases to summarise")
    point = float(np.median(d.point[rows]))
    if not bool(np.all(d.sampled[rows])):
        return math.exp(point), None
    sides = (np.median(d.sides[0][rows], axis=0), np.median(d.sides[1][rows], axis=0))
    return math.exp(point), expanded_interval(point, np.median(d.draws[rows], axis=0), d.runs, sides)


def holds_one(ci: tuple[float, float] | None) -> bool:
    """True when the interval holds a ratio of 1 (no difference measured)."""
    return ci is not None and ci[0] <= 1.0 <= ci[1]
