"""Host-clock stream: when each chunk of a streamed answer arrived, on the client's clock.

``await time_stream(chunks, start_ns=t0)`` drains an async iterator of chunks (bytes from a
connection, or events already parsed from it) and stamps each arrival with
``time.perf_counter_ns()`` the moment the iterator hands it over; the end is stamped when the
iterator is exhausted. ``start_ns`` is the caller's stamp taken just before the request was
sent, so the first figure includes the request's way to the server. From the stamps:

    first_chunk_s = (a_0 - start) / 1e9          (time to first chunk: TTFT when chunks are tokens)
    gaps_s[i]     = (a_{i+1} - a_i) / 1e9        (every inter-chunk gap: ITL)
    end_s         = (end - start) / 1e9          (end to end)

and, later in the decode family, TPOT = (end_s - first_chunk_s) / (tokens - 1).

Biases: the stamps are when this event loop got each chunk, not when the server sent it, so
they include network delay and the client's own scheduling (an event loop busy with other
requests stamps late; keep the client light). One TCP read can carry several server events and
one event can span reads: stamp parsed events, not raw reads, to time tokens.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any

from parity.model.samples import Samples

METHOD = "host-clock-stream"


@dataclass(frozen=True, kw_only=True)
class StreamTiming:
    """Raw stamps of one stream in integer nanoseconds of ``time.perf_counter_ns``, and the
    chunks as received (in order)."""

    start_ns: int
    arrivals_ns: tuple[int, ...]
    end_ns: int
    chunks: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        """The stamps only (chunks are payload, kept by whoever parses them)."""
        return {
            "start_ns": self.start_ns,
            "arrivals_ns": list(self.arrivals_ns),
            "end_ns": self.end_ns,
            "method": METHOD,
        }


async def time_stream(
    chunks: AsyncIterable[Any],
    *,
    start_ns: int | None = None,
    clock_ns: Callable[[], int] = time.perf_counter_ns,
) -> StreamTiming:
    """Drain ``chunks``, stamping each arrival and the end on ``clock_ns`` (see the module
    docstring). ``start_ns`` defaults to the moment of this call."""
    start = clock_ns() if start_ns is None else start_ns
    arrivals: list[int] = []
    received: list[Any] = []
    async for chunk in chunks:
        arrivals.append(clock_ns())
        received.append(chunk)
    return StreamTiming(
        start_ns=start, arrivals_ns=tuple(arrivals), end_ns=clock_ns(), chunks=tuple(received)
    )


def first_chunk_s(timing: StreamTiming) -> float | None:
    """Seconds from the start to the first chunk, ``(a_0 - start) / 1e9``; None without one."""
    if not timing.arrivals_ns:
        return None
    return (timing.arrivals_ns[0] - timing.start_ns) / 1e9


def chunk_gaps_s(timing: StreamTiming) -> tuple[float, ...]:
    """Every gap between consecutive chunks, ``(a_{i+1} - a_i) / 1e9`` seconds, in order."""
    stamps = timing.arrivals_ns
    return tuple((later - earlier) / 1e9 for earlier, later in zip(stamps, stamps[1:]))


def stream_end_s(timing: StreamTiming) -> float:
    """Seconds from the start to the end of the stream, ``(end - start) / 1e9``."""
    return (timing.end_ns - timing.start_ns) / 1e9


def gap_samples(timing: StreamTiming) -> Samples:
    """The inter-chunk gaps as raw samples (the ITL distribution of one stream), labelled
    ``host-clock-stream`` with the host clock's resolution."""
    return Samples(
        values_s=chunk_gaps_s(timing),
        method=METHOD,
        resolution_s=time.get_clock_info("perf_counter").resolution,
        meta={"chunks": len(timing.arrivals_ns)},
    )


class StreamClock:
    """The host-clock stream strategy for a live client: one request's stamps and the client's
    own cost of reading its events.

    ``now_ns()`` stamps on ``time.perf_counter_ns`` (monotonic; on Linux and macOS the system's
    monotonic clock, shared by the processes of one machine, so the stamps of several client
    processes merge on one time axis). ``drain_events(lines, on_event)`` reads a server-sent
    event stream line by line and stamps each line the moment it is read, before it is parsed
    (the module's rule: stamp events, not raw reads); a ``data:`` line is an event, handed with
    its stamp to ``on_event``, and ``data: [DONE]`` ends the stream. The time ``on_event`` takes
    (parsing and bookkeeping) is summed in ``handling_ns``: the client's own work, which delays
    the stamps of the events behind it. ``events`` and ``handling_ns`` hold what was read so far
    when the stream breaks off with an error.
    """

    def __init__(self, clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.now_ns = clock_ns
        self.events = 0
        self.handling_ns = 0

    async def drain_events(self, lines: AsyncIterable[bytes], on_event: Callable[[bytes, int], None]) -> None:
        """Stamp and hand over every ``data:`` payload of ``lines`` until ``[DONE]`` or the end."""
        clock = self.now_ns
        async for line in lines:
            stamp = clock()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                break
            self.events += 1
            on_event(payload, stamp)
            self.handling_ns += clock() - stamp
