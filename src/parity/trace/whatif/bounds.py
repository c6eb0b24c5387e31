"""Bounds: the lowest and highest speedups the trace is consistent with.

For each scaled selection ``c`` inside the window (all compute lanes together):

- union time ``U_c = |C|``, where ``C`` is the union of ``c``'s intervals on every lane (a
  container, a node holding others of its lane, counts through them; a wait for a peer rank
  is not ``c``'s work: :meth:`Scale.work`);
- exposed time ``E_c = |C \\ N| = |C ∪ N| - |N|``, where ``N`` is the union of all other compute
  work (every lane, every category but ``c``): the time ``c`` runs while nothing else does.

Low bound: only exposed time saves (``(1 - 1/k)·E_c``); time overlapped by other busy lanes may
save nothing, because the other lane still needs it. High bound: every instant some of ``c``
runs shrinks (``(1 - 1/k)·U_c``), as if all of it sat on the critical path. Both hold gaps and
unscaled work fixed (the same proviso as the first order); see
:func:`parity.metrics.whatif.speedup_bounds` for the formulas. The first-order figure usually lies
between them; it falls below ``L`` when the critical (busiest) lane is not where the exposed
scaled work runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.metrics.whatif import speedup_bounds
from parity.trace.intervals import clip_intervals, union_length
from parity.trace.whatif.selection import Scale, Window
from parity.trace.whatif.timeline import Timeline


@dataclass(frozen=True, kw_only=True)
class Bounds:
    """Speedup bounds and the per-selection times (ns, whole window) they come from."""

    low: float
    high: float
    exposed_ns: dict[str, int]
    union_ns: dict[str, int]

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "exposed_ns": dict(self.exposed_ns),
                "union_ns": dict(self.union_ns)}


def _clipped(timeline: Timeline, mask: np.ndarray, window: Window) -> tuple[np.ndarray, np.ndarray]:
    return clip_intervals(timeline.start_ns[mask], timeline.end_ns[mask], window.start_ns,
                          window.end_ns)


def exposed_and_union_ns(timeline: Timeline, mask: np.ndarray, window: Window,
                         work: np.ndarray | None = None) -> tuple[int, int]:
    """``(E_c, U_c)`` in ns for the selected compute nodes ``mask`` inside the window, their
    time taken from ``work`` (the selected nodes that are not containers; default ``mask``).
    Other work is every compute node not selected, waits for a peer included."""
    mask = mask & timeline.compute
    others = timeline.compute & ~mask
    work = mask if work is None else work & mask
    cs, ce = _clipped(timeline, work, window)
    ns, ne = _clipped(timeline, others, window)
    union_c = union_length(cs, ce)
    busy_others = union_length(ns, ne)
    both = union_length(np.concatenate([cs, ns]), np.concatenate([ce, ne]))
    return both - busy_others, union_c


def bounds(timeline: Timeline, window: Window, scales: list[Scale]) -> Bounds:
    """Low and high speedups of the window for ``scales`` applied together."""
    exposed: dict[str, int] = {}
    union: dict[str, int] = {}
    for sc in scales:
        exposed[sc.label], union[sc.label] = exposed_and_union_ns(timeline, sc.mask(timeline), window, sc.work(timeline))
    low, high = speedup_bounds(
        float(window.length_ns), [(exposed[sc.label], union[sc.label], sc.k) for sc in scales]
    )
    return Bounds(low=low, high=high, exposed_ns=exposed, union_ns=union)
