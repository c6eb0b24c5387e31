"""Sensitivity: speedup against k for each category, every method, ready to plot.

For each category with compute time in the window and each ``k`` in :data:`FACTORS`
(``1.25, 1.5, 2, 4, inf``): the first-order speedup, the bounds, and the replayed speedup when
a dependency graph is given. One replay per (category, k) point. A replayed point outside its
own bounds is marked (``invalid`` in its row) and carries an ``invalid`` finding, unless it lies
between 1 and the bounds while ops following the scaled work waited for work elsewhere (or
scaled ops ended with nothing waiting for them): then it is marked ``waits_elsewhere`` with a warning
(``parity.metrics.validity.replay_against_bounds``: the bounds' fixed idle gaps do not hold
there). A first-order point outside them by more than :data:`AGREEMENT` is marked
(``first_order_outside``) with a warning: the scaled work runs off the busiest lane, where the
first order does not look (communication on its own stream).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from parity.metrics.validity import (
    REPLAY_WAITS_ELSEWHERE,
    invalid,
    replay_against_bounds,
    within_bounds,
)
from parity.model.findings import Finding, Severity
from parity.model.figure import told_apart
from parity.trace.whatif.bounds import bounds
from parity.trace.whatif.first_order import first_order
from parity.trace.whatif.graph import DependencyGraph
from parity.trace.whatif.waits import Waits
from parity.trace.whatif.replay import baseline_steps, replay
from parity.trace.whatif.selection import Scale, Window, scale_factors
from parity.trace.whatif.timeline import Timeline

FACTORS = (1.25, 1.5, 2.0, 4.0, math.inf)
AGREEMENT = 0.01  # methods whose speedups differ by more than 1% are said to disagree; a first
# order within 1% of its bounds is not outside them (on a host-bound trace it misses 0.005% of the
# step where the bounds see exposed work on a second stream: nothing a reader would act on)


@dataclass(frozen=True, kw_only=True)
class Sensitivity:
    """``rows``: one dict per (category, k) with ``first_order``, ``low``, ``high``, ``replay``
    and ``invalid`` (the replay lies outside the bounds, unexplained) or ``waits_elsewhere``
    (between 1 and the bounds, explained by waits for work elsewhere); ``findings``: one finding
    per category and kind of such rows."""

    factors: tuple[float, ...]
    categories: tuple[str, ...]
    rows: tuple[dict, ...]
    findings: tuple[Finding, ...] = ()

    def series(self, category: str, method: str) -> list[float | None]:
        """Speedups of one category by one method, in the order of ``factors``."""
        return [r[method] for r in self.rows if r["category"] == category]

    def to_dict(self) -> dict:
        return {
            "factors": ["inf" if math.isinf(k) else k for k in self.factors],
            "categories": list(self.categories),
            "rows": [dict(r, k="inf" if math.isinf(r["k"]) else r["k"]) for r in self.rows],
            "series": {c: {m: self.series(c, m) for m in ("first_order", "low", "high", "replay")}
                       for c in self.categories},
            "findings": [f.to_dict() for f in self.findings],
        }


def categories_present(timeline: Timeline, window: Window) -> list[str]:
    """Categories of compute nodes inside the window, largest summed time first."""
    m = timeline.compute & (timeline.end_ns > window.start_ns) & (timeline.start_ns < window.end_ns)
    labels = timeline.category[m].astype(str)
    if not len(labels):
        return []
    dur = (np.minimum(timeline.end_ns[m], window.end_ns)
           - np.maximum(timeline.start_ns[m], window.start_ns))
    unique, inverse = np.unique(labels, return_inverse=True)
    total = np.bincount(inverse.reshape(-1), weights=dur)
    return [str(unique[i]) for i in np.argsort(-total, kind="stable") if total[i] > 0]


def sensitivity(
    timeline: Timeline,
    window: Window,
    graph: DependencyGraph | None,
    *,
    factors: tuple[float, ...] = FACTORS,
    progress: Callable[[str, int, int], None] | None = None,
) -> Sensitivity:
    """The speedup table over ``categories x factors``."""
    cats = categories_present(timeline, window)
    base = baseline_steps(graph, window) if graph is not None else None
    rows: list[dict] = []
    total = len(cats) * len(factors)
    waits_of: dict[tuple[str, float], Waits | None] = {}  # (category, k) -> waits, measured or in the replay
    for c in cats:
        scaled = Scale(selector=c, k=2.0).mask(timeline)  # the category's nodes, whatever k
        for k in factors:
            scale = [Scale(selector=c, k=k)]
            fo = first_order(timeline, window, scale)
            bd = bounds(timeline, window, scale)
            result = replay(graph, window, scale_factors(timeline, scale), baseline=base) if graph is not None else None
            rp = result.speedup if result is not None else None
            waits = waits_of[(c, k)] = (graph.waits(window.start_ns, window.end_ns, scaled, replayed=result.times)
                                        if graph is not None and result is not None else None)
            found = replay_against_bounds(rp, bd.low, bd.high, waited=waits.waited if waits else 0,
                                          why=waits.text() if waits else "", what="replay speedup")
            rows.append({"category": c, "k": k, "first_order": fo.speedup, "low": bd.low,
                         "high": bd.high, "replay": rp,
                         "invalid": found is not None and found.code != REPLAY_WAITS_ELSEWHERE,
                         "waits_elsewhere": found is not None and found.code == REPLAY_WAITS_ELSEWHERE,
                         "first_order_outside": not within_bounds(fo.speedup, bd.low, bd.high, AGREEMENT)})
            if progress:
                progress("sensitivity", len(rows), total)
    findings = [f for c in cats for f in (replay_outside_bounds(rows, c), replay_waits_elsewhere(rows, c, waits_of),
                                          first_order_outside_bounds(rows, c))
                if f is not None]
    return Sensitivity(factors=tuple(factors), categories=tuple(cats), rows=tuple(rows), findings=tuple(findings))


def first_order_outside_bounds(rows: list[dict], category: str) -> Finding | None:
    """One warning naming every ``k`` at which ``category``'s first order lies outside its
    bounds (marked ``*`` in the terminal table), with the farthest point; None when none does."""
    bad = [r for r in rows if r["category"] == category and r.get("first_order_outside")]
    if not bad:
        return None
    worst = max(bad, key=lambda r: max(r["low"] - r["first_order"], r["first_order"] - r["high"]))
    return Finding(code="first-order-outside-bounds", severity=Severity.WARNING,
                   message=f"first order of {category} lies outside its bounds at k = {_ks(bad)} (k = {_k(worst)}: "
                           "{}x, bounds [{}x, {}x]): its scaled work runs exposed off the busiest lane, so the "
                           "first order misses it".format(*told_apart(worst["first_order"], worst["low"], worst["high"])),
                   hint="quote the bounds or the replay for this category")


def _k(row: dict) -> str:
    return "inf" if math.isinf(row["k"]) else f"{row['k']:g}"


def _ks(rows: list[dict]) -> str:
    return ", ".join(_k(r) for r in rows)


def replay_outside_bounds(rows: list[dict], category: str) -> Finding | None:
    """One ``invalid`` finding naming every ``k`` at which ``category``'s replay lies outside
    its bounds, with the farthest point as the example; None when there is none."""
    bad = [r for r in rows if r["category"] == category and r.get("invalid")]
    if not bad:
        return None

    def miss(r: dict) -> float:
        return max(r["low"] - r["replay"], r["replay"] - r["high"]) / r["low"]

    worst = max(bad, key=miss)
    return invalid(f"replay of {category} lies outside its own bounds at k = {_ks(bad)} (k = {_k(worst)}: "
                   "{}x, bounds [{}x, {}x])".format(*told_apart(worst["replay"], worst["low"], worst["high"])),
                   "nothing in the trace explains it (no wait after the scaled work, or a replay slower "
                   "than measured): the dependency graph may lack a link (see its assumptions); do not "
                   "quote these points: quote the bounds")


def replay_waits_elsewhere(rows: list[dict], category: str,
                           waits_of: dict[tuple[str, float], Waits | None]) -> Finding | None:
    """One warning naming every ``k`` at which ``category``'s replay lies between 1 and its
    bounds because ops waited for work elsewhere (marked ``~`` in the terminal table), with
    the farthest point and its waits; None when there is none."""
    bad = [r for r in rows if r["category"] == category and r.get("waits_elsewhere")]
    if not bad:
        return None
    worst = max(bad, key=lambda r: abs(r["low"] - r["replay"]) / r["low"])
    waits = waits_of.get((category, worst["k"]))
    return Finding(code=REPLAY_WAITS_ELSEWHERE, severity=Severity.WARNING,
                   message=f"replay of {category} lies between 1 and its bounds at k = {_ks(bad)} (k = {_k(worst)}: "
                           "{}x, bounds [{}x, {}x]): ".format(*told_apart(worst["replay"], worst["low"], worst["high"]))
                           + (waits.text() if waits else ""),
                   hint="where ops wait for work elsewhere the replay is the figure to quote")
