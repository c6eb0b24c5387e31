"""The online sweep: a warm-up request, then every level (each concurrency by each request rate,
or the levels a TPOT target search asks for) in turn, each summarised and handed to
``on_level`` (which stores it) the moment it ends. ``parity decode online`` is a thin command
over this.

Levels are :class:`LevelSpec`: a concurrency, a rate, its place in the sweep (``ordinal``: it
seeds the level's prompts, so no two levels share prompts and a level measured again after an
interruption gets the ones it had) and ``repeat``: a level asked for twice
(``--concurrency 4,4,4``) is measured each time and kept apart, stored as ``concurrency/4``,
``concurrency/4#2``, ``concurrency/4#3`` (never collapsed into one case).

Levels already stored (``done``, by key) are not measured again: ``--resume`` measures only the
rest. Before each level after the first the server is asked for ``/v1/models``; a server that
does not answer, or a level whose every request found no server, ends the sweep with a
:class:`ServerGone` naming the level (the levels before it are stored).
"""

from __future__ import annotations

import asyncio
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from parity.families.decode.serving.arrivals import arrival_offsets_s
from parity.families.decode.serving.client import ENDPOINT_PATHS, request_body, stream_request
from parity.families.decode.serving.level import Level, summarize_level
from parity.families.decode.serving.load import DEFAULT_REQUEST_TIMEOUT_S, level_items, run_level, split_shares
from parity.families.decode.serving.prompts import WARMUP_LEVEL, Prompt, dataset_prompts, random_prompts
from parity.families.decode.serving.server_metrics import Sampler, metrics_url
from parity.model.errors import ParityError

ALIVE_TIMEOUT_S = 10.0
GONE_ERRORS = ("ClientConnectorError", "ServerDisconnectedError", "ClientOSError", "Connection refused",
               "ConnectionRefusedError", "ConnectionResetError")


class ServerGone(ParityError):
    """The server stopped answering: the sweep ends at ``level`` (the ones before are kept)."""


@dataclass(frozen=True, kw_only=True)
class OnlineOptions:
    """What ``parity decode online`` was asked (everything but the API key)."""

    endpoint_type: str = "completions"
    concurrency: tuple[int | None, ...] = (1,)
    request_rate: tuple[float, ...] = (math.inf,)
    burstiness: float = 1.0
    num_requests: int = 64
    output_tokens: int = 128
    input_tokens: tuple[int, int] = (128, 128)
    shared_prefix: int = 0
    dataset: str | None = None
    cards: int = 1
    slo_s: dict[str, float] = field(default_factory=dict)
    client_procs: int = 1
    seed: int = 0
    ignore_eos: bool = True
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    server_metrics: bool = True
    search: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["request_rate"] = ["inf" if math.isinf(r) else r for r in self.request_rate]
        data["input_tokens"] = list(self.input_tokens)
        data["concurrency"] = list(self.concurrency)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OnlineOptions:
        """The options a stored run was asked (for ``--resume``)."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["request_rate"] = tuple(math.inf if r == "inf" else float(r) for r in known.get("request_rate", ["inf"]))
        known["concurrency"] = tuple(known.get("concurrency", (1,)))
        known["input_tokens"] = tuple(known.get("input_tokens", (128, 128)))
        return cls(**known)


@dataclass(frozen=True, kw_only=True)
class LevelSpec:
    """One level to measure: its limits, its place in the sweep and its repeat number."""

    ordinal: int
    concurrency: int | None
    rate: float
    repeat: int = 1

    @property
    def key(self) -> str:
        """The stored case key (``record.level_key`` of its figures)."""
        parts = [f"concurrency/{self.concurrency}"] if self.concurrency is not None else []
        if not math.isinf(self.rate):
            parts.append(f"rate/{self.rate:g}")
        key = ",".join(parts) or "unbounded"
        return key if self.repeat == 1 else f"{key}#{self.repeat}"

    def describe(self) -> str:
        rate = "" if math.isinf(self.rate) else f", rate {self.rate:g}/s"
        again = f" (repeat {self.repeat})" if self.repeat > 1 else ""
        return f"concurrency {self.concurrency or 'unbounded'}{rate}{again}"


def plan_levels(options: OnlineOptions) -> list[LevelSpec]:
    """Every level of the grid, concurrency outer and rate inner, repeats numbered."""
    seen: dict[tuple[int | None, float], int] = {}
    specs: list[LevelSpec] = []
    for concurrency in options.concurrency:
        for rate in options.request_rate:
            seen[(concurrency, rate)] = seen.get((concurrency, rate), 0) + 1
            specs.append(LevelSpec(ordinal=len(specs), concurrency=concurrency, rate=rate,
                                   repeat=seen[(concurrency, rate)]))
    return specs


def prompts_for(options: OnlineOptions, level: int) -> list[Prompt]:
    """Level ``level``'s prompts: the dataset's from request ``level x N`` on, else seeded
    random words of that level's own seed; the warm-up (``WARMUP_LEVEL``) always random words,
    so it never caches a prompt a level sends."""
    if options.dataset and level != WARMUP_LEVEL:
        return dataset_prompts(options.dataset, options.num_requests, start=max(level, 0) * options.num_requests)
    return random_prompts(options.num_requests, length=options.input_tokens, seed=options.seed, level=level,
                          shared_prefix=options.shared_prefix)


def _bodies(options: OnlineOptions, prompts: list[Prompt], model: str) -> list[dict[str, Any]]:
    return [request_body(p, endpoint_type=options.endpoint_type, model=model, output_tokens=options.output_tokens,
                         ignore_eos=options.ignore_eos) for p in prompts]


def ready_check(url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float) -> Any:
    """One request before the levels (it also warms the server, and says whether the server
    sends token counts); its failure is one line."""
    import aiohttp

    async def once() -> Any:
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            return await stream_request(session, url=url, body=body, index=-1, headers=headers)

    try:
        record = asyncio.run(once())
    except asyncio.TimeoutError:
        raise ParityError(f"{url} did not finish a first request within {timeout_s:g} s; is it serving?") from None
    if not record.ok:
        raise ParityError(f"{url}: the first request failed ({record.error}); check --endpoint-type and the server")
    return record


def alive(base_url: str, headers: dict[str, str], timeout_s: float = ALIVE_TIMEOUT_S) -> str | None:
    """None when ``/v1/models`` answers (any HTTP status), else why not."""
    request = urllib.request.Request(base_url.rstrip("/") + "/v1/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):  # noqa: S310 - the user's server
            return None
    except urllib.error.HTTPError:
        return None
    except (OSError, urllib.error.URLError) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"


def _server_gone(level: Level) -> bool:
    """No request of the level completed and every error says no server was there."""
    errors = level.check.get("errors") or []
    return not level.fields.get("completed") and bool(errors) and all(
        any(mark in error for mark in GONE_ERRORS) for error in errors)


class Sweep:
    """Measures levels against one server, each handed to ``on_level`` when it ends."""

    def __init__(self, options: OnlineOptions, *, base_url: str, model: str, headers: dict[str, str],
                 progress: Callable[[str], None] = lambda line: None,
                 on_level: Callable[[LevelSpec, Level], None] = lambda spec, level: None) -> None:
        self.options, self.base_url, self.model, self.headers = options, base_url, model, headers
        self.url = base_url + ENDPOINT_PATHS[options.endpoint_type]
        self.progress, self.on_level = progress, on_level
        self.measured = 0
        self.warmed: Any = None

    def warm_up(self) -> Any:
        """One request of its own fresh prompt (so no level's prompt is cached by it); its record."""
        body = _bodies(self.options, prompts_for(self.options, WARMUP_LEVEL)[:1], self.model)[0]
        self.warmed = ready_check(self.url, body, self.headers, min(self.options.request_timeout_s, 120.0))
        return self.warmed

    def measure(self, spec: LevelSpec, *, total: int | str) -> Level:
        """Measure one level, hand it on, and return it; :class:`ServerGone` when the server is."""
        o = self.options
        where = f"level {spec.describe()} ({spec.ordinal + 1} of {total})"
        if self.measured:
            reason = alive(self.base_url, self.headers)
            if reason is not None:
                raise ServerGone(f"the server at {self.base_url} stopped answering before {where}: {reason}")
        bodies = _bodies(o, prompts_for(o, spec.ordinal), self.model)
        offsets = arrival_offsets_s(len(bodies), rate_per_s=spec.rate, burstiness=o.burstiness,
                                    seed=o.seed + spec.ordinal)
        shares = split_shares(level_items(bodies, offsets), procs=o.client_procs, concurrency=spec.concurrency,
                              url=self.url, headers=self.headers, timeout_s=o.request_timeout_s)
        self.progress(f"{where}: {len(bodies)} requests from {len(shares)} client process(es)")
        with Sampler(metrics_url(self.base_url) if o.server_metrics else None) as sampler:
            run = run_level(shares)
        level = summarize_level(run, concurrency=spec.concurrency, rate_per_s_asked=spec.rate,
                                burstiness=o.burstiness, cards=o.cards, slo_s=o.slo_s, server=sampler.result(),
                                ignore_eos=o.ignore_eos, shared_prefix=o.shared_prefix, repeat=spec.repeat)
        self.measured += 1
        if _server_gone(level):
            raise ServerGone(f"the server at {self.base_url} refused every request of {where}: "
                             f"{level.check['errors'][0]}")
        f = level.fields
        hit = (f.get("server") or {}).get("prefix_cache_hit_rate")
        self.progress(f"  completed {f['completed']}/{f['num_prompts']}, median TTFT {_ms(f['median_ttft_ms'])}, "
                      f"median TPOT {_ms(f['median_tpot_ms'])}, output {f['output_throughput'] or 0:.1f} tok/s, "
                      f"prefix cache hits {'n/a' if hit is None else f'{hit:.1%}'}")
        self.on_level(spec, level)
        return level


def measure_online(
    options: OnlineOptions, *, base_url: str, model: str, headers: dict[str, str],
    progress: Callable[[str], None] = lambda line: None,
    on_level: Callable[[LevelSpec, Level], None] = lambda spec, level: None,
    done: Mapping[str, Level] | None = None, sweep: Sweep | None = None,
) -> list[Level]:
    """Every level of the grid in order (those in ``done`` as stored, the rest measured), by
    ``sweep`` where given (already warmed up), else a new one."""
    sweep = sweep or Sweep(options, base_url=base_url, model=model, headers=headers, progress=progress,
                           on_level=on_level)
    specs = plan_levels(options)
    stored = dict(done or {})
    if sweep.warmed is None and any(s.key not in stored for s in specs):
        sweep.warm_up()
    levels = []
    for spec in specs:
        if spec.key in stored:
            progress(f"level {spec.describe()}: stored already, not measured again")
            levels.append(stored[spec.key])
            continue
        levels.append(sweep.measure(spec, total=len(specs)))
    return levels


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"
