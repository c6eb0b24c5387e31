"""Charts of the system families: decode throughput per card against TPOT with the targets
(offline engine steps and online serving, each its own chart: offline and online numbers are
never drawn as one series).
"""

from __future__ import annotations

from typing import Any

from parity.model.result import CaseResult
from parity.report.html.chart import NUMBER, Chart, Column, Table, series_color, vega_lite


# The decode families' case metrics: (suite, TPOT metric, throughput metric, what they are).
DECODE_FAMILIES = (
    ("decode", "tpot_s", "tokens_per_s_per_card", "offline (engine step): TPOT = step time / accepted tokens"),
    ("serving", "median_tpot_s", "output_throughput_per_card", "online (server): median TPOT over requests"),
)


def _decode_rows(label: str, cases: list[CaseResult], suite: str, tpot: str, rate: str, many: bool):
    rows = []
    for case in cases:
        if case.suite != suite or case.error or case.metrics.get(tpot) is None:
            continue
        config = case.params.get("config", "")
        config = config if isinstance(config, str) else ",".join(f"{k}={v}" for k, v in sorted(dict(config).items()))
        rows.append({"series": f"{label} · {config}" if many else str(config or suite), "key": case.key,
                     "batch": case.params.get("batch", case.params.get("concurrency")),
                     "tpot_s": case.metrics[tpot], "tokens_per_s_per_card": case.metrics.get(rate)})
    return sorted(rows, key=lambda r: (r["series"], r["tpot_s"]))


def _targets(label: str, figures: list[dict[str, Any]], suite: str, many: bool) -> list[dict[str, Any]]:
    """Figures of ``suite`` whose scope names a TPOT target (``tpot_target_s``): the throughput
    reached at that target, or null where it was not reached."""
    out = []
    for f in figures:
        scope = f.get("scope") or {}
        target = scope.get("tpot_target_s")
        if not f.get("name", "").startswith(f"{suite}.") or target is None:
            continue
        out.append({"series": label if many else f["name"], "figure": f["name"], "tpot_target_s": target,
                    "tokens_per_s_per_card": f.get("value"),
                    "note": f.get("note") or ("" if f.get("value") is not None else "not reached in the measured range")})
    return out


def decode_charts(runs: list[tuple[str, list[CaseResult], list[dict[str, Any]]]]) -> list[Chart]:
    """Tokens/s per card against TPOT, per configuration, with the TPOT targets as rules."""
    charts = []
    many = len(runs) > 1
    for suite, tpot, rate, what in DECODE_FAMILIES:
        points = [r for label, cases, _ in runs for r in _decode_rows(label, cases, suite, tpot, rate, many)]
        if not points:
            continue
        targets = [t for label, _, figures in runs for t in _targets(label, figures, suite, many)]
        x = {"field": "tpot_s", "type": "quantitative", "title": "TPOT (ms per output token)",
             "axis": {"labelExpr": "format(datum.value * 1000, '~g')"}}
        y = {"field": "tokens_per_s_per_card", "type": "quantitative", "title": "tokens/s per card"}
        layers = [{"data": {"name": "points"}, "mark": {"type": "line", "point": True},
                   "encoding": {"x": x, "y": y, "color": series_color(),
                                "tooltip": [{"field": "key"}, {"field": "batch"}]}}]
        reached = [t for t in targets if t["tokens_per_s_per_card"] is not None]
        if targets:
            layers.append({"data": {"name": "targets"}, "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#888"},
                           "encoding": {"x": {**x, "field": "tpot_target_s"}}})
        if reached:
            layers.append({"data": {"name": "reached"}, "mark": {"type": "point", "shape": "cross", "size": 140,
                                                                 "color": "#d62728", "filled": True},
                           "encoding": {"x": {**x, "field": "tpot_target_s"}, "y": y}})
        spec = vega_lite({"points": points, "targets": targets, "reached": reached}, {"layer": layers})
        charts.append(Chart(
            id=f"{suite}-throughput", section="decode", title=f"{suite}: tokens/s per card against TPOT",
            spec=spec, note=f"{what}; dashed rules: TPOT targets, crosses: the throughput reached there "
                            "(interpolated on the Pareto front, never extrapolated).",
            tables=(Table(dataset="targets", title="at the TPOT targets", columns=(
                        Column(field="series", title="figure"), Column(field="tpot_target_s", title="TPOT target",
                                                                       unit="s"),
                        Column(field="tokens_per_s_per_card", title="tokens/s per card", unit=NUMBER),
                        Column(field="note", title="note"))),
                    Table(dataset="points", title="points", columns=(
                        Column(field="series", title="configuration"), Column(field="batch", title="batch",
                                                                              unit=NUMBER),
                        Column(field="tpot_s", title="TPOT", unit="s"),
                        Column(field="tokens_per_s_per_card", title="tokens/s per card", unit=NUMBER))))))
    return charts
