"""Host-clock stream timing: exact stamps on a scripted clock, and a real chunked HTTP stream."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from parity.timing.stream import (
    StreamTiming,
    chunk_gaps_s,
    first_chunk_s,
    gap_samples,
    stream_end_s,
    time_stream,
)


async def _items(*items: str) -> AsyncIterator[str]:
    for item in items:
        yield item


def test_stamps_on_a_scripted_clock_give_hand_computed_figures() -> None:
    # start 100 ns, chunks at 250, 1250 and 1300 ns, end of stream at 2000 ns
    clock = iter([100, 250, 1250, 1300, 2000]).__next__
    timing = asyncio.run(time_stream(_items("a", "b", "c"), clock_ns=clock))
    assert timing == StreamTiming(
        start_ns=100, arrivals_ns=(250, 1250, 1300), end_ns=2000, chunks=("a", "b", "c")
    )
    assert first_chunk_s(timing) == pytest.approx(150e-9)
    assert chunk_gaps_s(timing) == pytest.approx((1000e-9, 50e-9))
    assert stream_end_s(timing) == pytest.approx(1900e-9)
    samples = gap_samples(timing)
    assert samples.method == "host-clock-stream"
    assert samples.values_s == pytest.approx((1e-6, 5e-8))
    assert samples.meta == {"chunks": 3}
    assert timing.to_dict() == {
        "start_ns": 100,
        "arrivals_ns": [250, 1250, 1300],
        "end_ns": 2000,
        "method": "host-clock-stream",
    }


def test_the_caller_start_stamp_is_kept_and_an_empty_stream_has_no_first_chunk() -> None:
    clock = iter([40, 90]).__next__
    timing = asyncio.run(time_stream(_items("x"), start_ns=10, clock_ns=clock))
    assert (timing.start_ns, timing.arrivals_ns, timing.end_ns) == (10, (40,), 90)
    assert chunk_gaps_s(timing) == ()
    empty = asyncio.run(time_stream(_items(), clock_ns=iter([5, 8]).__next__))
    assert first_chunk_s(empty) is None
    assert stream_end_s(empty) == pytest.approx(3e-9)
    assert len(gap_samples(empty)) == 0


CHUNKS = [f"data: {i}\n\n".encode() for i in range(6)]


def test_a_real_chunked_http_stream_is_stamped_chunk_by_chunk_in_order() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from aiohttp import web

    from loopback import serving

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for i, chunk in enumerate(CHUNKS):
            if i:
                await asyncio.sleep(0.02)
            await response.write(chunk)
        await response.write_eof()
        return response

    async def client() -> StreamTiming:
        app = web.Application()
        app.router.add_get("/stream", stream)
        async with serving(app) as url, aiohttp.ClientSession() as session:
            start = time.perf_counter_ns()
            async with session.get(f"{url}/stream") as response:
                chunks = (data async for data, _ in response.content.iter_chunks())
                return await time_stream(chunks, start_ns=start)

    timing = asyncio.run(client())
    assert timing.chunks == tuple(CHUNKS)
    stamps = (timing.start_ns, *timing.arrivals_ns, timing.end_ns)
    assert list(stamps) == sorted(stamps)
    gaps = chunk_gaps_s(timing)
    assert len(gaps) == len(CHUNKS) - 1
    first = first_chunk_s(timing)
    assert first is not None and first > 0
    assert stream_end_s(timing) >= first + sum(gaps) - 1e-9


def test_the_stream_clock_stamps_data_lines_before_parsing_and_sums_the_handling() -> None:
    from parity.timing.stream import StreamClock

    async def lines() -> AsyncIterator[bytes]:
        for line in (b": keep-alive\n", b"data: {\"a\": 1}\n", b"data: {\"b\": 2}\n", b"data: [DONE]\n", b"data: x\n"):
            yield line

    # a stamp per line read (keep-alive 10, first event 20, second 50, done 90); after each
    # event's handler the clock reads 23 and 54: handling 3 + 4 ns
    ticks = iter([10, 20, 23, 50, 54, 90]).__next__
    clock, seen = StreamClock(ticks), []
    asyncio.run(clock.drain_events(lines(), lambda payload, stamp: seen.append((payload, stamp))))
    assert seen == [(b'{"a": 1}', 20), (b'{"b": 2}', 50)]
    assert (clock.events, clock.handling_ns) == (2, 7)


def test_the_loop_meter_gives_cpu_wall_and_the_schedule_on_its_clocks() -> None:
    from parity.timing.loop_load import LoopMeter

    ns = iter([1_000_000_000, 1_250_000_000, 3_000_000_000]).__next__
    cpu = iter([2.0, 2.5]).__next__

    async def drive() -> tuple[LoopMeter, float]:
        meter = LoopMeter(clock_ns=lambda: ns(), cpu_s=cpu, interval_s=1e-3)
        meter._watch_lag = _no_lag  # type: ignore[method-assign]
        async with meter:
            due = meter.due_in_s(0.5)  # started at 1.0 s, now 1.25 s: due in 0.25 s
        return meter, due

    meter, due = asyncio.run(drive())
    assert due == pytest.approx(0.25)
    assert (meter.wall_s, meter.cpu_s) == (pytest.approx(2.0), pytest.approx(0.5))


async def _no_lag() -> None:
    return None


def test_the_loop_meter_samples_timer_lag() -> None:
    from parity.timing.loop_load import LoopMeter

    async def drive() -> LoopMeter:
        async with LoopMeter(interval_s=1e-3) as meter:
            await asyncio.sleep(0.02)
        return meter

    meter = asyncio.run(drive())
    assert meter.lags_s and all(lag >= 0 for lag in meter.lags_s)
    assert meter.wall_s >= 0.02 and meter.cpu_s >= 0
