"""First-order what-if: the critical stream saves ``(1 - 1/k)·T_c``, nothing else moves.

docs/definitions.md (What-if): "the step shrinks by ``(1 - 1/k)·T_c``, where ``T_c`` is category c's time on
the critical (busiest) stream", overlap and idle held fixed. The critical lane is the compute
lane with the largest busy time (union of its intervals) inside the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.metrics.whatif import first_order_step_multi, speedup
from parity.trace.intervals import clip_intervals, grouped_union_lengths, union_length
from parity.trace.whatif.selection import Scale, Window
from parity.trace.whatif.timeline import Timeline


@dataclass(frozen=True, kw_only=True)
class FirstOrder:
    """First-order prediction. Times in ns; ``step_ns`` is per step (window / steps)."""

    step_ns: float
    new_step_ns: float
    speedup: float
    critical_lane: str
    critical_busy_ns: int
    category_ns: dict[str, int]  # scale label -> T_c on the critical lane in the window

    def to_dict(self) -> dict:
        return {"step_ns": self.step_ns, "new_step_ns": self.new_step_ns, "speedup": self.speedup,
                "critical_lane": self.critical_lane, "critical_busy_ns": self.critical_busy_ns,
                "category_ns": dict(self.category_ns)}


def lane_busy_ns(timeline: Timeline, window: Window) -> np.ndarray:
    """Busy time of every lane in the window, ns (union of its compute nodes; 0 for host lanes)."""
    mine = timeline.compute
    s, e = timeline.start_ns[mine], timeline.end_ns[mine]
    lo, hi = np.maximum(s, window.start_ns), np.minimum(e, window.end_ns)
    keep = hi > lo
    return grouped_union_lengths(timeline.lane[mine][keep], lo[keep], hi[keep],
                                 len(timeline.lane_keys))


def critical_lane(timeline: Timeline, window: Window) -> int:
    """Index of the busiest compute lane in the window (the lowest index on a tie)."""
    return int(np.argmax(lane_busy_ns(timeline, window)))


def selection_time_ns(timeline: Timeline, mask: np.ndarray, window: Window, lane: int | None) -> int:
    """Union length of the selected nodes (on one lane, or on all) inside the window, ns."""
    if lane is not None:
        mask = mask & (timeline.lane == lane)
    s, e = clip_intervals(timeline.start_ns[mask], timeline.end_ns[mask], window.start_ns,
                          window.end_ns)
    return union_length(s, e)


def first_order(timeline: Timeline, window: Window, scales: list[Scale]) -> FirstOrder:
    """``T' = T - Σ (1 - 1/k_c)·T_c`` per step, with ``T_c`` on the critical lane.

    ``T`` is the window length over its steps and ``T_c`` the selection's time on the critical
    lane in the window over the same number of steps, so ``k = 1`` gives ``T' = T`` exactly.
    """
    lane = critical_lane(timeline, window)
    busy = lane_busy_ns(timeline, window)
    steps = window.n_steps
    per_scale = {sc.label: selection_time_ns(timeline, sc.work(timeline), window, lane) for sc in scales}
    step = window.length_ns / steps
    new = first_order_step_multi(step, [(per_scale[sc.label] / steps, sc.k) for sc in scales])
    return FirstOrder(step_ns=step, new_step_ns=new, speedup=speedup(step, new),
                      critical_lane=timeline.lane_label(lane), critical_busy_ns=int(busy[lane]),
                      category_ns=per_scale)
