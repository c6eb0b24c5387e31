"""One streamed request to an OpenAI-compatible endpoint, stamped event by event.

The request asks for a stream (``stream: true``) and for the token counts at its end
(``stream_options: {include_usage: true}``). Each server-sent event (``data: {...}``) is
stamped the moment its line is read, before it is parsed (the host-clock stream strategy,
``parity.timing.stream.StreamClock``, through ``parity.harness.strategies.StreamClock``); an event
whose choice carries text (``choices[0].text`` for completions, ``choices[0].delta.content``
for chat) is a content chunk. As in ``vllm bench serve``: TTFT is the first content chunk's
stamp minus the start stamp, ITL every gap between consecutive content chunks, and E2E the last
content chunk's stamp minus the start stamp; the stream's own end (``[DONE]``) is kept beside.

Output tokens come from the server's ``usage.completion_tokens``; a server that sends no usage
gets the stated fallback, the number of content chunks (exact when the server streams one token
per chunk, an undercount when it batches tokens). The per-event handling cost (parse and
bookkeeping, on the same clock) is summed per request by the strategy: the client's own work.

The start stamp is vLLM's: taken just before ``session.post`` (after the request's turn came:
its due time passed and a concurrency slot was free), so TTFT and E2E include getting a
connection (its set-up when none is free) and writing the request, as in every serving
benchmark. When the request's last body byte is written (aiohttp's ``on_request_chunk_sent``
trace, ``sent_tracing()``) is stamped too: the difference is the ``send`` time (connection and
write), kept per request as the measured size of what an after-the-send start would leave out,
and the client's own evidence of saturation (``level.client_bound``). Each answer is read to its
end after ``[DONE]`` (as vLLM's client reads it), so its connection goes back to the pool and the
next request's start does not pay a new connection.

The client is aiohttp with a read buffer of ``READ_BUFFER_BYTES`` (16 MiB): aiohttp reads a
stream line by line and refuses a line longer than its buffer, which is how a 64 KiB buffer
breaks long answers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

from parity.families.decode.serving.prompts import Prompt
from parity.harness.strategies import StreamClock
from parity.model.errors import one_line

READ_BUFFER_BYTES = 16 * 1024 * 1024
FINISH_S = 1.0  # what follows [DONE] (the stream's end) is awaited this long, then the connection dropped
ENDPOINT_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
TOKENS_FROM_USAGE = "usage.completion_tokens"
TOKENS_FROM_CHUNKS = "content chunks (the server sent no usage count)"


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """The raw stamps and counts of one request (integer ns of the stream clock,
    ``parity.timing.stream.StreamClock``)."""

    index: int
    start_ns: int
    sent_ns: int = 0
    content_ns: tuple[int, ...] = ()
    end_ns: int = 0
    usage_output_tokens: int | None = None
    usage_prompt_tokens: int | None = None
    asked_tokens: int = 0
    handling_ns: int = 0
    events: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Finished without an error and with at least one content chunk."""
        return self.error is None and bool(self.content_ns)

    @property
    def output_tokens(self) -> int:
        """Tokens from the server's usage, else the content-chunk count (the fallback)."""
        return self.usage_output_tokens if self.usage_output_tokens is not None else len(self.content_ns)

    @property
    def token_source(self) -> str:
        return TOKENS_FROM_USAGE if self.usage_output_tokens is not None else TOKENS_FROM_CHUNKS

    @property
    def send_ns(self) -> int:
        """When the request was on the wire (its last body byte written), else its start."""
        return self.sent_ns or self.start_ns

    def ttft_s(self) -> float:
        """First content chunk minus the start stamp (vLLM's: before ``session.post``)."""
        return (self.content_ns[0] - self.start_ns) / 1e9

    def e2e_s(self) -> float:
        """Last content chunk minus the start stamp."""
        return (self.content_ns[-1] - self.start_ns) / 1e9

    def send_s(self) -> float:
        """From the start stamp to the last body byte written: getting a connection (set up
        when none was free) and writing the request."""
        return (self.send_ns - self.start_ns) / 1e9

    def itl_s(self) -> list[float]:
        stamps = self.content_ns
        return [(b - a) / 1e9 for a, b in zip(stamps, stamps[1:])]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "start_ns": self.start_ns, "sent_ns": self.sent_ns, "content_ns": list(self.content_ns),
            "end_ns": self.end_ns, "usage_output_tokens": self.usage_output_tokens,
            "usage_prompt_tokens": self.usage_prompt_tokens, "asked_tokens": self.asked_tokens,
            "handling_ns": self.handling_ns, "events": self.events, "error": self.error,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestRecord:
        return cls(**{**data, "content_ns": tuple(data.get("content_ns", ()))})


def request_body(
    prompt: Prompt, *, endpoint_type: str, model: str, output_tokens: int, ignore_eos: bool
) -> dict[str, Any]:
    """The JSON body of one streamed request."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": int(prompt.output_tokens or output_tokens),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:
        body["ignore_eos"] = True  # vLLM and SGLang: generate the asked length
    if endpoint_type == "chat":
        body["messages"] = prompt.as_messages()
    else:
        body["prompt"] = prompt.as_text()
    return body


def _content(event: Any) -> str | None:
    """The text an event carries, or None (role-only deltas, finish and usage events)."""
    choices = event.get("choices") if isinstance(event, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    text = choice.get("text")
    if text is None and isinstance(choice.get("delta"), dict):
        text = choice["delta"].get("content") or choice["delta"].get("reasoning_content")
    return text or None


def sent_tracing() -> Any:
    """An aiohttp ``TraceConfig`` that stamps ``sent_ns`` into a request's trace context each
    time a body chunk is written (the last write wins: the request is then fully sent)."""
    import aiohttp

    now_ns = StreamClock().now_ns

    async def on_sent(session: Any, context: Any, params: Any) -> None:
        holder = context.trace_request_ctx
        if isinstance(holder, dict):
            holder["sent_ns"] = now_ns()

    config = aiohttp.TraceConfig()
    config.on_request_chunk_sent.append(on_sent)
    return config


async def stream_request(
    session: Any, *, url: str, body: dict[str, Any], index: int, headers: dict[str, str]
) -> RequestRecord:
    """POST ``body`` to ``url`` and stamp the streamed answer; errors are kept in the record."""
    import aiohttp

    stamps = StreamClock()
    clock = stamps.now_ns
    content: list[int] = []
    usage: dict[str, Any] = {}
    sent: dict[str, int] = {}

    def on_event(payload: bytes, stamp: int) -> None:
        nonlocal usage
        event = orjson.loads(payload)
        if _content(event) is not None:
            content.append(stamp)
        if isinstance(event, dict) and isinstance(event.get("usage"), dict):
            usage = event["usage"]

    start = clock()
    try:
        async with session.post(url, json=body, headers=headers, trace_request_ctx=sent) as response:
            if response.status != 200:
                text = " ".join((await response.text())[:200].split())
                return RequestRecord(index=index, start_ns=start, end_ns=clock(), asked_tokens=body["max_tokens"],
                                     error=f"HTTP {response.status}: {text}")
            kind = response.headers.get("Content-Type", "")
            if not kind.startswith("text/event-stream"):
                return RequestRecord(index=index, start_ns=start, end_ns=clock(), asked_tokens=body["max_tokens"],
                                     error=f"answered {kind or 'no content type'}, not a text/event-stream: "
                                           "the endpoint does not stream")
            await stamps.drain_events(response.content, on_event)
            end = clock()
            await _finish(response)
    except (aiohttp.ClientError, orjson.JSONDecodeError, ValueError, OSError) as exc:
        return RequestRecord(index=index, start_ns=start, content_ns=tuple(content), end_ns=clock(),
                             asked_tokens=body["max_tokens"], handling_ns=stamps.handling_ns, events=stamps.events,
                             error=f"{type(exc).__name__}: {one_line(exc, 200)}")
    return RequestRecord(
        index=index, start_ns=start, sent_ns=sent.get("sent_ns", 0), content_ns=tuple(content), end_ns=end,
        usage_output_tokens=_int(usage.get("completion_tokens")), usage_prompt_tokens=_int(usage.get("prompt_tokens")),
        asked_tokens=body["max_tokens"], handling_ns=stamps.handling_ns, events=stamps.events,
        error=None if content else "the stream ended without a content chunk",
    )


async def _finish(response: Any) -> None:
    """Read the answer to its end after ``[DONE]``, so its connection goes back to the pool and the
    next request's start stamp does not include a new connection (vLLM's client reads every
    answer to its end too); a server that keeps the stream open past ``FINISH_S`` costs the
    connection, not the request."""
    import aiohttp

    try:
        await asyncio.wait_for(response.content.read(), FINISH_S)
    except (asyncio.TimeoutError, aiohttp.ClientError):
        pass


def _int(value: Any) -> int | None:
    """A usage count as the server sent it, or None where it is no count (text, a fraction, a
    boolean, a negative number): the tokens are then counted from the content chunks, and the
    level's ``token_count_source`` says so."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
