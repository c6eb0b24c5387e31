"""Charts of a profiler trace: the steady-state window's timeline per stream with busy
fractions, and the what-if sensitivity (speedup of a step when one category gets k times faster).

``load_trace_input`` reads and analyses a trace (``parity.trace``: no torch); the chart
functions only draw what it computed. Kernel names are data: they reach the page through the
JSON block and escaped table cells, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parity.model.errors import ParityError
from parity.report.html.chart import NUMBER, RATIO, Chart, Column, Table, vega_lite
from parity.report.trace import format_us
from parity.report.units import time_scale
from parity.trace.table import ActivityTable

MAX_SEGMENTS = 2500  # timeline bars per trace; past it, neighbours closer than a gap are merged
SENSITIVITY_FACTOR = 2  # the what-if run whose sensitivity table is drawn: its busiest category 2x faster
# One colour per category in every trace chart (a category without one is grey).
CATEGORY_COLORS = {"matrix": "#4c78a8", "attention": "#9467bd", "vector": "#54a24b", "communication": "#e45756",
                   "memory": "#f58518", "other": "#b279a2", "unmatched": "#9d9d9d"}


@dataclass(frozen=True, kw_only=True)
class TraceInput:
    """One trace as the report draws it: its analysis and what-if prediction (as dicts) and
    the timeline segments of each rank's window."""

    path: str
    analysis: dict[str, Any]
    whatif: dict[str, Any] | None
    segments: list[dict[str, Any]]
    whatif_note: str = ""


def load_trace_input(path: str | Path, *, rules: str | None = None) -> TraceInput:
    """Load, analyse and predict ``path`` (any format ``parity.trace.load_trace`` reads)."""
    from parity.trace import analyze, categorize, load_rules, load_trace
    from parity.trace.whatif import parse_scale, predict

    table = load_trace([str(path)])
    loaded_rules = load_rules(rules)
    analysis = analyze(table, rules=loaded_rules)
    cats = categorize(table, loaded_rules)
    segments = []
    for rank in analysis.ranks:
        segments += timeline_segments(table, cats.codes, cats.labels, rank=rank.rank,
                                      start_ns=rank.window.start_ns, end_ns=rank.window.end_ns)
    data = analysis.to_dict()
    busiest = next((c["category"] for c in data.get("categories", [])), "matrix")
    try:
        prediction = predict(table, [parse_scale(f"{busiest}={SENSITIVITY_FACTOR}")], rules=loaded_rules,
                             with_sensitivity=True).to_dict()
    except ParityError as exc:  # the timeline still stands; the page says why there is no what-if
        return TraceInput(path=str(path), analysis=data, whatif=None, segments=segments,
                          whatif_note=f"{Path(path).name}: no what-if ({exc})")
    return TraceInput(path=str(path), analysis=data, whatif=prediction, segments=segments)


def timeline_segments(table: ActivityTable, codes: np.ndarray, labels: tuple[str, ...] | list[str], *,
                      rank: int, start_ns: int, end_ns: int, limit: int = MAX_SEGMENTS) -> list[dict[str, Any]]:
    """Device activities of ``rank`` clipped to ``[start_ns, end_ns)``, one bar each, in seconds
    from the window's start; past ``limit`` bars, activities of one stream closer than
    ``|W| / limit`` are merged into one bar (named by its count and first kernel)."""
    mask = table.device_mask() & (table.rank == rank) & (table.end_ns > start_ns) & (table.start_ns < end_ns)
    rows = np.flatnonzero(mask)
    order = np.lexsort((table.start_ns[rows], table.stream[rows], table.device[rows]))
    rows = rows[order]
    gap = (end_ns - start_ns) / limit if len(rows) > limit else None
    out: list[dict[str, Any]] = []
    for row in rows.tolist():
        lane = f"rank {rank} · device {int(table.device[row])} · stream {int(table.stream[row])}"
        s, e = max(int(table.start_ns[row]), start_ns), min(int(table.end_ns[row]), end_ns)
        last = out[-1] if out else None
        if gap is not None and last is not None and last["lane"] == lane and s - last["_end"] <= gap:
            last["_end"] = max(last["_end"], e)
            last["end_s"] = (last["_end"] - start_ns) * 1e-9
            last["kernels"] += 1
            continue
        out.append({"lane": lane, "start_s": (s - start_ns) * 1e-9, "end_s": (e - start_ns) * 1e-9, "_end": e,
                    "category": labels[int(codes[row])], "name": table.names[int(table.name_id[row])],
                    "kernels": 1})
    for seg in out:
        del seg["_end"]
        if seg["kernels"] > 1:
            seg["name"] = f"{seg['kernels']} activities from {seg['name']}"
    return out


def _stream_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"lane": f"rank {s['rank']} · device {s['device']} · stream {s['stream']}",
             "kernels": s["kernels"], "busy_s": s["busy_us"] * 1e-6, "busy_fraction": s["busy_fraction"],
             "share_of_summed": s["share_of_summed"]} for s in analysis.get("streams", [])]


def _kernel_rows(analysis: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"rank": r["rank"], "name": k["name"], "category": k["category"], "count": k["count"],
             "total_s": k["total_us"] * 1e-6, "share_of_summed": k["share_of_summed"]}
            for r in analysis.get("ranks", []) for k in r.get("top_kernels", [])]


def _category_color(segments: list[dict[str, Any]]) -> dict[str, Any]:
    present = sorted({s["category"] for s in segments}, key=lambda c: (c not in CATEGORY_COLORS, c))
    return {"field": "category", "type": "nominal", "legend": {"orient": "bottom"},
            "scale": {"domain": present, "range": [CATEGORY_COLORS.get(c, "#c7c7c7") for c in present]}}


def timeline_chart(index: int, trace: TraceInput) -> Chart:
    """Bars per stream across the window, coloured by category, beside each stream's busy fraction."""
    window = trace.analysis.get("window") or {}
    streams = _stream_rows(trace.analysis)
    lanes = [s["lane"] for s in streams]
    y = {"field": "lane", "type": "nominal", "title": None, "sort": lanes, "axis": {"labelLimit": 260}}
    span = (window.get("length_us") or 0) * 1e-6 or max((s["end_s"] for s in trace.segments), default=0.0)
    unit, scale = time_scale(span)
    in_unit = [{"calculate": f"datum.start_s / {scale!r}", "as": "start_in_unit"},
               {"calculate": f"datum.end_s / {scale!r}", "as": "end_in_unit"}]
    spec = vega_lite({"segments": trace.segments, "streams": streams, "kernels": _kernel_rows(trace.analysis)}, {
        "hconcat": [
            {"data": {"name": "segments"}, "transform": in_unit, "width": 560, "height": {"step": 26},
             "mark": {"type": "bar"},
             "encoding": {"x": {"field": "start_in_unit", "type": "quantitative",
                                "title": f"time in the window ({unit})", "axis": {"format": "~r"}},
                          "x2": {"field": "end_in_unit"}, "y": y,
                          "color": _category_color(trace.segments),
                          "tooltip": [{"field": "name"}, {"field": "category"}, {"field": "kernels"}]}},
            {"data": {"name": "streams"}, "width": 140, "height": {"step": 26},
             "layer": [{"mark": {"type": "bar", "color": "#4c78a8"},
                        "encoding": {"x": {"field": "busy_fraction", "type": "quantitative", "title": "busy",
                                           "scale": {"domain": [0, 1]}, "axis": {"format": "%"}},
                                     "y": {**y, "axis": None}}},
                       {"mark": {"type": "text", "align": "left", "dx": 3},
                        "encoding": {"x": {"field": "busy_fraction", "type": "quantitative"},
                                     "y": {**y, "axis": None},
                                     "text": {"field": "busy_fraction", "format": ".1%"}}}]},
        ]})
    return Chart(
        id=f"trace-{index}-timeline", section="traces", title=f"Timeline of the window: {Path(trace.path).name}",
        spec=spec,
        note=(f"Window {format_us(window.get('length_us', 0))} ({window.get('source', '?')}: "
              f"{window.get('detail', '')}). Busy fraction = union of the stream's intervals / window."),
        tables=(Table(dataset="streams", title="streams", columns=(
                    Column(field="lane", title="stream"), Column(field="kernels", title="activities", unit=NUMBER),
                    Column(field="busy_s", title="busy", unit="s"),
                    Column(field="busy_fraction", title="busy fraction", unit="1"),
                    Column(field="share_of_summed", title="share of summed", unit="1"))),
                Table(dataset="kernels", title="top kernels", columns=(
                    Column(field="rank", title="rank", unit=NUMBER), Column(field="name", title="kernel"),
                    Column(field="category", title="category"), Column(field="count", title="count", unit=NUMBER),
                    Column(field="total_s", title="total", unit="s"),
                    Column(field="share_of_summed", title="share", unit="1")))))


def sensitivity_chart(index: int, trace: TraceInput) -> Chart | None:
    """Speedup against k per category: first order and replay as lines, the bounds as a band."""
    table = (trace.whatif or {}).get("sensitivity") or {}
    rows = [{**r, "k_label": "inf" if r["k"] == "inf" else f"{float(r['k']):g}",
             "k": None if r["k"] == "inf" else r["k"]} for r in table.get("rows", [])]
    if not rows:
        return None
    order = list(dict.fromkeys(r["k_label"] for r in rows))
    x = {"field": "k_label", "type": "ordinal", "sort": order, "title": "k (times faster)"}
    speedup = {"type": "quantitative", "title": "step speedup", "scale": {"zero": False}}
    spec = vega_lite({"rows": rows}, {
        "data": {"name": "rows"}, "facet": {"column": {"field": "category", "type": "nominal", "title": None}},
        "spec": {"width": 150, "height": 200, "layer": [
            {"mark": {"type": "area", "opacity": 0.25, "color": "#4c78a8"},
             "encoding": {"x": x, "y": {**speedup, "field": "low"}, "y2": {"field": "high"}}},
            {"transform": [{"fold": ["first_order", "replay"], "as": ["method", "speedup"]}],
             "mark": {"type": "line", "point": True},
             "encoding": {"x": x, "y": {**speedup, "field": "speedup"},
                          "color": {"field": "method", "type": "nominal", "legend": {"orient": "bottom"}}}},
            *_outside_bounds_layer(rows, x, speedup),
        ]}})
    return Chart(
        id=f"trace-{index}-sensitivity", section="whatif", title=f"What-if sensitivity: {Path(trace.path).name}",
        spec=spec, note="Band: the lowest and highest speedups consistent with the trace (hidden time may save "
                        "nothing, exposed time saves fully); lines: first order (critical stream) and replay "
                        "of the dependency graph; a red ring: a replay outside its own bounds (invalid, see the "
                        "finding beside the chart); an amber ring: a replay between 1 and its bounds where ops "
                        "waited for work elsewhere (their launch on the host, another stream), which the bounds "
                        "leave out.",
        tables=(Table(dataset="rows", title="speedup", columns=(
            Column(field="category", title="category"), Column(field="k_label", title="k"),
            Column(field="first_order", title="first order", unit=RATIO),
            Column(field="low", title="bound low", unit=RATIO), Column(field="high", title="bound high", unit=RATIO),
            Column(field="replay", title="replay", unit=RATIO),
            Column(field="invalid", title="replay outside bounds"),
            Column(field="waits_elsewhere", title="replay between 1 and bounds, ops wait elsewhere"),
            Column(field="first_order_outside", title="first order outside bounds"))),),
        findings=tuple([*(trace.whatif or {}).get("findings", []), *table.get("findings", [])]))


def _outside_bounds_layer(rows: list[dict[str, Any]], x: dict[str, Any], speedup: dict[str, Any]) -> list[dict[str, Any]]:
    """A ring on each replayed speedup outside its own bounds: red where it is invalid, amber
    where ops waiting for work elsewhere explain it (no layer for a flag no row has: an empty
    layer makes Vega warn)."""
    return [{"transform": [{"filter": f"datum.{flag} === true"}],
             "mark": {"type": "point", "shape": "circle", "filled": False, "size": 220, "strokeWidth": 2.5,
                      "color": colour},
             "encoding": {"x": x, "y": {**speedup, "field": "replay"},
                          "tooltip": [{"field": "category"}, {"field": "k_label", "title": "k"},
                                      {"field": "replay", "format": ".3f"}, {"field": "low", "format": ".3f"},
                                      {"field": "high", "format": ".3f"}]}}
            for flag, colour in (("invalid", "#b3261e"), ("waits_elsewhere", "#c77c02")) if any(r.get(flag) for r in rows)]


def trace_charts(traces: list[TraceInput]) -> list[Chart]:
    charts: list[Chart] = []
    for i, trace in enumerate(traces):
        charts.append(timeline_chart(i, trace))
        sens = sensitivity_chart(i, trace)
        if sens is not None:
            charts.append(sens)
    return charts
