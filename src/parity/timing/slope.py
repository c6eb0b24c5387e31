"""Two chain lengths and the slope between them: the cost of one step, launch costs cancelled.

Work whose call takes a length (``work.call(n)``: a pointer chase of ``n`` dependent loads)
takes ``t(n) = t0 + n·L``; timing a short and a long length and taking
``L = (t_long - t_short) / (n_long - n_short)`` cancels ``t0`` (launch, thread start, the
timer's own cost). ``TwoLengthSlope`` times both lengths with the protocol of
``parity.timing.protocol.measure`` (the work's warm-up, budget, sample bounds and flush), the
short one first, and gives the slope of the medians and of the minima. Interference only ever
adds time, so a slope that is not positive means the short length was disturbed more than the
long one and the pair says nothing: both lengths are timed again, up to ``attempts`` times.

The result's ``main`` samples are the long length's; ``short`` and ``long`` are both kept.
``metrics``: ``slope_s`` and ``slope_min_s`` (seconds per unit of length), the medians and
minima of both lengths, the lengths, and ``attempts`` (how many pairs were timed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.timing.measurement import Measurement
from parity.timing.protocol import measure
from parity.timing.timed import Timed


def slope_per_unit(*, short_s: float, long_s: float, short: int, long: int) -> float:
    """``(long_s - short_s) / (long - short)``: seconds per unit of length."""
    return (long_s - short_s) / (long - short)


@dataclass(frozen=True, kw_only=True)
class TwoLengthSlope:
    """Time ``work.call(short)`` and ``work.call(long)``; the slope between them per unit."""

    short: int
    long: int
    attempts: int = 1

    def __post_init__(self) -> None:
        if not 0 < self.short < self.long:
            raise ValueError(f"need 0 < short < long, got short={self.short}, long={self.long}")
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    def _time(self, work: Any, length: int, device: Any) -> Measurement:
        return measure(lambda: work.call(length), device=device, warmup_s=work.warmup_s,
                       budget_s=work.budget_s, min_samples=work.min_samples,
                       max_samples=work.max_samples, flush_cache=work.flush_cache)

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        if group is not None:
            raise ValueError("the two-length slope times one process; run it without ranks")
        for attempt in range(1, self.attempts + 1):
            short = self._time(work, self.short, device)
            long = self._time(work, self.long, device)
            slope = slope_per_unit(short_s=short.summary.median, long_s=long.summary.median,
                                   short=self.short, long=self.long)
            slope_min = slope_per_unit(short_s=short.summary.min, long_s=long.summary.min,
                                       short=self.short, long=self.long)
            if slope > 0 and slope_min > 0:
                break
        metrics = {"slope_s": slope, "slope_min_s": slope_min, "short": self.short, "long": self.long,
                   "short_median_s": short.summary.median, "long_median_s": long.summary.median,
                   "short_min_s": short.summary.min, "long_min_s": long.summary.min, "attempts": attempt}
        return Timed(samples={"main": long.samples, "short": short.samples, "long": long.samples},
                     summary=long.summary, metrics=metrics,
                     findings=tuple(short.findings) + tuple(long.findings))
