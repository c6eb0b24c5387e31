"""How membw is drawn: the terminal tables of ``parity membw`` and the report's bandwidth chart.

Both take stored summary dicts (``MembwSummary.to_dict()``, or a summary of the earlier GB/s
layout, read through ``MembwSummary.from_dict``), whose rates are in B/s; GB/s is formatted here.
Nothing here measures or prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table as TextTable
from rich.text import Text

from parity.families.membw.summary import MembwSummary
from parity.metrics.bandwidth import fitted_bandwidth_bps
from parity.report.html.chart import Chart, Column, Table, log_axis, series_color, vega_lite
from parity.report.units import format_bytes, format_fraction, format_seconds

if TYPE_CHECKING:
    from parity.report.views import RunData

GIGA = 1e9


def _gbps(bps: float) -> str:
    return f"{bps / GIGA:.3g}"


def _bandwidth_table(curve: dict[str, Any]) -> TextTable:
    regime = f", {curve['label']}" if curve.get("label") else ""
    table = TextTable(title=f"{curve['op']}{regime}  (GB/s: {curve['convention']})", title_justify="left")
    for name in ("size", "median time", "IQR", "GB/s", "n/t GB/s", "of ceiling", "of datasheet"):
        table.add_column(name, justify="right")
    for p in curve["points"]:
        over = (p["utilization_ceiling"] or 0) > 1.0
        table.add_row(
            format_bytes(p["operand_bytes"]), format_seconds(p["median_s"]), format_seconds(p["iqr_s"]),
            _gbps(p["bandwidth_bps"]), _gbps(p["operand_bps"]),
            format_fraction(p["utilization_ceiling"]) + (" (over)" if over else ""),
            format_fraction(p["utilization_datasheet"]),
        )
    return table


def _fit_table(curves: list[dict[str, Any]]) -> TextTable:
    table = TextTable(title="fit t = a + V/b (V: bytes moved, STREAM convention); the quoted fixed cost "
                      "and n½ are the warm ones (repeated, no flush), cold ones after a cache flush",
                      title_justify="left")
    for name in ("op", "regime", "fixed cost a", "asymptotic b (GB/s)", "n½ = a·b", "RMS residual", "sizes"):
        table.add_column(name, justify="right")
    for c in curves:
        regime = c.get("regime", "cold")
        if c.get("asymptotic_bps") is None:
            table.add_row(c["op"], regime, "-", "-", "-", "-", c.get("note", ""))
            continue
        table.add_row(
            c["op"], regime, format_seconds(c["fixed_cost_s"]), _gbps(c["asymptotic_bps"]),
            format_bytes(c["n_half_bytes"]), format_fraction(c["relative_rms_residual"]),
            f"{format_bytes(c['min_bytes'])}..{format_bytes(c['max_bytes'])}",
        )
    return table


def render_membw(stored: dict[str, Any]) -> RenderableType:
    """Per-operation tables, the fit table, and the ceiling and datasheet lines."""
    summary = MembwSummary.from_dict(stored).to_dict()
    parts: list[RenderableType] = [_bandwidth_table(c) for c in summary["curves"]]
    parts.append(_fit_table(summary["curves"]))
    ceiling = summary.get("ceiling")
    if ceiling:
        parts.append(Text(f"measured ceiling: {_gbps(ceiling['bps'])} GB/s ({ceiling['method']}, "
                          f"{format_bytes(ceiling['operand_bytes'])} per operand)"))
    sheet = summary.get("datasheet") or {}
    parts.append(Text(f"datasheet peak: {_gbps(sheet['bps'])} GB/s ({sheet.get('source', '')})"
                      if sheet.get("bps") else f"datasheet peak: {sheet.get('note', 'no datasheet entry')}"))
    if summary.get("threads"):
        parts.append(Text(f"torch intra-op threads: {summary['threads']} (CPU operations are multithreaded)"))
    if summary.get("pages"):
        parts.append(Text(f"pages: {summary['pages']}"))
    if summary.get("flush") is not None:
        parts.append(Text("cache flushed before every cold call; warm points are repeated without a flush"
                          if summary["flush"] else "cache not flushed: small sizes are served from cache"))
    for c in summary["curves"]:
        if c.get("note"):
            parts.append(Text(f"{c['op']}: {c['note']}", style="yellow"))
    for f in summary["findings"]:
        parts.append(Text(f"{f['severity']} {f['code']}: {f['message']}; {f['hint']}", style="yellow"))
    return Group(*parts)


Runs = list[tuple[str, dict[str, Any]]]


def _bandwidth_rows(label: str, summary: dict[str, Any], many: bool) -> tuple[list, list, list]:
    points, fit, fits = [], [], []
    for curve in summary.get("curves", []):
        series = f"{label} · {curve['op']} {curve.get('regime', '')}" if many else \
            f"{curve['op']} {curve.get('regime', '')}".strip()
        for p in curve.get("points", []):
            if p.get("bandwidth_bps") is None:
                continue
            points.append({"series": series, "op": curve["op"], "regime": curve.get("regime"),
                           "operand_bytes": p["operand_bytes"], "bytes_moved": p["bytes_moved"],
                           "median_s": p["median_s"], "bandwidth_bps": p["bandwidth_bps"]})
        a, b = curve.get("fixed_cost_s"), curve.get("asymptotic_bps")
        fits.append({"series": series, "fixed_cost_s": a, "asymptotic_bps": b if b else None,
                     "n_half_bytes": curve.get("n_half_bytes"), "rms": curve.get("relative_rms_residual"),
                     "points": curve.get("fitted_points"), "note": curve.get("note", "")})
        if a is None or not b:
            continue
        for p in curve.get("points", []):
            fit.append({"series": series, "operand_bytes": p["operand_bytes"], "bandwidth_bps":
                        fitted_bandwidth_bps(p["bytes_moved"], fixed_cost_s=a, asymptotic_bps=b)})
    return points, fit, fits


def membw_charts(runs: Runs) -> list[Chart]:
    """Bandwidth against operand size per operation and regime, with the fitted ``t = a + V/b``
    (``runs``: ``(run label, summary dict)`` of the SI layout)."""
    many = len(runs) > 1
    parts = [_bandwidth_rows(label, s, many) for label, s in runs]
    points = [r for p, _, _ in parts for r in p]
    if not points:
        return []
    ceilings = [{"series": label, "bandwidth_bps": s["ceiling"]["bps"],
                 "operand_bytes": s["ceiling"].get("operand_bytes"), "method": s["ceiling"].get("method", "")}
                for label, s in runs if (s.get("ceiling") or {}).get("bps")]
    datasets = {"points": points, "fit": [r for _, f, _ in parts for r in f],
                "fits": [r for _, _, f in parts for r in f], "ceiling": ceilings}
    x = log_axis("operand_bytes", "operand size (B)")
    y = log_axis("bandwidth_bps", "bandwidth (B/s, bytes read + written)")
    ceiling_layer = [{"data": {"name": "ceiling"}, "mark": {"type": "rule", "color": "#666", "strokeDash": [2, 2]},
                      "encoding": {"y": y}}] if ceilings else []
    spec = vega_lite(datasets, {"layer": [
        {"data": {"name": "fit"}, "mark": {"type": "line", "strokeDash": [5, 3], "opacity": 0.8},
         "encoding": {"x": x, "y": y, "color": series_color()}},
        {"data": {"name": "points"}, "mark": {"type": "point", "filled": True, "size": 36},
         "encoding": {"x": x, "y": y, "color": series_color(),
                      "tooltip": [{"field": "series"}, {"field": "operand_bytes", "format": ".4s"},
                                  {"field": "bandwidth_bps", "format": ".4s"}]}},
    ] + ceiling_layer}, height=320)
    return [Chart(
        id="membw-bandwidth", section="memory", title="Bandwidth against size, with the fit t = a + V/b",
        spec=spec, note="Points: median bandwidth per size (STREAM bytes: read + written); dashed: the fit "
                        "t = a + V/b per operation; grey dotted: the measured ceiling (one dedicated large copy). "
                        "Warm: repeated without a flush; cold: after a cache flush.",
        tables=(Table(dataset="ceiling", title="measured ceiling", columns=(
                    Column(field="series", title="run"), Column(field="bandwidth_bps", title="B", unit="B/s"),
                    Column(field="operand_bytes", title="copy of", unit="B"), Column(field="method", title="method"))),
                Table(dataset="fits", title="fits", columns=(
                    Column(field="series", title="operation"), Column(field="fixed_cost_s", title="a", unit="s"),
                    Column(field="asymptotic_bps", title="b", unit="B/s"),
                    Column(field="n_half_bytes", title="n½ = a·b", unit="B"),
                    Column(field="rms", title="RMS residual", unit="1"), Column(field="note", title="note"))),
                Table(dataset="points", title="points", columns=(
                    Column(field="series", title="operation"), Column(field="operand_bytes", title="size", unit="B"),
                    Column(field="median_s", title="median time", unit="s"),
                    Column(field="bandwidth_bps", title="bandwidth", unit="B/s")))))]


@dataclass(frozen=True)
class MembwView:
    """The membw family's view (``parity.report.views.View``)."""

    section: tuple[str, str] = ("memory", "Memory bandwidth")

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        return render_membw(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return membw_charts([(r.label, MembwSummary.from_dict(r.summary).to_dict()) for r in runs if r.summary])


VIEW = MembwView()
