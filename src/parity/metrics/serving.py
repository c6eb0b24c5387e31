"""Serving-load formulas over a level's requests, with ``vllm bench serve``'s names and
definitions (times in seconds inside, milliseconds only in the ``*_ms`` fields it names so).

Per level of ``n`` completed requests over a wall time ``D`` (first request sent to last one
finished):
    request_throughput = completed / D                       requests per second
    output_throughput  = Σ output_tokens / D                 tokens per second
    total_token_throughput = Σ (input_tokens + output_tokens) / D
    request_goodput    = #(requests meeting every SLO) / D   (vLLM's --goodput)
    per card           = throughput / cards
Distributions (vLLM's ``mean_X_ms``, ``median_X_ms``, ``std_X_ms``, ``pNN_X_ms``): numpy's mean,
median, population standard deviation and linearly interpolated percentiles, in milliseconds.
TTFT, TPOT and E2E have one value per request; ITL has one value per gap between streamed
chunks, all requests pooled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

DEFAULT_PERCENTILES = (90.0, 99.0)
SLO_NAMES = ("ttft", "tpot", "e2el")


def distribution_ms(
    name: str, values_s: Sequence[float], percentiles: Iterable[float] = DEFAULT_PERCENTILES
) -> dict[str, float | None]:
    """``{mean_NAME_ms, median_NAME_ms, std_NAME_ms, pP_NAME_ms...}`` of ``values_s`` (seconds).

    Example: TTFT 0.1, 0.2, 0.3, 0.4 s -> mean 250, median 250, std 111.8, p90 370 ms.
    An empty list gives None everywhere (vLLM writes 0 there; parity refuses to invent one).
    """
    arr = np.asarray(list(values_s), dtype=np.float64) * 1e3
    out: dict[str, float | None] = {}
    empty = arr.size == 0
    out[f"mean_{name}_ms"] = None if empty else float(arr.mean())
    out[f"median_{name}_ms"] = None if empty else float(np.median(arr))
    out[f"std_{name}_ms"] = None if empty else float(arr.std())
    for p in percentiles:
        word = str(int(p)) if float(p).is_integer() else str(p)
        out[f"p{word}_{name}_ms"] = None if empty else float(np.percentile(arr, p))
    return out


def rate_per_s(count: float, duration_s: float) -> float:
    """``count / duration_s``: request throughput (completed requests) or output throughput
    (output tokens) over a level's wall time. Example: 320 tokens in 2 s -> 160 tok/s."""
    if duration_s <= 0:
        raise ValueError(f"duration {duration_s!r} s must be positive")
    return float(count) / float(duration_s)


def per_card(value: float, cards: int) -> float:
    """``value / cards``: a throughput divided among the cards serving it (800 tok/s on 4 -> 200)."""
    if cards <= 0:
        raise ValueError(f"cards {cards!r} must be positive")
    return float(value) / int(cards)


def meets_slo(request: Mapping[str, float | None], slo_s: Mapping[str, float]) -> bool:
    """Whether one request's ``ttft``, ``tpot`` and ``e2el`` (seconds) are each at or under its
    SLO (seconds); a TPOT that is undefined (one output token) does not count against it."""
    for name, limit in slo_s.items():
        if name not in SLO_NAMES:
            raise ValueError(f"SLO {name!r} is not one of {', '.join(SLO_NAMES)}")
        value = request.get(name)
        if value is not None and value > limit:
            return False
    return True


def request_goodput(
    requests: Iterable[Mapping[str, float | None]], slo_s: Mapping[str, float], duration_s: float
) -> float:
    """vLLM's request goodput: requests meeting every SLO per second of the level.

    Example: TTFT 0.1 and 0.3 s under a 0.2 s TTFT SLO over 2 s -> 1 / 2 = 0.5 req/s.
    """
    good = sum(1 for request in requests if meets_slo(request, slo_s))
    return rate_per_s(good, duration_s)
