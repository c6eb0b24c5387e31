"""How the decode family is drawn: the offline sweep's terminal tables, an online sweep's table
(``parity decode online``) and the HTML charts of tokens/s per card against TPOT.

Never measures, never prints. Every offline table says it is offline, the TPOT statistic, the
card count, the layer scaling and what the numbers exclude; offline and online numbers are each
their own chart, never one series. Values arrive in SI units and are formatted here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from parity.families.decode.summary import DecodeSummary
from parity.model.result import CaseResult
from parity.report.html.chart import NUMBER, Chart, Column, Table, series_color, vega_lite
from parity.report.units import format_bytes
from parity.report.views import RunData

# ----------------------------------------------------------------------------- offline, terminal


def _layers(summary: DecodeSummary) -> str:
    run, total = summary.layers_run or {}, summary.layers_total or {}
    return ", ".join(f"{kind} {run[kind]} of {total.get(kind)}" for kind in run)


def _number(value: float | None, digits: str = ".3g") -> str:
    return "-" if value is None else format(value, digits)


def _throughput(value: float | None) -> str:
    return "-" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.3g}")


def render_decode(summary: dict[str, Any]) -> RenderableType:
    """The header with the method, one row per batch, the front, and one row per TPOT target."""
    s = DecodeSummary.from_dict(summary)
    on_front = {p.batch for p in s.pareto}
    head = Text(
        f"offline engine step, {s.config} ({s.dtype}), context {s.context}, "
        f"{s.cards} card(s), accepted tokens per step {s.accepted_tokens_per_step}\n"
        f"TPOT = {s.tpot_statistic} / accepted tokens; excludes {s.excludes}; "
        f"never compared with online numbers\n"
        f"layers run: {_layers(s)}; {s.scaling}")
    table = RichTable(title="batch sweep", title_justify="left")
    for column in ("batch", "step (ms)", "TPOT (ms)", "tok/s per card", "tok/s per user", "memory", "FLOP/B",
                   "front", "check"):
        table.add_column(column, justify="right")
    for p in s.points:
        table.add_row(str(p.batch), _number(p.step_s * 1e3), _number(p.tpot_s * 1e3),
                      _throughput(p.tokens_per_s_per_card), _throughput(1.0 / p.tpot_s),
                      format_bytes(p.memory_bytes), _number(p.arithmetic_intensity), "*" if p.batch in on_front else "",
                      "ok" if p.ok else "FAILED")
    targets = RichTable(title="throughput at TPOT targets (tok/s per card)", title_justify="left")
    for column in ("TPOT target (ms)", "tok/s per card", "status", "reason"):
        targets.add_column(column, justify="right" if column != "reason" else "left")
    for entry in s.at_target:
        targets.add_row(f"{entry.tpot_target_s * 1e3:g}",
                        "not reached" if entry.value is None else _throughput(entry.value), entry.status, entry.reason)
    parts: list[RenderableType] = [head, table, targets]
    for finding in s.findings:
        parts.append(Text(f"{finding['severity']}: {finding['message']}; {finding['hint']}"))
    parts.append(Text(f"FAILED: {', '.join(s.failed)} (not on the front)" if s.failed else "OK: every case checked"))
    parts.append(Text("tok/s per user = 1000 / TPOT_ms (InferenceX's interactivity); * = on the Pareto front"))
    return Group(*parts)


# ------------------------------------------------------------------------------ online, terminal

SERVING_COLUMNS = (
    ("level", None), ("done", "completed"), ("TTFT p50", "median_ttft_ms"), ("TPOT p50", "median_tpot_ms"),
    ("TPOT p99", "p99_tpot_ms"), ("ITL p50", "median_itl_ms"), ("E2E p50", "median_e2el_ms"),
    ("tok/s", "output_throughput"), ("/card", "output_throughput_per_card"), ("req/s", "request_throughput"),
    ("goodput", "request_goodput"), ("cache hit", None), ("KV use", None), ("client", None), ("findings", None),
)
# Columns left out when they would say nothing: per card on one card, goodput without an SLO,
# the server's columns when it exposes no metrics.
OPTIONAL = {"/card", "goodput", "cache hit", "KV use", "client"}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _level_name(row: dict[str, Any]) -> str:
    limit = row.get("max_concurrency")
    rate = row.get("request_rate")
    parts = [f"c={limit}" if limit is not None else "c=unbounded"]
    if rate not in (None, "inf"):
        parts.append(f"{rate:g} req/s")
    if isinstance(row.get("repeat"), int) and row["repeat"] > 1:
        parts.append(f"#{row['repeat']}")
    return " ".join(parts)


def _share(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.0%}"


def _serving_cell(header: str, key: str | None, row: dict[str, Any]) -> str:
    client, server = row.get("client") or {}, row.get("server") or {}
    if header == "level":
        return _level_name(row)
    if header == "client":  # none for an imported result: its client's load was not measured
        return f"{client['busy_fraction_max']:.0%} x{client.get('procs', 1)}" if client else "-"
    if header == "cache hit":
        return _share(server.get("prefix_cache_hit_rate"))
    if header == "KV use":
        return _share(server.get("kv_cache_usage_max"))
    if header == "findings":
        return ",".join(row.get("findings", [])) or "-"
    return _cell(row.get(key)) if key else "-"


def serving_table(rows: Sequence[dict[str, Any]], *, title: str) -> RichTable:
    """One row per level of an online sweep (its vLLM-named fields, in vLLM's units: ms and
    tokens/s), the server's prefix-cache hit rate and peak KV cache use (from its /metrics),
    the client's own load and the level's finding codes. Columns that would be all "-" (or per
    card on one card) are left out, and finding codes wrap rather than being cut."""
    cells = [[_serving_cell(h, k, row) for h, k in SERVING_COLUMNS] for row in rows]
    keep = [i for i, (header, _) in enumerate(SERVING_COLUMNS)
            if header not in OPTIONAL or any(c[i] != "-" for c in cells)]
    if all((row.get("cards") or 1) == 1 for row in rows):
        keep = [i for i in keep if SERVING_COLUMNS[i][0] != "/card"]
    table = RichTable(title=title, title_justify="left", box=box.SIMPLE_HEAD,
                      caption="times in ms; tok/s: output tokens per second (/card: per card); goodput in req/s; "
                              "cache hit: the server's prefix-cache hits over the level; KV use: its peak; "
                              "client: busiest client process's CPU share x processes", caption_justify="left")
    for i in keep:
        header = SERVING_COLUMNS[i][0]
        table.add_column(header, justify="left" if header in ("level", "findings") else "right",
                         overflow="fold" if header == "findings" else "ellipsis",
                         min_width=len("findings") if header == "findings" else None, no_wrap=header == "level")
    for row, row_cells in zip(rows, cells):
        table.add_row(*(row_cells[i] for i in keep), style="red" if row.get("failed") else None)
    return table


def fitted_console(console: Any, renderable: Any) -> Any:
    """``console``, widened off a terminal to what ``renderable`` needs (a log or a pipe has no
    width to keep to, so no column is cut); a terminal keeps its own width."""
    if not console.is_terminal:
        from rich.measure import Measurement

        wide = console.options.update_width(10_000)
        console.width = max(console.width, Measurement.get(console, wide, renderable).maximum)
    return console


def render_serving(summary: dict[str, Any]) -> RenderableType:
    """An online sweep's stored summary (``parity runs show``): its levels' table, then the
    TPOT search or target answers where there are any."""
    levels = summary.get("levels") or []
    parts: list[RenderableType] = [serving_table(levels, title="online serving levels (suite serving)")]
    search = summary.get("search")
    if search:
        what = "request rate" if "request_rate" in search else "concurrency"
        found = search.get("request_rate", search.get("concurrency"))
        parts.append(Text(f"search: highest {what} meeting TPOT {search.get('tpot_statistic')} <= "
                          f"{search.get('tpot_target_ms'):g} ms: {found or 'not reached'} "
                          f"({search.get('status')}; lowest failing {search.get('lowest_failing')}; "
                          f"{search.get('method')})"))
    for entry in (summary.get("tpot_target") or {}).get("at_target") or []:
        value = entry.get("value")
        value = value if isinstance(value, (int, float)) else None
        parts.append(Text(f"at TPOT {entry.get('tpot_ms', 0):g} ms: "
                          f"{'not reached' if value is None else _throughput(value)} tok/s per card "
                          f"({entry.get('status')})"))
    return Group(*parts)


# ------------------------------------------------------------------------------------ HTML charts

# The decode suites' case metrics: (suite, TPOT metric, throughput metric, what they are).
SUITES = (
    ("decode", "tpot_s", "tokens_per_s_per_card", "offline (engine step): TPOT = step time / accepted tokens"),
    ("serving", "median_tpot_s", "output_throughput_per_card", "online (server): median TPOT over requests"),
)


def _points(label: str, cases: list[CaseResult], suite: str, tpot: str, rate: str, many: bool) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        if case.suite != suite or case.error or case.metrics.get(tpot) is None:
            continue
        config = case.params.get("config", "")
        config = config if isinstance(config, str) else ",".join(f"{k}={v}" for k, v in sorted(dict(config).items()))
        rows.append({"series": f"{label} · {config}" if many else str(config or suite), "key": case.key,
                     "batch": case.params.get("batch", case.params.get("max_concurrency", case.params.get("concurrency"))),
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


def _chart(suite: str, what: str, points: list[dict[str, Any]], targets: list[dict[str, Any]]) -> Chart:
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
    return Chart(
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
                    Column(field="tokens_per_s_per_card", title="tokens/s per card", unit=NUMBER)))))


def decode_charts(runs: list[RunData]) -> list[Chart]:
    """Tokens/s per card against TPOT, per configuration, with the TPOT targets as rules: one
    chart for the offline engine step (suite decode), one for online serving (suite serving)."""
    charts = []
    many = len(runs) > 1
    for suite, tpot, rate, what in SUITES:
        points = [r for run in runs for r in _points(run.label, run.cases, suite, tpot, rate, many)]
        if not points:
            continue
        targets = [t for run in runs for t in _targets(run.label, run.figures, suite, many)]
        charts.append(_chart(suite, what, points, targets))
    return charts


class DecodeView:
    """The decode family's view (``parity.report.views.View``)."""

    section = ("decode", "Decode throughput")

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        online_headline = "best_output_tok_s_per_card" in (summary.get("headline") or {})
        if summary.get("mode") == "online" or "levels" in summary or ("points" not in summary and online_headline):
            return render_serving(summary)  # a serving run (one stored before levels were kept: no rows)
        return render_decode(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return decode_charts(runs)


VIEW = DecodeView()
