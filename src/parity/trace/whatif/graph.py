"""A dependency graph of a trace's activities, for replaying the schedule with scaled work.

Each node (activity) has two points, its start (``2i``) and its end (``2i + 1``). An edge says a
point cannot come before another point plus a latency. The replay (:mod:`.replay`) computes

    start_i = max(in-edges into start_i) + slack_i
    end_i   = max(start_i + own_i, in-edges into end_i)

where ``slack_i`` is the part of the observed start no edge explains (kept as a fixed delay:
scheduling, host work between calls, a latency we do not model) and ``own_i`` the node's own
duration (scaled for the chosen work; 0 for a host call that only waits). Because every edge
and slack is measured on the trace, a replay with nothing scaled reproduces every observed time.

Edges, by kind (:class:`EdgeKind`): order on a lane; host launch to device op (correlation ids,
latency = the launch latency observed on kernels that waited for their launch); event record to
stream wait across streams (Kineto ``cuda_sync`` "Stream Wait Event" rows; Ascend wait tasks that
blocked, matched with the record that released them); device work to the end of a blocking host
synchronise; synchronous copies; the n-th collective of the same name on each rank; and, where
the trace records no cross-thread events, host threads joining at step boundaries. Kinds marked
*assumed* are reported as assumptions.

Edges that point backward in observed time (clock skew, a misattributed target) are dropped and
counted. All edges go forward, so observed time order is a topological order; ties are resolved
by a small sort within each tied instant.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from parity.trace.table import ActivityTable
from parity.trace.whatif.graph_edges import (
    EdgeSet,
    collective_edges,
    event_wait_edges,
    lane_edges,
    launch_edges,
    launch_map,
    stream_wait_edges,
)
from parity.trace.whatif.host_edges import (
    barrier_edges,
    blocked_call_edges,
    blocking_call_edges,
    host_sync_edges,
    wake_edges,
)
from parity.trace.whatif.timeline import Timeline
from parity.trace.whatif.waits import Waits, graph_waits, incoming_max

log = logging.getLogger(__name__)


class EdgeKind(IntEnum):
    LANE = 0  # recorded: order on a stream or thread
    LAUNCH = 1  # recorded: runtime call -> its device op (correlation id)
    STREAM_WAIT = 2  # recorded: event record on one stream -> first op after the wait on another
    HOST_SYNC = 3  # recorded: device work -> end of a blocking synchronize call
    HOST_SYNC_ALL = 4  # assumed: a synchronize with no sync record waits on every stream
    BLOCKING_COPY = 5  # inferred: a copy call that outlived its copy was waiting for it
    COLLECTIVE = 6  # matched: n-th collective of one name on each rank ends together
    STEP_BARRIER = 7  # assumed: host threads join at step boundaries
    BLOCKED_CALL = 8  # inferred: a long host call returned right after a device op ended
    THREAD_WAKE = 9  # inferred: a thread resumed right after another thread's activity ended
    EVENT_WAIT = 10  # inferred: a wait task that blocked -> the record that ended just before it


ASSUMED = {
    EdgeKind.HOST_SYNC_ALL: "synchronize calls without a sync record were taken to wait on every "
                            "stream of their rank",
    EdgeKind.BLOCKING_COPY: "copy calls that ended after their copy were taken as waiting for it "
                            "(synchronous or pageable-memory copies)",
    EdgeKind.COLLECTIVE: "the n-th collective kernel of one name on each rank was taken as one "
                         "collective, ending when its last rank has arrived plus its own work "
                         "(ranks' clocks taken as aligned)",
    EdgeKind.STEP_BARRIER: "no cross-thread events were recorded; host threads were taken to join "
                           "at every step boundary",
    EdgeKind.BLOCKED_CALL: "host calls far longer than usual that returned right after a device op "
                           "ended were taken as waiting for it (launch queue full, implicit sync)",
    EdgeKind.THREAD_WAKE: "a host thread resuming after a long gap right after another thread's "
                          "activity ended was taken as waiting for it",
    EdgeKind.EVENT_WAIT: "stream wait tasks naming no event that blocked were taken to wait for the "
                         "event recorded on another stream just before they ended",
}


HOST_WALL_TIME = ("host ops are timed on the wall clock of their thread: time a thread spent "
                  "preempted (other processes on its core) counts as its op's own work and "
                  "scales with it, and the preemption the faster step would meet is not in the "
                  "trace; profile on idle cores")


@dataclass(frozen=True, kw_only=True)
class DependencyGraph:
    """Edges between node points, per-node slack and own duration, and a topological order.

    Times are float ns relative to ``origin_ns``. ``edge_counts`` and ``dropped`` count edges by
    kind name; ``launch_latency_ns`` is the modelled launch latency (device mode);
    ``unresolved`` counts sync records whose event or stream could not be found.
    """

    timeline: Timeline
    origin_ns: int
    src: np.ndarray  # int64 point ids
    dst: np.ndarray
    lat: np.ndarray  # float64 ns
    kind: np.ndarray  # int8 EdgeKind
    slack: np.ndarray  # float64 ns, per node
    own: np.ndarray  # float64 ns, per node (observed own duration)
    order: np.ndarray  # int64 points in topological order
    launch_latency_ns: float | None
    edge_counts: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    unresolved: int = 0
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # replay's loop plan

    def assumptions(self) -> list[str]:
        """Human sentences naming every edge the graph had to assume or infer."""
        out = []
        for kind, text in ASSUMED.items():
            count = self.edge_counts.get(kind.name.lower(), 0)
            if count:
                out.append(f"{text} ({count} edge{'' if count == 1 else 's'})")
        if self.launch_latency_ns is not None:
            out.append(f"a device op starts no earlier than its launch call + "
                       f"{self.launch_latency_ns / 1e3:.2f} us (median latency of ops that waited "
                       "for their launch)")
        no_launch = self.edge_counts.get("device_ops_without_launch", 0)
        if no_launch:
            out.append(f"{no_launch} device ops have no launch record; only stream order and "
                       "their observed delays place them")
        loose = self.edge_counts.get("event_waits_not_blocking", 0)
        if loose:
            out.append(f"{loose} stream wait tasks naming no event did not block and were given no edge "
                       "(a what-if that speeds up their stream may let it run ahead of the event)")
        unmatched = self.edge_counts.get("event_waits_unmatched", 0)
        if unmatched:
            out.append(f"{unmatched} stream wait tasks that blocked ended with no record on another stream "
                       "just before them and were given no edge")
        if self.unresolved:
            out.append(f"{self.unresolved} sync records named an event record not in the trace "
                       "and were ignored")
        dropped = sum(self.dropped.values())
        if dropped:
            detail = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items()) if v)
            out.append(f"{dropped} edges pointed backward in observed time and were dropped "
                       f"({detail})")
        if self.timeline.mode == "host":
            out.append(HOST_WALL_TIME)
        out.append("gaps no edge explains are kept as fixed delays (k = 1 reproduces the trace)")
        return out

    def waits(self, start_ns: int, end_ns: int, scaled: np.ndarray,
              replayed: tuple[np.ndarray, np.ndarray] | None = None) -> Waits:
        """What held the scaled work's saving back in ``[start_ns, end_ns)``
        (:func:`parity.trace.whatif.waits.graph_waits`)."""
        return graph_waits(self, start_ns, end_ns, scaled, lane_kind=EdgeKind.LANE, launch_kind=EdgeKind.LAUNCH,
                           replayed=replayed)

    def to_dict(self) -> dict:
        return {"nodes": len(self.timeline), "edges": dict(self.edge_counts),
                "dropped": dict(self.dropped), "unresolved": self.unresolved,
                "launch_latency_ns": self.launch_latency_ns}


def build_graph(table: ActivityTable, timeline: Timeline, *,
                step_boundaries: dict[tuple[int, int, int], list[int]] | None = None
                ) -> DependencyGraph:
    """The dependency graph of ``timeline`` (built from ``table``).

    ``step_boundaries`` maps a marker lane key to its step start times (ns); used for the
    step-barrier edges in host mode when the trace has several threads.
    """
    n = len(timeline)
    origin = int(timeline.start_ns.min()) if n else 0
    start = (timeline.start_ns - origin).astype(np.float64)
    end = (timeline.end_ns - origin).astype(np.float64)
    points = np.empty(2 * n, dtype=np.float64)
    points[0::2], points[1::2] = start, end
    own = end - start
    sets: list[tuple[EdgeKind, EdgeSet]] = [(EdgeKind.LANE, lane_edges(timeline))]
    latency = None
    unresolved = 0
    extra_counts: dict[str, int] = {}
    if timeline.mode == "device":
        launch_of = launch_map(table, timeline)
        waits, bad = stream_wait_edges(table, timeline, launch_of)
        events, unmatched, loose = event_wait_edges(table, timeline)
        unresolved += bad
        extra_counts["event_waits_unmatched"], extra_counts["event_waits_not_blocking"] = unmatched, loose
        waiting = np.zeros(n, dtype=bool)
        waiting[waits.dst // 2] = True
        waiting[events.dst // 2] = True
        launch, latency, without = launch_edges(timeline, launch_of, waiting)
        extra_counts["device_ops_without_launch"] = without
        sets.append((EdgeKind.LAUNCH, launch))
        sets.append((EdgeKind.STREAM_WAIT, waits))
        sets.append((EdgeKind.EVENT_WAIT, events))
        syncs, assumed_syncs, bad = host_sync_edges(table, timeline, launch_of, own)
        unresolved += bad
        sets.append((EdgeKind.HOST_SYNC, syncs))
        sets.append((EdgeKind.HOST_SYNC_ALL, assumed_syncs))
        sets.append((EdgeKind.BLOCKING_COPY, blocking_call_edges(table, timeline, own)))
        sets.append((EdgeKind.COLLECTIVE, collective_edges(timeline, own)))
        sets.append((EdgeKind.BLOCKED_CALL, blocked_call_edges(timeline, own)))
    sets.append((EdgeKind.THREAD_WAKE, wake_edges(timeline)))
    if timeline.mode == "host" and step_boundaries:
        sets.append((EdgeKind.STEP_BARRIER, barrier_edges(timeline, step_boundaries)))
    src, dst, lat, kind, counts, dropped = _assemble(sets, points)
    counts.update(extra_counts)
    slack = _slack(src, dst, lat, points, n)
    own = _settle_own(src, dst, lat, points, own, n)
    order = topological_order(points, src, dst, own)
    return DependencyGraph(timeline=timeline, origin_ns=origin, src=src, dst=dst, lat=lat,
                           kind=kind, slack=slack, own=own, order=order,
                           launch_latency_ns=latency, edge_counts=counts, dropped=dropped,
                           unresolved=unresolved)


def _assemble(sets, points):
    src_parts, dst_parts, lat_parts, kind_parts = [], [], [], []
    counts: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for kind, edges in sets:
        s, d, lat = edges.src, edges.dst, edges.lat
        forward = (points[s] <= points[d]) & (points[s] + lat <= points[d] + 1e-6)
        counts[kind.name.lower()] = int(forward.sum())
        dropped[kind.name.lower()] = int((~forward).sum())
        src_parts.append(s[forward])
        dst_parts.append(d[forward])
        lat_parts.append(lat[forward])
        kind_parts.append(np.full(int(forward.sum()), int(kind), dtype=np.int8))
    return (np.concatenate(src_parts).astype(np.int64), np.concatenate(dst_parts).astype(np.int64),
            np.concatenate(lat_parts).astype(np.float64), np.concatenate(kind_parts),
            counts, dropped)


def _slack(src, dst, lat, points, n):
    """Observed start minus the latest start constraint (the start itself when there is none)."""
    into_start = dst % 2 == 0
    best = incoming_max(src, dst, lat, points, 2 * n, into_start)[0::2]
    starts = points[0::2]
    return np.where(np.isfinite(best), starts - best, starts)


def _settle_own(src, dst, lat, points, own, n):
    """Own durations that reproduce every observed end: ``end = max(start + own, in-edges)``."""
    into_end = dst % 2 == 1
    best = incoming_max(src, dst, lat, points, 2 * n, into_end)[1::2]
    starts, ends = points[0::2], points[1::2]
    reproduced = np.maximum(starts + own, best)
    wrong = np.abs(reproduced - ends) > 1e-6
    return np.where(wrong, ends - starts, own)


def topological_order(points: np.ndarray, src: np.ndarray, dst: np.ndarray,
                      own: np.ndarray) -> np.ndarray:
    """Points in an order where every edge (and start -> end of a node) goes forward.

    Sort by observed time, ends of non-empty nodes before starts before ends of empty nodes at
    equal times; then repair any tied instant where an edge still points backward with a
    small Kahn sort of that instant's points.
    """
    n_points = len(points)
    cls = np.ones(n_points, dtype=np.int8)
    cls[1::2] = np.where(own > 0, 0, 2)
    order = np.lexsort((cls, points))
    pos = np.empty(n_points, dtype=np.int64)
    pos[order] = np.arange(n_points)
    nodes = np.arange(n_points // 2)
    all_src = np.concatenate([src, 2 * nodes])
    all_dst = np.concatenate([dst, 2 * nodes + 1])
    bad = pos[all_src] >= pos[all_dst]
    if not bad.any():
        return order
    tied_times = np.unique(points[all_dst[bad]])
    log.debug("repairing %d tied instants in the topological order", len(tied_times))
    in_tie = np.isin(points, tied_times)
    local = in_tie[all_src] & in_tie[all_dst] & (points[all_src] == points[all_dst])
    edges_by_time: dict[float, list[tuple[int, int]]] = {}
    for s, d in zip(all_src[local].tolist(), all_dst[local].tolist()):
        edges_by_time.setdefault(points[s], []).append((s, d))
    order = order.copy()
    sorted_times = points[order]
    for t, edges in edges_by_time.items():
        lo = int(np.searchsorted(sorted_times, t, side="left"))
        hi = int(np.searchsorted(sorted_times, t, side="right"))
        order[lo:hi] = _kahn(order[lo:hi].tolist(), edges, pos)
    return order


def _kahn(members: list[int], edges: list[tuple[int, int]], pos: np.ndarray) -> list[int]:
    indegree = {m: 0 for m in members}
    succ: dict[int, list[int]] = {m: [] for m in members}
    for s, d in edges:
        succ[s].append(d)
        indegree[d] += 1
    heap = [(int(pos[m]), m) for m in members if indegree[m] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, m = heapq.heappop(heap)
        out.append(m)
        for d in succ[m]:
            indegree[d] -= 1
            if indegree[d] == 0:
                heapq.heappush(heap, (int(pos[d]), d))
    if len(out) != len(members):  # a zero-latency cycle: keep time order for the rest
        rest = sorted((m for m in members if m not in set(out)), key=lambda m: pos[m])
        out.extend(rest)
    return out

