"""Points in a device's queue and the timers built from two of them.

A ``DeviceEvent`` is recorded into the device's queue and later compared with another:
``start.elapsed_s(end)`` is the device time between the two, in seconds, valid once a
synchronize has passed both. Two events make an ``EventTimer`` (one call between them); N + 1
events time N back-to-back iterations with no gap between them, which a strategy that reduces
per-iteration times across ranks needs.

Backends without device events (the CPU) use ``HostEvent``: the host clock read after a
synchronize, so the same code times every device.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol


class DeviceEvent(Protocol):
    """One point in the device's queue: ``record()`` it, then ``elapsed_s(later)`` after a
    synchronize."""

    def record(self) -> None: ...

    def elapsed_s(self, end: Any) -> float: ...


class EventTimer(Protocol):
    """Times one call: ``start()``, the work, ``stop()``; ``elapsed_s()`` after a synchronize."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def elapsed_s(self) -> float: ...


class HostEvent:
    """The host's ``perf_counter`` read after a device synchronize, for backends without events.

    Bias: a pair of host events includes the synchronize's own cost and the host's launch
    overhead, so short calls read long; the timing core flags samples under 100x the timer
    resolution.
    """

    def __init__(self, *, synchronize: Callable[[], None]) -> None:
        self._synchronize = synchronize
        self._at_s: float | None = None

    def record(self) -> None:
        self._synchronize()
        self._at_s = time.perf_counter()

    def elapsed_s(self, end: HostEvent) -> float:
        """Seconds from this event to ``end``; both must have been recorded."""
        if self._at_s is None or end._at_s is None:
            raise RuntimeError("host event read before both events were recorded")
        return end._at_s - self._at_s


class TorchEvent:
    """A ``torch.<backend>.Event(enable_timing=True)`` recorded on a stream (or the current one).

    Method "device-events": the device's own clock between two points in its queue, so host
    launch overhead that overlaps earlier work is not counted. torch reports milliseconds;
    ``elapsed_s`` converts to seconds.
    """

    def __init__(self, *, event_class: Any, stream: Any = None) -> None:
        self._event = event_class(enable_timing=True)
        self._stream = stream

    def record(self) -> None:
        if self._stream is None:
            self._event.record()
        else:
            self._event.record(self._stream)

    def elapsed_s(self, end: TorchEvent) -> float:
        """Seconds from this event to ``end``; call only after a synchronize."""
        return float(self._event.elapsed_time(end._event)) * 1e-3


class EventPairTimer:
    """An ``EventTimer`` made of two events of any kind: start records one, stop the other."""

    def __init__(self, *, begin: DeviceEvent, end: DeviceEvent) -> None:
        self._begin = begin
        self._end = end

    def start(self) -> None:
        self._begin.record()

    def stop(self) -> None:
        self._end.record()

    def elapsed_s(self) -> float:
        return self._begin.elapsed_s(self._end)


def perf_counter_resolution_s() -> float:
    """The host clock's resolution in seconds: the OS's claim, or the smallest step observed."""
    claimed = time.get_clock_info("perf_counter").resolution
    smallest = float("inf")
    for _ in range(200):
        t0 = time.perf_counter()
        t1 = time.perf_counter()
        while t1 == t0:
            t1 = time.perf_counter()
        smallest = min(smallest, t1 - t0)
    return max(claimed, smallest)
