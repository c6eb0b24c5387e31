"""Replay: recompute the schedule by earliest start with the chosen work scaled.

The graph (:mod:`.graph`) gives, for each point, its incoming edges; the replay visits points in
topological order and sets

    start_i = max_e (t_src(e) + lat_e) + slack_i          (or slack_i alone with no edge)
    end_i   = max(start_i + own_i / k_i, max_e (t_src(e) + lat_e))

with ``k_i`` the node's speed factor. With every ``k = 1`` each observed time comes back (up to
float rounding), which :func:`replay` checks. One pass costs O(nodes + edges) in a tight loop
over plain Python lists: a few seconds per million activities (the first pass also
builds the loop's plan, reused by later passes on the same graph).

The step after scaling: with step markers, each step boundary moves with the first activity of
the marker thread at or after it (or the last one before it, for the final boundary); without
markers, the window moves with the first start and the last end of the work in it (device
activities in device mode), and only work that starts inside the window is scaled
(:func:`in_window`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from parity.metrics.whatif import speedup
from parity.model.errors import ParityError
from parity.trace.whatif.graph import DependencyGraph
from parity.trace.whatif.selection import Window


@dataclass(frozen=True, kw_only=True)
class Replay:
    """A replayed step (ns per step) and the k = 1 check."""

    step_ns: float
    new_step_ns: float
    speedup: float
    new_steps_ns: tuple[float, ...]
    reproduction_error: float  # |replayed with k = 1 - measured| / measured
    times: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False, repr=False)  # (start, end)

    def to_dict(self) -> dict:
        return {"step_ns": self.step_ns, "new_step_ns": self.new_step_ns, "speedup": self.speedup,
                "new_steps_ns": list(self.new_steps_ns),
                "reproduction_error": self.reproduction_error}


def _plan(graph: DependencyGraph) -> tuple[list[int], list[tuple], list[float]]:
    """The loop's inputs that do not depend on the factors, built once per graph: the points
    in topological order, each point's incoming ``(source point, latency)`` pairs, the slacks."""
    cached = graph.cache.get("plan")
    if cached is None:
        incoming: list[list] = [[] for _ in range(2 * len(graph.timeline))]
        for s, d, lat in zip(graph.src.tolist(), graph.dst.tolist(), graph.lat.tolist()):
            incoming[d].append((s, lat))
        cached = (graph.order.tolist(), incoming, graph.slack.tolist())
        graph.cache["plan"] = cached
    return cached


def schedule(graph: DependencyGraph, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """New ``(start, end)`` of every node, float ns relative to ``graph.origin_ns``."""
    n = len(graph.timeline)
    if len(factors) != n:
        raise ValueError(f"{len(factors)} factors for {n} nodes")
    with np.errstate(divide="ignore", invalid="ignore"):
        own = np.where(graph.timeline.compute, graph.own / factors, graph.own)
    own = np.where(np.isfinite(own), own, 0.0).tolist()
    order, incoming, slack = _plan(graph)
    t = [0.0] * (2 * n)
    neg_inf = -math.inf
    for p in order:
        i = p >> 1
        if p & 1:
            v = t[p - 1] + own[i]
            for s, lat in incoming[p]:
                w = t[s] + lat
                if w > v:  # noqa: PLR1730 - a compare is faster than max() in this loop
                    v = w
        else:
            v = neg_inf
            for s, lat in incoming[p]:
                w = t[s] + lat
                if w > v:  # noqa: PLR1730 - a compare is faster than max() in this loop
                    v = w
            v = (0.0 if v == neg_inf else v) + slack[i]
        t[p] = v
    times = np.array(t, dtype=np.float64)
    return times[0::2], times[1::2]


def step_lengths(graph: DependencyGraph, window: Window, start: np.ndarray, end: np.ndarray
                  ) -> np.ndarray:
    """Step durations (ns) of a schedule (new start/end arrays from :func:`schedule`) over
    ``window``'s steps."""
    tl = graph.timeline
    origin = graph.origin_ns
    obs_start = (tl.start_ns - origin).astype(np.float64)
    obs_end = (tl.end_ns - origin).astype(np.float64)
    marker = window.marker_lane
    if window.boundaries_ns and marker is not None and marker in tl.lane_keys:
        lane = tl.lane_keys.index(marker)
        nodes = np.flatnonzero(tl.lane == lane)
        nodes = nodes[np.argsort(obs_start[nodes], kind="stable")]
        moved = []
        for b in window.boundaries_ns:
            rel = float(b - origin)
            at = int(np.searchsorted(obs_start[nodes], rel, side="left"))
            if at < len(nodes):
                node = nodes[at]
                moved.append(rel + start[node] - obs_start[node])
            else:
                moved.append(_after_last(graph, lane, rel, obs_end, end))
        return np.diff(np.array(moved))
    lo, hi = float(window.start_ns - origin), float(window.end_ns - origin)
    # the window is the work's (device time in device mode): a host call inside it (a polling
    # loop whose gaps no edge explains) neither starts nor ends it
    inside = (obs_start >= lo) & (obs_start < hi) & tl.compute
    if not inside.any():
        raise ParityError("no activity starts inside the window; choose a wider window")
    shift_lo = start[inside].min() - obs_start[inside].min()
    shift_hi = end[inside].max() - obs_end[inside].max()
    return np.array([(hi + shift_hi - (lo + shift_lo)) / window.n_steps] * window.n_steps)


def _after_last(graph: DependencyGraph, lane: int, rel: float, obs_end: np.ndarray,
                end: np.ndarray) -> float:
    """A boundary after the marker thread's last activity: it follows that activity's end, or,
    when threads join at step boundaries, the latest end of every thread of the rank."""
    tl = graph.timeline
    lanes = [lane]
    if graph.edge_counts.get("step_barrier", 0):
        rank = tl.lane_keys[lane][0]
        lanes = [i for i, key in enumerate(tl.lane_keys) if key[0] == rank]
    best_new, best_obs = -np.inf, -np.inf
    for i in lanes:
        mine = np.flatnonzero((tl.lane == i) & (obs_end <= rel))
        if len(mine):
            best_new = max(best_new, float(end[mine].max()))
            best_obs = max(best_obs, float(obs_end[mine].max()))
    return rel + best_new - best_obs


def replay(graph: DependencyGraph, window: Window, factors: np.ndarray,
           baseline: np.ndarray | None = None) -> Replay:
    """Replay with ``factors`` (per node speed factors); ``baseline`` is the k = 1 step lengths
    if already known (saves a pass), else computed here."""
    if baseline is None:
        baseline = baseline_steps(graph, window)
    measured = window.length_ns / window.n_steps
    times = schedule(graph, in_window(graph, window, factors))
    new_steps = step_lengths(graph, window, *times)
    new = float(np.sum(new_steps)) / window.n_steps
    error = abs(float(np.sum(baseline)) / window.n_steps - measured) / measured
    return Replay(step_ns=measured, new_step_ns=new, speedup=speedup(measured, new),
                  new_steps_ns=tuple(float(v) for v in new_steps), reproduction_error=error, times=times)


def in_window(graph: DependencyGraph, window: Window, factors: np.ndarray) -> np.ndarray:
    """``factors`` for the work that starts inside the window, 1 for the rest: the what-if
    makes the window's work faster, and work before it (a warm-up the window's first step
    waited behind) runs as measured, so the window cannot start earlier than measured and grow
    longer as its own work gets faster."""
    tl = graph.timeline
    inside = (tl.start_ns >= window.start_ns) & (tl.start_ns < window.end_ns)
    return np.where(inside, factors, 1.0)


def baseline_steps(graph: DependencyGraph, window: Window) -> np.ndarray:
    """Step lengths of the replay with nothing scaled (should equal the measured steps)."""
    return step_lengths(graph, window, *schedule(graph, np.ones(len(graph.timeline))))
