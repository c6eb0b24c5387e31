"""The online sweep: a ready check, then every level (each concurrency by each request rate)
in turn, each summarised as it ends. ``parity decode online`` is a thin command over this.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from parity.families.decode.serving.arrivals import arrival_offsets_s
from parity.families.decode.serving.client import ENDPOINT_PATHS, request_body, stream_request
from parity.families.decode.serving.level import Level, summarize_level
from parity.families.decode.serving.load import DEFAULT_REQUEST_TIMEOUT_S, level_items, run_level, split_shares
from parity.families.decode.serving.prompts import Prompt, dataset_prompts, random_prompts
from parity.model.errors import ParityError


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
    dataset: str | None = None
    cards: int = 1
    slo_s: dict[str, float] = field(default_factory=dict)
    client_procs: int = 1
    seed: int = 0
    ignore_eos: bool = True
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S

    def to_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["request_rate"] = ["inf" if math.isinf(r) else r for r in self.request_rate]
        data["input_tokens"] = list(self.input_tokens)
        return data


def prompts_for(options: OnlineOptions) -> list[Prompt]:
    """The sweep's prompts: the dataset's, else seeded random words."""
    if options.dataset:
        return dataset_prompts(options.dataset, options.num_requests)
    return random_prompts(options.num_requests, length=options.input_tokens, seed=options.seed)


def ready_check(url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: float) -> None:
    """One request before the levels (it also warms the server); its failure is one line."""
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


def measure_online(
    options: OnlineOptions, *, base_url: str, model: str, headers: dict[str, str],
    progress: Callable[[str], None] = lambda line: None,
) -> list[Level]:
    """Every level's summary, in order: concurrency outer, request rate inner."""
    url = base_url + ENDPOINT_PATHS[options.endpoint_type]
    prompts = prompts_for(options)
    bodies = [request_body(p, endpoint_type=options.endpoint_type, model=model,
                           output_tokens=options.output_tokens, ignore_eos=options.ignore_eos) for p in prompts]
    ready_check(url, bodies[0], headers, min(options.request_timeout_s, 120.0))
    levels = []
    for concurrency in options.concurrency:
        for rate in options.request_rate:
            offsets = arrival_offsets_s(len(bodies), rate_per_s=rate, burstiness=options.burstiness,
                                        seed=options.seed)
            shares = split_shares(level_items(bodies, offsets), procs=options.client_procs,
                                  concurrency=concurrency, url=url, headers=headers,
                                  timeout_s=options.request_timeout_s)
            progress(f"level concurrency {concurrency or 'unbounded'}, rate {rate:g}/s: "
                     f"{len(bodies)} requests from {len(shares)} client process(es)")
            level = summarize_level(run_level(shares), concurrency=concurrency, rate_per_s_asked=rate,
                                    burstiness=options.burstiness, cards=options.cards, slo_s=options.slo_s)
            f = level.fields
            progress(f"  completed {f['completed']}/{f['num_prompts']}, median TTFT {_ms(f['median_ttft_ms'])}, "
                     f"median TPOT {_ms(f['median_tpot_ms'])}, output {f['output_throughput'] or 0:.1f} tok/s")
            levels.append(level)
    return levels


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"
