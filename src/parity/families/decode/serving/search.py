"""Closed-loop search for the highest concurrency whose TPOT meets a target (``--search``).

As ``vllm bench sweep serve_sla`` does, levels are measured until the answer is bracketed,
instead of interpolating a fixed grid: starting at concurrency ``start`` (the first
``--concurrency``, else 1) the concurrency doubles while the level meets the target (its TPOT
statistic at or under the target, and every request answered), up to ``limit`` (the requests per
level: a higher limit would never be reached); then the bracket ``(highest passing, lowest
failing)`` is bisected until ``failing - passing <= max(1, TOLERANCE x passing)``. Every level
measured is a level of the run, stored as it ends. The answer is the highest passing
concurrency with the bracket and the tolerance; "not reached" when even concurrency 1 fails.

With one ``--request-rate R`` and no concurrency limit the search is over the request rate
instead (:func:`search_rate`): doubling from R, then bisecting until ``failing - passing <=
10% of passing``.

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


RATE_METHOD = ("bisection over request rate with measured levels: double from the start rate while the level "
               "meets the target, then halve the bracket until failing - passing <= 10% of passing")
RATE_DOUBLINGS = 10  # a rate search stops at start x 2^10 (requests then all but arrive at once)
RATE_FLOOR_SHARE = 1 / 8  # and does not look below start / 8 ("not reached" there)


def close_enough(passing: float, failing: float, tolerance: float = TOLERANCE, *, integer: bool = True) -> bool:
    """The bracket is as narrow as asked: ``failing - passing <= max(1, floor(tolerance x
    passing))`` for concurrencies, ``<= tolerance x passing`` for rates."""
    if not integer:
        return passing > 0 and failing - passing <= tolerance * passing
    return failing - passing <= max(1, math.floor(tolerance * passing))


def bracket(probe: Callable[[Any], bool], *, start: Any, limit: Any, grow: Callable[[Any], Any],
            middle: Callable[[Any, Any], Any | None], narrow: Callable[[Any, Any], bool],
            key: Callable[[Any], Any] = lambda v: v) -> tuple[Any, Any | None]:
    """``(highest passing, lowest failing)`` by measuring: from ``start``, ``grow`` while
    ``probe`` passes, up to ``limit``; then probe ``middle`` of the bracket until ``narrow``
    (or ``middle`` gives None). ``key`` is the value a probe stands for (a rounded rate);
    passing is 0 when even ``start`` fails, failing None when ``limit`` passes."""
    passing: Any = 0
    failing: Any | None = None
    value = start
    while True:
        if probe(value):
            passing = key(value)
            if value >= limit:
                break
            value = grow(value)
        else:
            failing = key(value)
            break
    while failing is not None and not narrow(passing, failing):
        halfway = middle(passing, failing)
        if halfway is None:
            break
        if probe(halfway):
            passing = halfway
        else:
            failing = halfway
    return passing, failing


def _rounded(rate: float) -> float:
    return float(f"{rate:.3g}")


def search_rate(measure: Callable[[float], Level], *, target_ms: float, stat: str, start: float,
                tolerance: float = TOLERANCE) -> dict[str, Any]:
    """The highest request rate (req/s) meeting the target, doubling from ``start`` then
    bisecting, as :func:`search_concurrency` does for concurrencies; rates are rounded to 3
    significant digits so the levels' keys stay readable."""
    tried: dict[float, bool] = {}
    limit = start * 2 ** RATE_DOUBLINGS

    def probe(rate: float) -> bool:
        rate = _rounded(rate)
        if rate not in tried:
            tried[rate] = meets(measure(rate), target_ms=target_ms, stat=stat)
        return tried[rate]

    def middle(passing: float, failing: float) -> float | None:
        halfway = _rounded((passing + failing) / 2 if passing else failing / 2)
        return None if halfway in (passing, failing) or halfway < start * RATE_FLOOR_SHARE else halfway

    passing, failing = bracket(probe, start=start, limit=limit, grow=lambda r: r * 2, middle=middle, key=_rounded,
                               narrow=lambda p, f: close_enough(p, f, tolerance, integer=False))
    status = "not reached" if passing == 0 else ("at the limit" if failing is None else "bracketed")
    return {"method": RATE_METHOD, "tpot_target_ms": target_ms, "tpot_statistic": stat, "tolerance": tolerance,
            "request_rate": passing or None, "lowest_failing": failing, "limit": limit, "status": status,
            "tried": [{"request_rate": r, "meets": ok} for r, ok in tried.items()]}


def search_concurrency(measure: Callable[[int], Level], *, target_ms: float, stat: str, start: int = 1,
                       limit: int, tolerance: float = TOLERANCE) -> dict[str, Any]:
    """The highest concurrency in ``[1, limit]`` meeting the target, found by measuring."""
    tried: dict[int, bool] = {}

    def probe(concurrency: int) -> bool:
        if concurrency not in tried:
            tried[concurrency] = meets(measure(concurrency), target_ms=target_ms, stat=stat)
        return tried[concurrency]

    passing, failing = bracket(
        probe, start=max(1, min(start, limit)), limit=limit, grow=lambda c: min(c * 2, limit),
        middle=lambda p, f: (p + f) // 2 if (p + f) // 2 > p else None,
        narrow=lambda p, f: close_enough(p, f, tolerance) or f - p <= 1)
    status = "not reached" if passing == 0 else ("at the limit" if failing is None else "bracketed")
    return {"method": METHOD, "tpot_target_ms": target_ms, "tpot_statistic": stat, "tolerance": tolerance,
            "concurrency": passing or None, "lowest_failing": failing, "limit": limit, "status": status,
            "tried": [{"concurrency": c, "meets": ok} for c, ok in tried.items()]}
