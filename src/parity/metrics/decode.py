"""LLM decode formulas: TPOT, tokens per second per card, the Pareto front and the throughput
at a TPOT target. Times are seconds; rates are tokens per second.

Online (per request, vLLM's definitions):
    TPOT = (E2E - TTFT) / (output_tokens - 1)          (undefined for one output token)
    interactivity (InferenceX) = 1 / TPOT               tokens per second per user
    interactivity (vLLM Pareto plot) = output throughput / concurrency
Offline (engine step):
    TPOT = step_time / accepted_tokens_per_step
    tokens/s per card = batch · accepted_tokens_per_step / step_time / cards = batch / TPOT / cards

Throughput at a TPOT target: the Pareto front of (TPOT, tokens/s per card) points, interpolated
piecewise-linearly between neighbouring front points (monotone, since the front's throughput
rises with TPOT), never extrapolated: a target outside the front's TPOT range is "not reached".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

INTERPOLATION_METHOD = "piecewise-linear on the Pareto front of (TPOT, tokens/s per card); never extrapolated"


def request_tpot_s(e2e_s: float, ttft_s: float, output_tokens: int) -> float | None:
    """vLLM's per-request TPOT ``(E2E - TTFT) / (output_tokens - 1)``; None for fewer than 2 tokens.

    Example: E2E 1.0 s, TTFT 0.1 s, 10 tokens -> 0.9 / 9 = 0.1 s.
    """
    if output_tokens < 2:
        return None
    return (float(e2e_s) - float(ttft_s)) / (int(output_tokens) - 1)


def offline_tpot_s(step_s: float, accepted_tokens_per_step: float = 1.0) -> float:
    """Engine-step TPOT ``step_time / accepted_tokens_per_step``.

    Multi-token prediction accepting 1.8 tokens a step on a 9 ms step gives 5 ms.
    """
    if step_s <= 0 or accepted_tokens_per_step <= 0:
        raise ValueError(f"step {step_s!r} s and accepted tokens {accepted_tokens_per_step!r} must be positive")
    return float(step_s) / float(accepted_tokens_per_step)


def tokens_per_s_per_card(batch: int, tpot_s: float, cards: int) -> float:
    """``batch / TPOT / cards``: 64 sequences at 5 ms TPOT on 4 cards is 3,200 tok/s per card."""
    if batch <= 0 or tpot_s <= 0 or cards <= 0:
        raise ValueError(f"batch {batch!r}, TPOT {tpot_s!r} s and cards {cards!r} must be positive")
    return float(batch) / float(tpot_s) / int(cards)


def interactivity_per_user(tpot_s: float) -> float:
    """InferenceX's interactivity ``1000 / TPOT_ms`` = ``1 / TPOT_s`` tokens/s per user."""
    if tpot_s <= 0:
        raise ValueError(f"TPOT {tpot_s!r} s must be positive")
    return 1.0 / float(tpot_s)


def throughput_per_concurrency(output_throughput: float, concurrency: int) -> float:
    """vLLM's Pareto-plot interactivity: output tokens/s divided by the concurrency."""
    if concurrency <= 0:
        raise ValueError(f"concurrency {concurrency!r} must be positive")
    return float(output_throughput) / int(concurrency)


@dataclass(frozen=True)
class DecodePoint:
    """One measured operating point: its TPOT (s), throughput (tok/s per card) and label."""

    tpot_s: float
    throughput: float
    label: Any = None


def pareto_front(points: Iterable[DecodePoint]) -> list[DecodePoint]:
    """The points no other point beats on both axes (lower TPOT and higher throughput).

    Sorted by TPOT; each kept point has a strictly higher throughput than every point with a
    TPOT no larger than its own. Example: (1 ms, 100), (2 ms, 90), (3 ms, 300) -> the first
    and the last.
    """
    ordered = sorted(
        (p for p in points if math.isfinite(p.tpot_s) and math.isfinite(p.throughput)),
        key=lambda p: (p.tpot_s, -p.throughput),
    )
    front: list[DecodePoint] = []
    for point in ordered:
        if not front or point.throughput > front[-1].throughput:
            if front and point.tpot_s == front[-1].tpot_s:
                continue
            front.append(point)
    return front


@dataclass(frozen=True)
class AtTarget:
    """The throughput at one TPOT target: ``value`` (tok/s per card) or None with ``status``."""

    target_s: float
    value: float | None
    status: str  # "measured", "interpolated" or "not reached"
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tpot_ms": self.target_s * 1e3,
            "value": self.value if self.value is not None else "not reached",
            "status": self.status,
            "reason": self.reason,
            "method": INTERPOLATION_METHOD,
        }


def throughput_at_target(front: Sequence[DecodePoint], target_s: float) -> AtTarget:
    """Interpolate the front's throughput at TPOT ``target_s``; "not reached" outside its range.

    Between front points (t0, y0) and (t1, y1): ``y0 + (y1 - y0)·(target - t0)/(t1 - t0)``.
    Example: front (2 ms, 1000), (6 ms, 3000) at 5 ms -> 2500.
    """
    if target_s <= 0 or not math.isfinite(target_s):
        raise ValueError(f"TPOT target {target_s!r} s must be a positive number")
    if not front:
        return AtTarget(target_s, None, "not reached", "no measured points")
    lo, hi = front[0], front[-1]
    if target_s < lo.tpot_s:
        return AtTarget(
            target_s, None, "not reached",
            f"below the fastest measured TPOT ({lo.tpot_s * 1e3:.3g} ms); never extrapolated",
        )
    if target_s > hi.tpot_s:  # hi: the front's highest throughput, not always the slowest point measured
        where = f"batch {hi.label}" if isinstance(hi.label, int) else str(hi.label) if hi.label is not None else ""
        return AtTarget(
            target_s, None, "not reached",
            f"above the front's slowest TPOT: every point of it meets the target, so the throughput there is at "
            f"least {hi.throughput:.4g} tok/s ({where + ', ' if where else ''}TPOT {hi.tpot_s * 1e3:.3g} ms); "
            "measure larger batches or concurrencies to find it; never extrapolated",
        )
    for left, right in zip(front, front[1:]):
        if left.tpot_s <= target_s <= right.tpot_s:
            if target_s == left.tpot_s:
                return AtTarget(target_s, left.throughput, "measured")
            if target_s == right.tpot_s:
                return AtTarget(target_s, right.throughput, "measured")
            share = (target_s - left.tpot_s) / (right.tpot_s - left.tpot_s)
            return AtTarget(target_s, left.throughput + (right.throughput - left.throughput) * share, "interpolated")
    return AtTarget(target_s, lo.throughput, "measured")  # a one-point front hit exactly
