"""How the collectives sweep is drawn: nccl-tests' table for the terminal, and bus bandwidth
against message size for the report.

The table is plain text (nccl-tests' table is text, and users diff it); both take the stored
summary (``CollectivesSummary.to_dict()``, any version) and never measure.
"""

from __future__ import annotations

from typing import Any

from parity.families.collectives.summary import CollectiveRow, CollectivesSummary
from parity.report.html.chart import NUMBER, Chart, Column, Table, log_axis, series_color, vega_lite
from parity.report.views import RunData

SECTION = ("communication", "Communication")
GIGA = 1e9

_HEAD = ("size", "count", "type", "redop", "root")
_GROUP = ("time", "p99", "fastest", "algbw", "busbw", "#wrong")
_UNITS_HEAD = ("(B)", "(elements)", "", "", "")
_UNITS_GROUP = ("(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "")
_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}
_ROOT = {"broadcast": "0", "reduce": "0"}


def microseconds(seconds: float | None) -> str:
    """``seconds`` in µs, one decimal (``n/a`` for None): 2.5e-4 -> ``250.0``."""
    return "n/a" if seconds is None else f"{seconds * 1e6:.1f}"


def gigabytes_per_s(bps: float | None) -> str:
    """``bps`` (B/s) in GB/s, two decimals (``n/a`` for None): 7.68e6 -> ``0.01``."""
    return "n/a" if bps is None else f"{bps / GIGA:.2f}"


def _group_cells(row: CollectiveRow | None) -> list[str]:
    if row is None:
        return ["-"] * len(_GROUP)
    if row.error:
        return ["error"] + [""] * (len(_GROUP) - 2) + ["n/a"]
    return [microseconds(row.time_s), microseconds(row.time_p99_s), microseconds(row.fastest_rank_s),
            gigabytes_per_s(row.algbw_bps), gigabytes_per_s(row.busbw_bps),
            "n/a" if row.wrong is None else str(row.wrong)]


def _format(lines: list[list[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines]


def _dimension_title(dimension: str, row: CollectiveRow) -> str:
    """``inter: 2 groups of 2 ranks at once`` (what an intra or inter table measured)."""
    where = {"intra": "the ranks of each node", "inter": "the i-th rank of every node"}.get(dimension, dimension)
    return f"{dimension}: {row.groups or 1} groups of {row.world_size} ranks at once, {where}"


def render_collectives(summary: dict[str, Any]) -> str:
    """One table per collective: size, count, type, redop, root, then out-of-place and in-place
    groups (time = median of the max over ranks, p99, the fastest rank's median, algbw, busbw,
    #wrong), a units row, and the footer: wrong values, average bus bandwidth, OK or FAILED."""
    typed = CollectivesSummary.from_dict(summary)
    out: list[str] = [f"# parity collectives: {typed.world_size} ranks, backend {typed.backend}; "
                      "time = max over ranks per iteration (median), p99, fastest rank (median)"]
    for dimension, op in dict.fromkeys((r.dimension, r.op) for r in typed.rows):
        keyed: dict[tuple[str, int], dict[str, CollectiveRow]] = {}
        chosen = [r for r in typed.rows if r.op == op and r.dimension == dimension]
        for row in chosen:
            keyed.setdefault((row.dtype, int(row.size_bytes)), {})[row.placement] = row
        lines = [[*_HEAD, *_GROUP, *_GROUP], [*_UNITS_HEAD, *_UNITS_GROUP, *_UNITS_GROUP]]
        for (dtype, size), places in keyed.items():
            first = next(iter(places.values()))
            lines.append([str(size), str(first.count or ""), dtype, _REDOP.get(op, "none"), _ROOT.get(op, "-1"),
                          *_group_cells(places.get("out-of-place")), *_group_cells(places.get("in-place"))])
        title = op if dimension == "world" else f"{op} [{_dimension_title(dimension, chosen[0])}]"
        out.append(f"#\n# {title}{'':>40}out-of-place{'':>40}in-place")
        out.extend(_format(lines))
    out.append(f"# Out of bounds values : {typed.wrong} {'OK' if not typed.wrong else 'FAILED'}")
    out.append(f"# Avg bus bandwidth    : {gigabytes_per_s(typed.avg_busbw_all_bps)} GB/s")
    for dimension, ops in typed.avg_busbw_by_dimension.items():
        averages = ", ".join(f"{op} {gigabytes_per_s(v)}" for op, v in ops.items())
        out.append(f"# Avg bus bandwidth {dimension:<5}: {averages} GB/s")
    out.append("OK" if typed.ok else "FAILED")
    return "\n".join(out)


def busbw_points(runs: list[RunData]) -> list[dict[str, Any]]:
    """One point per timed case of every run: its series (op, dtype, placement; the run's label
    first when there are several runs), S, t, algbw and busbw in B/s, #wrong."""
    many = len(runs) > 1
    points = []
    for data in runs:
        for r in CollectivesSummary.from_dict(data.summary).rows:
            if r.error or r.busbw_bps is None:
                continue
            series = f"{r.op} {r.dtype} {r.placement}".strip()
            if r.dimension != "world":
                series = f"{series} [{r.dimension}]"
            points.append({"series": f"{data.label} · {series}" if many else series, "op": r.op,
                           "dimension": r.dimension,
                           "size_bytes": r.size_bytes, "time_s": r.time_s, "algbw_bps": r.algbw_bps or 0,
                           "busbw_bps": r.busbw_bps, "wrong": r.wrong})
    return points


def collective_charts(runs: list[RunData]) -> list[Chart]:
    """Bus bandwidth (nccl-tests factors) against message size, one line per op and placement."""
    rows = busbw_points(runs)
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
        id="comm-busbw", section=SECTION[0], title="Collective bus bandwidth against size", spec=spec,
        note="busbw = S/t · f with nccl-tests' factors (2(n-1)/n for all_reduce, (n-1)/n for all_gather, "
             "reduce_scatter, all_to_all, 1 otherwise); t: the maximum over ranks per iteration, median.",
        tables=(Table(dataset="points", title="points", columns=(
            Column(field="series", title="collective"), Column(field="size_bytes", title="size", unit="B"),
            Column(field="time_s", title="time", unit="s"), Column(field="algbw_bps", title="algbw", unit="B/s"),
            Column(field="busbw_bps", title="busbw", unit="B/s"), Column(field="wrong", title="#wrong",
                                                                      unit=NUMBER))),))]


class CollectivesView:
    """The collectives family's view (``parity.report.views.View``)."""

    section = SECTION

    def terminal(self, summary: dict[str, Any]) -> str:
        return render_collectives(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return collective_charts(runs)


VIEW = CollectivesView()
