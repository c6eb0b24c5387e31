"""How a measured compute ceiling ``P`` is quoted, and when it cannot be trusted.

The ceiling search ends with a contest: the winning shape is timed in ``n`` interleaved
rounds, each round the median rate of its timed calls (FLOP/s). Every shape of a sweep is
quoted by the median of its calls, so ``P`` is quoted by the same statistic, the median round
(``median_flops``), and a fraction of ``P`` is then a ratio of like to like. The best round
(``best_flops``, STREAM's best-of-N) is kept beside it, as every shape keeps its fastest call.

Dispersion of the rounds (FLOP/s): quartiles and a 95% percentile bootstrap CI of the median
(``parity.stats.summarize``); the relative spread ``(max - min) / median``. A ceiling is
``unstable`` when its rounds spread by more than ``UNSTABLE_SPREAD`` of the median, or when its
CI is wider than that: either says that the same search run again may well land more than 10%
away, which is more than the CI of one run can promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from parity.stats.summary import summarize

# Relative spread of the contest rounds (and relative CI width) beyond which P is unstable.
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
    """Summarise the winner's contest rounds (FLOP/s): median, best, quartiles, the 95% CI of
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
