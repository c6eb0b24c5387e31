"""The demo family's view: its summary as a table, and one chart of rate against size."""

from __future__ import annotations

from typing import Any

from rich.table import Table as RichTable

from parity.report.html.chart import Chart, Column, Table, log_axis, series_color, vega_lite
from parity.report.views import RunData
from parity_plugin_demo.summary import DemoSummary

CHART_ID = "demo-rate-by-size"


class DemoView:
    section = ("demo", "Demo: sums on the CPU")

    def terminal(self, summary: dict[str, Any]) -> RichTable:
        typed = DemoSummary.from_dict(summary)
        table = RichTable(title=f"demo: {typed.cases} sizes", title_justify="left")
        table.add_column("case")
        table.add_column("n", justify="right")
        table.add_column("GFLOP/s", justify="right")
        for key, rate in typed.rates.items():
            table.add_row(key, str(typed.sizes.get(key, "")), f"{rate / 1e9:.4g}")
        table.add_row("best", "", f"{typed.best_flop_per_s / 1e9:.4g}")
        return table

    def charts(self, runs: list[RunData]) -> list[Chart]:
        many = len(runs) > 1
        points = [{"series": data.label if many else "rate", "key": c.key, "n": c.params.get("n"),
                   "flop_per_s": c.metrics["flop_per_s"]}
                  for data in runs for c in data.cases if c.error is None and c.metrics.get("flop_per_s")]
        if not points:
            return []
        spec = vega_lite({"points": points}, {
            "data": {"name": "points"}, "mark": {"type": "line", "point": True},
            "encoding": {"x": log_axis("n", "elements summed"),
                         "y": {"field": "flop_per_s", "type": "quantitative", "title": "FLOP/s"},
                         "color": series_color()}})
        return [Chart(id=CHART_ID, section=self.section[0], title="Demo: rate against size", spec=spec,
                      note="(n - 1) additions over the median time of a sum of n floats.",
                      tables=(Table(dataset="points", columns=(
                          Column(field="series", title="run"), Column(field="n", title="n", unit="number"),
                          Column(field="flop_per_s", title="rate", unit="FLOP/s"))),))]


VIEW = DemoView()
