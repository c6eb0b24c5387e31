"""How the MoE exchange is drawn: a block per exchange for the terminal, and its rate in every
labelled byte convention for the report. Both take the stored summary
(``MoeSummary.to_dict()``, any version) and never measure."""

from __future__ import annotations

from typing import Any

from parity.families.collectives.views import SECTION, gigabytes_per_s, microseconds
from parity.families.moe.summary import MoeSummary
from parity.report.html.chart import Chart, Column, Table, series_color, vega_lite
from parity.report.views import RunData

CHART_ID = "moe-rates"


def render_moe(summary: dict[str, Any]) -> str:
    """One block per exchange: time (max over ranks: p50, p99; fastest rank), then GB/s in each
    labelled convention, then the check, and OK or FAILED."""
    typed = MoeSummary.from_dict(summary)
    where = ""
    if typed.topology:
        nodes, per_node = typed.topology.get("nodes"), typed.topology.get("ranks_per_node")
        where = f" on {nodes} node{'' if nodes == 1 else 's'} of {per_node} rank{'' if per_node == 1 else 's'}"
    out = [f"# parity moe: {typed.world_size} ranks{where}, backend {typed.backend}; "
           "time = max over ranks per iteration; bytes per rank (mean over ranks)"]
    for row in typed.rows:
        head = f"{row.key}: "
        if row.error:
            out.append(head + f"error: {row.error}")
            continue
        out.append(head + f"p50 {microseconds(row.time_s)} us, p99 {microseconds(row.time_p99_s)} us, "
                          f"fastest rank {microseconds(row.fastest_rank_s)} us; check "
                          f"{'passed' if row.ok else 'FAILED'} ({row.check_method})")
        for conv in row.conventions:
            out.append(f"    {gigabytes_per_s(conv.bps):>10} GB/s  {conv.bytes:>14,.0f} B  {conv.convention}")
    if typed.imbalance_ratio is not None:
        out.append(f"# routing {typed.routing}: imbalance (max/mean tokens per expert) "
                   f"{typed.imbalance_ratio:.2f}, hash {(typed.routing_digest or '')[:16]}")
    for library, note in typed.library_backends.items():
        out.append(f"# {library}: {note}")
    out.append("OK" if typed.ok else "FAILED")
    return "\n".join(out)


def rate_points(runs: list[RunData]) -> list[dict[str, Any]]:
    """One point per measured exchange and convention of every run: the case (preset, dispatch
    dtype, direction; the run's label first when there are several runs), the convention, its
    bytes per rank and its rate, B/s."""
    many = len(runs) > 1
    points = []
    for data in runs:
        for row in MoeSummary.from_dict(data.summary).rows:
            if row.error:
                continue
            for conv in row.conventions:
                if conv.bps is None:
                    continue
                points.append({"case": f"{data.label} · {row.key}" if many else row.key,
                               "direction": row.direction, "dispatch_dtype": row.dispatch_dtype,
                               "series": conv.name, "convention": conv.convention, "bytes": conv.bytes,
                               "time_s": row.time_s, "bps": conv.bps})
    return points


def moe_charts(runs: list[RunData]) -> list[Chart]:
    """The rate of each exchange (dispatch and combine of each preset and dtype) in each byte
    convention, bars side by side."""
    points = rate_points(runs)
    if not points:
        return []
    spec = vega_lite({"rates": points}, {
        "data": {"name": "rates"}, "mark": {"type": "bar"},
        "encoding": {"x": {"field": "case", "type": "nominal", "title": "exchange (preset/dtype/direction)",
                           "sort": None,  # every bar named: preset, dtype and direction on lines of their own
                           "axis": {"labelAngle": 0, "labelOverlap": False, "labelExpr": "split(datum.label, '/')"}},
                     "xOffset": {"field": "series", "type": "nominal", "sort": None},
                     "y": {"field": "bps", "type": "quantitative", "title": "rate (B/s)", "axis": {"format": "~s"}},
                     "color": series_color(title="convention"),
                     "tooltip": [{"field": "case"}, {"field": "convention"}, {"field": "bytes", "format": ",.0f"},
                                 {"field": "bps", "format": ".4s"}]}}, height=300)
    return [Chart(
        id=CHART_ID, section=SECTION[0], title="MoE dispatch and combine: rate per byte convention", spec=spec,
        note="Each bar: bytes per rank (mean over ranks) / t, t the median of the maximum over ranks per "
             "iteration. algorithm: DeepEP's bytes, every top-k copy; logical: one row per destination rank; "
             "cross_rank: rows to other ranks only; bus: logical/t · (n-1)/n; where the nodes are known, "
             "scale_up: cross-rank rows to the same node, scale_out: rows to other nodes (their sum is "
             "cross_rank). The conventions count "
             "different bytes for the same exchange, so compare bars of one convention only.",
        tables=(Table(dataset="rates", title="rates", columns=(
            Column(field="case", title="exchange"), Column(field="series", title="convention"),
            Column(field="bytes", title="bytes per rank", unit="B"), Column(field="time_s", title="time", unit="s"),
            Column(field="bps", title="rate", unit="B/s"))),))]


class MoeView:
    """The MoE family's view (``parity.report.views.View``)."""

    section = SECTION

    def terminal(self, summary: dict[str, Any]) -> str:
        return render_moe(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return moe_charts(runs)


VIEW = MoeView()
