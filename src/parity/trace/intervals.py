"""Vectorised interval algebra on int64 nanosecond arrays.

An interval set is a pair of equal-length ``int64`` arrays ``(starts, ends)`` of half-open
intervals ``[start, end)``. The functions here sort, take cumulative maxima and cumulative sums;
none loops over intervals in Python and none modifies its inputs (they work on copies made by
sorting or fancy indexing). Results are *normalised*: sorted, disjoint, non-touching, non-empty.

:class:`IntervalSet` wraps a normalised pair for readable set algebra
(``compute.subtract(comm).length_ns``); the module functions take raw arrays so analyses over
whole columns avoid building objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from parity.trace.table import distinct_sorted

_INT = np.int64


def _as_pair(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.asarray(starts, dtype=_INT)
    ends = np.asarray(ends, dtype=_INT)
    if starts.shape != ends.shape or starts.ndim != 1:
        raise ValueError(f"starts and ends must be 1-d and equal length: {starts.shape} vs {ends.shape}")
    if len(starts) and (ends < starts).any():
        bad = int(np.argmax(ends < starts))
        raise ValueError(f"interval {bad} ends before it starts: [{starts[bad]}, {ends[bad]})")
    return starts, ends


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint intervals.

    Method: sort by start; an interval opens a new merged run when it starts after the running
    maximum of all earlier ends (``np.maximum.accumulate``); each run ends at its largest end
    (``np.maximum.reduceat``). Touching intervals (``start == previous end``) join one run, and
    empty intervals are dropped. O(n log n).
    """
    return _merge(*_as_pair(starts, ends))


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`merge_intervals` of a pair already checked by :func:`_as_pair`."""
    keep = ends > starts
    if not keep.all():
        starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return np.empty(0, _INT), np.empty(0, _INT)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    running_end = np.maximum.accumulate(e)
    opens = np.empty(len(s), dtype=bool)
    opens[0] = True
    opens[1:] = s[1:] > running_end[:-1]
    first = np.flatnonzero(opens)
    merged_s = s[first]
    merged_e = np.maximum.reduceat(e, first)
    return merged_s, merged_e


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of intervals, ns: ``|∪ [s_i, e_i)| = Σ (E_j - S_j)`` over merged runs."""
    s, e = merge_intervals(starts, ends)
    total = int(np.sum(e - s))
    assert total >= 0
    return total


def clip_intervals(
    starts: np.ndarray, ends: np.ndarray, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals cut to the window ``[lo, hi)``: ``[max(s, lo), min(e, hi))``, empty ones dropped.

    Order is kept, so a clipped normalised set stays normalised.
    """
    starts, ends = _as_pair(starts, ends)
    if hi < lo:
        raise ValueError(f"window ends before it starts: [{lo}, {hi})")
    s = np.maximum(starts, _INT(lo))
    e = np.minimum(ends, _INT(hi))
    keep = e > s
    return s[keep], e[keep]


def _elementary_segments(
    sets: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """Cut the line at every boundary of every set; count each set's cover of each piece.

    Returns ``(bounds, cover)``: ``bounds`` has the ``m + 1`` sorted distinct boundaries and
    ``cover[k, j]`` is how many intervals of set ``k`` cover ``[bounds[j], bounds[j+1])``,
    found as ``#starts <= x - #ends <= x`` by binary search on sorted copies.
    """
    pairs = [_as_pair(s, e) for s, e in sets]
    everything = [a for pair in pairs for a in pair]
    bounds = distinct_sorted(np.concatenate(everything)) if everything else np.empty(0, _INT)
    if len(bounds) < 2:
        return bounds, np.zeros((len(pairs), 0), dtype=_INT)
    left = bounds[:-1]
    cover = np.empty((len(pairs), len(left)), dtype=_INT)
    for k, (s, e) in enumerate(pairs):
        opened = np.searchsorted(np.sort(s), left, side="right")
        closed = np.searchsorted(np.sort(e), left, side="right")
        cover[k] = opened - closed
    return bounds, cover


def _runs_where(bounds: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalised intervals made of the elementary pieces selected by ``mask``."""
    if not mask.any():
        return np.empty(0, _INT), np.empty(0, _INT)
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    first = np.flatnonzero(edges == 1)
    last = np.flatnonzero(edges == -1)  # one past the last selected piece
    return bounds[first], bounds[last]


def intersect_intervals(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``A ∩ B``: the time covered by at least one interval of ``a`` and one of ``b``."""
    bounds, cover = _elementary_segments([a, b])
    if cover.shape[1] == 0:
        return np.empty(0, _INT), np.empty(0, _INT)
    return _runs_where(bounds, (cover[0] > 0) & (cover[1] > 0))


def subtract_intervals(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``A \\ B``: the time covered by ``a`` and by no interval of ``b``."""
    bounds, cover = _elementary_segments([a, b])
    if cover.shape[1] == 0:
        return np.empty(0, _INT), np.empty(0, _INT)
    return _runs_where(bounds, (cover[0] > 0) & (cover[1] == 0))


def intersection_length(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> int:
    """``|A ∩ B| = |A| + |B| - |A ∪ B|``, ns: the overlap of two interval sets (docs/definitions.md,
    Traces). Three merges instead of a sweep over both sets' boundaries."""
    both = union_length(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    length_a, length_b = union_length(*a), union_length(*b)
    out = length_a + length_b - both
    assert 0 <= out <= min(length_a, length_b)
    return out


def difference_length(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> int:
    """``|A \\ B| = |A ∪ B| - |B|``, ns (e.g. exposed communication = comm minus compute)."""
    both = union_length(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    out = both - union_length(*b)
    assert out >= 0
    return out


MAX_MASK_SETS = 62  # sets a bitmask of int64 can hold
SMALL_MASK_SETS = 10  # up to this many sets, time is summed into one slot per possible mask


def pairwise_intersection_lengths(sets: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``M[a, b] = |A_a ∩ A_b|``, ns, for every pair of normalised sets at once (each set's own
    intervals disjoint, as :func:`merge_intervals` gives); ``M[a, a] = |A_a|``.

    Method: set ``k`` adds ``2^k`` at each start and subtracts it at each end; sorted by
    position, the running sum is the bitmask of the sets active on each elementary piece. The
    time under each distinct mask ``t(m)`` is summed, and ``M[a, b] = Σ_{m ∋ a, b} t(m)``, i.e.
    ``Bᵀ·diag(t)·B`` with ``B[m, k]`` the bits of mask ``m``. One sort for all pairs, where
    pairwise merges would sort each pair again. At most :data:`MAX_MASK_SETS` sets.
    """
    k = len(sets)
    if k > MAX_MASK_SETS:
        raise ValueError(f"{k} sets; a bitmask sweep takes at most {MAX_MASK_SETS}")
    starts = [np.asarray(s, dtype=_INT) for s, _ in sets]
    ends = [np.asarray(e, dtype=_INT) for _, e in sets]
    counts = [len(x) for x in starts]
    if counts != [len(x) for x in ends] or any(x.ndim != 1 for x in (*starts, *ends)):
        raise ValueError("each set needs 1-d starts and ends of equal length")
    if sum(counts) == 0:
        return np.zeros((k, k), dtype=_INT)
    all_s, all_e = np.concatenate(starts), np.concatenate(ends)
    if (all_e < all_s).any():
        raise ValueError("an interval ends before it starts")
    owner = np.repeat(np.arange(k, dtype=_INT), counts)
    bit = np.left_shift(_INT(1), owner)
    # at a position where one set ends and another starts the order is arbitrary; the pieces
    # between such events have no width, so whatever mask they show adds no time
    pos = np.concatenate((all_s, all_e))
    order = np.argsort(pos, kind="stable")
    mask = np.cumsum(np.concatenate((bit, -bit))[order])
    widths = np.diff(pos[order])
    if k <= SMALL_MASK_SETS:  # every mask has a slot: no sort to find the distinct ones
        masks = np.arange(1 << k, dtype=_INT)
        time = np.zeros(1 << k, dtype=_INT)
        np.add.at(time, mask[:-1], widths)
    else:
        masks, inverse = np.unique(mask[:-1], return_inverse=True)
        time = np.zeros(len(masks), dtype=_INT)
        np.add.at(time, inverse.reshape(-1), widths)
    bits = (masks[:, None] >> np.arange(k, dtype=_INT)[None, :]) & 1
    out = (bits * time[:, None]).T @ bits
    lengths = np.zeros(k, dtype=_INT)
    np.add.at(lengths, owner, all_e - all_s)
    assert (np.diagonal(out) == lengths).all(), "pairwise overlap needs disjoint intervals within each set"
    return out


def grouped_merge(
    groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every group's intervals merged, for all groups at once: ``(owner, starts, ends)`` of the
    merged runs, sorted by owner then start (group ``g``'s set is the rows with ``owner == g``).

    ``groups`` holds dense group codes ``0 .. n_groups-1`` (e.g. stream indices). The groups are
    laid end to end on one line (group ``g`` shifted by ``g · (span + 1)``) so one merge handles
    them all without a Python loop; runs cannot cross groups because the shifted ranges are
    disjoint. Falls back to a loop over groups if the shifted line would overflow int64.
    """
    starts, ends = _as_pair(starts, ends)
    groups = np.asarray(groups, dtype=_INT)
    if len(starts) == 0:
        return np.empty(0, _INT), np.empty(0, _INT), np.empty(0, _INT)
    base = int(starts.min())
    span = int(ends.max()) - base + 1
    if span * max(n_groups, 1) < 2**62:
        shift = groups * _INT(span) - _INT(base)
        s, e = _merge(starts + shift, ends + shift)
        owner = s // _INT(span)
        unshift = owner * _INT(span) - _INT(base)
        return owner, s - unshift, e - unshift
    parts = [(g, *merge_intervals(starts[groups == g], ends[groups == g])) for g in range(n_groups)]
    return (np.concatenate([np.full(len(s), g, _INT) for g, s, _ in parts]),
            np.concatenate([s for _, s, _ in parts]), np.concatenate([e for _, _, e in parts]))  # fmt: skip


def grouped_union_lengths(
    groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_groups: int
) -> np.ndarray:
    """Union length of each group's intervals, ns, for all groups at once: the merged runs of
    :func:`grouped_merge` summed by owner."""
    return _lengths_by_owner(*grouped_merge(groups, starts, ends, n_groups), n_groups)


def grouped_sets(
    groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_groups: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Each group's merged intervals as its own normalised pair, and each group's union length
    (:func:`grouped_union_lengths`), from one :func:`grouped_merge`."""
    owner, s, e = grouped_merge(groups, starts, ends, n_groups)
    cut = np.searchsorted(owner, np.arange(n_groups + 1)).tolist()
    return [(s[a:b], e[a:b]) for a, b in pairwise(cut)], _lengths_by_owner(owner, s, e, n_groups)


def _lengths_by_owner(owner: np.ndarray, s: np.ndarray, e: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.zeros(n_groups, dtype=_INT)
    np.add.at(out, owner, e - s)
    return out


def concurrency_histogram(
    sets: Sequence[tuple[np.ndarray, np.ndarray]], lo: int, hi: int, *, merged: bool = False
) -> np.ndarray:
    """Time, ns, during which exactly ``c`` of the given sets are active, for ``c = 0 .. len(sets)``.

    Each set is first merged (so a stream counts once however many of its kernels overlap) and
    clipped to ``[lo, hi)``; ``merged=True`` says the caller's sets are already both. Sweep: +1
    at every start, -1 at every end, sorted by position; ``np.cumsum`` gives the number active
    after each event, and the time to the next event is credited to that number.
    ``Σ_c hist[c] = hi - lo`` and ``Σ_c c·hist[c] = Σ busy``.
    """
    if hi < lo:
        raise ValueError(f"window ends before it starts: [{lo}, {hi})")
    hist = np.zeros(len(sets) + 1, dtype=_INT)
    if not merged:
        sets = [merge_intervals(*clip_intervals(s, e, lo, hi)) for s, e in sets]
    pos = np.concatenate([np.array([lo, hi], _INT)] + [a for m in sets for a in m])
    counts = [len(a) for m in sets for a in m]
    delta = np.concatenate((np.zeros(2, _INT), np.repeat(np.tile(np.array([1, -1], _INT), len(sets)), counts)))
    order = np.argsort(pos, kind="stable")
    pos, level = pos[order], np.cumsum(delta[order])
    widths = np.diff(pos)  # level[i] holds on [pos[i], pos[i+1]) after all events at pos[i]
    np.add.at(hist, level[:-1], widths)
    assert int(hist.sum()) == hi - lo
    return hist


def lane_overlaps(rank, device, stream, start, end) -> tuple[int, int]:
    """How many rows start before an earlier row of their lane (rank, device, stream) ends, in
    order of start (ties in row order), and the largest such overlap, ns."""
    order = np.lexsort((start, stream, device, rank))
    rank, device, stream = rank[order], device[order], stream[order]
    start, end = start[order], end[order]
    same = (rank[1:] == rank[:-1]) & (device[1:] == device[:-1]) & (stream[1:] == stream[:-1])
    lane_id = np.cumsum(np.concatenate(([True], ~same))) - 1
    prev_end = lane_running_max(end, lane_id)
    overlap = np.zeros(len(start), dtype=np.int64)
    overlap[1:] = np.where(same, prev_end[:-1] - start[1:], 0)
    return int((overlap > 0).sum()), int(overlap.max())


def lane_running_max(values: np.ndarray, lane_id: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` that restarts at each new lane (rows sorted by lane).

    The lanes are laid end to end (values shifted to start at 0, lane ``k`` raised by
    ``k · (span + 1)``), so one ``np.maximum.accumulate`` serves every lane: no lane's values
    reach the next lane's. A loop over lanes where that would overflow int64.
    """
    if len(values) == 0:
        return values.copy()
    base = int(values.min())
    span = int(values.max()) - base + 1
    if span * (int(lane_id[-1]) + 1) < 2**62:
        shift = lane_id.astype(np.int64) * span - base
        return np.maximum.accumulate(values + shift) - shift
    out = values.copy()
    bounds = np.flatnonzero(np.diff(lane_id)) + 1
    for lo, hi in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [len(values)]))):
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out


@dataclass(frozen=True)
class IntervalSet:
    """A normalised set of half-open ns intervals; build with :meth:`of`."""

    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, starts: np.ndarray, ends: np.ndarray) -> IntervalSet:
        """Merge arbitrary intervals into a normalised set."""
        s, e = merge_intervals(starts, ends)
        return cls(s, e)

    @classmethod
    def empty(cls) -> IntervalSet:
        return cls(np.empty(0, _INT), np.empty(0, _INT))

    @property
    def pair(self) -> tuple[np.ndarray, np.ndarray]:
        return self.starts, self.ends

    @property
    def length_ns(self) -> int:
        return int(np.sum(self.ends - self.starts))

    def __len__(self) -> int:
        return len(self.starts)

    def union(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.of(
            np.concatenate([self.starts, other.starts]), np.concatenate([self.ends, other.ends])
        )

    def intersect(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(*intersect_intervals(self.pair, other.pair))

    def subtract(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet(*subtract_intervals(self.pair, other.pair))

    def clip(self, lo: int, hi: int) -> IntervalSet:
        return IntervalSet(*clip_intervals(self.starts, self.ends, lo, hi))
