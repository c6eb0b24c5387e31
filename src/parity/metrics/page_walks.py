"""Page walks in a pointer chase: what 4 KiB pages add over huge pages at the same working set.

A 2 MiB page maps 512 times what a 4 KiB page does, so with huge pages the TLB covers gigabytes
and a chase pays (almost) no page walks. Past the TLB's reach with base pages, every load adds
a walk, and once the page tables themselves stop fitting in cache, a slower one: the base-page
curve climbs in steps of its own that look like cache levels. Comparing it with the huge-page
curve of the same run tells the two apart.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from parity.metrics.cache_levels import Plateau
from parity.metrics.latency import PLATEAU_TOLERANCE
from parity.model.errors import ParityError


def page_walk_excess(*, base_ns: float, huge_ns: float) -> float:
    """Share of a base-page load's latency above the huge-page one at the same working set:
    ``base_ns / huge_ns - 1``: the cost of TLB misses and the walks that follow them (Drepper,
    "What every programmer should know about memory", 2007, section 4).
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
    ``<level>+page-walks``. A base plateau whose mid-size falls between huge-page plateaus sits
    where the huge-page curve is in transition from one level to the next, so it is no level of
    its own and is left out; the base curve's memory level takes the huge-page memory level's
    name whatever its span. One with no huge-page point in its span keeps its own name. A name
    already taken by an earlier base plateau (two base stretches inside one huge-page level) is
    suffixed ``-part<k>``, so every level of a curve has its own name.
    """
    sizes = np.asarray(huge_sizes_bytes, dtype=np.float64)
    lat = np.asarray(huge_latencies_ns, dtype=np.float64)
    out: list[Plateau] = []
    for b in base:
        inside = lat[(sizes >= b.start_bytes) & (sizes <= b.size_bytes)]
        cover = _covering(huge, math.sqrt(b.start_bytes * b.size_bytes))
        if b.memory:  # memory is memory on both curves, wherever each one's span starts
            cover = next((p for p in huge if p.memory), cover)
        if inside.size == 0:
            out.append(b)
            continue
        if cover is None:
            continue
        huge_ns = float(np.median(inside))
        walk = page_walk_excess(base_ns=b.latency_ns, huge_ns=huge_ns) > tolerance
        out.append(dataclasses.replace(
            b, level=f"{cover.level}+page-walks" if walk else cover.level,
            reported_bytes=cover.reported_bytes, memory=cover.memory, page_walk=walk,
            page_walk_ns=b.latency_ns - huge_ns if walk else None,
            capacity_bytes=None if cover.memory else b.capacity_bytes))
    return _distinct_names(out)


def _distinct_names(plateaus: Sequence[Plateau]) -> list[Plateau]:
    """The plateaus with repeated names suffixed ``-part1``, ``-part2``, ... after the first."""
    seen: dict[str, int] = {}
    out = []
    for p in plateaus:
        repeats = seen.get(p.level, 0)
        seen[p.level] = repeats + 1
        out.append(p if repeats == 0 else dataclasses.replace(p, level=f"{p.level}-part{repeats}", reported_bytes=None))
    return out
