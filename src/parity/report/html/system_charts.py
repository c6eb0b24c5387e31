"""Charts of the system families: collective bus bandwidth against size."""

from __future__ import annotations

from typing import Any

from parity.report.html.chart import NUMBER, Chart, Column, Table, log_axis, series_color, vega_lite

Runs = list[tuple[str, dict[str, Any]]]


def collective_charts(runs: Runs) -> list[Chart]:
    """Bus bandwidth (nccl-tests factors) against message size, one line per op and placement."""
    many = len(runs) > 1
    rows = []
    for label, summary in runs:
        for r in summary.get("rows", []):
            if r.get("error") or r.get("busbw_gbps") is None:
                continue
            series = f"{r['op']} {r.get('dtype', '')} {r.get('placement', '')}".strip()
            rows.append({"series": f"{label} · {series}" if many else series, "op": r["op"],
                         "size_bytes": r["size_bytes"], "time_s": r.get("time_s"),
                         "algbw_bps": (r.get("algbw_gbps") or 0) * 1e9, "busbw_bps": r["busbw_gbps"] * 1e9,
                         "wrong": r.get("wrong")})
    if not rows:
        return []
    spec = vega_lite({"points": rows}, {
        "data": {"name": "points"}, "mark": {"type": "line", "point": True},
        "encoding": {"x": log_axis("size_bytes", "message size S (B)"),
                     "y": {"field": "busbw_bps", "type": "quantitative", "title": "bus bandwidth (B/s)",
                           "axis": {"format": "~s"}},
                     "color": series_color(),
                     "tooltip": [{"field": "series"}, {"field": "size_bytes", "format": ".4s"},
                                 {"field": "busbw_bps", "format": ".4s"}]}}, height=320)
    return [Chart(
        id="comm-busbw", section="communication", title="Collective bus bandwidth against size", spec=spec,
        note="busbw = S/t · f with nccl-tests' factors (2(n-1)/n for all_reduce, (n-1)/n for all_gather, "
             "reduce_scatter, all_to_all, 1 otherwise); t: the maximum over ranks per iteration, median.",
        tables=(Table(dataset="points", title="points", columns=(
            Column(field="series", title="collective"), Column(field="size_bytes", title="size", unit="B"),
            Column(field="time_s", title="time", unit="s"), Column(field="algbw_bps", title="algbw", unit="B/s"),
            Column(field="busbw_bps", title="busbw", unit="B/s"), Column(field="wrong", title="#wrong",
                                                                      unit=NUMBER))),))]
