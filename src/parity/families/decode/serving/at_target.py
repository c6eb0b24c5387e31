"""The largest throughput whose TPOT statistic meets a target, over the measured levels.

Each level is a point (its p50, p90 or p99 TPOT; its output tokens/s per card). The answer is
``parity.metrics.decode``'s: the Pareto front of the points, interpolated piecewise-linearly
between neighbouring front points, "not reached" outside the measured TPOT range (never
extrapolated). It is a search over the levels that were measured, not a new measurement: to
sharpen it, measure more concurrencies around the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parity.families.decode.serving.record import level_key
from parity.metrics.decode import INTERPOLATION_METHOD, DecodePoint, pareto_front, throughput_at_target

TPOT_STATS = {"p50": "median_tpot_ms", "p90": "p90_tpot_ms", "p99": "p99_tpot_ms"}
SEARCH_METHOD = "over the measured levels (no extra measurement): " + INTERPOLATION_METHOD


def level_points(levels: Sequence[dict[str, Any]], *, stat: str) -> list[DecodePoint]:
    """(TPOT statistic in s, output tok/s per card) of every level that has both."""
    name = TPOT_STATS[stat]
    return [
        DecodePoint(tpot_s=f[name] / 1e3, throughput=f["output_throughput_per_card"], label=level_key(f))
        for f in levels
        if f.get(name) and f.get("output_throughput_per_card") is not None
    ]


def throughput_at_tpot(
    levels: Sequence[dict[str, Any]], *, targets_ms: Sequence[float], stat: str, cards: int
) -> dict[str, Any]:
    """The front and, per target, the throughput per card (or "not reached"), with the method."""
    front = pareto_front(level_points(levels, stat=stat))
    return {
        "method": SEARCH_METHOD,
        "tpot_statistic": stat,
        "tpot_field": TPOT_STATS[stat],
        "cards": cards,
        "pareto": [{"level": p.label, "tpot_ms": p.tpot_s * 1e3, "output_throughput_per_card": p.throughput}
                   for p in front],
        "at_target": [throughput_at_target(front, t / 1e3).to_dict() for t in targets_ms],
    }
