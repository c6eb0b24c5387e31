"""One what-if prediction with every method, its assumptions and its sensitivity table.

``predict(table, [parse_scale("matrix=2")])`` returns a :class:`Prediction` whose ``to_dict()``
has the keys the CLI writes: ``first_order``, ``bounds`` (``low``, ``high``), ``replay`` (or
``{"error": reason}``), ``assumptions``, ``sensitivity``, ``window``, ``scales`` and ``waits``
(the ops after the scaled work that waited for work elsewhere, with the replay).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from parity.metrics.validity import replay_against_bounds, within_bounds
from parity.model.errors import ParityError
from parity.model.findings import Finding, Severity
from parity.model.figure import told_apart
from parity.trace.categories import Rules, load_rules
from parity.trace.intervals import clip_intervals, union_length
from parity.trace.table import ActivityTable, KindCode
from parity.trace.whatif.bounds import Bounds, bounds
from parity.trace.whatif.first_order import FirstOrder, first_order, lane_busy_ns
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.waits import Waits
from parity.trace.whatif.replay import Replay, baseline_steps, replay
from parity.trace.whatif.selection import Scale, Window, choose_window, scale_factors
from parity.trace.whatif.sensitivity import AGREEMENT, Sensitivity, sensitivity
from parity.trace.whatif.timeline import Timeline, build_timeline
from parity.trace.window import window_text

log = logging.getLogger(__name__)

METHODS = ("first-order", "replay", "all")
REPRODUCTION_TOLERANCE = 0.01  # k = 1 must reproduce the measured step within 1%

Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True, kw_only=True)
class Prediction:
    """All methods' answers for one set of scales on one trace window."""

    scales: tuple[Scale, ...]
    mode: str
    window: Window
    first_order: FirstOrder | None
    bounds: Bounds | None
    replay: Replay | None
    replay_error: str | None
    graph: dict | None
    assumptions: tuple[str, ...]
    sensitivity: Sensitivity | None
    findings: tuple[Finding, ...] = field(default=())
    waits: Waits | None = None  # ops after the scaled work that waited for work elsewhere (replay only)

    def to_dict(self) -> dict:
        return {
            "scales": [s.to_dict() for s in self.scales],
            "mode": self.mode,
            "window": self.window.to_dict(),
            "first_order": self.first_order.to_dict() if self.first_order else None,
            "bounds": self.bounds.to_dict() if self.bounds else None,
            "replay": self.replay.to_dict() if self.replay else {"error": self.replay_error},
            "graph": self.graph,
            "assumptions": list(self.assumptions),
            "sensitivity": self.sensitivity.to_dict() if self.sensitivity else None,
            "findings": [f.to_dict() for f in self.findings],
            "waits": self.waits.to_dict() if self.waits else None,
        }


def predict(
    table: ActivityTable,
    scales: list[Scale],
    *,
    method: str = "all",
    window: tuple[int, int] | None = None,
    steps: tuple[int, int] | None = None,
    rules: Rules | str | None = None,
    with_sensitivity: bool = True,
    progress: Progress | None = None,
) -> Prediction:
    """Predict the step of ``table`` with ``scales`` applied, by the chosen methods.

    ``method``: ``first-order`` (first order and bounds), ``replay`` (the dependency replay),
    or ``all``. ``window`` is an explicit ``(start_ns, end_ns)``; ``steps`` picks step markers.
    """
    if method not in METHODS:
        raise ParityError(f"method {method!r} is not one of {', '.join(METHODS)}")
    if not scales:
        raise ParityError("no scale given; say what gets faster, e.g. --scale matrix=2")
    rules = load_rules(rules) if not isinstance(rules, Rules) else rules
    timeline = build_timeline(table, rules)
    win = choose_window(table, timeline, span_ns=window, steps=steps)
    _check_selection(timeline, scales)
    scale_factors(timeline, scales)  # refuses overlapping selections before any method runs
    offset_ms = (win.start_ns - int(table.start_ns.min())) / 1e6 if len(table) else 0.0
    notes = [(f"window: {win.source}, {win.length_ns / 1e6:.3f} ms over {win.n_steps} step(s), "
              f"--window {window_text(win.start_ns, win.end_ns)}, from {offset_ms:.3f} ms after the trace start")]
    fo = bd = None
    if method in ("first-order", "all"):
        fo = first_order(timeline, win, scales)
        bd = bounds(timeline, win, scales)
        notes += _first_order_notes(timeline, win, fo)
    rp, graph, error = None, None, "not requested (method first-order)"
    if method in ("replay", "all"):
        rp, graph, error = _run_replay(table, timeline, win, scales, progress)
        if graph is not None:
            notes += graph.assumptions()
    waits = None
    if rp is not None and graph is not None:
        waits = graph.waits(win.start_ns, win.end_ns, scale_factors(timeline, scales) != 1, replayed=rp.times)
    findings = _findings(fo, bd, rp, scales, waits=waits)
    sens = None
    if with_sensitivity:
        sens = sensitivity(timeline, win, graph if rp else None, progress=progress)
    return Prediction(scales=tuple(scales), mode=timeline.mode, window=win, first_order=fo,
                      bounds=bd, replay=rp, replay_error=error,
                      graph=graph.to_dict() if graph else None, assumptions=tuple(notes),
                      sensitivity=sens, findings=tuple(findings), waits=waits)


def _check_selection(timeline: Timeline, scales: list[Scale]) -> None:
    """Refuse a scale that selects no activity: it would predict 1.000x for a typo."""
    for sc in scales:
        if sc.k != 1 and not sc.mask(timeline).any():  # k = 1 changes nothing, whatever it selects
            present = ", ".join(sorted(set(timeline.category[timeline.compute].tolist()))) or "none"
            raise ParityError(f"scale {sc.label} selects no activity; categories with work in this trace: "
                              f"{present} (or select kernels by name with name:REGEX=K)")


def _first_order_notes(timeline: Timeline, win: Window, fo: FirstOrder) -> list[str]:
    busy = lane_busy_ns(timeline, win)
    union_all = _compute_union_ns(timeline, win)
    idle = 1 - union_all / win.length_ns if win.length_ns else 0.0
    lanes = int((busy > 0).sum())
    what = "thread" if timeline.mode == "host" else "stream"
    first = (f"first order: T_c measured on the critical (busiest) {what}, {fo.critical_lane} "
             f"(busy {fo.critical_busy_ns / win.length_ns:.1%} of the window); overlap and idle "
             "held fixed")
    busy_lanes = f"{lanes} busy {what}" + ("s" if lanes != 1 else "")
    second = (f"bounds: other {what}s' work ({busy_lanes}) may hide the scaled work (low) "
              f"or none of it does (high); idle gaps ({idle:.1%} of the window with no work on any "
              f"{what}) held fixed as in the first order")
    return [first, second]


def _compute_union_ns(timeline: Timeline, win: Window) -> int:
    m = timeline.compute
    s, e = clip_intervals(timeline.start_ns[m], timeline.end_ns[m], win.start_ns, win.end_ns)
    return union_length(s, e)


def _run_replay(table, timeline, win, scales, progress):
    try:
        if progress:
            progress("dependency graph", 0, 1)
        graph = build_graph(table, timeline, step_boundaries=step_boundaries(table, timeline))
        if progress:
            progress("dependency graph", 1, 1)
        base = baseline_steps(graph, win)
        result = replay(graph, win, scale_factors(timeline, scales), baseline=base)
    except ParityError as exc:
        return None, None, str(exc)
    if result.reproduction_error > REPRODUCTION_TOLERANCE:
        return None, graph, (f"with k = 1 the replay gives a step {result.reproduction_error:.1%} "
                             "off the measured one; the graph does not explain this trace")
    return result, graph, None


def step_boundaries(table: ActivityTable, timeline: Timeline) -> dict | None:
    """Step starts per marker thread, for host-mode step barriers between threads."""
    if timeline.mode != "host" or len(timeline.lane_keys) < 2:
        return None
    marks = np.flatnonzero(table.kind == KindCode.STEP)
    out: dict[tuple[int, int, int], list[int]] = {}
    for row in marks.tolist():
        key = (int(table.rank[row]), -1, int(table.stream[row]))
        out.setdefault(key, []).extend([int(table.start_ns[row]), int(table.end_ns[row])])
    return {k: sorted(set(v)) for k, v in out.items()} or None


def _findings(fo: FirstOrder | None, bd: Bounds | None, rp: Replay | None,
              rp_scales: list[Scale], *, waits: Waits | None = None) -> list[Finding]:
    """What the methods say about each other: a disagreement and a first order outside the
    bounds (by more than :data:`AGREEMENT`) are warnings (each has a known cause in the trace);
    a replay outside the bounds is ``invalid`` (not to be quoted) unless ops that waited for
    work elsewhere (``waits``) explain it (``parity.metrics.validity.replay_against_bounds``):
    then a warning."""
    out = [Finding(code="methods-disagree", severity=Severity.WARNING, message=text,
                   hint="quote the bounds, or the method whose assumptions hold for this trace")
           for text in disagreement(fo, bd, rp)]
    if fo and bd and not within_bounds(fo.speedup, bd.low, bd.high, AGREEMENT):
        speedup, low, high = told_apart(fo.speedup, bd.low, bd.high)
        out.append(Finding(code="first-order-outside-bounds", severity=Severity.WARNING,
                           message=f"first-order speedup {speedup} lies outside the bounds "
                                   f"[{low}, {high}]: the scaled work runs exposed off the busiest "
                                   "lane, so the first order misses it",
                           hint="quote the bounds or the replay"))
    if rp and bd:
        found = replay_against_bounds(rp.speedup, bd.low, bd.high, waited=waits.waited if waits else 0,
                                      why=waits.text(slower=bd.high < 1) if waits else "",
                                      what=f"replay speedup for {', '.join(s.label for s in rp_scales)}")
        if found is not None:
            out.append(found)
    return out


def disagreement(fo: FirstOrder | None, bd: Bounds | None, rp: Replay | None) -> list[str]:
    """Which assumption separates the first order from the replay when their speedups differ
    by more than :data:`AGREEMENT` (relative): the first order counts only the scaled time on
    the busiest lane (``T_c``) and holds overlap fixed; the replay moves every activity along
    its dependencies, so scaled work off that lane (``U_c > T_c``) or work that stops hiding
    behind other lanes separates them."""
    if not (fo and rp) or abs(rp.speedup - fo.speedup) <= AGREEMENT * fo.speedup:
        return []
    on_lane = sum(fo.category_ns.values())
    union = sum(bd.union_ns.values()) if bd else on_lane
    if rp.speedup > fo.speedup and union > on_lane:
        why = (f"the first order counts only the scaled time on the busiest lane ({on_lane / 1e6:.3f} ms of "
               f"{union / 1e6:.3f} ms in all); the replay also saves the scaled work on other lanes")
    elif rp.speedup > fo.speedup:
        why = ("the first order holds idle gaps fixed; in the replay the gaps close where they waited "
               "on the scaled work")
    else:
        why = ("the first order holds overlap fixed; in the replay the shortened work waits on "
               "other lanes' work it used to hide behind, so less is saved")
    return [f"first order {fo.speedup:.3f}x and replay {rp.speedup:.3f}x disagree: {why}"]
