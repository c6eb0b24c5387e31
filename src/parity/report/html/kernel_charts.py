"""Charts of the kernel families: bandwidth against size with its fit, latency against working
set and against concurrent blocks (the GEMM roofline is the GEMM family's view).

Each function takes ``[(run label, suite summary dict), ...]`` (the summaries the suites store,
``membw_summary`` / ``latency_summary``) and returns charts; runs are told apart by colour, so
two devices share one chart.
"""

from __future__ import annotations

import math
from typing import Any

from parity.metrics.bandwidth import fitted_bandwidth_bps
from parity.report.html.chart import (
    NUMBER,
    Chart,
    Column,
    Table,
    log_axis,
    series_color,
    vega_lite,
)

Runs = list[tuple[str, dict[str, Any]]]


def _bandwidth_rows(label: str, summary: dict[str, Any], many: bool) -> tuple[list, list, list]:
    points, fit, fits = [], [], []
    for curve in summary.get("curves", []):
        series = f"{label} · {curve['op']} {curve.get('regime', '')}" if many else \
            f"{curve['op']} {curve.get('regime', '')}".strip()
        for p in curve.get("points", []):
            if p.get("gbps") is None:
                continue
            points.append({"series": series, "op": curve["op"], "regime": curve.get("regime"),
                           "operand_bytes": p["operand_bytes"], "bytes_moved": p["bytes_moved"],
                           "median_s": p["median_s"], "bandwidth_bps": p["gbps"] * 1e9})
        a, b = curve.get("fixed_cost_s"), curve.get("asymptotic_gbps")
        fits.append({"series": series, "fixed_cost_s": a, "asymptotic_bps": b * 1e9 if b else None,
                     "n_half_bytes": curve.get("n_half_bytes"), "rms": curve.get("relative_rms_residual"),
                     "points": curve.get("fitted_points"), "note": curve.get("note", "")})
        if a is None or not b:
            continue
        for p in curve.get("points", []):
            fit.append({"series": series, "operand_bytes": p["operand_bytes"], "bandwidth_bps":
                        fitted_bandwidth_bps(p["bytes_moved"], fixed_cost_s=a, asymptotic_bps=b * 1e9)})
    return points, fit, fits


def membw_charts(runs: Runs) -> list[Chart]:
    """Bandwidth against operand size per operation and regime, with the fitted ``t = a + V/b``."""
    many = len(runs) > 1
    parts = [_bandwidth_rows(label, s, many) for label, s in runs]
    points = [r for p, _, _ in parts for r in p]
    if not points:
        return []
    ceilings = [{"series": label, "bandwidth_bps": s["ceiling"]["gbps"] * 1e9,
                 "operand_bytes": s["ceiling"].get("operand_bytes"), "method": s["ceiling"].get("method", "")}
                for label, s in runs if (s.get("ceiling") or {}).get("gbps")]
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


def _latency_sets(runs: Runs) -> dict[str, list[dict[str, Any]]]:
    many = len(runs) > 1
    sets: dict[str, list[dict[str, Any]]] = {"size": [], "plateaus": [], "blocks": [], "knees": []}
    for label, summary in runs:
        for curve in summary.get("size_curves", []):
            series = f"{label} · {curve['page']} pages" if many else f"{curve['page']} pages"
            sets["size"] += [{"series": series, "working_set_bytes": p["working_set_bytes"],
                              "latency_s": p["latency_ns"] * 1e-9} for p in curve.get("points", [])]
            sets["plateaus"] += [{"series": series, "level": p["level"], "latency_s": p["latency_ns"] * 1e-9,
                                  "start_bytes": p["start_bytes"], "end_bytes": p["size_bytes"]}
                                 for p in curve.get("plateaus", [])]
        for curve in summary.get("blocks_curves", []):
            series = f"{label} · {curve['page']} pages" if many else f"{curve['page']} pages"
            by_blocks = {p["blocks"]: p["latency_ns"] for p in curve.get("points", [])}
            sets["blocks"] += [{"series": series, "blocks": b, "latency_s": ns * 1e-9} for b, ns in by_blocks.items()]
            sets["knees"] += [{"series": series, "blocks": k["blocks"], "latency_s": by_blocks.get(k["blocks"], math.nan)
                               * 1e-9, "slope_before_s": k.get("slope_before_ns_per_block", math.nan) * 1e-9,
                               "slope_after_s": k.get("slope_after_ns_per_block", math.nan) * 1e-9}
                              for k in curve.get("knees", [])]
    return sets


def latency_charts(runs: Runs) -> list[Chart]:
    """Latency against working set (plateaus drawn as bars) and against concurrent blocks (knees)."""
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


def gemm_charts(runs: Runs) -> list[Chart]:
    """The charts of the family registered as ``gemm``, through its view (until the report asks
    each family's view itself)."""
    from parity.model.result import RunRecord
    from parity.report.views import RunData, view_for

    view = view_for("gemm")
    if view is None:
        return []
    return view.charts([RunData(label=label, run=RunRecord(run_id=label, created_at=""), summary=summary)
                        for label, summary in runs])
