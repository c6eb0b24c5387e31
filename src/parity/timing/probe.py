"""Host-clock probe: the best of a few timed calls, to size work before it is measured.

A benchmark that must choose how much work one timed call does (how many loads a pointer
chase follows so that a chain takes a few milliseconds) needs a rough time per unit first.
``time_best_of`` gives it: the host clock around ``fn()``, with the device synchronized before
and after, the shortest of ``repeats`` tries. The minimum, not the median, because a probe is
short and interference (preemption, other tenants) only ever adds time; the synchronize makes
the figure include launch and queueing on an accelerator, so a probe errs long, and work sized
from it errs small. It never replaces :func:`parity.timing.measure`, which times the figures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any


def time_best_of(fn: Callable[[], Any], *, device: Any, repeats: int = 3) -> float:
    """Shortest of ``repeats`` host-clock timings of ``fn()``, in seconds (synchronized each side)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    best = math.inf
    for _ in range(repeats):
        device.synchronize()
        start = time.perf_counter()
        fn()
        device.synchronize()
        best = min(best, time.perf_counter() - start)
    return best
