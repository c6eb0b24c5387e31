"""``--duration``: one size repeated for a while, and the drift of its busbw per window.

A duration case is an ordinary collectives case repeated for ``duration`` seconds of wall
clock (``parity.timing.duration.ForDuration``: every rank agrees in short chunks whether the
time is up, so a link that slows mid-run cannot stretch the run). Its samples (the max over
ranks per iteration) are cut into windows of ``window`` seconds by each iteration's start,
and each window gives the median, p1 and p99 of busbw; the drift figures are ``drift_spread`` and
``drift_last_first`` of ``parity.metrics.links`` over the window medians. A link whose shaping
changes mid-run shows as windows whose medians step, and a large spread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.families.collectives.summary import CollectivesSummary
from parity.metrics.collectives import busbw
from parity.metrics.links import cumulative_starts, drift_last_first, drift_spread, windows
from parity.model.figure import Figure
from parity.model.result import CaseResult

METHOD = ("busbw per iteration (max over ranks), windows of wall-clock seconds by iteration start; spread = "
          "(max - min)/median of window medians, last/first = last median / first median - 1")


def drift_row(result: CaseResult, *, window_s: float) -> dict[str, Any] | None:
    """One duration case's windows and drift figures (B/s; None without samples)."""
    if result.error is not None or "main" not in result.samples:
        return None
    p, m = result.params, result.metrics
    size = float(m.get("size_bytes", p["size_bytes"]))
    world = int(m.get("world_size") or 1)
    samples = result.samples["main"]
    times = list(samples.values_s)
    rates = [busbw(size, t, op=p["op"], world_size=world) or 0.0 for t in times]
    stamped = len(samples.meta.get("start_s") or ()) == len(times)
    starts = [float(s) for s in samples.meta["start_s"]] if stamped else cumulative_starts(times)
    end = starts[-1] + times[-1]
    cut = windows(starts, rates, window_s=window_s, end_s=end)
    medians = [w.median_bps for w in cut]
    return {"key": result.key, "op": p["op"], "size_bytes": size, "world_size": world,
            "duration_s": end, "timed_s": sum(times), "clock": "wall" if stamped else "timed",
            "iterations": len(times), "window_s": window_s,
            "windows": [vars(w) for w in cut], "drift_spread": drift_spread(medians),
            "drift_last_first": drift_last_first(medians) if medians[0] > 0 else None}


@dataclass(frozen=True, kw_only=True)
class CollectivesDriftSummary(CollectivesSummary):
    """The collectives summary of a ``--duration`` run: its rows plus one drift entry per case
    (``drift``: windows with median, p1, p99 busbw, and the two drift figures)."""

    drift: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "drift": [dict(d) for d in self.drift]}


def with_drift(summary: CollectivesSummary, results: list[CaseResult], *, window_s: float) -> CollectivesDriftSummary:
    """``summary`` with the drift of every duration case among ``results``."""
    rows = [row for r in results if r.params.get("duration_s") and (row := drift_row(r, window_s=window_s))]
    from dataclasses import fields

    base = {f.name: getattr(summary, f.name) for f in fields(summary)}
    return CollectivesDriftSummary(**base, drift=tuple(rows))


def drift_figures(summary: CollectivesDriftSummary) -> list[Figure]:
    """``collectives.<op>.busbw.drift_spread`` and ``.drift_last_first`` (unit 1) per case."""
    figures = []
    for row in summary.drift:
        scope = {"op": row["op"], "size_bytes": row["size_bytes"], "world_size": row["world_size"],
                 "windows": len(row["windows"]), "window_s": row["window_s"]}
        figures.append(Figure(name=f"collectives.{row['op']}.busbw.drift_spread", value=row["drift_spread"],
                              unit="1", method=METHOD, scope=scope))
        if row.get("drift_last_first") is not None:
            figures.append(Figure(name=f"collectives.{row['op']}.busbw.drift_last_first",
                                  value=row["drift_last_first"], unit="1", method=METHOD, scope=scope))
    return figures
