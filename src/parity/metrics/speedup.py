"""Size buckets of GEMM shapes and the distribution of speedups within each.

"A tuned kernel gains up to 40%, mostly at small sizes" becomes a measured distribution: each
shape falls in a bucket by its work ``F = 2·M·N·K`` and each bucket reports how many shapes,
the median speedup, its quartiles and its extremes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# Upper bounds of the buckets in FLOP (the last is open): 2^24 is the quick catalog's cap for
# small shapes; 2^30 (about a GFLOP) separates what a matrix unit finishes in microseconds.
BUCKETS: tuple[tuple[str, float], ...] = (("small (<= 2^24 FLOP)", 2.0**24), ("medium (<= 2^30 FLOP)", 2.0**30),
                                          ("large (> 2^30 FLOP)", float("inf")))


def size_bucket(flop: float) -> str:
    """The bucket of a shape of ``flop`` FLOP: small up to 2^24, medium up to 2^30, large above.
    Example: 64x64x64 (2^19 FLOP) -> small; 2048^3 (2^34) -> large."""
    for name, upper in BUCKETS:
        if flop <= upper:
            return name
    raise ValueError(f"no bucket for {flop!r} FLOP")


def speedup_distribution(speedups: Sequence[float]) -> dict[str, Any]:
    """``n``, ``median``, ``p25``, ``p75`` (linear interpolation), ``min`` and ``max`` of
    speedups, and ``gain_max`` = ``max - 1`` (the "up to 40%" figure as a fraction).
    Example: (0.9, 1.0, 1.2, 1.4) -> median 1.1, p25 0.975, p75 1.25, max 1.4, gain_max 0.4."""
    values = np.asarray(list(speedups), dtype=np.float64)
    if values.size == 0:
        raise ValueError("no speedups to summarise")
    p25, p50, p75 = np.percentile(values, [25.0, 50.0, 75.0])
    return {"n": int(values.size), "median": float(p50), "p25": float(p25), "p75": float(p75),
            "min": float(values.min()), "max": float(values.max()), "gain_max": float(values.max() - 1.0)}
