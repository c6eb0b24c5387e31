"""Wall time that is bookkeeping, never a sample: how long cases took (progress, the time
left), a search's budget (the compute ceiling's, ``parity.ceilings.compute``), a build whose
cost is reported beside a rate (a tuned backend's tuning time).

A case's timed figures come from the strategies of ``parity.timing`` through the harness; the
runner, the progress tracker and the families read elapsed wall time here so that only
``parity.timing`` reads a clock.
"""

from __future__ import annotations

import time


class Stopwatch:
    """Seconds of wall time since it was made (or last ``restart``), from a monotonic clock."""

    def __init__(self) -> None:
        self._started = time.perf_counter()

    def restart(self) -> None:
        """Count from now."""
        self._started = time.perf_counter()

    def elapsed_s(self) -> float:
        """Seconds since the start, never negative (the clock is monotonic)."""
        return time.perf_counter() - self._started

    def __call__(self) -> float:
        """The same as :meth:`elapsed_s`: a stopwatch is a budget clock ``() -> seconds``."""
        return self.elapsed_s()
