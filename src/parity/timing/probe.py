"""Host-clock probe: the best of a few timed calls, to size work before it is measured.

A benchmark that must choose how much work one timed call does (how many loads a pointer
chase follows so that a chain takes a few milliseconds) needs a rough time per unit first.
``BestOf`` (a strategy for a declared ``Work``) and ``time_best_of`` give it: the host clock
around one call, with the device synchronized before and after, the shortest of ``repeats``
tries. The minimum, not the median, because a probe is short and interference (preemption,
other tenants) only ever adds time; the synchronize makes the figure include launch and
queueing on an accelerator, so a probe errs long, and work sized from it errs small. It never
replaces :func:`parity.timing.measure`, which times the figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.model.samples import Samples
from parity.stats.summary import summarize
from parity.timing.timed import Timed

METHOD = "host-clock"


def probe_times(fn: Callable[[], Any], *, device: Any, repeats: int = 3) -> list[float]:
    """``repeats`` host-clock timings of ``fn()``, in seconds, each synchronized on both sides."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    times = []
    for _ in range(repeats):
        device.synchronize()
        start = time.perf_counter()
        fn()
        device.synchronize()
        times.append(time.perf_counter() - start)
    return times


def time_best_of(fn: Callable[[], Any], *, device: Any, repeats: int = 3) -> float:
    """Shortest of ``repeats`` host-clock timings of ``fn()``, in seconds (synchronized each side)."""
    return min(probe_times(fn, device=device, repeats=repeats))


@dataclass(frozen=True, kw_only=True)
class BestOf:
    """Probe a declared ``Work``: ``repeats`` synchronized host-clock timings of ``work.call()``;
    the best is ``summary.min`` (and ``metrics["best_s"]``). No warm-up, no flush, no budget."""

    repeats: int = 3

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        times = probe_times(work.call, device=device, repeats=self.repeats)
        samples = Samples(values_s=tuple(times), method=METHOD)
        return Timed(samples={"main": samples}, summary=summarize(times), metrics={"best_s": min(times)})
