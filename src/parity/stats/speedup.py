"""Speedup of one implementation over another from alternated rounds, with a paired CI.

Two implementations timed in alternating rounds (baseline, candidate, candidate, baseline, ...)
share each round's machine state (clock, other load, cache residency), so rounds are the unit
of resampling: a bootstrap that drew the two sides' samples independently would count the drift
between rounds as noise twice and hide nothing of it in the pairing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parity.stats.summary import DEFAULT_BOOTSTRAP_RESAMPLES, DEFAULT_SEED


def paired_speedup_ci(baseline_rounds: Sequence[Sequence[float]], candidate_rounds: Sequence[Sequence[float]], *,
                      confidence: float = 0.95, resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> tuple[float, float, float]:
    """``(speedup, low, high)``: ``speedup = median(baseline samples) / median(candidate
    samples)`` over all rounds pooled (above 1: the candidate is faster), and a percentile
    bootstrap CI that resamples whole rounds with replacement, the same round indices for both
    sides, pooling each resample's samples before taking the ratio of medians.

    Example: baseline rounds [[2, 2], [4, 4]] and candidate [[1, 1], [2, 2]]: speedup 3/1.5 = 2,
    and every resample of rounds gives 2 too, so the CI is [2, 2].
    """
    if len(baseline_rounds) != len(candidate_rounds) or not baseline_rounds:
        raise ValueError("alternated timing needs the same positive number of rounds on both sides")
    base = [np.asarray(r, dtype=np.float64) for r in baseline_rounds]
    cand = [np.asarray(r, dtype=np.float64) for r in candidate_rounds]
    if any(r.size == 0 for r in base + cand) or any(np.any(r <= 0) for r in cand):
        raise ValueError("every round needs samples, and candidate times must be positive")
    speedup = float(np.median(np.concatenate(base)) / np.median(np.concatenate(cand)))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(base), size=(resamples, len(base)))
    ratios = np.empty(resamples)
    for i, pick in enumerate(picks):
        ratios[i] = np.median(np.concatenate([base[j] for j in pick])) / np.median(np.concatenate([cand[j] for j in pick]))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(ratios, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return speedup, float(low), float(high)
