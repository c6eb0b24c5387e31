"""Request arrival times: a seeded gamma process (Poisson at burstiness 1), or all at once.

Between consecutive requests the gap is drawn from a gamma distribution of shape ``k`` (the
burstiness) and scale ``1/(rate·k)``, so its mean is ``1/rate`` whatever ``k``, and its
coefficient of variation is ``1/sqrt(k)``: ``k = 1`` is exponential gaps (a Poisson process),
``k < 1`` burstier, ``k > 1`` more even. This is ``vllm bench serve``'s ``--burstiness``. An
infinite rate sends every request at time 0 (the concurrency limit then paces them).
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_SEED = 0


def arrival_offsets_s(
    count: int, *, rate_per_s: float, burstiness: float = 1.0, seed: int = DEFAULT_SEED
) -> list[float]:
    """Send times in seconds after the level starts, one per request: cumulative gamma gaps
    (the first request waits one gap, as vLLM's does); all zeros for an infinite rate."""
    if count < 0:
        raise ValueError(f"request count {count!r} must not be negative")
    if not rate_per_s > 0:
        raise ValueError(f"request rate {rate_per_s!r} must be positive (inf: all at once)")
    if not burstiness > 0 or not math.isfinite(burstiness):
        raise ValueError(f"burstiness {burstiness!r} must be a positive number")
    if math.isinf(rate_per_s):
        return [0.0] * count
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate_per_s * burstiness), size=count)
    return [float(t) for t in np.cumsum(gaps)]
