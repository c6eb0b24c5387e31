"""Closed-loop search for the highest concurrency whose TPOT meets a target (``--search``).

As ``vllm bench sweep serve_sla`` does, levels are measured until the answer is bracketed,
instead of interpolating a fixed grid: starting at concurrency ``start`` (the first
``--concurrency``, else 1) the concurrency doubles while the level meets the target (its TPOT
statistic at or under the target, and every request answered), up to ``limit`` (the requests per
level: a higher limit would never be reached); then the bracket ``(highest passing, lowest
failing)`` is bisected until ``failing - passing <= max(1, TOLERANCE x passing)``. Every level
measured is a level of the run, stored as it ends. The answer is the highest passing
concurrency with the bracket and the tolerance; "not reached" when even concurrency 1 fails.

A level already measured (``--resume``) is taken as stored, so an interrupted search continues
with the same steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from parity.families.decode.serving.at_target import TPOT_STATS
from parity.families.decode.serving.level import Level

TOLERANCE = 0.1
METHOD = ("bisection over concurrency with measured levels: double from the start while the level meets the "
          "target, then halve the bracket until failing - passing <= max(1, 10% of passing)")


def meets(level: Level, *, target_ms: float, stat: str) -> bool:
    """Every request answered and the level's TPOT statistic at or under the target."""
    value = level.fields.get(TPOT_STATS[stat])
    return bool(level.check.get("passed")) and value is not None and value <= target_ms


def close_enough(passing: int, failing: int, tolerance: float = TOLERANCE) -> bool:
    """The bracket is as narrow as asked: ``failing - passing <= max(1, tolerance x passing)``."""
    return failing - passing <= max(1, math.floor(tolerance * passing))


def search_concurrency(measure: Callable[[int], Level], *, target_ms: float, stat: str, start: int = 1,
                       limit: int, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """The highest concurrency in ``[1, limit]`` meeting the target, found by measuring."""
    tried: dict[int, bool] = {}

    def probe(concurrency: int) -> bool:
        if concurrency not in tried:
            tried[concurrency] = meets(measure(concurrency), target_ms=target_ms, stat=stat)
        return tried[concurrency]

    passing, failing = 0, None
    concurrency = max(1, min(start, limit))
    while True:
        if probe(concurrency):
            passing = concurrency
            if concurrency >= limit:
                break
            concurrency = min(concurrency * 2, limit)
        else:
            failing = concurrency
            break
    while failing is not None and not close_enough(passing, failing, tolerance) and failing - passing > 1:
        middle = (passing + failing) // 2
        if middle <= passing:
            break
        if probe(middle):
            passing = middle
        else:
            failing = middle
    status = "not reached" if passing == 0 else ("at the limit" if failing is None else "bracketed")
    return {"method": METHOD, "tpot_target_ms": target_ms, "tpot_statistic": stat, "tolerance": tolerance,
            "concurrency": passing or None, "lowest_failing": failing, "limit": limit, "status": status,
            "tried": [{"concurrency": c, "meets": ok} for c, ok in tried.items()]}
