"""Pointer-chase latency: ns per dependent load, cache plateaus, knees on the blocks curve.

Method (DESIGN.md, "Latency"): a chase through a random single-cycle permutation of
cache-line-strided slots makes every load depend on the previous one, so a chain of ``N`` loads
takes ``t(N) = t0 + N·L``; timing two chain lengths and taking the slope cancels the fixed cost
``t0`` (launch, thread start, timer overhead) and leaves ``L``, the latency of one load.

Across working-set sizes ``L`` climbs in steps, one flat stretch (plateau) per cache level and
one for memory; across the number of concurrent chasers (blocks) it stays flat until a shared
resource saturates, then bends upward at a knee.
"""

from __future__ import annotations

import itertools
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
# A measured cache size agrees with the reported one within this factor either way.
SIZE_AGREEMENT_FACTOR = 2.0
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


@dataclass(frozen=True, kw_only=True)
class Plateau:
    """A flat stretch of the latency-vs-size curve.

    ``size_bytes`` is the level's capacity as measured: the largest working set still on the
    plateau (for the memory level, the largest size measured); ``start_bytes`` the smallest.
    ``latency_ns`` is the median over the plateau's points. ``reported_bytes`` is what the
    device reports for the level it is named after, and ``size_ratio`` = measured/reported for a
    cache level (None for memory, whose plateau only ends where the sweep does).
    ``page_walk`` marks a plateau of a base-page curve that sits above the huge-page curve at the
    same working sets (see :func:`label_page_walks`): a step made by TLB misses, not a cache
    level; ``page_walk_ns`` is its median excess over the huge-page latency.
    """

    level: str
    size_bytes: int
    start_bytes: int
    latency_ns: float
    points: int
    reported_bytes: int | None = None
    memory: bool = False
    page_walk: bool = False
    page_walk_ns: float | None = None

    @property
    def size_ratio(self) -> float | None:
        if not self.reported_bytes or self.memory:
            return None
        return self.size_bytes / self.reported_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "size_bytes": self.size_bytes,
            "start_bytes": self.start_bytes,
            "latency_ns": self.latency_ns,
            "points": self.points,
            "reported_bytes": self.reported_bytes,
            "size_ratio": self.size_ratio,
            "memory": self.memory,
            "page_walk": self.page_walk,
            "page_walk_ns": self.page_walk_ns,
        }


def size_agrees(ratio: float, *, factor: float = SIZE_AGREEMENT_FACTOR) -> bool:
    """True when a measured/reported size ratio is within ``factor`` either way:
    ``1/factor <= ratio <= factor``."""
    return 1.0 / factor <= ratio <= factor


def page_walk_excess(*, base_ns: float, huge_ns: float) -> float:
    """Share of a base-page load's latency above the huge-page one at the same working set:
    ``base_ns / huge_ns - 1``.

    A 2 MiB page maps 512 times what a 4 KiB page does, so with huge pages the TLB covers
    gigabytes and a chase pays (almost) no page walks; what base pages add on top is the cost
    of TLB misses and the walks that follow them (Drepper, "What every programmer should know
    about memory", 2007, section 4.3).
    """
    if huge_ns <= 0:
        raise ParityError(f"huge-page latency {huge_ns} ns must be positive")
    return base_ns / huge_ns - 1.0


def _covering(plateaus: Sequence[Plateau], size: float) -> Plateau | None:
    """The plateau whose span holds ``size`` (memory's span is open-ended), or None."""
    for p in plateaus:
        if p.start_bytes <= size <= p.size_bytes or (p.memory and size >= p.start_bytes):
            return p
    return None


def label_page_walks(
    base: Sequence[Plateau],
    huge: Sequence[Plateau],
    huge_sizes_bytes: Sequence[int],
    huge_latencies_ns: Sequence[float],
    *,
    tolerance: float = PLATEAU_TOLERANCE,
) -> list[Plateau]:
    """Name a base-page curve's plateaus after the huge-page curve's, marking page-walk steps.

    With base pages a chase past the TLB's reach pays page walks, which lift the curve into
    steps of their own that look like cache levels. The huge-page curve of the same run shows
    the caches without them, so each base plateau takes the name (and reported size, and memory
    flag) of the huge-page plateau holding its geometric mid-size. When its latency exceeds the
    median huge-page latency over its own sizes by more than ``tolerance``
    (:func:`page_walk_excess`), it is a page-walk step: marked ``page_walk``, named
    ``<level>+page-walks``. A base plateau with no huge-page point in its span, or whose
    mid-size falls between huge-page plateaus, keeps its own name.
    """
    sizes = np.asarray(huge_sizes_bytes, dtype=np.float64)
    lat = np.asarray(huge_latencies_ns, dtype=np.float64)
    out = []
    for b in base:
        inside = lat[(sizes >= b.start_bytes) & (sizes <= b.size_bytes)]
        cover = _covering(huge, math.sqrt(b.start_bytes * b.size_bytes))
        if inside.size == 0 or cover is None:
            out.append(b)
            continue
        huge_ns = float(np.median(inside))
        walk = page_walk_excess(base_ns=b.latency_ns, huge_ns=huge_ns) > tolerance
        out.append(Plateau(
            level=f"{cover.level}+page-walks" if walk else cover.level, size_bytes=b.size_bytes,
            start_bytes=b.start_bytes, latency_ns=b.latency_ns, points=b.points,
            reported_bytes=cover.reported_bytes, memory=cover.memory, page_walk=walk,
            page_walk_ns=b.latency_ns - huge_ns if walk else None))
    return out


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
) -> list[tuple[int, int, float, int]]:
    """Flat stretches of a latency-vs-size curve, unnamed.

    Points are sorted by size and grouped greedily: a point joins the current run when its
    latency is within ``tolerance`` (a fraction) of the run's median, else it starts a new run.
    Runs of at least ``min_points`` points are plateaus; shorter runs are transitions between
    levels (a level partly evicted reads as a short flat stretch between two real ones). The run
    at the largest sizes needs only ``min_points_last``: the sweep's end cuts the memory plateau
    short. Returns ``(start_bytes, end_bytes, median_latency_ns, points)`` per plateau.
    """
    sizes = np.asarray(sizes_bytes, dtype=np.int64)
    lat = np.asarray(latencies_ns, dtype=np.float64)
    if sizes.shape != lat.shape or sizes.ndim != 1 or sizes.size == 0:
        raise ParityError("sizes and latencies must be two non-empty 1-d sequences of one length")
    order = np.argsort(sizes, kind="stable")
    sizes, lat = sizes[order], lat[order]
    found = []
    for lo, hi in _segments(lat, tolerance):
        if hi - lo >= (min_points_last if hi == lat.size else min_points):
            found.append((int(sizes[lo]), int(sizes[hi - 1]), float(np.median(lat[lo:hi])), hi - lo))
    return found


def name_plateaus(
    plateaus: Sequence[tuple[int, int, float, int]],
    *,
    caches: Sequence[tuple[str, int]],
    memory_name: str = "DRAM",
    memory_bytes: int | None = None,
) -> list[Plateau]:
    """Name each plateau after a cache level (``caches``: ``(name, bytes)`` as reported).

    The last plateau is memory (``memory_name``: DRAM on a CPU, HBM on most accelerators) when it
    starts beyond the largest reported cache, when it reaches ``SIZE_AGREEMENT_FACTOR`` (2) times
    that cache or more (a flat stretch holding working sets twice the largest cache is not that
    cache, within the tolerance sizes are judged by; it happens when the last cache level is
    smaller in practice than reported, or left no plateau), when there are more plateaus than
    reported levels, or when there is no reported size to go by. The others are matched to reported levels in
    order (smaller plateau, smaller level), choosing among all order-keeping matchings the one
    with the least total ``|log2(plateau end / level size)|``. Plateaus left over are called
    ``cache-<k>`` (k counts plateaus from 1); with no reported caches they are named L1, L2, ...
    """
    levels = sorted(caches, key=lambda item: item[1])
    if not plateaus:
        return []
    last_is_memory = (not levels or plateaus[-1][0] > levels[-1][1] or len(plateaus) > len(levels)
                      or plateaus[-1][1] >= SIZE_AGREEMENT_FACTOR * levels[-1][1])
    cache_plateaus = list(plateaus[:-1] if last_is_memory else plateaus)
    names: dict[int, tuple[str, int | None]] = {}
    if not levels:
        names = {k: (f"L{k + 1}", None) for k in range(len(cache_plateaus))}
    else:
        names = _match_levels(cache_plateaus, levels)
    named = []
    for k, (start, end, lat, points) in enumerate(cache_plateaus):
        name, reported = names.get(k, (f"cache-{k + 1}", None))
        named.append(Plateau(level=name, size_bytes=end, start_bytes=start, latency_ns=lat, points=points,
                             reported_bytes=reported))
    if last_is_memory:
        start, end, lat, points = plateaus[-1]
        named.append(Plateau(level=memory_name, size_bytes=end, start_bytes=start, latency_ns=lat,
                             points=points, reported_bytes=memory_bytes, memory=True))
    return named


def _match_levels(
    plateaus: Sequence[tuple[int, int, float, int]], levels: Sequence[tuple[str, int]]
) -> dict[int, tuple[str, int | None]]:
    """Order-keeping matching of plateaus to levels with the least total log2 size distance."""
    m = min(len(plateaus), len(levels))
    best: tuple[float, dict[int, tuple[str, int | None]]] = (math.inf, {})
    for chosen in itertools.combinations(range(len(plateaus)), m):
        for taken in itertools.combinations(range(len(levels)), m):
            cost = sum(abs(math.log2(plateaus[p][1] / levels[lv][1])) for p, lv in zip(chosen, taken))
            if cost < best[0]:
                best = (cost, {p: (levels[lv][0], levels[lv][1]) for p, lv in zip(chosen, taken)})
    return best[1]


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
