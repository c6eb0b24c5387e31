"""The fleet's per-collective figures, one named function each, vectorised over segments.

A *segment* is one matched collective ``(group, seq)``: its rows (one per rank that recorded
it) are contiguous in arrays sorted by ``(group, seq, rank)``; ``starts`` holds the index of
each segment's first row and ``seg`` the segment of every row. Times are integer ns on the
ranks' shared clock (module docstring of :mod:`parity.trace.fleet.tables`). Definitions:
``docs/definitions.md``, section "Fleet trace analysis".
"""

from __future__ import annotations

import numpy as np

from parity.metrics.collectives import COLLECTIVES, bus_factor

NO_RANK = -1  # "unknown integer" of the contract: no unique last arriver


def segment_ids(starts: np.ndarray, rows: int) -> np.ndarray:
    """Per row, the index of its segment (``starts`` ascending, ``starts[0] == 0``)."""
    seg = np.zeros(rows, dtype=np.int64)
    if len(starts) > 1:
        seg[starts[1:]] = 1
    return np.cumsum(seg)


def sort_within(seg: np.ndarray, values: np.ndarray, segments: int) -> np.ndarray:
    """The order that sorts rows by ``(seg, values)``: one argsort of ``seg · span + (value -
    the segment's minimum)`` when that fits int64 (a lexsort of two keys costs twice as much),
    else the lexsort."""
    values = np.asarray(values, dtype=np.int64)
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    low = np.full(segments, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(low, seg, values)
    rel = values - low[seg]
    span = int(rel.max()) + 1
    if segments * span < 2**62:
        return np.argsort(seg.astype(np.int64) * span + rel, kind="stable")
    return np.lexsort((values, seg))


def sorted_segments(seg: np.ndarray, values: np.ndarray, segments: int) -> tuple[np.ndarray, ...]:
    """``values`` sorted by ``(seg, value)``, with each segment's first position and row count
    in that order (empty segments: count 0)."""
    values = np.asarray(values, dtype=np.int64)
    order = sort_within(seg, values, segments)
    ordered, seg_sorted = values[order], seg[order]
    first = np.searchsorted(seg_sorted, np.arange(segments), side="left")
    count = np.searchsorted(seg_sorted, np.arange(segments), side="right") - first
    return ordered, first, count


def grouped_median_ns(seg: np.ndarray, values: np.ndarray, segments: int) -> np.ndarray:
    """Per segment, the median of ``values`` (int64 ns): the middle value, or for an even count
    ``floor((a + b) / 2)`` of the two middle ones. A segment without rows gets 0.

    Example: values (1, 3, 10, 20) -> floor(13 / 2) = 6; (5, 1, 9) -> 5."""
    values = np.asarray(values, dtype=np.int64)
    out = np.zeros(segments, dtype=np.int64)
    if not len(values):
        return out
    ordered, first, count = sorted_segments(seg, values, segments)
    has = count > 0
    lo = first[has] + (count[has] - 1) // 2
    hi = first[has] + count[has] // 2
    # (a + b) // 2 without overflow: a // 2 + b // 2 + the carry of the two low bits
    a, b = ordered[lo], ordered[hi]
    out[has] = a // 2 + b // 2 + ((a % 2) + (b % 2)) // 2
    return out


def grouped_sum_ns(seg: np.ndarray, values: np.ndarray, segments: int) -> np.ndarray:
    """Per segment, the exact int64 sum of ``values`` (0 for a segment without rows)."""
    values = np.asarray(values, dtype=np.int64)
    out = np.zeros(segments, dtype=np.int64)
    if not len(values):
        return out
    order = np.argsort(seg, kind="stable")
    seg_sorted = seg[order]
    first = np.flatnonzero(np.r_[True, seg_sorted[1:] != seg_sorted[:-1]])
    out[seg_sorted[first]] = np.add.reduceat(values[order], first)
    return out


def first_arrival_ns(arrival: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``min_i arrival_i`` per collective (arrival: start of the rank's device-side op)."""
    return np.minimum.reduceat(arrival, starts)


def last_arrival_ns(arrival: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``max_i arrival_i`` per collective."""
    return np.maximum.reduceat(arrival, starts)


def arrival_skew_ns(first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """``skew = last arrival - first arrival`` per collective. Example: arrivals 10, 40, 25 -> 30."""
    return last - first


def wait_ns(arrival: np.ndarray, last_per_row: np.ndarray) -> np.ndarray:
    """``wait_i = last arrival - arrival_i``: how long rank i's op waited for the last member.
    Example: arrivals 10, 40, 25 -> waits 30, 0, 15."""
    return last_per_row - arrival


def lateness_ns(arrival: np.ndarray, median_per_row: np.ndarray) -> np.ndarray:
    """``lateness_i = arrival_i - median arrival`` (median: :func:`grouped_median_ns`).
    Example: arrivals 10, 40, 25 -> median 25 -> lateness -15, 15, 0."""
    return arrival - median_per_row


def last_arrivers(arrival: np.ndarray, last_per_row: np.ndarray, seg: np.ndarray, ranks: np.ndarray,
                  segments: int) -> tuple[np.ndarray, np.ndarray]:
    """The unique last arriver of each collective, and a per-row flag.

    Returns ``(last_rank, is_last)``: ``last_rank[c]`` is the rank whose arrival equals the
    collective's last arrival when exactly one rank has it and the collective has at least two
    members, else -1 (a tie names no one: nobody kept the others waiting); ``is_last`` marks
    that rank's row. Example: arrivals (10, 40, 25) on ranks (0, 1, 2) -> rank 1; (40, 40, 25)
    -> -1."""
    at_last = arrival == last_per_row
    tied = np.bincount(seg[at_last], minlength=segments)
    members = np.bincount(seg, minlength=segments)
    unique = (tied == 1) & (members >= 2)
    is_last = at_last & unique[seg]
    last_rank = np.full(segments, NO_RANK, dtype=np.int64)
    last_rank[seg[is_last]] = ranks[is_last]
    return last_rank, is_last


def last_margin_ns(arrival: np.ndarray, seg: np.ndarray, segments: int) -> np.ndarray:
    """Per collective, ``last arrival - the latest other arrival`` (0 with fewer than two
    members): how much later the last rank came than the one before it, the time the whole
    group would have saved had it arrived with the rest. Example: arrivals 10, 40, 25 -> 15."""
    out = np.zeros(segments, dtype=np.int64)
    if not len(arrival):
        return out
    ordered, first, count = sorted_segments(seg, arrival, segments)
    end = first + count
    two = count >= 2
    out[two] = ordered[end[two] - 1] - ordered[end[two] - 2]
    return out


def early_end_ns(end: np.ndarray, last_per_row: np.ndarray) -> np.ndarray:
    """``max(0, last arrival - end_i)``: how long before the last member arrived rank i's op
    ended. With one shared clock a collective cannot end on any member before every member has
    arrived, so a positive value measures a clock offset between ranks (or an op that does not
    wait for all, such as a broadcast's root). Example: last arrival 40, ends 100, 35 -> 0, 5."""
    return np.maximum(last_per_row - end, 0)


def comm_ns(start: np.ndarray, end: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``comm = min_i (end_i - start_i)``: the shortest member's duration, the last arriver's,
    which did not wait, so the transfer alone. Example: durations 90, 30, 55 -> 30."""
    return np.minimum.reduceat(end - start, starts)


def collective_bytes(row_bytes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The operation's size ``S`` (B): the largest member's bytes (the map records each rank's
    ``S`` by nccl-tests' convention); -1 when any member's size is unknown."""
    size = np.maximum.reduceat(row_bytes, starts)
    unknown = np.minimum.reduceat(row_bytes, starts) < 0
    return np.where(unknown, -1, size)


def size_imbalance(row_bytes: np.ndarray, seg: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``max_i bytes_i / mean_i bytes_i`` over the members (1.0 for an even op, e.g. an
    all_to_all of 10, 30, 20 B -> 30 / 20 = 1.5); NaN when a size is unknown or all are 0."""
    size = np.maximum.reduceat(row_bytes, starts).astype(np.float64)
    total = np.add.reduceat(row_bytes.astype(np.float64), starts)
    count = np.bincount(seg, minlength=len(starts)).astype(np.float64)
    unknown = np.minimum.reduceat(row_bytes, starts) < 0
    mean = total / count
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = size / mean
    return np.where(unknown | (mean <= 0), np.nan, ratio)


def algbw_bps(size_bytes: np.ndarray, comm: np.ndarray) -> np.ndarray:
    """``algbw = S / comm`` in B/s (``comm`` in ns); NaN when ``S`` is unknown or ``comm <= 0``.
    Example: 1e6 B in 1e6 ns -> 1e9 B/s."""
    ok = (size_bytes >= 0) & (comm > 0)
    out = np.full(len(size_bytes), np.nan)
    out[ok] = size_bytes[ok].astype(np.float64) / (comm[ok].astype(np.float64) * 1e-9)
    return out


def busbw_bps(algbw: np.ndarray, ops: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``busbw = algbw · f(op, n)``, nccl-tests' factor (:func:`parity.metrics.collectives.
    bus_factor`) with ``n`` the collective's members; NaN for an op without a factor
    (barrier, an unknown name). ``ops`` holds canonical names (:func:`parity.trace.fleet.
    matching.canonical_op`). Example: all_reduce on 4 ranks at algbw 1e9 -> 1.5e9 B/s."""
    factor = np.full(len(algbw), np.nan)
    for op in np.unique(ops).tolist():
        if op not in COLLECTIVES:
            continue
        of_op = ops == op
        for n in np.unique(members[of_op]).tolist():
            if n >= 1:
                factor[of_op & (members == n)] = bus_factor(op, int(n))
    return algbw * factor


def collective_scope(node_code: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """"intra-node" when every member sits on one node, "inter-node" otherwise, "unknown" when
    a member's node is unknown (``node_code < 0``: no ``ranks_per_node`` and no node name)."""
    lo = np.minimum.reduceat(node_code, starts)
    hi = np.maximum.reduceat(node_code, starts)
    return np.where(lo < 0, "unknown", np.where(lo == hi, "intra-node", "inter-node"))
