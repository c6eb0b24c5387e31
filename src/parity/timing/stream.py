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
