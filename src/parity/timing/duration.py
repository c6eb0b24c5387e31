"""For a duration: one work repeated for a stated wall-clock time, every iteration stamped.

Protocol, the same on every rank of ``group`` (``group`` None: this process alone):

1. warm-up: the agreed count of ``parity.timing.ranks.agreed_warmup`` (every rank calls the
   work equally often, since it may be a collective), which also gives the slowest rank's
   per-call estimate ``e``;
2. a barrier, then ``t0`` on this rank's clock;
3. chunks of ``n = clamp(floor(c / e), 1, MAX_CHUNK)`` iterations, each started at a
   barrier after the device queue is drained and timed by the device's timer; the iteration's
   start, ``clock - t0``, is kept beside its time. The first chunk has ``c = chunk_s / 4``
   (``e`` counts the calls alone, not the barriers), the others ``c = chunk_s``;
4. after each chunk one ``all_reduce(MAX)`` of (seconds since ``t0``, the chunk's wall
   seconds per iteration, barrier included) on the control group: every rank sees the same two
   numbers and so takes the same decision. The run stops once ``duration_s`` have passed (and
   at least ``Work.min_samples`` iterations were timed); otherwise ``e`` becomes the slowest
   rank's wall seconds per iteration and the next chunk is sized from it.

So the run lasts ``duration_s`` of wall time plus at most one chunk, whatever happens to the
work's speed on the way: a link that slows mid-run gives later chunks fewer iterations, never
a longer run. (A count fixed from the first calls, the budget rule of ``measure``, would
stretch the run by the slowdown.) The samples are the per-iteration max over ranks
(``max_over_ranks``); ``meta["start_s"]`` holds each iteration's start in seconds since
``t0`` (the max over ranks, whose clocks start together at the barrier of step 2), the clock
that drift windows are cut by.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any

from parity.model.errors import ParityError
from parity.stats.checks import check_samples
from parity.stats.summary import summarize
from parity.timing.ranks import agreed_warmup, barrier_timeout, max_over_ranks, timed_at_barrier
from parity.timing.timed import Timed

CHUNK_S = 0.25  # wall seconds between two agreements on whether to stop
MAX_CHUNK = 100_000  # iterations in one chunk, at most


@dataclass(frozen=True, kw_only=True)
class ForDuration:
    """Repeat ``Work.call`` for ``duration_s`` wall-clock seconds in chunks of about ``chunk_s``
    (module docstring); ``max_iterations`` bounds the count whatever the clock says."""

    duration_s: float
    chunk_s: float = CHUNK_S
    max_iterations: int = 10_000_000
    barrier_timeout_s: float | None = None  # None: the group's own timeout (timing.ranks.barrier_timeout)

    def __post_init__(self) -> None:
        if not self.duration_s > 0:
            raise ParityError(f"a duration must be longer than 0 s, not {self.duration_s}")
        if not self.chunk_s > 0:
            raise ParityError(f"a chunk must be longer than 0 s, not {self.chunk_s}")

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        call = work.call
        if work.inputs is not None:  # an input rotation: call i gets set i mod its length
            rotation = itertools.cycle(work.inputs)
            call = lambda: work.call(next(rotation))  # noqa: E731
        warmup, estimate = agreed_warmup(call, group=group, device=device, warmup_s=work.warmup_s,
                                         barrier_timeout_s=self.barrier_timeout_s)
        times, starts = self._chunks(call, device=device, group=group, estimate=estimate,
                                     min_samples=max(1, work.min_samples))
        samples = max_over_ranks(times, group=group, rank_method="device-events" if device.has_events else "host-clock",
                                 resolution_s=device.timer_resolution_s(), warmup_calls=warmup)
        samples = replace(samples, meta={**samples.meta, "start_s": _agreed_max(starts, group=group),
                                         "duration_s": self.duration_s, "chunk_s": self.chunk_s})
        return Timed(samples={"main": samples}, summary=summarize(samples.values_s),
                     findings=tuple(check_samples(samples)),
                     metrics={"iterations": len(times), "wall_s": samples.meta["start_s"][-1] + samples.values_s[-1]})

    def _chunks(self, call: Any, *, device: Any, group: Any, estimate: float,
                min_samples: int) -> tuple[list[float], list[float]]:
        from parity.ranks.gather import barrier

        times: list[float] = []
        starts: list[float] = []
        if group is not None:
            barrier(group, timeout_s=barrier_timeout(group, self.barrier_timeout_s))
        t0 = time.perf_counter()
        per_iteration = estimate  # the first chunk is a quarter of one, sized from the calls alone
        budget = self.chunk_s / 4
        while True:
            n = chunk_size(budget, per_iteration, limit=self.max_iterations - len(times))
            opened = time.perf_counter()
            for _ in range(n):
                begin, seconds = timed_at_barrier(call, device=device, group=group,
                                                  barrier_timeout_s=self.barrier_timeout_s)
                times.append(seconds)
                starts.append(begin - t0)
            now = time.perf_counter()
            elapsed, per_iteration = _agreed_max([now - t0, (now - opened) / n], group=group)
            budget = self.chunk_s
            if len(times) >= self.max_iterations or (elapsed >= self.duration_s and len(times) >= min_samples):
                return times, starts


def chunk_size(chunk_s: float, per_call_s: float, *, limit: int = MAX_CHUNK) -> int:
    """Iterations in the next chunk: ``clamp(floor(chunk_s / per_call_s), 1, min(MAX_CHUNK,
    limit))``; one where the per-call time is not positive. Example: 0.25 s of 2 ms calls is 125."""
    most = max(1, min(MAX_CHUNK, limit))
    if not per_call_s > 0:
        return 1
    return max(1, min(most, math.floor(chunk_s / per_call_s)))


def _agreed_max(values: list[float], *, group: Any) -> list[float]:
    """``values`` reduced by MAX over the ranks of ``group`` (itself with no group)."""
    if group is None:
        return list(values)
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=group.control)
    return [float(v) for v in tensor.tolist()]
