"""What every timing strategy shares: how many samples a budget buys, and the timed loop.

Eager timing (``protocol.py``) and graph replay (``graph.py``) both turn a time budget into a
sample count and then run the same loop, [flush,] start, call, stop, one synchronize at the
end; the loop lives here so that neither strategy imports the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from parity.device.base import Device


def samples_for_budget(
    *, budget_s: float, per_sample_s: float, min_samples: int, max_samples: int
) -> int:
    """How many samples fit the budget: ``clamp(floor(budget_s / per_sample_s), min, max)``.

    Example: 0.2 s budget, 1 ms per sample (call plus flush), bounds 5..10000 -> 200 samples.
    A per-sample estimate of zero (timer too coarse) gives ``max_samples``.
    """
    if min_samples < 1 or max_samples < min_samples:
        raise ValueError(f"need 1 <= min_samples <= max_samples, got {min_samples}, {max_samples}")
    if budget_s < 0:
        raise ValueError(f"budget {budget_s!r} s is negative")
    if per_sample_s <= 0:
        return max_samples
    return max(min_samples, min(max_samples, math.floor(budget_s / per_sample_s)))


def time_calls(
    device: Device, run: Callable[[int], Any], *, count: int, flush: bool
) -> list[float]:
    """``count`` samples: [flush,] start, ``run(i)``, stop; one synchronize; elapsed seconds."""
    device.mark("measure")
    timers = [device.event_timer() for _ in range(count)]
    for i, timer in enumerate(timers):
        if flush:
            device.flush_cache()
        timer.start()
        run(i)
        timer.stop()
    device.synchronize()
    return [timer.elapsed_s() for timer in timers]
