"""A suite defined here measures a real HTTP server on 127.0.0.1 through ``parity run --endpoint``.

The server (aiohttp, in a thread of the test process) lists one model at ``GET /v1/models`` and
streams ``count`` chunks with a pause between them at ``GET /stream``. ``StreamSuite`` times each
stream with the host-clock stream strategy (``parity.timing.stream``) and checks it received
every chunk in order; the run's target is the endpoint as the server reported it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from plugin_runs import plugin_env

from parity.harness.options import option
from parity.harness.suite import CaseSpec, SuiteBase
from parity.model.figure import Figure
from parity.model.result import CaseResult

aiohttp = pytest.importorskip("aiohttp")
from aiohttp import web  # noqa: E402

GAP_S = 0.01


@dataclass(frozen=True, kw_only=True)
class StreamOptions:
    chunks: tuple[int, ...] = option((4, 8), help="chunks per stream")


class StreamSuite(SuiteBase):
    """One case per chunk count: a streamed GET, stamped chunk by chunk."""

    name = "stream"
    description = "test-only: a streamed answer timed chunk by chunk"
    options_type = StreamOptions

    def cases(self, *, device: Any, quick: bool, options: StreamOptions) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"chunks/{n}", params={"chunks": n, "url": device.url})
                for n in options.chunks]

    def measure(self, case: CaseSpec, *, device: Any, options: StreamOptions, state: Any) -> CaseResult:
        from parity.timing.stream import first_chunk_s, gap_samples, stream_end_s, time_stream

        count = int(case.params["chunks"])

        async def one() -> Any:
            async with aiohttp.ClientSession() as session:
                async with session.get(f"{device.url}/stream", params={"count": count}) as response:
                    async def lines() -> Any:
                        async for line in response.content:
                            yield line.decode().strip()
                    return await time_stream(lines())

        timing = asyncio.run(one())
        got = list(timing.chunks)
        check = {"passed": got == [f"chunk {i}" for i in range(count)], "method": "every chunk, in order"}
        return CaseResult(suite=self.name, key=case.key, params=dict(case.params),
                          samples={"gaps": gap_samples(timing)}, check=check,
                          metrics={"first_chunk_s": first_chunk_s(timing), "end_s": stream_end_s(timing),
                                   "model": device.model})

    def summarize(self, results: list[CaseResult], *, options: StreamOptions) -> dict[str, Any]:
        return {"first_chunk_s": min(r.metrics["first_chunk_s"] for r in results if r.ok)}

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        return [Figure(name="stream.first_chunk", value=summary["first_chunk_s"], unit="s",
                       method="host-clock stream: request sent to first chunk", scope={"best_of": "cases"})]


def _app() -> web.Application:
    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "tiny-model", "owned_by": "test",
                                                              "max_model_len": 128}]})

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for i in range(int(request.query["count"])):
            await response.write(f"chunk {i}\n".encode())
            await asyncio.sleep(GAP_S)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stream", stream)
    return app


@pytest.fixture()
def server() -> Iterator[str]:
    """The app on a free 127.0.0.1 port, served from its own thread for the test's duration."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app())
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    host, port = runner.addresses[0][:2]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.run_until_complete(runner.cleanup())
        loop.close()


def _parity(args: list[str], db: Path) -> subprocess.CompletedProcess[str]:
    env = {**plugin_env(db, "test_run_remote:StreamSuite"), "NO_PROXY": "127.0.0.1"}
    return subprocess.run([sys.executable, "-m", "parity", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.torch
def test_a_remote_endpoint_is_the_runs_target(server: str, tmp_path: Path) -> None:
    db = tmp_path / "remote.sqlite"
    done = _parity(["run", "--endpoint", server, "--model", "tiny-model", "--suite", "stream",
                    "--json", str(tmp_path / "r.json")], db)
    assert done.returncode == 0, done.stderr
    doc = orjson.loads((tmp_path / "r.json").read_bytes())
    target = doc["run"]["provenance"]["target"]
    assert target["kind"] == "remote"
    assert target["identity"] == {"url": server, "model": "tiny-model", "owned_by": "test", "max_model_len": 128}
    assert doc["run"]["config"]["endpoint"] == {"url": server, "model": "tiny-model"}
    for case in doc["cases"]:
        n = case["params"]["chunks"]
        gaps = case["samples"]["gaps"]
        assert case["check"]["passed"] and gaps["method"] == "host-clock-stream" and len(gaps["values_s"]) == n - 1
        assert case["metrics"]["end_s"] >= case["metrics"]["first_chunk_s"] > 0
    (figure,) = doc["suites"][0]["figures"]
    assert figure["name"] == "stream.first_chunk" and figure["unit"] == "s"

    wrong = _parity(["run", "--endpoint", server, "--model", "other", "--suite", "stream"], db)
    assert wrong.returncode == 2 and "does not serve model 'other'" in wrong.stderr
