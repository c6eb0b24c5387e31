"""How latency is drawn: the terminal tables of ``parity latency`` and the report's two charts
(latency against working set with its plateaus, against concurrent blocks with its knees).

Both take stored summary dicts (``LatencySummary.to_dict()``, or a summary of the earlier ns
layout, read through ``LatencySummary.from_dict``), whose latencies are in seconds; ns per load
is formatted here. Nothing here measures or prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table as TextTable
from rich.text import Text

from parity.families.latency.summary import LatencySummary
from parity.report.html.chart import NUMBER, Chart, Column, Table, log_axis, series_color, vega_lite
from parity.report.units import format_bytes, format_fraction

if TYPE_CHECKING:
    from parity.report.views import RunData

NS = 1e-9


def _ns(seconds: float) -> str:
    return f"{seconds / NS:.3g}"


def _size_table(curve: dict[str, Any]) -> TextTable:
    table = TextTable(title=f"latency vs working set, {curve['page']} pages, {curve['stride_bytes']} B stride",
                      title_justify="left")
    table.add_column("working set", justify="right")
    table.add_column("ns/load", justify="right")
    table.add_column("huge-page share", justify="right")
    for p in curve["points"]:
        table.add_row(format_bytes(p["working_set_bytes"]), _ns(p["latency_s"]),
                      format_fraction(p.get("huge_page_share")))
    return table


def _plateau_table(curve: dict[str, Any]) -> TextTable:
    table = TextTable(title=f"plateaus, {curve['page']} pages", title_justify="left")
    for name in ("level", "ns/load", "from", "to", "capacity", "reported", "measured/reported"):
        table.add_column(name, justify="right")
    for p in curve["plateaus"]:
        ratio = p.get("size_ratio")
        table.add_row(p["level"], _ns(p["latency_s"]), format_bytes(p["start_bytes"]),
                      format_bytes(p["size_bytes"]), format_bytes(p.get("capacity_bytes")),
                      format_bytes(p.get("reported_bytes")),
                      "-" if ratio is None else f"{ratio:.2g}x")
    return table


def _blocks_table(curve: dict[str, Any]) -> TextTable:
    table = TextTable(title=f"latency vs concurrent {curve['block_kind']}s, {curve['page']} pages",
                      caption=(f"each chases its own {format_bytes(curve['region_bytes'])}; "
                               f"{curve.get('compute_units')} {curve.get('compute_unit_kind') or 'compute units'}"),
                      title_justify="left", caption_justify="left")
    table.add_column("blocks", justify="right")
    table.add_column("ns/load", justify="right")
    table.add_column("", justify="left")
    knees = {k["blocks"] for k in curve["knees"]}
    for p in curve["points"]:
        table.add_row(str(p["blocks"]), _ns(p["latency_s"]), "knee" if p["blocks"] in knees else "")
    return table


def render_latency(stored: dict[str, Any]) -> RenderableType:
    """Size curves with plateaus, blocks curves with knees, and the estimator used."""
    summary = LatencySummary.from_dict(stored).to_dict()
    parts: list[RenderableType] = []
    for curve in summary["size_curves"]:
        parts.extend([_size_table(curve), _plateau_table(curve)])
        for p in curve["plateaus"]:
            if p.get("memory") and not p.get("page_walk"):
                parts.append(Text(f"{curve['page']} pages: {p['level']} is the median of the {p['points']} working "
                                  "sets where the sweep has left the last cache (2x its reported size and beyond)"))
        if curve.get("page_walk_from_bytes"):
            parts.append(Text(f"{curve['page']} pages: page walks lift the curve above the huge-page one "
                              f"from {format_bytes(curve['page_walk_from_bytes'])} (levels marked +page-walks)"))
    if summary.get("plateaus_page"):
        parts.append(Text(f"cache sizes read from the {summary['plateaus_page']} curve"))
    for f in summary["findings"]:
        parts.append(Text(f"{f['severity']} {f['code']}: {f['message']}; {f['hint']}"))
    for curve in summary["blocks_curves"]:
        parts.append(_blocks_table(curve))
        for k in curve["knees"]:
            parts.append(Text(f"knee after {k['blocks']} blocks: slope {_ns(k['slope_before_s_per_block'])} -> "
                              f"{_ns(k['slope_after_s_per_block'])} ns per added block"))
        if not curve["knees"]:
            parts.append(Text("no knee: latency stays on one trend across the block counts"))
    parts.append(Text(f"method: {summary.get('method', '')}; {summary.get('estimator', '')}"))
    return Group(*parts)


Runs = list[tuple[str, dict[str, Any]]]


def _latency_sets(runs: Runs) -> dict[str, list[dict[str, Any]]]:
    many = len(runs) > 1
    sets: dict[str, list[dict[str, Any]]] = {"size": [], "plateaus": [], "blocks": [], "knees": []}
    for label, summary in runs:
        for curve in summary.get("size_curves", []):
            series = f"{label} · {curve['page']} pages" if many else f"{curve['page']} pages"
            sets["size"] += [{"series": series, "working_set_bytes": p["working_set_bytes"],
                              "latency_s": p["latency_s"]} for p in curve.get("points", [])]
            sets["plateaus"] += [{"series": series, "level": p["level"], "latency_s": p["latency_s"],
                                  "start_bytes": p["start_bytes"], "end_bytes": p["size_bytes"]}
                                 for p in curve.get("plateaus", [])]
        for curve in summary.get("blocks_curves", []):
            series = f"{label} · {curve['page']} pages" if many else f"{curve['page']} pages"
            by_blocks = {p["blocks"]: p["latency_s"] for p in curve.get("points", [])}
            sets["blocks"] += [{"series": series, "blocks": b, "latency_s": s} for b, s in by_blocks.items()]
            sets["knees"] += [{"series": series, "blocks": k["blocks"], "latency_s": by_blocks.get(k["blocks"], math.nan),
                               "slope_before_s": k.get("slope_before_s_per_block", math.nan),
                               "slope_after_s": k.get("slope_after_s_per_block", math.nan)}
                              for k in curve.get("knees", [])]
    return sets


def latency_charts(runs: Runs) -> list[Chart]:
    """Latency against working set (plateaus drawn as bars) and against concurrent blocks (knees)
    (``runs``: ``(run label, summary dict)`` of the SI layout)."""
    sets = _latency_sets(runs)
    charts = []
    y = {"field": "latency_s", "type": "quantitative", "title": "latency per load (s)", "axis": {"format": "~s"}}
    if sets["size"]:
        x = log_axis("working_set_bytes", "working set (B)")
        plateau_layers = [
            {"data": {"name": "plateaus"}, "mark": {"type": "rule", "strokeWidth": 6, "opacity": 0.35},
             "encoding": {"x": {**x, "field": "start_bytes"}, "x2": {"field": "end_bytes"}, "y": y,
                          "color": series_color()}},
            {"data": {"name": "plateaus"}, "mark": {"type": "text", "dy": -10, "fontSize": 11},
             "encoding": {"x": {**x, "field": "start_bytes"}, "y": y, "text": {"field": "level"}}},
        ] if sets["plateaus"] else []  # an empty layer has no extent: Vega warns in the console
        spec = vega_lite({"size": sets["size"], "plateaus": sets["plateaus"]}, {"layer": [
            *plateau_layers,
            {"data": {"name": "size"}, "mark": {"type": "line", "point": True},
             "encoding": {"x": x, "y": {**y, "scale": {"type": "log"}}, "color": series_color()}},
        ]})
        charts.append(Chart(
            id="latency-size", section="latency", title="Latency against working set, with plateaus", spec=spec,
            note="Pointer chase, one dependent load at a time; wide bars: the plateaus (cache levels) found.",
            tables=(Table(dataset="plateaus", title="plateaus", columns=(
                        Column(field="series", title="curve"), Column(field="level", title="level"),
                        Column(field="latency_s", title="latency", unit="s"),
                        Column(field="start_bytes", title="from", unit="B"),
                        Column(field="end_bytes", title="to", unit="B"))),
                    Table(dataset="size", title="points", columns=(
                        Column(field="series", title="curve"),
                        Column(field="working_set_bytes", title="working set", unit="B"),
                        Column(field="latency_s", title="latency", unit="s"))))))
    if sets["blocks"]:
        x = {"field": "blocks", "type": "quantitative", "title": "concurrent blocks",
             "axis": {"tickMinStep": 1, "format": "d"}}
        knee_layers = [
            {"data": {"name": "knees"}, "mark": {"type": "point", "shape": "diamond", "size": 160,
                                                 "color": "#d62728", "filled": True},
             "encoding": {"x": x, "y": y}},
        ] if sets["knees"] else []  # no knee found: no empty layer (Vega warns about its extent)
        spec = vega_lite({"blocks": sets["blocks"], "knees": sets["knees"]}, {"layer": [
            {"data": {"name": "blocks"}, "mark": {"type": "line", "point": True},
             "encoding": {"x": x, "y": y, "color": series_color()}},
            *knee_layers,
        ]}, height=260)
        charts.append(Chart(
            id="latency-blocks", section="latency", title="Latency against concurrent blocks, with knees",
            spec=spec, note="Each block chases its own 16 KiB region; red diamonds: knees (the slope changes).",
            tables=(Table(dataset="knees", title="knees", columns=(
                        Column(field="series", title="curve"), Column(field="blocks", title="after blocks", unit=NUMBER),
                        Column(field="slope_before_s", title="slope before", unit="s"),
                        Column(field="slope_after_s", title="slope after", unit="s"))),
                    Table(dataset="blocks", title="points", columns=(
                        Column(field="series", title="curve"), Column(field="blocks", title="blocks", unit=NUMBER),
                        Column(field="latency_s", title="latency", unit="s"))))))
    return charts


@dataclass(frozen=True)
class LatencyView:
    """The latency family's view (``parity.report.views.View``)."""

    section: tuple[str, str] = ("latency", "Latency")

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        return render_latency(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return latency_charts([(r.label, LatencySummary.from_dict(r.summary).to_dict()) for r in runs if r.summary])


VIEW = LatencyView()
