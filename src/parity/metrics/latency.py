"""Pointer-chase latency: ns per dependent load, cache plateaus, knees on the blocks curve.

Method (docs/definitions.md, "Latency"): a chase through a random single-cycle permutation of
cache-line-strided slots makes every load depend on the previous one, so a chain of ``N`` loads
takes ``t(N) = t0 + N·L``; timing two chain lengths and taking the slope cancels the fixed cost
``t0`` (launch, thread start, timer overhead) and leaves ``L``, the latency of one load.

Across working-set sizes ``L`` climbs in steps, one flat stretch (plateau) per cache level and
one for memory; across the number of concurrent chasers (blocks) it stays flat until a shared
resource saturates, then bends upward at a knee.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.model.errors import ParityError

# Points whose latency is within this fraction of a plateau's median belong to it. Adjacent
# levels differ by 2x or more (L1 -> L2 -> LLC -> memory), so 30% keeps levels apart while
# absorbing the few-tens-of-percent noise of a shared machine.
PLATEAU_TOLERANCE = 0.30
# An interior plateau spans at least this factor of working-set sizes (an octave). Adjacent
# cache levels differ in capacity by 4x or more, so a level is flat over more than an octave;
# the partly evicted stretch between two levels spans less, whatever the grid's density.
MIN_PLATEAU_SPAN = 2.0
# Working-set sizes are rounded to whole pages, so a span may fall short of its octave by this.
SPAN_ROUNDING = 0.02
# A knee must lift the last point at least this fraction of the baseline above the old trend.
KNEE_MIN_RISE = 0.10


def ns_per_load(
    *, short_s: float, long_s: float, short_loads: int, long_loads: int
) -> float:
    """Latency of one dependent load in ns: ``(t_long - t_short) / (N_long - N_short) · 1e9``.

    The slope between two chain lengths cancels every cost paid once per call.
    """
    if long_loads <= short_loads:
        raise ParityError(
            f"the long chain ({long_loads} loads) must be longer than the short one ({short_loads})"
        )
    return (long_s - short_s) / (long_loads - short_loads) * 1e9


def _segments(latency: np.ndarray, tolerance: float) -> list[tuple[int, int]]:
    """Greedy left-to-right runs of points within ``tolerance`` of the run's running median."""
    runs: list[tuple[int, int]] = []
    start = 0
    for i in range(1, latency.size + 1):
        if i < latency.size:
            ref = float(np.median(latency[start:i]))
            if abs(latency[i] - ref) <= tolerance * ref:
                continue
        runs.append((start, i))
        start = i
    return runs


def find_plateaus(
    sizes_bytes: Sequence[int],
    latencies_ns: Sequence[float],
    *,
    tolerance: float = PLATEAU_TOLERANCE,
    min_points: int = 3,
    min_points_last: int = 2,
    min_span: float = MIN_PLATEAU_SPAN,
    open_end: bool = True,
) -> list[tuple[int, int, float, int]]:
    """Flat stretches of a latency-vs-size curve, unnamed.

    Points are sorted by size and grouped greedily: a point joins the current run when its
    latency is within ``tolerance`` (a fraction) of the run's median, else it starts a new run.
    Runs of at least ``min_points`` points spanning at least ``min_span`` (largest size over
    smallest, an octave) are plateaus; shorter runs are transitions between levels (a level
    partly evicted reads as a short flat stretch between two real ones; the span rule keeps it a
    transition on a dense grid too). The run at the largest sizes needs only ``min_points_last``
    and no span: the sweep's end cuts the memory plateau short. With ``open_end`` false (a curve
    cut short by the caller, not by the sweep) the last run is judged like the others. Returns
    ``(start_bytes, end_bytes, median_latency_ns, points)`` per plateau.
    """
    sizes = np.asarray(sizes_bytes, dtype=np.int64)
    lat = np.asarray(latencies_ns, dtype=np.float64)
    if sizes.shape != lat.shape or sizes.ndim != 1 or sizes.size == 0:
        raise ParityError("sizes and latencies must be two non-empty 1-d sequences of one length")
    order = np.argsort(sizes, kind="stable")
    sizes, lat = sizes[order], lat[order]
    found = []
    for lo, hi in _segments(lat, tolerance):
        last = open_end and hi == lat.size
        wide = sizes[hi - 1] >= min_span * (1 - SPAN_ROUNDING) * sizes[lo]
        if hi - lo >= (min_points_last if last else min_points) and (last or wide):
            found.append((int(sizes[lo]), int(sizes[hi - 1]), float(np.median(lat[lo:hi])), hi - lo))
    return found


@dataclass(frozen=True, kw_only=True)
class Knee:
    """A block count after which latency rises faster than before.

    ``blocks`` is the last count on the old trend; ``latency_ns`` the measured latency there;
    ``slope_before`` and ``slope_after`` are the fitted slopes in ns per added block;
    ``rise`` is how far above the old trend (as a fraction of the baseline latency) the curve
    ends up at the largest block count because of this knee.
    """

    blocks: int
    latency_ns: float
    slope_before_ns: float
    slope_after_ns: float
    rise: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "blocks": self.blocks,
            "latency_ns": self.latency_ns,
            "slope_before_ns_per_block": self.slope_before_ns,
            "slope_after_ns_per_block": self.slope_after_ns,
            "rise": self.rise,
        }


def _hinge_fit(x: np.ndarray, y: np.ndarray, knots: list[float]) -> tuple[np.ndarray, float]:
    columns = [np.ones_like(x), x] + [np.maximum(0.0, x - k) for k in knots]
    design = np.column_stack(columns)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    sse = float(np.sum((design @ coef - y) ** 2))
    return coef, sse


def find_knees(
    blocks: Sequence[int],
    latencies_ns: Sequence[float],
    *,
    min_rise: float = KNEE_MIN_RISE,
    max_knees: int = 3,
) -> list[Knee]:
    """Knees of latency against concurrent blocks, by greedy continuous piecewise-linear fits.

    The curve is normalised by its baseline (the median of the points at the smallest block
    counts, up to three) and modelled as ``y = c0 + c1·x + Σ d_k·max(0, x - x_k)``. Knots are
    added one at a time at the interior block count that most reduces the squared error; a knot
    is kept only when its slope change ``d_k`` is positive (latency rises faster) and it lifts the
    last point by ``d_k·(x_max - x_k) >= min_rise`` of the baseline, and when it pays for its two
    parameters under the Bayesian information criterion (the squared error must fall below
    ``exp(-2 ln n / n)`` of its value without the knot). Stops after ``max_knees`` or when no
    candidate qualifies. A flat curve has no knee.
    """
    x = np.asarray(blocks, dtype=np.float64)
    lat = np.asarray(latencies_ns, dtype=np.float64)
    if x.shape != lat.shape or x.ndim != 1:
        raise ParityError("blocks and latencies must be two 1-d sequences of the same length")
    order = np.argsort(x, kind="stable")
    x, lat = x[order], lat[order]
    if x.size < 3:
        return []
    baseline = float(np.median(lat[: min(3, x.size)]))
    if baseline <= 0:
        raise ParityError("latencies must be positive to find knees")
    y = lat / baseline
    knots: list[float] = []
    # Bayesian information criterion: a knot costs two parameters, worth it only when the
    # squared error falls below exp(-2 ln(n) / n) of what it was.
    keep_below = math.exp(-2.0 * math.log(x.size) / x.size)
    for _ in range(max_knees):
        best: tuple[float, float] | None = None
        _, sse_now = _hinge_fit(x, y, knots)
        for candidate in x[1:-1]:
            if candidate in knots:
                continue
            coef, sse = _hinge_fit(x, y, sorted(knots + [float(candidate)]))
            d = coef[2 + sorted(knots + [float(candidate)]).index(float(candidate))]
            if d <= 0 or d * (x[-1] - candidate) < min_rise or sse > sse_now * keep_below:
                continue
            if best is None or sse < best[1]:
                best = (float(candidate), sse)
        if best is None:
            break
        knots = sorted(knots + [best[0]])
    return _describe_knees(x, y, lat, knots, baseline)


def _describe_knees(
    x: np.ndarray, y: np.ndarray, lat: np.ndarray, knots: list[float], baseline: float
) -> list[Knee]:
    if not knots:
        return []
    coef, _ = _hinge_fit(x, y, knots)
    knees = []
    slope = coef[1]
    for k, knot in enumerate(knots):
        after = slope + coef[2 + k]
        knees.append(
            Knee(
                blocks=int(knot),
                latency_ns=float(lat[int(np.flatnonzero(x == knot)[0])]),
                slope_before_ns=float(slope * baseline),
                slope_after_ns=float(after * baseline),
                rise=float(coef[2 + k] * (x[-1] - knot)),
            )
        )
        slope = after
    return knees
