"""Points far off the trend of their neighbours (a cross-case check; flagged, never dropped).

A sweep's points (bandwidth against size, GEMM rate along one dimension) vary smoothly or in
steps between regimes (cache levels, tile sizes). A point that lies outside the band its two
neighbours span, widened by ``factor`` on either side, fits neither: a step puts a point near
one neighbour, never far below both. Such a point is measured again by the suite (``recheck``)
and flagged if it stays off (``off-trend``).
"""

from __future__ import annotations

from collections.abc import Sequence

OFF_TREND_FACTOR = 2.0


def off_trend(values: Sequence[float], *, factor: float = OFF_TREND_FACTOR) -> list[int]:
    """Indices ``i`` of interior points (ordered along the sweep) with
    ``v[i] < min(v[i-1], v[i+1]) / factor`` or ``v[i] > max(v[i-1], v[i+1]) · factor``.

    Example: 6.8, 0.2, 20.8 GB/s -> [1] (0.2 < 6.8 / 2); 6.8, 10, 20.8 -> [] (inside the band).
    """
    if factor < 1:
        raise ValueError(f"factor {factor!r} must be >= 1")
    out = []
    for i in range(1, len(values) - 1):
        low = min(values[i - 1], values[i + 1]) / factor
        high = max(values[i - 1], values[i + 1]) * factor
        if not low <= values[i] <= high:
            out.append(i)
    return out
