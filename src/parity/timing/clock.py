"""The wall clock of a sweep: how long cases took, for progress and the time left.

This is bookkeeping, never a sample: a case's timed figures come from the strategies of
``parity.timing`` through the harness. The harness's runner and progress tracker read elapsed
wall time here so that only ``parity.timing`` reads a clock.
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
