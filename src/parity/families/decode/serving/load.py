"""One load level (a concurrency limit, a request rate, or both) driven from one or several
client processes, each one bounded asyncio loop, with the client's own load measured as it runs.

The level's send times are drawn once (``arrivals``) and request ``i`` goes to process
``i mod P``, so several processes replay exactly the schedule one would; the concurrency limit
is split between them (``C // P``, the remainder to the first ones). Processes start together
at a barrier and stamp on the stream clock (``parity.timing.stream``: the system's monotonic
clock on Linux and macOS, shared by processes), so their records merge on one time axis.

While a process drives its requests it measures itself (``parity.timing.loop_load``, through
``parity.harness.strategies.LoopMeter``, also the clock of its send schedule): its CPU time over
its wall time (the busy fraction: near 1 means the loop had no idle moment, so stamps waited on
the client), and the event-loop lag, how late a 10 ms timer fires (the time an arriving chunk can
wait before it is stamped). ``level`` turns these into a ``client-bound`` finding.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from parity.families.decode.serving.client import READ_BUFFER_BYTES, RequestRecord, sent_tracing, stream_request
from parity.harness.strategies import LoopMeter
from parity.model.errors import ParityError

DEFAULT_REQUEST_TIMEOUT_S = 600.0


@dataclass(frozen=True, kw_only=True)
class Share:
    """What one client process sends: ``(index, body, send offset s)`` items, its concurrency
    limit (None: unbounded), the URL and headers (the API key lives only here, in memory)."""

    url: str
    headers: dict[str, str]
    items: tuple[tuple[int, dict[str, Any], float], ...]
    concurrency: int | None
    timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S


@dataclass(frozen=True, kw_only=True)
class ClientLoad:
    """One client process's own load over the level: CPU and wall seconds, event-loop lags (s),
    and the time it spent handling events."""

    cpu_s: float
    wall_s: float
    lags_s: tuple[float, ...] = ()
    handling_s: float = 0.0
    events: int = 0

    @property
    def busy_fraction(self) -> float:
        """``cpu_s / wall_s``: 1.0 is a loop that never waited."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class LevelRun:
    """A level's records (in request order) and each client process's load."""

    records: list[RequestRecord]
    clients: list[ClientLoad] = field(default_factory=list)


def split_shares(
    items: Sequence[tuple[int, dict[str, Any], float]], *, procs: int, concurrency: int | None,
    url: str, headers: dict[str, str], timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
) -> list[Share]:
    """Round-robin the items over ``procs`` processes and split the concurrency limit; never
    more processes than requests or than the limit."""
    procs = max(1, min(procs, len(items) or 1, concurrency or procs))
    shares = []
    for rank in range(procs):
        limit = None if concurrency is None else concurrency // procs + (1 if rank < concurrency % procs else 0)
        shares.append(Share(url=url, headers=headers, items=tuple(items[rank::procs]), concurrency=limit,
                            timeout_s=timeout_s))
    return shares


async def drive_share(share: Share) -> tuple[list[RequestRecord], ClientLoad]:
    """Send one share's requests on their schedule within its concurrency limit."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=share.timeout_s)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, read_bufsize=READ_BUFFER_BYTES,
                                     trace_configs=[sent_tracing()], trust_env=False) as session:
        limit = asyncio.Semaphore(share.concurrency) if share.concurrency else None
        async with LoopMeter() as meter:

            async def one(index: int, body: dict[str, Any], offset_s: float) -> RequestRecord:
                delay = meter.due_in_s(offset_s)
                if delay > 0:
                    await asyncio.sleep(delay)
                if limit is None:
                    return await stream_request(session, url=share.url, body=body, index=index, headers=share.headers)
                async with limit:
                    return await stream_request(session, url=share.url, body=body, index=index, headers=share.headers)

            records = list(await asyncio.gather(*(one(*item) for item in share.items)))
    load = ClientLoad(cpu_s=meter.cpu_s, wall_s=meter.wall_s, lags_s=meter.lags_s,
                      handling_s=sum(r.handling_ns for r in records) / 1e9, events=sum(r.events for r in records))
    return records, load


def _process_main(share: Share, barrier: Any, results: Any) -> None:
    """A client process: wait for the others, drive the share, send back plain dicts."""
    try:
        barrier.wait(timeout=120)
        records, load = asyncio.run(drive_share(share))
        results.put(("ok", [r.to_dict() for r in records], load.__dict__))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        results.put(("error", f"{type(exc).__name__}: {exc}", None))


def run_level(shares: list[Share]) -> LevelRun:
    """Drive the shares: in this process for one, else one spawned process each (all joined
    before returning; nothing outlives the call)."""
    if len(shares) == 1:
        records, load = asyncio.run(drive_share(shares[0]))
        return LevelRun(records=records, clients=[load])
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(len(shares)), context.Queue()
    procs = [context.Process(target=_process_main, args=(share, barrier, results), daemon=True) for share in shares]
    for proc in procs:
        proc.start()
    gathered: list[Any] = []
    try:
        wait_s = max(s.timeout_s for s in shares) + max(s.items[-1][2] for s in shares if s.items) + 120
        for _ in procs:
            gathered.append(results.get(timeout=wait_s))
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
    errors = [detail for status, detail, _ in gathered if status != "ok"]
    if errors:
        raise ParityError(f"a client process failed: {errors[0]}; retry with fewer --client-procs")
    records = sorted((RequestRecord.from_dict(r) for _, batch, _ in gathered for r in batch), key=lambda r: r.index)
    return LevelRun(records=records, clients=[ClientLoad(**load) for _, _, load in gathered])


def level_items(
    bodies: Sequence[dict[str, Any]], offsets_s: Sequence[float]
) -> list[tuple[int, dict[str, Any], float]]:
    """``(index, body, send offset)`` per request; offsets must be finite."""
    if any(not math.isfinite(t) for t in offsets_s):
        raise ValueError("send offsets must be finite")
    return [(i, body, float(t)) for i, (body, t) in enumerate(zip(bodies, offsets_s))]
