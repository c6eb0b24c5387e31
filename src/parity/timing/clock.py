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


class SearchClock:
    """A search's budget clock: wall seconds since it was made, less the seconds the device
    spent flushing its cache meanwhile (``Device.flushed_s``).

    A search's budget buys timed calls; the flush before each call is the protocol's overhead,
    and its cost is the machine's: 2 x the last-level cache written per call, 5 ms where the L3
    is 32 MiB, 70 ms where it is 480 MiB. Counted against the budget, the flushes alone used up
    a 3 s ceiling search on the larger cache before it had probed a second shape."""

    def __init__(self, device) -> None:
        self._device = device
        self._watch = Stopwatch()
        self._flushed_at_start = float(getattr(device, "flushed_s", 0.0))

    def flushed_s(self) -> float:
        """Seconds of cache flushes since the clock was made."""
        return float(getattr(self._device, "flushed_s", 0.0)) - self._flushed_at_start

    def __call__(self) -> float:
        return self._watch() - self.flushed_s()

