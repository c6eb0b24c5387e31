"""What held a scaled work's saving back in a replay: the ops after it that waited for work
elsewhere, and scaled ops that nothing waits for (:class:`Waits`, ``DependencyGraph.waits``).

The bounds of a what-if hold idle gaps fixed: they assume time saved on the scaled work moves
everything after it earlier. Where an op after the scaled work started because something else
let it (its launch on the host, another stream, thread or rank), or nothing waits for the
scaled work's end at all, the saving turns into idle time, which only the replay follows; these
counts say so (``parity.metrics.validity.replay_against_bounds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from parity.trace.whatif.timeline import Timeline


class Graph(Protocol):
    """What the counts read of a ``DependencyGraph``: its nodes, edges (point ids, latencies,
    kinds), the origin of its times and its cache."""

    timeline: Timeline
    src: np.ndarray
    dst: np.ndarray
    lat: np.ndarray
    kind: np.ndarray
    origin_ns: int
    cache: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Waits:
    """Of the ``ops`` compute ops starting in a window after scaled work on their own lane (or
    on another lane, through an edge from its end), how many waited for work elsewhere rather
    than that work: ``launch`` for their
    launch call (the device waits on the host), ``elsewhere`` for another stream, thread or rank;
    and ``unfollowed``: scaled ops that end before the window's work does with nothing waiting
    for their end (no later op on their lane or elsewhere depends on it)
    (``DependencyGraph.waits``)."""

    ops: int
    launch: int
    elsewhere: int
    unfollowed: int = 0

    @property
    def waited(self) -> int:
        return self.launch + self.elsewhere + self.unfollowed

    def to_dict(self) -> dict:
        return {"ops": self.ops, "launch": self.launch, "elsewhere": self.elsewhere, "unfollowed": self.unfollowed}

    def text(self, *, slower: bool = False) -> str:
        """Why a replay saves less (``slower``: loses less) than bounds that hold idle gaps fixed."""
        parts = [f"{self.launch} for their launch on the host" if self.launch else "",
                 f"{self.elsewhere} for another stream, thread or rank" if self.elsewhere else ""]
        said = []
        if self.launch or self.elsewhere:
            said.append(f"{self.launch + self.elsewhere} of {self.ops} ops following the scaled work on their lanes "
                        f"or through its end waited for work elsewhere ({', '.join(p for p in parts if p)})")
        if self.unfollowed:
            said.append(f"{self.unfollowed} scaled op{'s' if self.unfollowed > 1 else ''} ended with nothing later "
                        "waiting for {}".format("their end" if self.unfollowed > 1 else "its end"))
        effect = ("time added before them fills idle time there" if slower
                  else "time saved before them turns into idle time")
        return f"{'; '.join(said)}, so {effect}; the replay follows those waits, the bounds hold idle gaps fixed"



def graph_waits(graph: Graph, start_ns: int, end_ns: int, scaled: np.ndarray, *, lane_kind: int, launch_kind: int,
                replayed: tuple[np.ndarray, np.ndarray] | None = None) -> Waits:
    """Of the compute ops starting in ``[start_ns, end_ns)`` after scaled work (``scaled``, a
    node mask) on their own lane, or on another lane through an edge from its end, those that
    waited for work elsewhere: their latest start constraint is their launch call on the host,
    or (on its lane) an edge from another stream, thread or rank, not the scaled work, as
    measured or, given ``replayed`` (the ``(start, end)`` of a replay's schedule), in the replay
    (work made faster can leave an op waiting for its launch that did not before); and the
    scaled ops that end before the window's work does with no edge from their end. The scaled
    work before such an op finishing sooner cannot start it sooner: the time saved turns into
    idle time there, which bounds that hold idle gaps fixed do not see. Ties count as waits.
    ``lane_kind``, ``launch_kind``: the edge kinds of lane order and of a launch."""
    tl = graph.timeline
    n = len(tl)
    if not n:
        return Waits(ops=0, launch=0, elsewhere=0)
    inside = (tl.start_ns >= start_ns) & (tl.start_ns < end_ns)
    after = inside & tl.compute & after_scaled(tl.lane, tl.start_ns, inside & scaled)
    work = inside & tl.compute
    last_end = tl.end_ns[work].max() if work.any() else end_ns
    unfollowed = inside & scaled & tl.compute & (tl.end_ns < last_end) & ~_end_followed(graph)
    # ops on other lanes that wait for the scaled work's end (an event, a collective's peer)
    from_scaled = (graph.src % 2 == 1) & (graph.dst % 2 == 0) & (inside & scaled)[graph.src // 2]
    beside = np.zeros(n, dtype=bool)
    beside[graph.dst[from_scaled] // 2] = True
    beside &= inside & tl.compute & ~after & ~scaled
    kinds = (lane_kind, launch_kind)
    waited_launch, waited_other = measured_waits(graph, *kinds)
    if replayed is not None:
        launch_then, other_then = waited_at(graph, *replayed, *kinds)
        waited_launch = waited_launch | launch_then
        waited_other = ~waited_launch & (waited_other | other_then)
    # an op beside waits for the scaled work itself unless its launch came later
    for_launch, for_other = (after | beside) & waited_launch, after & waited_other
    return Waits(ops=int(after.sum() + beside.sum()), launch=int(for_launch.sum()), elsewhere=int(for_other.sum()),
                 unfollowed=int(unfollowed.sum()))


def _end_followed(graph: Graph) -> np.ndarray:
    """Per node, whether an edge leaves its end (something waits for it); once per graph."""
    cached = graph.cache.get("end_followed")
    if cached is None:
        cached = np.zeros(len(graph.timeline), dtype=bool)
        ends = graph.src[graph.src % 2 == 1] // 2
        cached[ends] = True
        graph.cache["end_followed"] = cached
    return cached


def measured_waits(graph: Graph, lane_kind: int, launch_kind: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node, whether its observed start was bound by its launch, or else by an edge from
    another lane (not its lane's previous work); computed once per graph."""
    cached = graph.cache.get("waited")
    if cached is None:
        tl = graph.timeline
        cached = waited_at(graph, (tl.start_ns - graph.origin_ns).astype(np.float64),
                           (tl.end_ns - graph.origin_ns).astype(np.float64), lane_kind, launch_kind)
        graph.cache["waited"] = cached
    return cached


def waited_at(graph: Graph, start: np.ndarray, end: np.ndarray, lane_kind: int,
              launch_kind: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`measured_waits` for a schedule's times (ns from ``origin_ns``)."""
    n = len(graph.timeline)
    points = np.empty(2 * n, dtype=np.float64)
    points[0::2], points[1::2] = start, end
    into_start = graph.dst % 2 == 0
    lane = into_start & (graph.kind == lane_kind)
    launch = into_start & (graph.kind == launch_kind)
    other = into_start & ~lane & ~launch
    by_lane = incoming_max(graph.src, graph.dst, graph.lat, points, 2 * n, lane)[0::2]
    by_launch = incoming_max(graph.src, graph.dst, graph.lat, points, 2 * n, launch)[0::2]
    by_other = incoming_max(graph.src, graph.dst, graph.lat, points, 2 * n, other)[0::2]
    latest = np.maximum(by_lane, np.maximum(by_launch, by_other)) - 1e-6  # ties count as waits
    waited_launch = np.isfinite(by_launch) & (by_launch >= latest)
    return waited_launch, ~waited_launch & np.isfinite(by_other) & (by_other >= latest)


def after_scaled(lane: np.ndarray, start: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    """Nodes that start after a ``scaled`` node of their own lane has started (lanes run one
    thing at a time, so after it), in observed order."""
    order = np.lexsort((start, lane))
    lanes, flags = lane[order], scaled[order].astype(np.int64)
    before = np.cumsum(flags) - flags  # scaled nodes earlier in the sorted order
    first = np.r_[True, lanes[1:] != lanes[:-1]]
    base = np.maximum.accumulate(np.where(first, before, 0))  # the count where this lane began
    out = np.zeros(len(lane), dtype=bool)
    out[order] = (before - base) > 0
    return out


def incoming_max(src, dst, lat, points, n_points, mask):
    """Per point, the latest of ``points[src] + lat`` over the edges ``mask`` selects into it."""
    best = np.full(n_points, -np.inf)
    np.maximum.at(best, dst[mask], points[src[mask]] + lat[mask])
    return best
