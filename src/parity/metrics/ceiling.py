"""How a measured compute ceiling ``P`` is quoted, and when it cannot be trusted.

The ceiling search ends with a contest that picks the shape, then times the winner in ``n``
fresh confirmation rounds (the contest's own rounds of the winner read high: they are why it
won), each round the median rate of its timed calls (FLOP/s). Every shape of a sweep is
quoted by the median of its calls, so ``P`` is quoted by the same statistic, the median round
(``median_flops``), and a fraction of ``P`` is then a ratio of like to like. The best round
(``best_flops``, STREAM's best-of-N) is kept beside it, as every shape keeps its fastest call.

Dispersion of the rounds (FLOP/s): quartiles and a 95% percentile bootstrap CI of the median
(``parity.stats.summarize``); the relative spread ``(max - min) / median``. A ceiling is
``unstable`` when its rounds spread by more than ``UNSTABLE_SPREAD`` of the median, or when its
CI is wider than that: either says that the same search run again may well land more than 10%
away, which is more than the CI of one run can promise.

The rounds are timed as every shape of the sweep is (the cache flushed before each call unless
the sweep is told not to; inputs rotated): timed warm, a small shape runs up to 1.2x faster on a
CPU with a large last-level cache than the same shape timed by the sweep, and ``P`` would sit
over its own shape.

The machine's speed moves while a sweep runs (on a shared CPU, by 10-20% for seconds at a time),
so ``P`` is not taken from the confirmation: the winner's shape is timed again in sentinels spread
through the sweep (``ceiling/<dtype>/sentinel-<i>``), and ``P`` is the median of their rounds
(``ceiling_rounds``): the ceiling of the moments the shapes were timed in. The confirmation is
kept beside it, and ``unstable-ceiling`` is judged over the confirmation and sentinel rounds
together, so a run whose speed moved between the search and the sweep says so.

Each sentinel also times the ceiling's shape as the sweep times a shape (its own warm-up, timed
calls and median call), right beside its round, in alternating order. The own shape's fraction
of ``P`` is ``median(own) / median(rounds)`` over those pairs, with a CI from a bootstrap that
draws pairs (``paired_own_shape_fraction``): a moment that slowed both members of a pair
cancels, and what is left is whether a shape timed by the sweep reaches the ``P`` it is divided
by. Beside it, ``median(sentinel rounds) / median(confirmation)`` says how far the sweep's
moments were from the confirmation's. A reused ceiling (``--ceiling-from``) keeps its stored
``P``; the sweep's own-shape timings over that ``P``'s rounds are its fraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from parity.stats.summary import ratio_ci, summarize

# Relative spread of the ceiling's rounds (and relative CI width) beyond which P is unstable.
UNSTABLE_SPREAD = 0.10
MIN_ROUNDS_FOR_CI = 3


@dataclass(frozen=True, kw_only=True)
class CeilingRounds:
    """The ceiling's rounds, FLOP/s, and what is derived from them (see module)."""

    rates: tuple[float, ...]
    median_flops: float
    best_flops: float
    p25_flops: float
    p75_flops: float
    ci95_flops: tuple[float, float] | None
    spread: float
    ci_width: float | None

    @property
    def unstable(self) -> bool:
        """True when ``spread > UNSTABLE_SPREAD`` or the CI's relative width is over it."""
        return self.spread > UNSTABLE_SPREAD or (self.ci_width is not None and self.ci_width > UNSTABLE_SPREAD)

    def to_dict(self) -> dict[str, Any]:
        return {"statistic": "median round", "median_flops": self.median_flops, "best_flops": self.best_flops,
                "p25_flops": self.p25_flops, "p75_flops": self.p75_flops,
                "ci95_flops": list(self.ci95_flops) if self.ci95_flops else None,
                "spread": self.spread, "ci_width": self.ci_width, "unstable": self.unstable,
                "rounds_flops": list(self.rates)}


def ceiling_rounds(rates: Sequence[float]) -> CeilingRounds:
    """Summarise a ceiling's rounds (FLOP/s): median, best, quartiles, the 95% CI of
    the median (None under ``MIN_ROUNDS_FOR_CI`` rounds), ``spread = (max - min) / median`` and
    ``ci_width = (ci_high - ci_low) / median``.

    Example: rounds 9, 10, 11 FLOP/s -> median 10, best 11, spread (11 - 9) / 10 = 0.2 (unstable).
    """
    values = [float(r) for r in rates]
    if not values or min(values) <= 0:
        raise ValueError(f"a ceiling needs positive round rates, got {values}")
    s = summarize(values)
    ci = (s.ci_low, s.ci_high) if len(values) >= MIN_ROUNDS_FOR_CI else None
    return CeilingRounds(
        rates=tuple(values), median_flops=s.median, best_flops=s.max, p25_flops=s.p25, p75_flops=s.p75,
        ci95_flops=ci, spread=(s.max - s.min) / s.median,
        ci_width=(ci[1] - ci[0]) / s.median if ci else None)


@dataclass(frozen=True, kw_only=True)
class OwnShapeFraction:
    """The ceiling's own shape timed as a sweep shape (``rates``, FLOP/s), as a fraction of ``P``."""

    fraction: float
    ci95: tuple[float, float]
    rates: tuple[float, ...]
    statistic: str

    @property
    def reproduced(self) -> bool:
        """True when 1.0 lies inside the fraction's 95% CI: the shape that gave ``P`` reaches
        ``P`` again, within what the two sets of rounds allow."""
        return self.ci95[0] <= 1.0 <= self.ci95[1]

    def to_dict(self) -> dict[str, Any]:
        return {"statistic": self.statistic, "fraction": self.fraction,
                "ci95": list(self.ci95), "reproduced": self.reproduced, "own_flops": list(self.rates)}


def own_shape_fraction(own_rates: Sequence[float], ceiling_rates: Sequence[float]) -> OwnShapeFraction:
    """``fraction = median(own_rates) / median(ceiling_rates)``, both lists of rates (FLOP/s,
    each the median of its timed calls) timed apart, with a 95% CI from independent bootstrap
    resamples of the two lists (``parity.stats.ratio_ci``): the same statistic on both sides,
    so the ceiling's own shape should read 1.0 within the CI.

    Example: own rounds 9, 10, 11 and ceiling rounds 10, 10, 10 -> fraction 10 / 10 = 1.0.
    """
    own, ceiling = _positive(own_rates, ceiling_rates)
    fraction, low, high = ratio_ci(own, ceiling)
    return OwnShapeFraction(fraction=fraction, ci95=(low, high), rates=tuple(own),
                            statistic="median own-shape timing over the median of P's rounds")


def paired_own_shape_fraction(own_rates: Sequence[float], round_rates: Sequence[float]) -> OwnShapeFraction:
    """``fraction = median(own) / median(rounds)``: the ceiling's shape timed as a sweep shape
    (``own_rates``, FLOP/s) over ``P``'s rounds timed beside each of them (``round_rates``, the
    same order), with a 95% CI from bootstrap resamples of the pairs (``parity.stats.ratio_ci``
    paired).

    Example: own 8, 9, 9 beside rounds 10, 10, 10 -> 9 / 10 = 0.9, and 1.0 outside every resample.
    """
    own, rounds = _positive(own_rates, round_rates)
    fraction, low, high = ratio_ci(own, rounds, paired=True)
    return OwnShapeFraction(fraction=fraction, ci95=(low, high), rates=tuple(own),
                            statistic="median own-shape timing over P, the median of the sentinel rounds timed beside them")


def _positive(first: Sequence[float], second: Sequence[float]) -> tuple[list[float], list[float]]:
    a = [float(r) for r in first]
    b = [float(r) for r in second]
    if not a or not b or min(a + b) <= 0:
        raise ValueError(f"the own-shape fraction needs positive round rates, got {a} and {b}")
    return a, b
