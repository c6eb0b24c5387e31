"""How the overlap suite is drawn: a line per case for the terminal; for the report, each
case's times alone and together, and the overlap achieved. Both take the stored summary
(``OverlapSummary.to_dict()``) and never measure."""

from __future__ import annotations

from typing import Any

from parity.families.collectives.views import SECTION, microseconds
from parity.families.overlap.summary import OverlapRow, OverlapSummary
from parity.report.html.chart import RATIO, Chart, Column, Table, vega_lite
from parity.report.views import RunData


def render_overlap(summary: dict[str, Any]) -> str:
    """Per compute kernel: the exchange's and the kernel's time alone and together, the slowdown
    of each, and the overlap achieved."""
    typed = OverlapSummary.from_dict(summary)
    out = [f"# parity overlap: {typed.world_size} ranks, backend {typed.backend}; "
           "times are medians of the max over ranks per iteration"]
    for row in typed.rows:
        if row.error:
            out.append(f"{row.key}: error: {row.error}")
            continue
        out.append(f"{row.key}: exchange alone {microseconds(row.exchange_alone_s)} us, together "
                   f"{microseconds(row.exchange_together_s)} us (x{row.exchange_slowdown:.2f}); "
                   f"{row.kernel} alone {microseconds(row.kernel_alone_s)} us, together "
                   f"{microseconds(row.kernel_together_s)} us (x{row.kernel_slowdown:.2f}); both "
                   f"{microseconds(row.both_s)} us, overlap achieved {row.overlap_fraction:.0%}")
    out.append("OK" if typed.ok else "FAILED")
    return "\n".join(out)


def _measured(runs: list[RunData]) -> list[tuple[str, OverlapRow]]:
    """(case label, row) of every timed case of every run; the run's label first when several."""
    many = len(runs) > 1
    return [(f"{data.label} · {row.key}" if many else row.key, row)
            for data in runs for row in OverlapSummary.from_dict(data.summary).rows
            if not row.error and row.both_s is not None]


def time_points(runs: list[RunData]) -> list[dict[str, Any]]:
    """Five points per case: the exchange and the kernel, each alone and together, and both
    (the pair's wall time, drawn as together), s."""
    points = []
    for case, row in _measured(runs):
        kernel = row.kernel or "kernel"
        for what, how, seconds in (("exchange", "alone", row.exchange_alone_s),
                                   ("exchange", "together", row.exchange_together_s),
                                   (kernel, "alone", row.kernel_alone_s), (kernel, "together", row.kernel_together_s),
                                   ("both", "together", row.both_s)):
            points.append({"case": case, "work": what, "mode": how, "time_s": seconds})
    return points


def overlap_points(runs: list[RunData]) -> list[dict[str, Any]]:
    """One point per case: the overlap achieved and both slowdowns (ratios)."""
    return [{"case": case, "kernel": row.kernel, "overlap_fraction": row.overlap_fraction,
             "exchange_slowdown": row.exchange_slowdown, "kernel_slowdown": row.kernel_slowdown}
            for case, row in _measured(runs)]


def overlap_charts(runs: list[RunData]) -> list[Chart]:
    """Times alone and together per case; the overlap achieved per case."""
    times, fractions = time_points(runs), overlap_points(runs)
    if not times:
        return []
    times_spec = vega_lite({"times": times}, {
        "data": {"name": "times"},
        "facet": {"column": {"field": "case", "type": "nominal", "title": None, "sort": None}},
        "spec": {"width": 240, "height": 260, "mark": {"type": "bar"},
                 "encoding": {"x": {"field": "work", "type": "nominal", "title": None, "sort": None},
                              "xOffset": {"field": "mode", "type": "nominal", "sort": ["alone", "together"]},
                              "y": {"field": "time_s", "type": "quantitative", "title": "time (s)",
                                    "axis": {"format": "~s"}},
                              "color": {"field": "mode", "type": "nominal", "title": None,
                                        "sort": ["alone", "together"], "legend": {"orient": "bottom"}},
                              "tooltip": [{"field": "case"}, {"field": "work"}, {"field": "mode"},
                                          {"field": "time_s", "format": ".4s"}]}}})
    fraction_spec = vega_lite({"overlap": fractions}, {
        "data": {"name": "overlap"}, "mark": {"type": "bar"},
        "encoding": {"x": {"field": "case", "type": "nominal", "title": None, "sort": None},
                     "y": {"field": "overlap_fraction", "type": "quantitative", "title": "overlap achieved",
                           "axis": {"format": "%"}},
                     "tooltip": [{"field": "case"}, {"field": "overlap_fraction", "format": ".0%"},
                                 {"field": "exchange_slowdown", "format": ".2f"},
                                 {"field": "kernel_slowdown", "format": ".2f"}]}}, height=260)
    return [
        Chart(id="overlap-times", section=SECTION[0], title="Overlap: times alone and together", spec=times_spec,
              note="Per case, the MoE exchange and the compute kernel each run alone and together (the kernel in a "
                   "second thread), and both: the wall time of the pair. Each bar is the median of the maximum over "
                   "ranks per iteration; slowdown = together / alone.",
              tables=(Table(dataset="times", title="times", columns=(
                  Column(field="case", title="case"), Column(field="work", title="work"),
                  Column(field="mode", title="alone or together"), Column(field="time_s", title="time", unit="s"))),)),
        Chart(id="overlap-fraction", section=SECTION[0], title="Overlap achieved per case", spec=fraction_spec,
              note="Overlap achieved = (a + b - both) / min(a, b) from the medians alone (a, b) and together "
                   "(both): 100% when the shorter work is fully hidden, 0 when the two run one after the other, "
                   "below 0 when running them together costs more (kept, not clipped).",
              tables=(Table(dataset="overlap", title="overlap", columns=(
                  Column(field="case", title="case"), Column(field="kernel", title="kernel"),
                  Column(field="overlap_fraction", title="overlap achieved", unit="1"),
                  Column(field="exchange_slowdown", title="exchange slowdown", unit=RATIO),
                  Column(field="kernel_slowdown", title="kernel slowdown", unit=RATIO))),),
              findings=tuple(figure_findings(runs))),
    ]


def figure_findings(runs: list[RunData]) -> list[dict[str, Any]]:
    """The ``invalid`` findings of the runs' overlap figures, each naming its figure and case."""
    many = len(runs) > 1
    out = []
    for data in runs:
        for figure in data.figures:
            case = (figure.get("scope") or {}).get("case")
            where = f"{data.label} · {case}" if many else str(case)
            out += [{**f, "message": f"{figure.get('name')} [{where}]: {f.get('message')}"}
                    for f in figure.get("findings") or [] if f.get("code") == "invalid"]
    return out


class OverlapView:
    """The overlap family's view (``parity.report.views.View``)."""

    section = SECTION

    def terminal(self, summary: dict[str, Any]) -> str:
        return render_overlap(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return overlap_charts(runs)


VIEW = OverlapView()
