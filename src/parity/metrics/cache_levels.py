"""Cache levels of a latency-vs-size curve: which plateau is L1, L2, L3 or memory, and its capacity.

Plateaus are named from two things together: the cache hierarchy the device reports (sizes of
L1, L2, L3 from the host) and the curve. A rule that matched plateaus to levels by count or by
order would rename them whenever noise splits or hides one, so each plateau is named by where it
sits in the reported hierarchy, the same way on every run and on resume:

- memory only when the sweep has left the last cache, that is, past ``MEMORY_FACTOR`` (2) times
  its reported size (:func:`left_last_cache`): a random ring of ``W`` bytes hits a cache of
  ``C`` bytes on about ``C/W`` of its loads, so at ``2C`` at most half the loads are cache hits.
  Memory's latency is the median of the curve from there on; its span extends down over the
  plateaus just before it whose latency agrees within 5% (a flat stretch across the reported last-level
  size: a cache that holds less in practice than reported), or that sit near it after a large
  step (:func:`climbs_to_memory`: the climb to memory past a cache that holds far less);
- a cache plateau after the level whose size region ``(previous level, level]`` holds its
  geometric mid-size (:func:`level_index`); neighbouring plateaus in one region that agree in
  latency are one level split by noise and are merged; when they disagree, the widest takes the
  name, with the capacity where the curve leaves the region's last plateau, and the others are
  ``<level>-part<k>``; a plateau ``MEMORY_STEP`` times the region's lowest or more is the climb
  past a cache that holds less than reported, neither the level nor where its capacity is read;
- a plateau past the last cache on a sweep that did not leave it is ``past-<last level>``, never
  memory; with no reported caches, plateaus are ``level-1``, ``level-2``, ... and none is memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.metrics.latency import PLATEAU_TOLERANCE, find_plateaus

# A measured cache size agrees with the reported one within this factor either way.
SIZE_AGREEMENT_FACTOR = 2.0
# The sweep has left the last cache at this multiple of its reported size.
MEMORY_FACTOR = 2.0
# A plateau below that joins memory only when its latency is this close to memory's: flat
# within a quiet machine's noise. Far tighter than the plateau tolerance, because past the last
# cache a random ring keeps hitting it on about C/W of its loads, so a large last-level cache
# whose latency is under twice memory's (a 300 MiB L3 at 140 ns before 260 ns DRAM) leaves a
# slope, not a step, and a looser rule would swallow the cache into memory.
MEMORY_AGREEMENT = 0.05
# A plateau just before memory is memory too, whatever the 5% rule says, when it sits near memory
# (memory at most NEAR_MEMORY times its latency) after a step from the plateau before it of at
# least MEMORY_STEP: the curve has left a cache that holds less than its reported size (a VM's
# share of a shared L3) and climbs towards memory while a few loads still hit. A cache step is
# some 3-4x (L1 to L2 to L3); the 300 MiB L3 above, at 140 ns before 260 ns DRAM, is not near.
NEAR_MEMORY = 1.25
MEMORY_STEP = 4.0


@dataclass(frozen=True, kw_only=True)
class Plateau:
    """A flat stretch of the latency-vs-size curve.

    ``size_bytes`` is the largest working set still on the plateau (for the memory level, the
    largest size measured); ``start_bytes`` the smallest.
    ``latency_ns`` is the median over the plateau's points (for memory, over the points where
    the sweep has left the last cache, which ``points`` then counts; see :func:`memory_run`).
    ``reported_bytes`` is what the device reports for the level it is named after, and ``size_ratio`` = measured/reported for a
    cache level (None for memory, whose plateau only ends where the sweep does).
    ``capacity_bytes`` is the size where the curve, leaving this plateau, crosses half-way (on a
    log scale) to the next one (:func:`level_capacity_bytes`); ``size_bytes`` bounds it from below.
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
    capacity_bytes: int | None = None

    @property
    def size_ratio(self) -> float | None:
        """Measured over reported size: ``capacity_bytes`` (else ``size_bytes``) / ``reported_bytes``."""
        if not self.reported_bytes or self.memory:
            return None
        return (self.capacity_bytes or self.size_bytes) / self.reported_bytes

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
            "capacity_bytes": self.capacity_bytes,
        }


def size_agrees(ratio: float, *, factor: float = SIZE_AGREEMENT_FACTOR) -> bool:
    """True when a measured/reported size ratio is within ``factor`` either way:
    ``1/factor <= ratio <= factor``."""
    return 1.0 / factor <= ratio <= factor


def level_capacity_bytes(
    sizes_bytes: Sequence[int],
    latencies_ns: Sequence[float],
    *,
    end_bytes: int,
    next_start_bytes: int,
    level_ns: float,
    next_ns: float,
) -> int:
    """Where the curve leaving a plateau crosses half-way, on a log scale, to the next plateau.

    The threshold is the geometric mean ``sqrt(level_ns · next_ns)``. Among the points after
    the plateau's last one (``end_bytes``) up to the next plateau's first (``next_start_bytes``),
    the crossing is bracketed by the last point below the threshold and the point after it (by
    the plateau's end and the first point when none is below), and interpolated linearly in
    latency against ``log2(size)``: ``s = s0 · (s1/s0)^((thr - l0)/(l1 - l0))``. Taking the
    last point below makes a noisy transition, which may dip under the threshold after first
    crossing it, cross where the curve leaves for good. A random ring starts to miss before it
    fills a cache (set conflicts, imperfect replacement) and still hits on some loads past it,
    so the last point on the plateau undershoots the capacity by a grid step or more; the
    mid-point of the transition does not. Returns ``end_bytes`` when there is nothing to bracket.
    """
    sizes = np.asarray(sizes_bytes, dtype=np.float64)
    lat = np.asarray(latencies_ns, dtype=np.float64)
    order = np.argsort(sizes, kind="stable")
    sizes, lat = sizes[order], lat[order]
    if level_ns <= 0 or next_ns <= 0:
        return int(end_bytes)
    threshold = math.sqrt(level_ns * next_ns)
    window = np.flatnonzero((sizes > end_bytes) & (sizes <= next_start_bytes))
    if window.size == 0:
        return int(end_bytes)
    below = window[lat[window] < threshold]
    if below.size:
        i = int(below[-1])
        if i + 1 >= sizes.size:
            return int(sizes[i])
        s0, l0, s1, l1 = sizes[i], lat[i], sizes[i + 1], lat[i + 1]
    else:
        s0, l0, s1, l1 = float(end_bytes), level_ns, sizes[window[0]], lat[window[0]]
    share = min(1.0, max(0.0, (threshold - l0) / (l1 - l0))) if l1 > l0 else 1.0
    return round(float(s0 * (s1 / s0) ** share))


def plateau_capacities(
    sizes_bytes: Sequence[int], latencies_ns: Sequence[float], plateaus: Sequence[tuple[int, int, float, int]]
) -> list[int | None]:
    """:func:`level_capacity_bytes` of every plateau but the last (which has no next level)."""
    inner = [level_capacity_bytes(sizes_bytes, latencies_ns, end_bytes=end, next_start_bytes=plateaus[k + 1][0],
                                  level_ns=lat, next_ns=plateaus[k + 1][2])
             for k, (_, end, lat, _) in enumerate(plateaus[:-1])]
    return inner + [None] if plateaus else []


Run = tuple[int, int, float, int]  # (start_bytes, end_bytes, median latency ns, points)


def left_last_cache(*, largest_bytes: int, llc_bytes: int | None) -> bool:
    """True when the sweep reached past the last cache: ``largest_bytes >= MEMORY_FACTOR · llc_bytes``.

    False when the device reports no last-level size: then nothing says the sweep left it.
    """
    return bool(llc_bytes) and largest_bytes >= MEMORY_FACTOR * llc_bytes


def level_index(start_bytes: int, end_bytes: int, level_bytes: Sequence[int]) -> int:
    """The reported level whose size region holds a plateau: the first ``k`` with
    ``sqrt(start · end) <= level_bytes[k]`` (sizes ascending), ``len(level_bytes)`` past the last.

    The geometric mid-size sits inside the level's region ``(level k-1, level k]`` however far a
    random ring's plateau falls short of either edge (it starts to miss before the cache is full
    and keeps some hits past it).
    """
    mid = math.sqrt(start_bytes * end_bytes)
    return next((k for k, size in enumerate(level_bytes) if mid <= size), len(level_bytes))


def latencies_agree(a_ns: float, b_ns: float, *, tolerance: float = PLATEAU_TOLERANCE) -> bool:
    """True when two plateau latencies are one level: ``max(a, b) <= (1 + tolerance) · min(a, b)``."""
    return max(a_ns, b_ns) <= (1.0 + tolerance) * min(a_ns, b_ns)


def _span(sizes: np.ndarray, lat: np.ndarray, start: int, end: int) -> Run:
    """The run over every point from ``start`` to ``end`` bytes: its median and point count."""
    inside = (sizes >= start) & (sizes <= end)
    return (int(start), int(end), float(np.median(lat[inside])), int(inside.sum()))


def memory_run(sizes: np.ndarray, lat: np.ndarray, inner: Sequence[Run], *, llc_bytes: int,
               tolerance: float = MEMORY_AGREEMENT) -> tuple[Run, list[Run]]:
    """The memory level of a sweep that left the last cache, and the cache plateaus before it.

    Memory's latency is the median over the points from ``MEMORY_FACTOR · llc_bytes`` to the
    sweep's end, where the last cache can hold at most half the ring; ``points`` counts them.
    Its span starts there, or lower: the plateaus of ``inner`` (found below that size) that end
    the cache curve join it while their latency agrees with memory's within ``tolerance``
    (:func:`latencies_agree`, ``MEMORY_AGREEMENT``): a flat stretch across the reported size of
    a cache that holds less in practice. They do not move its latency, which stays where the
    sweep has left the cache. ``sizes`` ascending.
    """
    cut = int(np.searchsorted(sizes, MEMORY_FACTOR * llc_bytes, side="left"))
    latency = float(np.median(lat[cut:]))
    start = int(sizes[cut])
    caches = list(inner)
    while caches and (latencies_agree(caches[-1][2], latency, tolerance=tolerance) or climbs_to_memory(caches, latency)):
        start = caches.pop()[0]
    return (start, int(sizes[-1]), latency, int(sizes.size - cut)), caches


def climbs_to_memory(caches: Sequence[Run], memory_ns: float) -> bool:
    """The last of ``caches`` is the climb to memory, not a cache: ``memory <= NEAR_MEMORY · its
    latency`` and its latency ``>= MEMORY_STEP ·`` the plateau before it (13.6 ns, then 131 ns
    against 147 ns memory: a 6 MiB share of a reported 32 MiB L3). Needs a plateau before it."""
    if len(caches) < 2:
        return False
    latency, before = caches[-1][2], caches[-2][2]
    return memory_ns <= NEAR_MEMORY * latency and latency >= MEMORY_STEP * before


def _merge_regions(runs: Sequence[tuple[Run, int]], sizes: np.ndarray, lat: np.ndarray,
                   tolerance: float) -> list[tuple[Run, int]]:
    """Neighbouring plateaus of one region that agree in latency become one (noise split them)."""
    out: list[tuple[Run, int]] = []
    for run, k in runs:
        if out and out[-1][1] == k and latencies_agree(out[-1][0][2], run[2], tolerance=tolerance):
            out[-1] = (_span(sizes, lat, out[-1][0][0], run[1]), k)
        else:
            out.append((run, k))
    return out


def _nearness(end_bytes: int, reported_bytes: int | None) -> tuple[bool, float]:
    """How well a plateau's end fits a reported size: within it first, then nearest in log2."""
    if not reported_bytes:
        return (True, 0.0)
    return (end_bytes <= reported_bytes, -abs(math.log2(end_bytes / reported_bytes)))


def _region_names(runs: Sequence[Run], regions: Sequence[int], levels: Sequence[tuple[str, int]],
                  climbs: set[int]) -> list[tuple[str, int | None]]:
    """``(name, reported bytes)`` per cache plateau. In each region the widest plateau (largest
    ``end/start``; on a tie, one ending within the reported size before one past it, then the
    one ending nearest it, ``|log2(end/reported)|``, then the first) is the level: a level spans
    the sizes between the cache below and its own and ends near its own, not past it, while a
    partly evicted stretch or one paying TLB misses spans less. A plateau ``MEMORY_STEP`` times
    the region's lowest or more is never the level, however wide: no cache level holds such a
    step, it is the climb past a cache that holds less than reported (a VM's share of an L3:
    13 ns to 4 MiB, then 150 ns to 45 MiB, where the widest rule named L3 150 ns in two runs of
    six; ``climbs``: :func:`_climbs`). The region's other plateaus are ``<level>-part<k>``,
    ``k`` from 1 in size order."""
    names: list[tuple[str, int | None]] = [("", None)] * len(regions)
    for k in dict.fromkeys(regions):
        members = [i for i, r in enumerate(regions) if r == k]
        name, reported = (f"past-{levels[-1][0]}", None) if k == len(levels) else levels[k]
        candidates = [i for i in members if i not in climbs]
        best = max(candidates, key=lambda i: (runs[i][1] / runs[i][0], _nearness(runs[i][1], reported), -i))
        others = iter(range(1, len(members)))
        for i in members:
            names[i] = (name, reported) if i == best else (f"{name}-part{next(others)}", None)
    return names


def _climbs(runs: Sequence[Run], regions: Sequence[int]) -> set[int]:
    """The plateaus ``MEMORY_STEP`` times their region's lowest or more (indices): the climb past
    a cache that holds less than reported, never its level (:func:`_region_names`)."""
    lowest: dict[int, float] = {}
    for i, k in enumerate(regions):
        lowest[k] = min(lowest.get(k, math.inf), runs[i][2])
    return {i for i, k in enumerate(regions) if runs[i][2] >= MEMORY_STEP * lowest[k]}


def _level_capacities(regions: Sequence[int], names: Sequence[tuple[str, int | None]],
                      caps: Sequence[int | None], climbs: set[int]) -> list[int | None]:
    """Each cache plateau's capacity; the one named after a level (``reported`` set) takes the
    capacity of its region's last plateau short of a climb (:func:`_climbs`), where the curve
    leaves the level for good."""
    out = list(caps[: len(regions)])
    for i, k in enumerate(regions):
        if names[i][1] is not None:
            out[i] = caps[max(j for j, r in enumerate(regions) if r == k and j not in climbs)]
    return out


def name_plateaus(
    sizes_bytes: Sequence[int],
    latencies_ns: Sequence[float],
    *,
    caches: Sequence[tuple[str, int]],
    memory_name: str = "DRAM",
    memory_bytes: int | None = None,
    tolerance: float = PLATEAU_TOLERANCE,
) -> list[Plateau]:
    """The named levels of one latency-vs-size curve (the rules are in this module's docstring).

    ``caches`` is the reported hierarchy, ``(name, bytes)``; ``memory_name`` is DRAM on a CPU,
    HBM on most accelerators. Each cache plateau carries its capacity
    (:func:`plateau_capacities`) and, when named after a level, that level's reported size.
    """
    sizes = np.asarray(sizes_bytes, dtype=np.int64)
    lat = np.asarray(latencies_ns, dtype=np.float64)
    order = np.argsort(sizes, kind="stable")
    sizes, lat = sizes[order], lat[order]
    levels = sorted(((str(n), int(b)) for n, b in caches if b), key=lambda item: item[1])
    memory: Run | None = None
    if not levels:
        runs = find_plateaus(sizes, lat, tolerance=tolerance)
        caps = plateau_capacities(sizes, lat, runs)
        return [Plateau(level=f"level-{k + 1}", size_bytes=e, start_bytes=s, latency_ns=m, points=n,
                        capacity_bytes=caps[k]) for k, (s, e, m, n) in enumerate(runs)]
    if left_last_cache(largest_bytes=int(sizes[-1]), llc_bytes=levels[-1][1]):
        cut = int(np.searchsorted(sizes, MEMORY_FACTOR * levels[-1][1], side="left"))
        inner = find_plateaus(sizes[:cut], lat[:cut], tolerance=tolerance, open_end=False) if cut else []
        memory, inner = memory_run(sizes, lat, inner, llc_bytes=levels[-1][1])
    else:
        inner = find_plateaus(sizes, lat, tolerance=tolerance)
    bounds = [b for _, b in levels]
    merged = _merge_regions([(r, level_index(r[0], r[1], bounds)) for r in inner], sizes, lat, tolerance)
    runs = [r for r, _ in merged] + ([memory] if memory else [])
    regions = [k for _, k in merged]
    climbs = _climbs(runs, regions)
    names = _region_names(runs, regions, levels, climbs)
    caps = _level_capacities(regions, names, plateau_capacities(sizes, lat, runs), climbs)
    named = [Plateau(level=names[i][0], size_bytes=e, start_bytes=s, latency_ns=m, points=n,
                     reported_bytes=names[i][1], capacity_bytes=caps[i])
             for i, ((s, e, m, n), _) in enumerate(merged)]
    if memory is not None:
        s, e, m, n = memory
        named.append(Plateau(level=memory_name, size_bytes=e, start_bytes=s, latency_ns=m, points=n,
                             reported_bytes=memory_bytes, memory=True))
    return named
