"""A scripted OpenAI-compatible streaming server for the decode tests and benchmark: a real
process on 127.0.0.1 (an ephemeral port) that emits tokens on a fixed schedule, so TTFT, TPOT
and ITL have known true values.

Each request's token ``i`` (0-based) is written at ``t_recv + ttft + i·gap`` on the server's
monotonic clock (an absolute schedule: a late wake-up never delays the tokens after it), so the
true TTFT is ``ttft``, every ITL is ``gap`` and TPOT is ``gap``. The deadlines are kept by one
timer thread that sleeps on the OS clock and wakes the event loop at each one: asyncio's own
timers round every wait up to the next millisecond (epoll's unit), a bias of up to 1 ms. The output length is the
request's ``max_tokens`` (``--output-tokens`` overrides it). Completions and chat, with the
usage event when the request asks for it (``stream_options.include_usage``); ``--no-usage``
never sends it, ``--no-stream`` answers plain JSON whatever is asked, ``--api-key K`` answers
401 to a request without ``Authorization: Bearer K``.

A prefix cache is modelled as vLLM's is kept (on unless ``--no-prefix-cache``): the prompt's
words are its tokens, in blocks of ``BLOCK`` (16); a block is a hit when the same words up to
and including it were seen before (the chain of blocks, as vLLM hashes them). A request's TTFT
is ``ttft`` times the share of its prompt tokens that missed (a fully cached prompt still
costs one block's worth, as vLLM recomputes the last token). ``GET /metrics`` answers the
Prometheus text vLLM does for the names parity reads: ``vllm:num_requests_running``,
``vllm:num_requests_waiting`` (0), ``vllm:kv_cache_usage_perc`` (running / 64),
``vllm:prefix_cache_queries_total`` and ``vllm:prefix_cache_hits_total`` (tokens),
``vllm:prompt_tokens_total`` and ``vllm:generation_tokens_total``.

A load-dependent server for the TPOT search: ``--gap-per-running-ms X`` makes a request's gap
``gap + X x (requests running when it starts, itself included)``; ``--reject-every N`` answers
every Nth request HTTP 503 (a level that partly fails).

Run: ``python tests/serving_script.py --ttft-ms 100 --gap-ms 10``; the first line of stdout is
``PORT <n>``. ``scripted_server(...)`` starts one for the block and stops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import heapq
import itertools
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

MODEL = "scripted-model"
BLOCK = 16
KV_SLOTS = 64


class PrefixCache:
    """Blocks of ``BLOCK`` words keyed by the whole prompt up to their end; counts in tokens."""

    def __init__(self) -> None:
        self.blocks: set[tuple[str, ...]] = set()
        self.queries = 0
        self.hits = 0

    def lookup_and_insert(self, words: list[str]) -> int:
        """The prompt's cached leading tokens (then every full block of it is cached)."""
        hit = 0
        for end in range(BLOCK, len(words) + 1, BLOCK):
            if tuple(words[:end]) not in self.blocks:
                break
            hit = end
        for end in range(BLOCK, len(words) + 1, BLOCK):
            self.blocks.add(tuple(words[:end]))
        self.queries += len(words)
        self.hits += hit
        return hit


def _event(kind: str, model: str, text: str | None, finish: str | None = None) -> dict:
    if kind == "chat":
        delta = {} if text is None else {"content": text}
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c", "object": "chat.completion.chunk", "model": model, "choices": [choice]}
    choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
    return {"id": "c", "object": "text_completion", "model": model, "choices": [choice]}


def _sse(data: dict | str) -> bytes:
    return b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"


class Ticker(threading.Thread):
    """Resolves asyncio futures at monotonic deadlines from a thread (µs-precise waits)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self._due: list = []
        self._order = itertools.count()
        self._wake = threading.Condition()

    async def until(self, deadline: float) -> None:
        if deadline <= time.monotonic():
            return
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._wake:
            heapq.heappush(self._due, (deadline, next(self._order), loop, future))
            self._wake.notify()
        await future

    def run(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(None if not self._due else self._due[0][0] - time.monotonic())
                _, _, loop, future = heapq.heappop(self._due)
            loop.call_soon_threadsafe(lambda f=future: f.done() or f.set_result(None))


def build_app(args: argparse.Namespace):
    from aiohttp import web

    ticker = Ticker()
    ticker.start()
    cache = PrefixCache()
    state = {"running": 0, "prompt_tokens": 0, "generation_tokens": 0}

    async def metrics(request: web.Request) -> web.Response:
        label = f'{{model_name="{args.model}"}}'
        lines = []
        for name, kind, value in (
            ("vllm:num_requests_running", "gauge", state["running"]),
            ("vllm:num_requests_waiting", "gauge", 0),
            ("vllm:kv_cache_usage_perc", "gauge", min(1.0, state["running"] / KV_SLOTS)),
            ("vllm:prefix_cache_queries", "counter", cache.queries),
            ("vllm:prefix_cache_hits", "counter", cache.hits),
            ("vllm:prompt_tokens", "counter", state["prompt_tokens"]),
            ("vllm:generation_tokens", "counter", state["generation_tokens"]),
        ):
            lines += [f"# HELP {name} scripted", f"# TYPE {name} {kind}",
                      f"{name}{'_total' if kind == 'counter' else ''}{label} {float(value)!r}"]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def models(request: web.Request) -> web.Response:
        if (answer := refused(request)) is not None:
            return answer
        return web.json_response({"object": "list", "data": [{"id": args.model, "owned_by": "parity-tests",
                                                              "root": args.model, "max_model_len": 4096}]})

    def refused(request: web.Request) -> web.Response | None:
        if args.api_key and request.headers.get("Authorization") != f"Bearer {args.api_key}":
            return web.json_response({"error": "bad api key"}, status=401)
        return None

    async def generate(request: web.Request, kind: str) -> web.StreamResponse:
        received = time.monotonic()
        if (answer := refused(request)) is not None:
            return answer
        body = await request.json()
        state["received"] = state.get("received", 0) + 1
        if args.reject_every and state["received"] % args.reject_every == 0:
            return web.json_response({"error": "scripted rejection"}, status=503)
        count = args.output_tokens or int(body.get("max_tokens") or 16)
        words = str(body.get("prompt", body.get("messages", ""))).split()
        prompt_tokens = len(words)
        hit = 0 if args.no_prefix_cache else cache.lookup_and_insert(words)
        missed = max(prompt_tokens - hit, min(prompt_tokens, BLOCK) if hit else 0)
        ttft_ms = args.ttft_ms * (missed / prompt_tokens if prompt_tokens and not args.no_prefix_cache else 1.0)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": count, "total_tokens": prompt_tokens + count}
        if args.no_stream or not body.get("stream"):
            return web.json_response({"id": "c", "object": "text_completion", "model": args.model,
                                      "choices": [{"index": 0, "text": "x " * count}], "usage": usage})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        state["running"] += 1
        state["prompt_tokens"] += prompt_tokens
        gap_ms = args.gap_ms + args.gap_per_running_ms * state["running"]
        try:
            await stream(response, body, kind, count, received, ttft_ms, gap_ms, usage)
        except (ConnectionError, OSError):
            pass  # the client went away (an interrupted level): nothing to answer
        finally:
            state["running"] -= 1
            state["generation_tokens"] += count
        return response

    async def stream(response, body, kind, count, received, ttft_ms, gap_ms, usage) -> None:
        if kind == "chat":
            await response.write(_sse(_event(kind, args.model, "") | {"choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}))
        for i in range(count):
            await ticker.until(received + ttft_ms / 1e3 + i * gap_ms / 1e3)
            await response.write(_sse(_event(kind, args.model, f"t{i} ")))
        await response.write(_sse(_event(kind, args.model, None, finish="length")))
        if (body.get("stream_options") or {}).get("include_usage") and not args.no_usage:
            await response.write(_sse({"id": "c", "object": "usage", "model": args.model, "choices": [],
                                       "usage": usage}))
        await response.write(_sse("[DONE]"))
        await response.write_eof()

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/completions", lambda r: generate(r, "completions"))
    app.router.add_post("/v1/chat/completions", lambda r: generate(r, "chat"))
    return app


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument("--output-tokens", type=int, default=0, help="0: the request's max_tokens")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--no-stream", action="store_true")
    parser.add_argument("--no-prefix-cache", action="store_true", help="no prefix cache: every TTFT is --ttft-ms")
    parser.add_argument("--reject-every", type=int, default=0, help="answer every Nth request HTTP 503")
    parser.add_argument("--gap-per-running-ms", type=float, default=0.0,
                        help="add this to a request's gap per request running when it starts (itself included)")
    parser.add_argument("--api-key", default="", help="refuse requests without this bearer key")
    parser.add_argument("--lifetime-s", type=float, default=900.0, help="stop by itself after this long")
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    from aiohttp import web

    runner = web.AppRunner(build_app(args), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    print(f"PORT {runner.addresses[0][1]}", flush=True)
    try:
        await asyncio.sleep(args.lifetime_s)
    finally:
        await runner.cleanup()


@contextlib.contextmanager
def scripted_server(*options: str, timeout_s: float = 30.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """Start the server as a process for the block; yields its URL and the process."""
    proc = subprocess.Popen([sys.executable, __file__, *options], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            raise RuntimeError(f"scripted server did not start (said {line!r})")
        yield f"http://127.0.0.1:{int(line.split()[1])}", proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    asyncio.run(_serve(parse_args(sys.argv[1:])))
