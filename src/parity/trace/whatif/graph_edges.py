"""Edge builders of the dependency graph, one function per kind of dependency.

Each returns an :class:`EdgeSet` of point ids (``2i`` start, ``2i + 1`` end of node ``i``) and
latencies in ns. Builders that discover a host call which only waits (a blocking synchronize or
copy) set that node's own duration to 0 in the ``own`` array they are given (the graph's working
copy), so its end is decided by what it waits on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.trace.table import NO_ID, ActivityTable, KindCode
from parity.trace.whatif.timeline import Timeline

_EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class EdgeSet:
    src: np.ndarray
    dst: np.ndarray
    lat: np.ndarray

    @staticmethod
    def of(src, dst, lat=None) -> EdgeSet:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        lat = np.zeros(len(src)) if lat is None else np.asarray(lat, dtype=np.float64)
        return EdgeSet(src, dst, lat)


def _times(timeline: Timeline) -> tuple[np.ndarray, np.ndarray]:
    origin = int(timeline.start_ns.min()) if len(timeline) else 0
    return ((timeline.start_ns - origin).astype(np.float64),
            (timeline.end_ns - origin).astype(np.float64))


def lane_edges(timeline: Timeline) -> EdgeSet:
    """Order on each lane: the latest-ending earlier node -> the next node.

    The next node waits for the end of the node with the largest end so far on its lane (its
    running maximum), so a nested or overlapping pair does not let later work jump ahead. When
    the two overlap in observed time the edge ties the starts instead.

    A container (a node holding the next node of its lane: an Ascend collective's row over its
    tasks on its stream) is left out of that order: its tasks follow each other as any nodes
    do, its start follows the lane's work before it and leads its first task, and it ends no
    earlier than each task it holds. So a collective ends with its last task, rather than each
    task keeping its offset from the collective's start.
    """
    n = len(timeline)
    if n < 2:
        return EdgeSet.of(_EMPTY, _EMPTY)
    holds = timeline.holds
    src, dst = _running_order(timeline, np.flatnonzero(~holds))
    parts_src, parts_dst = [src], [dst]
    if holds.any():
        # the work before each container: not a container around it, whose start would hold
        # the container's offset in it fixed
        into, lead = _running_order(timeline, np.arange(n), only_into=holds, owners=~holds)
        parts_src.append(into)
        parts_dst.append(lead)
        length = timeline.end_ns - timeline.start_ns
        by_lane = np.lexsort((timeline.start_ns, timeline.lane))  # each lane's nodes by start
        lanes, starts = timeline.lane[by_lane], timeline.start_ns[by_lane]
        for c in np.flatnonzero(holds).tolist():
            lo = np.searchsorted(lanes, timeline.lane[c], side="left")
            hi = np.searchsorted(lanes, timeline.lane[c], side="right")
            first_at = lo + np.searchsorted(starts[lo:hi], timeline.start_ns[c], side="left")
            last_at = lo + np.searchsorted(starts[lo:hi], timeline.end_ns[c], side="right")
            span = by_lane[first_at:last_at]  # nodes of the lane starting within the container
            inner = np.sort(span[~holds[span] & (timeline.end_ns[span] <= timeline.end_ns[c]) & (length[span] < length[c])])
            if len(inner):
                first = inner[np.argmin(timeline.start_ns[inner])]
                parts_src.append(np.r_[2 * c, 2 * inner + 1])
                parts_dst.append(np.r_[2 * first, np.full(len(inner), 2 * c + 1)])
    return EdgeSet.of(np.concatenate(parts_src), np.concatenate(parts_dst))


def _running_order(timeline: Timeline, nodes: np.ndarray, only_into: np.ndarray | None = None,
                   owners: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lane-order edges among ``nodes``: each waits for the end of the node with the largest end
    so far on its lane (its start when they overlap). With ``only_into``, just the edges into
    those nodes; with ``owners``, only those nodes lead others (any node leads while nothing
    of ``owners`` has come before it on its lane)."""
    if len(nodes) < 2:
        return _EMPTY, _EMPTY
    # at one start, a container before what it holds (it is led by nothing it holds)
    ends = -timeline.end_ns[nodes] if only_into is not None else timeline.end_ns[nodes]
    order = nodes[np.lexsort((ends, timeline.start_ns[nodes], timeline.lane[nodes]))]
    lane = timeline.lane[order].astype(np.int64)
    end = timeline.end_ns[order] - int(timeline.start_ns.min())
    span = int(end.max()) + 2
    key = end + lane * span
    if owners is not None:  # below every owner's key of the lane, above the lane before
        key = np.where(owners[order], key, lane * span - 1)
    running = np.maximum.accumulate(key)
    owner = np.maximum.accumulate(np.where(key == running, np.arange(len(order)), 0))
    same = lane[1:] == lane[:-1]
    prev = order[owner[:-1]][same]
    nxt = order[1:][same]
    if only_into is not None:
        keep = only_into[nxt]
        prev, nxt = prev[keep], nxt[keep]
    overlap = timeline.end_ns[prev] > timeline.start_ns[nxt]
    src, dst = np.where(overlap, 2 * prev, 2 * prev + 1), 2 * nxt
    if overlap.any():  # a lane of several engines: also the latest work that ended before it
        done, late = _ended_before(timeline, order, key if owners is None else np.where(owners[order], key, -1),
                                   lane, span, nxt[overlap])
        src, dst = np.r_[src, 2 * done + 1], np.r_[dst, 2 * late]
    return src, dst


def _ended_before(timeline: Timeline, order: np.ndarray, key: np.ndarray, lane: np.ndarray, span: int,
                  nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``nodes`` (started while earlier work of its lane still ran: a stream whose
    tasks run on several engines at once), the node of its lane that ended last at or before
    its start, if any: ``(that node, the node)``. ``order``/``key``/``lane``: the lane order of
    :func:`_running_order` (a key below the lane's range: not a leader)."""
    origin = int(timeline.start_ns.min())
    leads = key >= lane * span
    by_end = np.argsort(key[leads], kind="stable")
    ends, who = key[leads][by_end], order[leads][by_end]
    target = timeline.lane[nodes].astype(np.int64) * span + (timeline.start_ns[nodes] - origin)
    at = np.searchsorted(ends, target, side="right") - 1
    ok = at >= 0
    ok[ok] = (ends[at[ok]] // span) == timeline.lane[nodes[ok]]
    return who[at[ok]], nodes[ok]


def _runtime_index(table: ActivityTable, timeline: Timeline):
    """A lookup ``(rank, correlation) -> runtime node index`` (``-1`` when absent)."""
    runtime = np.flatnonzero(~timeline.compute)
    corr = table.correlation[timeline.row[runtime]]
    keep = corr != NO_ID
    runtime, corr = runtime[keep], corr[keep]
    keys = table.rank[timeline.row[runtime]].astype(np.int64) * (1 << 40) + corr
    order = np.argsort(keys, kind="stable")
    keys, runtime = keys[order], runtime[order]

    def lookup(rank: np.ndarray, correlation: np.ndarray) -> np.ndarray:
        wanted = np.asarray(rank, np.int64) * (1 << 40) + np.asarray(correlation, np.int64)
        at = np.clip(np.searchsorted(keys, wanted), 0, max(len(keys) - 1, 0))
        if not len(keys):
            return np.full(len(wanted), -1, dtype=np.int64)
        found = (keys[at] == wanted) & (np.asarray(correlation) != NO_ID)
        return np.where(found, runtime[at], -1)

    return lookup


def launch_map(table: ActivityTable, timeline: Timeline) -> np.ndarray:
    """Per node, the runtime node that launched it (same rank and correlation id), else -1."""
    device = np.flatnonzero(timeline.compute)
    lookup = _runtime_index(table, timeline)
    launch_of = np.full(len(timeline), -1, dtype=np.int64)
    launch_of[device] = lookup(table.rank[timeline.row[device]],
                               table.correlation[timeline.row[device]])
    return launch_of


def launch_edges(timeline: Timeline, launch_of: np.ndarray, waiting: np.ndarray):
    """Runtime launch call -> its device op, by correlation id.

    Latency: the median of ``op start - launch start`` over ops whose stream was idle when the
    launch began and that wait on no other stream (``waiting`` marks those that do): they waited
    only for their launch, so the gap is the launch latency. Each edge uses
    ``min(latency, its observed gap)`` so the trace stays reproducible. Returns the edges, the
    latency (ns, or None without launches) and the number of device ops with no launch record.
    """
    start, end = _times(timeline)
    device = np.flatnonzero(timeline.compute)
    launcher = launch_of[device]
    has = launcher >= 0
    dev, rt = device[has], launcher[has]
    if not len(dev):
        return EdgeSet.of(_EMPTY, _EMPTY), None, len(device)
    gap = start[dev] - start[rt]
    previous_end = _previous_end_on_lane(timeline, end)
    idle = (previous_end[dev] <= start[rt]) & (gap >= 0) & ~waiting[dev]
    pool = gap[idle] if idle.any() else gap[gap >= 0]
    latency = float(np.median(pool)) if len(pool) else 0.0
    lat = np.minimum(latency, gap)
    return EdgeSet.of(2 * rt, 2 * dev, lat), latency, int((~has).sum())


def _previous_end_on_lane(timeline: Timeline, end: np.ndarray) -> np.ndarray:
    """Per node, the end of the node before it on its lane (-inf for the first)."""
    order = np.lexsort((timeline.start_ns, timeline.lane))
    out = np.full(len(timeline), -np.inf)
    same = timeline.lane[order][1:] == timeline.lane[order][:-1]
    out[order[1:][same]] = end[order[:-1][same]]
    return out


class _DeviceLanes:
    """Device nodes of each ``(rank, stream)`` sorted by launch time, for "last launched before"."""

    def __init__(self, timeline: Timeline, launch_of: np.ndarray, start: np.ndarray):
        when = np.where(launch_of >= 0, start[np.maximum(launch_of, 0)], start)
        self.by_lane = _per_stream(timeline, when)
        self.ranks: dict[int, list[tuple[int, int]]] = {}
        for rank, stream in self.by_lane:
            self.ranks.setdefault(rank, []).append((rank, stream))

    def last_before(self, rank: int, stream: int, t: float) -> int:
        entry = self.by_lane.get((rank, stream))
        return -1 if entry is None else _last(entry[0], entry[1], t, inclusive=False)

    def first_after(self, rank: int, stream: int, t: float) -> int:
        entry = self.by_lane.get((rank, stream))
        return -1 if entry is None else _first(entry[0], entry[1], t, inclusive=False)


def _per_stream(timeline: Timeline, when: np.ndarray) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Device nodes of each ``(rank, stream)`` sorted by ``when`` (a time per node):
    ``(rank, stream) -> (sorted times, nodes in that order)``."""
    device = np.flatnonzero(timeline.compute)
    out = {}
    for lane in np.unique(timeline.lane[device]).tolist():
        nodes = device[timeline.lane[device] == lane]
        nodes = nodes[np.argsort(when[nodes], kind="stable")]
        rank, _, stream = timeline.lane_keys[lane]
        out[(rank, stream)] = (when[nodes], nodes)
    return out


def _last(times: np.ndarray, nodes: np.ndarray, t: float, *, inclusive: bool) -> int:
    """The node of the latest time before ``t`` (at ``t`` too when ``inclusive``), -1: none;
    ``times`` sorted, ``nodes`` in the same order."""
    at = int(np.searchsorted(times, t, side="right" if inclusive else "left")) - 1
    return int(nodes[at]) if at >= 0 else -1


def _first(times: np.ndarray, nodes: np.ndarray, t: float, *, inclusive: bool) -> int:
    """The node of the earliest time after ``t`` (at ``t`` too when ``inclusive``), -1: none."""
    at = int(np.searchsorted(times, t, side="left" if inclusive else "right"))
    return int(nodes[at]) if at < len(nodes) else -1


def _sync_rows(table: ActivityTable, wait: bool) -> np.ndarray:
    rows = np.flatnonzero(table.kind == KindCode.SYNC)
    types = table.extra.get("sync_type")
    if types is None or not len(rows):
        return _EMPTY
    is_wait = np.array(["wait" in str(t).lower() for t in types[rows]], dtype=bool)
    return rows[is_wait] if wait else rows[~is_wait]


def _extra_int(table: ActivityTable, column: str, rows: np.ndarray) -> np.ndarray:
    values = table.extra.get(column)
    if values is None:
        return np.full(len(rows), NO_ID, dtype=np.int64)
    return np.array([v if isinstance(v, (int, np.integer)) else NO_ID for v in values[rows]],
                    dtype=np.int64)


BLOCKED_WAIT_NS = 1_000  # a wait task that held its stream longer than this waited for a record
RELEASE_NS = 10_000  # a blocked wait ends at most this long after the record that released it


def event_wait_edges(table: ActivityTable, timeline: Timeline) -> tuple[EdgeSet, int, int]:
    """Stream waits recorded as device tasks that name no event (Ascend ``EVENT_WAIT`` and
    ``EVENT_RECORD`` tasks): the work before a record on stream A -> the first op after a wait
    on stream B.

    A wait task that blocked (held its stream longer than :data:`BLOCKED_WAIT_NS`) ended when
    the event it waited for was recorded, so it is matched with the record task on another
    stream of its rank that ended last at or before the wait's end, no more than
    :data:`RELEASE_NS` before it (in the shared Ascend traces 0.4 us before). A wait that did
    not block constrained nothing in the trace and which record it waited for is not recorded:
    it gets no edge. Returns the edges, the blocked waits with no such record, and the waits
    that did not block. Kineto and Nsight waits, which name their record, are
    :func:`stream_wait_edges`'s."""
    if "wait_on_event_corr" in table.extra:
        return EdgeSet.of(_EMPTY, _EMPTY), 0, 0
    waits, records = _sync_rows(table, wait=True), _sync_rows(table, wait=False)
    blocked = waits[(table.end_ns[waits] - table.start_ns[waits]) > BLOCKED_WAIT_NS]
    by_start, by_end = _per_stream(timeline, timeline.start_ns), _per_stream(timeline, timeline.end_ns)
    src, dst, unmatched = [], [], 0
    for w in blocked.tolist():
        rank, stream, end = int(table.rank[w]), int(table.stream[w]), int(table.end_ns[w])
        mine = records[(table.rank[records] == rank) & (table.stream[records] != stream)
                       & (table.end_ns[records] <= end) & (table.end_ns[records] >= end - RELEASE_NS)]
        if not len(mine):
            unmatched += 1
            continue
        record = int(mine[np.argmax(table.end_ns[mine])])
        ended = by_end.get((rank, int(table.stream[record])))  # the record's stream: its work before it
        after = by_start.get((rank, stream))  # the wait's stream: its work after it
        awaited = -1 if ended is None else _last(*ended, int(table.start_ns[record]), inclusive=True)
        waiter = -1 if after is None else _first(*after, end, inclusive=True)
        if awaited >= 0 and waiter >= 0:
            src.append(2 * awaited + 1)
            dst.append(2 * waiter)
    return EdgeSet.of(src, dst), unmatched, len(waits) - len(blocked)


def stream_wait_edges(table: ActivityTable, timeline: Timeline, launch_of: np.ndarray):
    """Event record on stream A -> first op on stream B launched after B's wait on that event.

    From Kineto ``cuda_sync`` "Stream Wait Event" rows: ``wait_on_event_corr`` names the
    ``cudaEventRecord`` call (the record covers the ops launched on ``wait_on_stream`` before
    it); the row's own stream is the waiting one. Returns edges and the count of rows whose
    record or streams were not found.
    """
    start, _ = _times(timeline)
    rows = _sync_rows(table, wait=True)
    if not len(rows) or "wait_on_event_corr" not in table.extra:  # waits naming no record: event_wait_edges
        return EdgeSet.of(_EMPTY, _EMPTY), 0
    lookup = _runtime_index(table, timeline)
    lanes = _DeviceLanes(timeline, launch_of, start)
    origin = int(timeline.start_ns.min())
    rank = table.rank[rows].astype(np.int64)
    record = lookup(rank, _extra_int(table, "wait_on_event_corr", rows))
    call = lookup(rank, table.correlation[rows])
    on_stream = _extra_int(table, "wait_on_stream", rows)
    src, dst, bad = [], [], 0
    for i, row in enumerate(rows.tolist()):
        t_wait = start[call[i]] if call[i] >= 0 else float(table.start_ns[row] - origin)
        awaited = (lanes.last_before(int(rank[i]), int(on_stream[i]), start[record[i]])
                   if record[i] >= 0 else -1)
        waiter = lanes.first_after(int(rank[i]), int(table.stream[row]), t_wait)
        if record[i] < 0:
            bad += 1
            continue
        if awaited < 0 or on_stream[i] == table.stream[row]:
            continue  # nothing launched on the recorded stream before the record: a no-op wait
        if waiter >= 0:
            src.append(2 * awaited + 1)
            dst.append(2 * waiter)
    return EdgeSet.of(src, dst), bad


def collective_edges(timeline: Timeline, own: np.ndarray) -> EdgeSet:
    """The n-th communication kernel of one name on each rank ends together.

    Rank ``i``'s kernel ends at ``max_j start_j + w_i`` with ``w_i = end_i - max_j start_j``
    (its work after the last rank arrived, at least 0): edges from every peer's start.
    """
    start, end = _times(timeline)
    comm = np.flatnonzero(timeline.compute & (timeline.category == "communication"))
    ranks = np.array([timeline.lane_keys[lane][0] for lane in timeline.lane[comm]], dtype=np.int64)
    if len(np.unique(ranks)) < 2:
        return EdgeSet.of(_EMPTY, _EMPTY)
    _, name_code = np.unique(timeline.name[comm].astype(str), return_inverse=True)
    order = np.lexsort((start[comm], ranks, name_code))
    comm, ranks, name_code = comm[order], ranks[order], name_code[order]
    group_key = name_code.astype(np.int64) * (1 << 32) + ranks
    first = np.r_[True, group_key[1:] != group_key[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(comm)), 0))
    ordinal = np.arange(len(comm)) - group_start
    match_key = name_code.astype(np.int64) * (1 << 32) + ordinal
    src, dst, lat = [], [], []
    by_match: dict[int, list[int]] = {}
    for node, key in zip(comm.tolist(), match_key.tolist()):
        by_match.setdefault(key, []).append(node)
    for members in by_match.values():
        if len(members) < 2:
            continue
        arrive = max(start[m] for m in members)
        for i in members:
            work = max(0.0, end[i] - arrive)
            own[i] = work
            for j in members:
                if j != i:
                    src.append(2 * j)
                    dst.append(2 * i + 1)
                    lat.append(end[i] - arrive)
    return EdgeSet.of(src, dst, lat)
