"""Edge builders for what happens on the host side: synchronise calls, blocked calls, threads.

Same conventions as :mod:`.graph_edges`: point ids ``2i``/``2i + 1``, latencies in ns, and a
builder that finds a host call which only waits sets that node's own duration to 0 in ``own``.
"""

from __future__ import annotations

import numpy as np

from parity.trace.table import NO_ID, ActivityTable
from parity.trace.whatif.graph_edges import (
    _EMPTY,
    EdgeSet,
    _DeviceLanes,
    _extra_int,
    _previous_end_on_lane,
    _runtime_index,
    _sync_rows,
    _times,
)
from parity.trace.whatif.timeline import Timeline

BLOCKED_CALL_MIN_NS = 50_000  # a call this long (and 5x its name's median) may be waiting
BLOCKED_CALL_RATIO = 5.0
WAKE_GAP_MIN_NS = 50_000  # a thread idle this long before an activity may have been waiting
WAKE_TOLERANCE_NS = 20_000  # ... on something that ended at most this long before it resumed
WAKE_CHANCE_MAX = 0.05  # ... unless an unrelated end would fall that close this often by chance


def wake_chance(ends_in_gap: np.ndarray, gap_ns: np.ndarray, tolerance_ns: float) -> np.ndarray:
    """Probability that some activity of the other thread ends within ``tolerance_ns`` before a
    moment chosen at random in the gap, with no wait involved:
    ``p = 1 - exp(-n · tolerance / gap)``, the other thread's ends in the gap taken as a Poisson
    process of rate ``n / gap``. The waker itself ends in the gap, so ``n >= 1``, and a gap
    needs ``tolerance / -ln(1 - p)`` ns (about 20x the tolerance at p = 0.05) before a single
    end in it counts as evidence.
    """
    n = np.maximum(np.asarray(ends_in_gap, dtype=np.float64), 1.0)
    gap = np.maximum(np.asarray(gap_ns, dtype=np.float64), 1.0)
    return -np.expm1(-n * float(tolerance_ns) / gap)


def blocked_call_edges(timeline: Timeline, own: np.ndarray, *, tolerance_ns: int = WAKE_TOLERANCE_NS
                       ) -> EdgeSet:
    """A host call that ran unusually long and returned right after a device op ended waited
    for it (inferred): launch-queue back-pressure, implicit synchronisation in an allocator.

    A runtime call qualifies when it lasts at least :data:`BLOCKED_CALL_MIN_NS` and
    :data:`BLOCKED_CALL_RATIO` times the median of calls of its name, has no end edge yet
    (``own`` not already 0), and the latest device op of its rank ending inside the call ends at
    most ``tolerance_ns`` before the call returns.
    """
    start, end = _times(timeline)
    runtime = np.flatnonzero(~timeline.compute)
    device = np.flatnonzero(timeline.compute)
    if not len(runtime) or not len(device):
        return EdgeSet.of(_EMPTY, _EMPTY)
    names = timeline.name[runtime].astype(str)
    unique, inverse = np.unique(names, return_inverse=True)
    dur = end[runtime] - start[runtime]
    median = np.array([np.median(dur[inverse == i]) for i in range(len(unique))])
    long = (dur >= BLOCKED_CALL_MIN_NS) & (dur >= BLOCKED_CALL_RATIO * median[inverse])
    long &= own[runtime] > 0
    calls = runtime[long]
    rank_of = np.array([k[0] for k in timeline.lane_keys], dtype=np.int64)
    span = float(end.max()) + 1.0
    dev_key = rank_of[timeline.lane[device]] * span + end[device]
    order = np.argsort(dev_key, kind="stable")
    dev_key, device = dev_key[order], device[order]
    call_key = rank_of[timeline.lane[calls]] * span + end[calls]
    at = np.searchsorted(dev_key, call_key, side="right") - 1
    ok = at >= 0
    target = device[np.maximum(at, 0)]
    ok &= rank_of[timeline.lane[target]] == rank_of[timeline.lane[calls]]
    ok &= (end[target] > start[calls]) & (end[calls] - end[target] <= tolerance_ns)
    calls, target = calls[ok], target[ok]
    own[calls] = 0.0
    return EdgeSet.of(2 * target + 1, 2 * calls + 1, end[calls] - end[target])


def wake_edges(timeline: Timeline, *, tolerance_ns: int = WAKE_TOLERANCE_NS,
               chance_max: float = WAKE_CHANCE_MAX) -> EdgeSet:
    """A host thread resuming right after another thread's activity ended was waiting for it
    (inferred; the trace records no cross-thread events).

    For each host activity preceded on its thread by a gap of at least
    :data:`WAKE_GAP_MIN_NS`: the latest activity of another thread of the same rank that ended
    at most ``tolerance_ns`` before it starts becomes its predecessor, unless such a match is
    likely by chance (:func:`wake_chance` above ``chance_max``): a thread that ends activities
    every few tens of microseconds has one ending just before almost any moment, so a short
    gap on its neighbour (an interpreter lock handed over, a preempted thread) says nothing
    about a wait, and pinning the neighbour to it would hold a faster replay back.
    """
    start, end = _times(timeline)
    host_lane = np.array([k[1] < 0 for k in timeline.lane_keys], dtype=bool)
    host = np.flatnonzero(host_lane[timeline.lane])
    if len(np.unique(timeline.lane[host])) < 2:
        return EdgeSet.of(_EMPTY, _EMPTY)
    previous_end = _previous_end_on_lane(timeline, end)
    waiting = host[start[host] - previous_end[host] >= WAKE_GAP_MIN_NS]
    rank_of = np.array([k[0] for k in timeline.lane_keys], dtype=np.int64)
    src_parts, dst_parts = [], []
    for lane in np.unique(timeline.lane[waiting]).tolist():
        others = host[(timeline.lane[host] != lane)
                      & (rank_of[timeline.lane[host]] == rank_of[lane])]
        if not len(others):
            continue
        others = others[np.argsort(end[others], kind="stable")]
        mine = waiting[timeline.lane[waiting] == lane]
        at = np.searchsorted(end[others], start[mine], side="right") - 1
        ok = at >= 0
        ok[ok] &= start[mine[ok]] - end[others[at[ok]]] <= tolerance_ns
        gap_ns = start[mine] - previous_end[mine]
        ends_in_gap = at + 1 - np.searchsorted(end[others], previous_end[mine], side="left")
        ok &= wake_chance(ends_in_gap, gap_ns, tolerance_ns) <= chance_max
        src_parts.append(2 * others[at[ok]] + 1)
        dst_parts.append(2 * mine[ok])
    src = np.concatenate(src_parts) if src_parts else _EMPTY
    dst = np.concatenate(dst_parts) if dst_parts else _EMPTY
    return EdgeSet.of(src, dst)


def host_sync_edges(table: ActivityTable, timeline: Timeline, launch_of: np.ndarray,
                    own: np.ndarray):
    """Device work -> end of the host call that waits for it.

    Recorded (``cuda_sync`` rows linked to their runtime call by correlation): context/device
    sync waits on every stream of its rank, stream sync on its stream, event sync on the ops
    launched on ``wait_on_stream`` before the event's record. Calls named ``*Synchronize`` with
    no sync row are assumed to wait on every stream of their rank (recorded semantics for
    ``cudaDeviceSynchronize``). Polling calls (``cudaEventQuery``) never block. A call that
    blocked (its targets ended after it began) gets own duration 0 and latency ``end - latest
    target end``, so it returns when the work does.
    """
    start, end = _times(timeline)
    lookup = _runtime_index(table, timeline)
    lanes = _DeviceLanes(timeline, launch_of, start)
    rows = _sync_rows(table, wait=False)
    pairs: list[tuple[int, int, bool]] = []  # (host call, target, assumed)
    covered: set[int] = set()
    bad = 0
    if len(rows):
        rank = table.rank[rows].astype(np.int64)
        call = lookup(rank, table.correlation[rows])
        record = lookup(rank, _extra_int(table, "wait_on_event_corr", rows))
        on_stream = _extra_int(table, "wait_on_stream", rows)
        types = table.extra["sync_type"][rows]
        for i, row in enumerate(rows.tolist()):
            h = int(call[i])
            if h < 0 or "synchroniz" not in str(timeline.name[h]).lower():
                continue
            covered.add(h)
            kind = str(types[i]).lower()
            r = int(rank[i])
            if "event" in kind:
                if record[i] < 0 or on_stream[i] == NO_ID:
                    bad += 1
                    continue
                targets = [lanes.last_before(r, int(on_stream[i]), start[record[i]])]
            elif "stream" in kind:
                stream = int(table.stream[row]) if table.stream[row] >= 0 else int(on_stream[i])
                targets = [lanes.last_before(r, stream, start[h])]
            else:
                targets = [lanes.last_before(r, s, start[h]) for _, s in lanes.ranks.get(r, [])]
            pairs.extend((h, t, False) for t in targets if t >= 0)
    runtime = np.flatnonzero(~timeline.compute)
    for h in runtime.tolist():
        name = str(timeline.name[h]).lower()
        if "synchroniz" in name and h not in covered:
            r = timeline.lane_keys[timeline.lane[h]][0]
            assumed = "device" not in name and "context" not in name
            pairs.extend((h, lanes.last_before(r, s, start[h]), assumed)
                         for _, s in lanes.ranks.get(r, []))
    pairs = [p for p in pairs if p[1] >= 0]
    return _waiting_edges(pairs, start, end, own, assumed=False), \
        _waiting_edges(pairs, start, end, own, assumed=True), bad


def _waiting_edges(pairs, start, end, own, *, assumed: bool) -> EdgeSet:
    """End edges target -> host call, with the shared return latency of each call."""
    chosen = [(h, t) for h, t, a in pairs if a == assumed]
    if not chosen:
        return EdgeSet.of(_EMPTY, _EMPTY)
    calls = np.array([h for h, _ in chosen], dtype=np.int64)
    targets = np.array([t for _, t in chosen], dtype=np.int64)
    latest = np.full(len(start), -np.inf)
    np.maximum.at(latest, calls, end[targets])
    blocked = latest[calls] > start[calls]
    own[calls[blocked]] = 0.0
    lat = np.where(blocked, end[calls] - latest[calls], 0.0)
    return EdgeSet.of(2 * targets + 1, 2 * calls + 1, lat)


def blocking_call_edges(table: ActivityTable, timeline: Timeline, own: np.ndarray) -> EdgeSet:
    """A copy/set call whose copy ends while the call is still running was waiting for it.

    ``cudaMemcpy`` always does; ``cudaMemcpyAsync`` does too when the host side is pageable
    memory. The call returns when its copy ends, so it gets an end edge from the copy.
    """
    start, end = _times(timeline)
    device = np.flatnonzero(timeline.compute)
    lookup = _runtime_index(table, timeline)
    launcher = lookup(table.rank[timeline.row[device]], table.correlation[timeline.row[device]])
    has = launcher >= 0
    dev, rt = device[has], launcher[has]
    names = [str(timeline.name[h]).lower() for h in rt.tolist()]
    sync_call = np.array([("memcpy" in s or "memset" in s) for s in names], dtype=bool)
    inside = (end[dev] <= end[rt]) & (end[dev] > start[rt])
    pick = sync_call & inside
    dev, rt = dev[pick], rt[pick]
    own[rt] = 0.0
    return EdgeSet.of(2 * dev + 1, 2 * rt + 1, end[rt] - end[dev])


def barrier_edges(timeline: Timeline, boundaries: dict[tuple[int, int, int], list[int]]) -> EdgeSet:
    """Host threads join at each step boundary of their rank's marker thread (assumed).

    For each boundary ``b`` and each other thread ``L``: the last node of ``L`` starting before
    ``b`` -> the marker thread's first node at or after ``b``, and the marker thread's last node
    before ``b`` -> ``L``'s first node at or after ``b``.
    """
    src: list[int] = []
    dst: list[int] = []
    keys = timeline.lane_keys
    lane_nodes = {}
    for lane in range(len(keys)):
        nodes = np.flatnonzero(timeline.lane == lane)
        nodes = nodes[np.argsort(timeline.start_ns[nodes], kind="stable")]
        lane_nodes[lane] = (timeline.start_ns[nodes], nodes)
    for marker_key, bounds in boundaries.items():
        if marker_key not in keys:
            continue
        m = keys.index(marker_key)
        b = np.asarray(bounds, dtype=np.int64)
        for lane in range(len(keys)):
            if lane == m or keys[lane][0] != marker_key[0]:
                continue
            for a, z in ((lane, m), (m, lane)):
                a_starts, a_nodes = lane_nodes[a]
                z_starts, z_nodes = lane_nodes[z]
                last = np.searchsorted(a_starts, b, side="left") - 1
                first = np.searchsorted(z_starts, b, side="left")
                ok = (last >= 0) & (first < len(z_nodes))
                src.extend((2 * a_nodes[last[ok]] + 1).tolist())
                dst.extend((2 * z_nodes[first[ok]]).tolist())
    return EdgeSet.of(src, dst)
