"""A protocol's own clock: seconds since it started, for budgets and deadlines (never a sample).

A search that stops at its budget (the compute ceiling's, ``parity.ceilings.compute``) or a
build whose cost is reported beside a rate (a tuned backend's tuning time) reads this clock,
so that the one place reading the host's clock is ``parity.timing``.
"""

from __future__ import annotations

import time


class Stopwatch:
    """``stopwatch()``: seconds since it was made (monotonic, high resolution)."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self._start
