"""The load of the event loop that drives a streamed client: CPU share and timer lag.

A client process that stamps streamed answers (``parity.timing.stream``) is only as good as its
event loop is idle: a chunk that arrives while the loop is busy is stamped when the loop gets to
it. ``LoopMeter`` measures, over the span a process drives its requests,

    busy = CPU s / wall s          (``time.process_time`` over ``time.perf_counter_ns``; near 1:
                                    the loop never waited, so stamps waited on the client)
    lag  = fire - due              (how late a ``LAG_INTERVAL_S`` timer fires, one sample per tick:
                                    the time an arriving chunk can wait before it is stamped)

and is the clock of the load schedule: ``due_in_s(offset_s)`` is the seconds left until a
request's send offset from the meter's start, on the same clock as the stream stamps.

Biases: process time counts every thread of the process (aiohttp's resolver threads included);
the lag sampler is itself a task of the loop and adds one wake-up per tick.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

LAG_INTERVAL_S = 0.01


class LoopMeter:
    """``async with LoopMeter() as meter:`` around the driving of a share of requests; then
    ``meter.cpu_s``, ``meter.wall_s`` and ``meter.lags_s`` (see the module docstring)."""

    def __init__(self, *, interval_s: float = LAG_INTERVAL_S, clock_ns: Callable[[], int] = time.perf_counter_ns,
                 cpu_s: Callable[[], float] = time.process_time) -> None:
        self.interval_s = interval_s
        self._clock_ns, self._cpu = clock_ns, cpu_s
        self._stop = asyncio.Event()
        self._monitor: asyncio.Task[None] | None = None
        self._t0_ns, self._cpu0 = 0, 0.0
        self.lags: list[float] = []
        self.cpu_s = self.wall_s = 0.0

    @property
    def lags_s(self) -> tuple[float, ...]:
        return tuple(self.lags)

    def due_in_s(self, offset_s: float) -> float:
        """Seconds from now until ``offset_s`` after the meter's start (negative: overdue)."""
        return (self._t0_ns + offset_s * 1e9 - self._clock_ns()) / 1e9

    async def _watch_lag(self) -> None:
        while not self._stop.is_set():
            due = self._clock_ns() / 1e9 + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.lags.append(max(0.0, self._clock_ns() / 1e9 - due))

    async def __aenter__(self) -> LoopMeter:
        self._monitor = asyncio.create_task(self._watch_lag())
        self._cpu0, self._t0_ns = self._cpu(), self._clock_ns()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.wall_s = (self._clock_ns() - self._t0_ns) / 1e9
        self.cpu_s = self._cpu() - self._cpu0
        self._stop.set()
        if self._monitor is not None:
            await self._monitor
