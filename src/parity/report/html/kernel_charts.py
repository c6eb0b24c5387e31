"""Charts of the GEMM family: the roofline and the efficiency distribution (bandwidth and
latency are drawn by their families' views).

Each function takes ``[(run label, suite summary dict), ...]`` (the summaries the suite stores,
``parity.families.gemm.analysis``) and returns charts; runs are told apart by colour, so two
devices share one chart.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.roofline import attainable_flops
from parity.report.html.chart import (
    INTENSITY,
    NUMBER,
    Chart,
    Column,
    Table,
    log_axis,
    series_color,
    vega_lite,
)

Runs = list[tuple[str, dict[str, Any]]]
ROOF_POINTS = 48  # samples of min(P, AI·B) along the intensity axis, per device


def _shape_rows(label: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for row in summary.get("rows", []):
        for backend, b in (row.get("backends") or {}).items():
            if b.get("achieved_flops") is None:
                continue
            rows.append({"series": label, "shape": row.get("name") or f"{row['m']}x{row['n']}x{row['k']}",
                         "m": row["m"], "n": row["n"], "k": row["k"], "backend": backend,
                         "dtype": summary.get("dtype"), "class": row.get("class") or "unclassified",
                         "arithmetic_intensity": row.get("arithmetic_intensity"),
                         "achieved_flops": b["achieved_flops"], "attainable_flops": b.get("attainable_flops"),
                         "efficiency": b.get("efficiency")})
    return rows


def _roof_rows(label: str, summary: dict[str, Any], lo: float, hi: float) -> list[dict[str, Any]]:
    peak, bw = summary.get("ceiling_flops"), summary.get("bandwidth_bps")
    if not peak or not bw:
        return []
    ridge = peak / bw
    steps = [lo * (hi / lo) ** (i / (ROOF_POINTS - 1)) for i in range(ROOF_POINTS)]
    return [{"series": label, "arithmetic_intensity": ai,
             "attainable_flops": attainable_flops(ai, peak_flops=peak, bandwidth_bps=bw)}
            for ai in sorted({*steps, ridge} if lo <= ridge <= hi else steps)]


def _ceiling_rows(label: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"series": label, "dtype": summary.get("dtype"), "ceiling_flops": summary.get("ceiling_flops"),
             "bandwidth_bps": summary.get("bandwidth_bps"), "ridge": summary.get("ridge_flop_per_byte"),
             "shapes": summary.get("measured")}]


def gemm_charts(runs: Runs) -> list[Chart]:
    """The roofline (every shape against both ceilings, per device) and the efficiency histogram."""
    shapes = [r for label, s in runs for r in _shape_rows(label, s)]
    if not shapes:
        return []
    ais = [r["arithmetic_intensity"] for r in shapes if r["arithmetic_intensity"]]
    ridges = [s["ceiling_flops"] / s["bandwidth_bps"] for _, s in runs
              if s.get("ceiling_flops") and s.get("bandwidth_bps")]
    span = [v for v in ais + ridges if v > 0] or [1.0]
    lo, hi = min(span) / 2, max(span) * 2
    datasets = {"shapes": shapes, "roof": [r for label, s in runs for r in _roof_rows(label, s, lo, hi)],
                "ceilings": [r for label, s in runs for r in _ceiling_rows(label, s)]}
    x = log_axis("arithmetic_intensity", "arithmetic intensity (FLOP/B)", fmt="~g")
    y = log_axis("achieved_flops", "FLOP/s")
    roofline = vega_lite(datasets, {"layer": [
        {"data": {"name": "roof"}, "mark": {"type": "line", "strokeDash": [6, 3]},
         "encoding": {"x": x, "y": {**y, "field": "attainable_flops"}, "color": series_color()}},
        {"data": {"name": "shapes"}, "mark": {"type": "point", "filled": True, "size": 50, "opacity": 0.8},
         "encoding": {"x": x, "y": y, "color": series_color(), "shape": {"field": "class", "type": "nominal"},
                      "tooltip": [{"field": "shape"}, {"field": "backend"}, {"field": "class"},
                                  {"field": "achieved_flops", "format": ".4s"},
                                  {"field": "efficiency", "format": ".1%"}]}},
    ]})
    shape_columns = (Column(field="series", title="run"), Column(field="shape", title="shape"),
                     Column(field="backend", title="backend"), Column(field="class", title="class"),
                     Column(field="arithmetic_intensity", title="AI", unit=INTENSITY),
                     Column(field="achieved_flops", title="achieved", unit="FLOP/s"),
                     Column(field="attainable_flops", title="attainable", unit="FLOP/s"),
                     Column(field="efficiency", title="efficiency", unit="1"))
    ceiling_columns = (Column(field="series", title="run"), Column(field="dtype", title="dtype"),
                       Column(field="ceiling_flops", title="P (compute)", unit="FLOP/s"),
                       Column(field="bandwidth_bps", title="B (copy)", unit="B/s"),
                       Column(field="ridge", title="ridge P/B", unit=INTENSITY),
                       Column(field="shapes", title="shapes", unit=NUMBER))
    histogram = vega_lite({"shapes": shapes}, {
        "data": {"name": "shapes"}, "mark": {"type": "bar", "opacity": 0.7},
        "encoding": {"x": {"field": "efficiency", "type": "quantitative", "bin": {"maxbins": 24},
                           "title": "efficiency: achieved / min(P, AI·B)", "axis": {"format": "%"}},
                     "y": {"aggregate": "count", "type": "quantitative", "title": "shapes", "stack": None,
                           "axis": {"tickMinStep": 1, "format": "d"}},
                     "color": series_color()}}, height=240)
    return [
        Chart(id="gemm-roofline", section="gemm", title="GEMM roofline: every shape against P and B",
              spec=roofline, tables=(Table(dataset="ceilings", columns=ceiling_columns, title="ceilings"),
                                     Table(dataset="shapes", columns=shape_columns, title="shapes")),
              note="Dashed: the roof min(P, AI·B) of each device, P its measured compute ceiling and B its "
                   "measured copy bandwidth; points: each shape's median rate. Log-log."),
        Chart(id="gemm-efficiency", section="gemm", title="GEMM efficiency distribution", spec=histogram,
              tables=(Table(dataset="shapes", columns=shape_columns[:4] + shape_columns[-1:], title="shapes"),),
              note="Shapes per efficiency bin, per device; efficiency over 100% means the shape beat the "
                   "measured ceiling (see the run's findings)."),
    ]


def _view_charts(family: str, runs: Runs) -> list[Chart]:
    """The charts of the family registered as ``family``, through its view (until the report
    asks each family's view itself)."""
    from parity.model.result import RunRecord
    from parity.report.views import RunData, view_for

    view = view_for(family)
    if view is None:
        return []
    return view.charts([RunData(label=label, run=RunRecord(run_id=label, created_at=""), summary=summary)
                        for label, summary in runs])


def membw_charts(runs: Runs) -> list[Chart]:
    """The bandwidth charts, drawn by the view of the family registered as ``membw``."""
    return _view_charts("membw", runs)


def latency_charts(runs: Runs) -> list[Chart]:
    """The latency charts, drawn by the view of the family registered as ``latency``."""
    return _view_charts("latency", runs)
