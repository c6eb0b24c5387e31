"""Rates of declared work: amount per second, for FLOP and for bytes alike."""

from __future__ import annotations

import math


def rate_per_s(amount: float, seconds: float) -> float | None:
    """``amount / seconds`` (FLOP/s from FLOP, B/s from bytes); None when either is not positive.

    Example: 2·1024³ FLOP in 1 ms is 2.147e12 FLOP/s.
    """
    if not amount or amount <= 0 or not seconds or seconds <= 0 or not math.isfinite(seconds):
        return None
    return float(amount) / float(seconds)
