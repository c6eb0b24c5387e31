"""Replay of the fleet's collective graph: the step time had one rank arrived with the median.

The graph is the one :func:`parity.trace.whatif.graph_edges.collective_edges` builds inside one
job's replay, over the fleet's matched collectives: each rank runs its collectives in arrival
order, and between two it does its own work, ``gap_i(c) = a_i(c) - e_i(prev)`` (its arrival
minus the end of its previous collective; 0 before its first); a collective ends on rank i at
``max_j a_j(c) + w_i(c)`` with ``w_i = e_i - max_j a_j`` (its work after the last member
arrived). Replayed unchanged the graph gives every observed end back exactly; the replay is
used only when it does (within :data:`REPRODUCE_NS`), and only for fleets of at most
:data:`MAX_COLLECTIVES` collectives (one Python step per collective).

The change for rank r: at every collective it arrived late at (lateness > 0), its own work
before it is shorter by that lateness, so it arrives with the median and the others' times
follow through the graph. The step cost is, per step, the observed step time minus the
replayed one (a step's end: the last end of its collectives over every rank), median over the
steps but the first (whose start the replay cannot move).
"""

from __future__ import annotations

import numpy as np

from parity.trace.fleet.figures import grouped_median_ns

REPLAY = "replay"
MAX_COLLECTIVES = 50_000
REPRODUCE_NS = 1_000


class CollectiveGraph:
    """The rank chains and collective joins of matched rows sorted by ``(group, seq, rank)``."""

    def __init__(self, rank_idx: np.ndarray, arrival: np.ndarray, end: np.ndarray, seg: np.ndarray,
                 starts: np.ndarray, ranks: int) -> None:
        self.rank, self.seg, self.ranks = rank_idx, seg, ranks
        last = np.maximum.reduceat(arrival, starts) if len(starts) else arrival
        self.work = end - last[seg]  # w_i: may be < 0 on a clock offset; then the replay is not used
        chain = np.lexsort((end, arrival, rank_idx))  # each rank's ops in arrival order
        prev_end = np.empty(len(arrival), dtype=np.int64)
        same = np.r_[False, rank_idx[chain][1:] == rank_idx[chain][:-1]] if len(chain) else chain.astype(bool)
        prev_end[chain] = np.where(same, np.r_[0, end[chain][:-1]] if len(chain) else 0, arrival[chain])
        self.gap = arrival - prev_end
        self.first = np.zeros(ranks, dtype=np.int64)
        firsts = chain[~same]
        self.first[rank_idx[firsts]] = arrival[firsts]
        # collectives in an order every chain follows: by last arrival, then by end
        ends = np.maximum.reduceat(end, starts) if len(starts) else end
        self.order = np.lexsort((ends, last)) if len(starts) else starts
        bounds = np.r_[starts, len(seg)]
        self.rows = [np.arange(bounds[c], bounds[c + 1]) for c in range(len(starts))]

    def run(self, gap: np.ndarray) -> np.ndarray:
        """The end of every row when each rank's own work before its ops is ``gap``."""
        clock = self.first.copy()
        end = np.empty(len(gap), dtype=np.int64)
        seen = np.zeros(self.ranks, dtype=bool)
        for c in self.order.tolist():
            rows = self.rows[c]
            who = self.rank[rows]
            arrive = np.where(seen[who], clock[who] + gap[rows], clock[who])
            finish = int(arrive.max()) + self.work[rows]
            end[rows] = finish
            clock[who] = finish
            seen[who] = True
        return end


def step_ends(end: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steps (ascending, -1 left out) and each step's end: the last end of its rows."""
    has = step >= 0
    steps, inverse = np.unique(step[has], return_inverse=True)
    out = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(out, inverse, end[has])
    return steps, out


def replay_step_cost_ns(graph: CollectiveGraph, observed_end: np.ndarray, lateness: np.ndarray,
                        step: np.ndarray, rank: int) -> tuple[int, int] | None:
    """Median and mean (floor) over steps (but the first) of ``(E_s - E_{s-1}) - (E'_s -
    E'_{s-1})``, ``E`` the observed and ``E'`` the replayed step ends with rank ``rank`` (an
    index into the graph's ranks) arriving with the median (module docstring); None with fewer
    than two steps."""
    mine = graph.rank == rank
    gap = graph.gap - np.where(mine & (lateness > 0), np.minimum(lateness, graph.gap), 0)
    replayed = graph.run(gap)
    steps, before = step_ends(observed_end, step)
    _, after = step_ends(replayed, step)
    if len(steps) < 2:
        return None
    saving = np.diff(before) - np.diff(after)
    median = int(grouped_median_ns(np.zeros(len(saving), dtype=np.int64), saving, 1)[0])
    return median, int(saving.sum()) // len(saving)


def reproduces(graph: CollectiveGraph, observed_end: np.ndarray) -> bool:
    """Whether the unchanged replay gives every observed end back within :data:`REPRODUCE_NS`."""
    if (graph.work < 0).any():
        return False
    return bool(np.abs(graph.run(graph.gap) - observed_end).max(initial=0) <= REPRODUCE_NS)
