"""The online client's connection handling against a loopback aiohttp server that ends each
stream a moment after ``[DONE]`` (as a busy server's last chunk can)."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from parity.families.decode.serving.client import sent_tracing, stream_request

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


async def _five_requests() -> tuple[list, int]:
    app = web.Application()
    app.router.add_post("/v1/completions", _answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
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
