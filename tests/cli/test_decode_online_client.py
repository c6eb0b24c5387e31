"""The online client's connection handling against a loopback aiohttp server that ends each
stream a moment after ``[DONE]`` (as a busy server's last chunk can)."""

from __future__ import annotations

import asyncio
import random

import aiohttp
from aiohttp import web

from parity.families.decode.serving.client import TOKENS_FROM_CHUNKS, sent_tracing, stream_request

EVENTS = (b'data: {"choices":[{"text":"a"}]}\n\n', b'data: {"choices":[{"text":"b"}]}\n\n',
          b'data: {"choices":[],"usage":{"completion_tokens":2,"prompt_tokens":3}}\n\n', b"data: [DONE]\n\n")


async def _answer(request: web.Request) -> web.StreamResponse:
    await request.json()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in EVENTS:
        await response.write(event)
    await asyncio.sleep(0.2)  # the stream's end comes in its own write, after [DONE]
    await response.write_eof()
    return response


async def _serve_on_loopback(handler) -> tuple[web.AppRunner, int]:
    """An aiohttp server answering POST /v1/completions with ``handler`` on a free loopback
    port: its runner (to clean up) and the port."""
    app = web.Application()
    app.router.add_post("/v1/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


async def _five_requests() -> tuple[list, int]:
    runner, port = await _serve_on_loopback(_answer)
    opened: list[int] = []
    tracing = sent_tracing()

    async def on_open(session: object, context: object, params: object) -> None:
        opened.append(1)

    tracing.on_connection_create_end.append(on_open)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trace_configs=[tracing]) as session:
            records = [await stream_request(session, url=f"http://127.0.0.1:{port}/v1/completions",
                                            body={"max_tokens": 2}, index=i, headers={}) for i in range(5)]
    finally:
        await runner.cleanup()
    return records, len(opened)


def test_each_answer_is_read_to_its_end_so_one_connection_serves_every_request() -> None:
    records, opened = asyncio.run(_five_requests())
    assert all(r.ok and r.output_tokens == 2 and r.usage_prompt_tokens == 3 for r in records)
    assert opened == 1  # without reading past [DONE], each request opened a connection of its own
    for r in records:  # the record's end is [DONE]'s, not the stream's end 200 ms later
        assert r.start_ns <= r.send_ns <= r.content_ns[0] <= r.content_ns[-1] <= r.end_ns
        assert r.end_ns - r.content_ns[-1] < 100_000_000


async def _serve(bodies: list[tuple[int, bytes]]) -> list:
    """One request per ``(mode, body)`` against a loopback server that answers each with its
    body in 37-byte writes: mode 0 a finished stream, 1 a stream cut off, 2 an HTTP error, 3 a
    JSON content type."""
    async def answer(request: web.Request) -> web.StreamResponse:
        mode, body = bodies[int(request.query["i"])]
        if mode == 2:
            return web.Response(status=500, body=body)
        kind = "application/json" if mode == 3 else "text/event-stream"
        response = web.StreamResponse(headers={"Content-Type": kind})
        await response.prepare(request)
        for at in range(0, len(body), 37):
            await response.write(body[at:at + 37])
        if mode == 1:
            request.transport.close()  # type: ignore[union-attr]
            return response
        await response.write_eof()
        return response

    runner, port = await _serve_on_loopback(answer)
    try:
        async with aiohttp.ClientSession() as session:
            return [await asyncio.wait_for(stream_request(session, url=f"http://127.0.0.1:{port}/v1/completions?i={i}",
                                                          body={"max_tokens": 2}, index=i, headers={}), 10)
                    for i in range(len(bodies))]
    finally:
        await runner.cleanup()


def test_a_usage_count_that_is_no_count_leaves_the_tokens_to_the_chunks() -> None:
    usage = [b'{"completion_tokens":-5,"prompt_tokens":-1}', b'{"completion_tokens":2.5,"prompt_tokens":"3"}',
             b'{"completion_tokens":true,"prompt_tokens":null}']
    bodies = [(0, EVENTS[0] + EVENTS[1] + b'data: {"choices":[],"usage":' + u + b"}\n\n" + EVENTS[3]) for u in usage]
    for record in asyncio.run(_serve(bodies)):
        assert record.ok and record.usage_output_tokens is None and record.usage_prompt_tokens is None
        assert record.output_tokens == 2 and record.token_source == TOKENS_FROM_CHUNKS


ODD = (b"", b"\x00\xff", b"data:", b"data: null\n\n", b"data: []\n\n", b"data: 1e999\n\n", b'data: {"choices":5}\n\n',
       b'data: {"choices":[{"text":[1]}]}\n\n', b'data: {"usage":[]}\n\n', b'data: {"choices":[{"delta":5}]}\n\n',
       b"data: " + b"x" * 70_000 + b"\n\n", b'data: {"a":' * 200 + b"\n\n", b": comment\n", b'data: "\\ud800"\n\n',
       b'data: {"choices":[{"text":"\xff"}]}\n\n', b"\r\n", b'data: {"usage":{"completion_tokens":1e400}}\n\n')


def test_mutated_streams_give_a_record_each_never_an_exception() -> None:
    """150 seeded mutants of a good stream (odd events inserted, events dropped, a byte changed,
    an event cut short), some cut off, refused or of the wrong type: each request gives a record,
    finished or with a one-line error."""
    rng, bodies = random.Random(5), []
    for _ in range(150):
        parts = list(EVENTS)
        for _ in range(rng.randint(1, 4)):
            op, at = rng.random(), rng.randrange(len(parts) + 1)
            if op < 0.4:
                parts.insert(at, rng.choice(ODD))
            elif parts and op < 0.6:
                parts.pop(at % len(parts))
            elif parts and op < 0.8:
                event = bytearray(parts[at % len(parts)])
                if event:
                    event[rng.randrange(len(event))] = rng.randrange(256)
                parts[at % len(parts)] = bytes(event)
            elif parts:
                event = parts[at % len(parts)]
                parts[at % len(parts)] = event[: rng.randrange(len(event) + 1)]
        bodies.append((rng.choice((0, 0, 0, 0, 1, 2, 3)), b"".join(parts)))
    records = asyncio.run(_serve(bodies))
    assert len(records) == len(bodies)
    for record in records:
        assert record.ok or (record.error and "\n" not in record.error)
        assert record.output_tokens >= 0
    assert sum(r.ok for r in records) > 20 and sum(not r.ok for r in records) > 20
