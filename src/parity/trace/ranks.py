"""Rank spread: which rank is slowest, and is it a straggler."""

from __future__ import annotations

import numpy as np

from parity.trace.results import RankAnalysis, RankSpread

STRAGGLER_THRESHOLD = 0.05  # slowest rank's compute more than 5% above the median


def excess_fraction(slowest_ns: float, median_ns: float) -> float:
    """``(slowest - median) / median``: how far the slowest rank sits above the typical one."""
    return (slowest_ns - median_ns) / median_ns if median_ns > 0 else 0.0


def rank_spread(ranks: list[RankAnalysis], *, threshold: float = STRAGGLER_THRESHOLD) -> RankSpread | None:
    """Spread of per-rank compute time in each rank's window (``None`` for a single rank).

    In a synchronous job every rank waits in collectives for the one with the most work, so the
    rank with the largest compute time (``CommOverlap.compute_ns``) is the slowest; the others
    show that wait as communication or idle time.
    """
    if len(ranks) < 2:
        return None
    compute = {r.rank: r.comm.compute_ns for r in ranks}
    windows = {r.rank: r.window.length_ns for r in ranks}
    slowest = max(compute, key=lambda k: (compute[k], -k))
    median = float(np.median(list(compute.values())))
    excess = excess_fraction(compute[slowest], median)
    return RankSpread(
        compute_ns=compute,
        window_ns=windows,
        slowest_rank=slowest,
        median_compute_ns=median,
        excess_fraction=excess,
        straggler=excess > threshold,
        threshold=threshold,
    )
