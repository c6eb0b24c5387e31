"""Charts of a fleet trace analysis (``parity trace fleet``'s output folder): a rank-by-step
heatmap, the arrival skew distribution per op, the straggler vote, every rank's figures, and
the fleet's headline, each with the findings of ``fleet.json`` that concern it beside it.

Only draws what the reduce wrote (``parity.trace.fleet.folder``); the binning that keeps a
1,024-rank page small is :mod:`parity.report.html.fleet_cells`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parity.report.html.chart import NUMBER, RATIO, Chart, Column, Table, flatten, tables_only, vega_lite
from parity.report.html.fleet_cells import MEASURES, heatmap_cells, skew_histogram, step_rows
from parity.trace.fleet.folder import FleetFolder, fleet_headline, straggler_rows

MAX_TABLE_RANKS = 1024  # rows of the per-rank and straggler tables (the rest stay in the Parquet files)
MAX_BARS = 32  # ranks in the straggler chart, most often last first
SECTION = "fleet"
# columns the reduce added at the stragglers table's end (shown where the table has them)
OPTIONAL_STRAGGLER_COLUMNS = {"median_margin": "median margin", "mean_step_cost": "step cost, mean",
                              "held": "time held", "fair_held": "fair time held"}
# where a finding is shown: the first chart whose words occur in its code (else the summary)
FINDING_ROUTES = (("stragglers", ("straggl", "last", "slow-rank", "vote")),
                  ("skew", ("skew", "wait", "collective", "busbw", "p2p", "match", "link", "scope", "imbalance",
                            "incomplete", "group")),
                  ("heatmap", ("step",)), ("ranks", ("rank",)))
TABLE_ROUTES = {"stragglers": "stragglers", "collectives": "skew", "arrivals": "skew", "steps": "heatmap",
                "ranks": "ranks"}


def route_findings(findings: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each finding to the chart it concerns: its ``table`` when it names one, else by the
    words of its ``code`` (``straggler-by-arrival`` -> the straggler chart), else the summary."""
    routed: dict[str, list[dict[str, Any]]] = {}
    for finding in findings:
        target = TABLE_ROUTES.get(str(finding.get("table", "")))
        code = str(finding.get("code", "")).lower()
        if target is None:
            target = next((chart for chart, words in FINDING_ROUTES if any(w in code for w in words)), "summary")
        routed.setdefault(target, []).append(finding)
    return routed


def _ns_to_s(row: dict[str, Any], *names: str) -> dict[str, Any]:
    out = dict(row)
    for name in names:
        value = out.pop(f"{name}_ns")
        out[f"{name}_s"] = None if value is None else value / 1e9
    return out


def summary_chart(index: int, folder: FleetFolder, headline: dict[str, Any], findings: list[dict[str, Any]]) -> Chart:
    """Tables only: the headline figures and fleet.json's own keys, with the findings no chart claims."""
    named, doubted = headline["straggler_ranks"], set(headline.get("straggler_ranks_in_doubt") or ())
    figures = [
        {"figure": "ranks", "value": headline["ranks"], "unit": "count"},
        {"figure": "ranks per node" + ("" if headline["ranks_per_node"] else " (not given: --ranks-per-node)"),
         "value": headline["ranks_per_node"], "unit": "count"},
        {"figure": "matched collectives", "value": headline["collectives"], "unit": "count"},
        {"figure": "arrival skew, median", "value": _s(headline["skew_median_ns"]), "unit": "s"},
        {"figure": "arrival skew, p99", "value": _s(headline["skew_p99_ns"]), "unit": "s"},
        {"figure": "wait, all ranks and collectives", "value": _s(headline["wait_total_ns"]), "unit": "s"},
        # a count, so the column holds numbers only; the ranks are named in the figure
        {"figure": "stragglers named" + (f" (rank{'s' if len(named) > 1 else ''} "
                                         f"{', '.join(f'{r} in doubt' if r in doubted else str(r) for r in named)})"
                                         if named else ""), "value": len(named), "unit": "count"},
    ]
    summary = {k: v for k, v in folder.summary.items() if k != "findings"}
    return Chart(id=f"fleet-{index}-summary", section=SECTION, title=f"Fleet: {Path(folder.out_dir).name}", draw=False,
                 spec=tables_only({"figures": figures, "summary": flatten(summary)}),
                 note=f"{folder.out_dir}: {headline['method']}.", findings=tuple(findings),
                 tables=(Table(dataset="figures", title="headline", columns=(
                             Column(field="figure", title="figure"),
                             Column(field="value", title="value", unit_field="unit"))),
                         Table(dataset="summary", title="fleet.json", columns=(
                             Column(field="key", title="key"), Column(field="value", title="value")))))


def _s(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e9


def _integer_axis(starts: list[int], *, every_up_to: int = 24) -> dict[str, Any]:
    """An axis of whole ranks or steps: each cell's first one labelled when there are few
    cells, else integer ticks the library spaces (never a half rank)."""
    if len(starts) <= every_up_to:
        return {"values": starts, "format": "d"}
    return {"format": "d", "tickMinStep": max(1, starts[1] - starts[0]) if len(starts) > 1 else 1}


def heatmap_chart(index: int, folder: FleetFolder, findings: list[dict[str, Any]]) -> Chart:
    """Rank by step, colour = the measure chosen on the page (median lateness by default); a
    note alone when the traces had no step markers."""
    cells = heatmap_cells(folder)
    rows = cells["rows"]
    if not rows:
        return Chart(id=f"fleet-{index}-heatmap", section=SECTION, title=f"Rank by step: {Path(folder.out_dir).name}",
                     draw=False, spec=tables_only({}), tables=(), findings=tuple(findings),
                     note="No steps: the ranks' traces have no step markers (ProfilerStep#N), so there is no "
                          "rank-by-step heatmap; the collectives and stragglers below do not need them.")
    has_lateness = any(r["lateness_s"] is not None for r in rows)
    measures = [m for m, _ in MEASURES if has_lateness or m != "lateness"]
    labels = dict(MEASURES)
    per_row, per_col = cells["ranks_per_row"], cells["steps_per_col"]
    rank_title = "rank" + (f" ({per_row} per row)" if per_row > 1 else "")
    step_title = "step" + (f" ({per_col} per column)" if per_col > 1 else "")
    height = max(160, min(480, 14 * len({r["rank_lo"] for r in rows})))
    quantity = {"type": "quantitative", "scale": {"nice": False, "zero": False}}
    x_axis = _integer_axis(sorted({r["step_lo"] for r in rows}))
    y_axis = _integer_axis(sorted({r["rank_lo"] for r in rows}))
    spec = vega_lite({"cells": rows, "steps": step_rows(folder)}, {
        "data": {"name": "cells"}, "width": 560, "height": height,
        "params": [{"name": "colour", "value": f"{measures[0]}_s",
                    "bind": {"input": "select", "name": "colour: ", "options": [f"{m}_s" for m in measures],
                             "labels": [labels[m] for m in measures]}}],
        "transform": [{"fold": [f"{m}_s" for m in measures], "as": ["measure", "value_s"]},
                      {"filter": "datum.measure == colour && isValid(datum.value_s)"},
                      {"calculate": "datum.value_s * 1e6", "as": "value_us"},
                      {"calculate": "datum.value_us", "as": "edge_us"},  # the stroke's own field: no second legend
                      {"calculate": "datum[replace(datum.measure, '_s', '_rank')]", "as": "worst_rank"},
                      # each cell centred on its ranks and steps: rank r spans r - 0.5 .. r + 0.5
                      {"calculate": "datum.rank_lo - 0.5", "as": "y0"}, {"calculate": "datum.rank_hi - 0.5", "as": "y1"},
                      {"calculate": "datum.step_lo - 0.5", "as": "x0"}, {"calculate": "datum.step_hi - 0.5", "as": "x1"}],
        "mark": {"type": "rect", "strokeWidth": 0.6},  # a stroke of the fill's colour: no seams between rows
        "encoding": {
            "x": {**quantity, "field": "x0", "title": step_title, "axis": x_axis}, "x2": {"field": "x1"},
            "y": {**quantity, "field": "y0", "title": rank_title, "axis": y_axis,
                  "scale": {"nice": False, "zero": False, "reverse": True}},
            "y2": {"field": "y1"},
            "color": {"field": "value_us", "type": "quantitative", "title": "µs (max in cell)",
                      "scale": {"scheme": "viridis"}, "legend": {"format": ",.4~r"}},
            "stroke": {"field": "edge_us", "type": "quantitative", "scale": {"scheme": "viridis"}, "legend": None},
            "tooltip": [{"field": "ranks", "title": "ranks"}, {"field": "steps", "title": "steps"},
                        {"field": "value_us", "title": "µs", "format": ",.4~r"},
                        {"field": "worst_rank", "title": "rank with the max"}]}})
    binned = (f" Each cell is the maximum over its {per_row} ranks and {per_col} steps, the rank that has it "
              "in the tooltip." if per_row > 1 or per_col > 1 else "")
    return Chart(
        id=f"fleet-{index}-heatmap", section=SECTION, title=f"Rank by step: {Path(folder.out_dir).name}", spec=spec,
        note=(f"{cells['ranks']} ranks x {cells['steps']} steps from the steps table; colour: median lateness "
              "(arrival minus the median arrival, µs) at the step's collectives, or the step, compute or idle time "
              f"(choose above).{binned}"),
        findings=tuple(findings),
        tables=(Table(dataset="steps", title="per step", columns=(
            Column(field="step", title="step", unit=NUMBER), Column(field="ranks", title="ranks", unit=NUMBER),
            Column(field="step_median_s", title="step time, median", unit="s"),
            Column(field="step_max_s", title="step time, max", unit="s"),
            Column(field="compute_max_s", title="compute, max", unit="s"),
            Column(field="compute_max_rank", title="its rank", unit=NUMBER),
            Column(field="lateness_max_s", title="lateness, max", unit="s"),
            Column(field="lateness_max_rank", title="its rank", unit=NUMBER))),))


def skew_chart(index: int, folder: FleetFolder, headline: dict[str, Any], findings: list[dict[str, Any]]) -> Chart:
    """Collectives per arrival-skew bin, one row per op (the same bins in every row)."""
    ops = [_ns_to_s(r, "skew_median", "skew_p99", "skew_max", "comm_median", "wait_total") for r in headline["ops"]]
    bins = skew_histogram(folder)
    x = {"field": "start_us", "type": "quantitative", "title": "arrival skew (µs)"}
    spec = vega_lite({"bins": bins, "ops": ops}, {
        "data": {"name": "bins"},
        "transform": [{"calculate": "datum.start_s * 1e6", "as": "start_us"},
                      {"calculate": "datum.end_s * 1e6", "as": "end_us"}],
        "facet": {"row": {"field": "op", "type": "nominal", "title": None}},
        "spec": {"width": 520, "height": 90, "mark": {"type": "bar", "color": "#4c78a8", "stroke": "white", "strokeWidth": 0.5},
                 "encoding": {"x": x, "x2": {"field": "end_us"},
                              "y": {"field": "collectives", "type": "quantitative", "title": "collectives",
                                    "axis": {"tickMinStep": 1}},
                              "y2": {"datum": 0},
                              "tooltip": [{"field": "start_us", "title": "from µs", "format": ",.4~r"},
                                          {"field": "end_us", "title": "to µs", "format": ",.4~r"},
                                          {"field": "collectives"}]}},
        "resolve": {"scale": {"y": "independent"}}})
    return Chart(
        id=f"fleet-{index}-skew", section=SECTION, title=f"Arrival skew per op: {Path(folder.out_dir).name}", spec=spec,
        draw=bool(bins),
        note=("" if bins else "No collective was matched across ranks. ")
        + ("Skew of a collective = last arrival - first arrival over its members (matched by group and sequence "
           "number); comm = the shortest member's duration; busbw from it (nccl-tests' factors)."),
        findings=tuple(findings),
        tables=(Table(dataset="ops", title="per op", columns=(
            Column(field="op", title="op"), Column(field="collectives", title="collectives", unit=NUMBER),
            Column(field="skew_median_s", title="skew, median", unit="s"),
            Column(field="skew_p99_s", title="skew, p99", unit="s"), Column(field="skew_max_s", title="skew, max", unit="s"),
            Column(field="wait_total_s", title="wait, total", unit="s"),
            Column(field="comm_median_s", title="comm, median", unit="s"),
            Column(field="bytes_median", title="bytes, median", unit="B"),
            Column(field="busbw_median_bps", title="busbw, median", unit="B/s"))),))


def _straggler_table_rows(folder: FleetFolder) -> list[dict[str, Any]]:
    rows = []
    for r in straggler_rows(folder)[:MAX_TABLE_RANKS]:
        row = _ns_to_s(r, *(n for n in ("median_lateness", "step_cost", "step", *OPTIONAL_STRAGGLER_COLUMNS)
                            if f"{n}_ns" in r))
        row["over_expected"] = r["share_last"] / r["expected_share"] if r["expected_share"] else None
        row["straggler"] = ("yes, in doubt" if r.get("in_doubt") else "yes") if r["straggler"] else "no"
        row["label"] = f"rank {r['rank']}"
        rows.append(row)
    return rows


def straggler_chart(index: int, folder: FleetFolder, findings: list[dict[str, Any]]) -> Chart:
    """The vote: the share of its collectives where each rank arrived last, against 1/members."""
    rows = _straggler_table_rows(folder)
    bars = sorted(rows, key=lambda r: -r["times_last"])[:MAX_BARS]
    x = {"field": "label", "type": "nominal", "title": None, "sort": [r["label"] for r in bars],
         "axis": {"labelAngle": -45}}
    spec = vega_lite({"bars": bars, "stragglers": rows}, {
        "data": {"name": "bars"}, "width": {"step": 16} if len(bars) > 20 else 420, "height": 240,
        "layer": [
            {"mark": {"type": "bar"},
             "encoding": {"x": x, "y": {"field": "share_last", "type": "quantitative",
                                        "title": "share of its collectives where last", "axis": {"format": "%"}},
                          "color": {"field": "straggler", "type": "nominal", "title": "straggler",
                                    "scale": {"domain": ["yes", "yes, in doubt", "no"],
                                              "range": ["#e45756", "#f2a541", "#9d9d9d"]},
                                    "legend": {"orient": "bottom"}},
                          "tooltip": [{"field": "label"}, {"field": "times_last", "title": "times last"},
                                      {"field": "share_last", "format": ".1%"},
                                      {"field": "expected_share", "format": ".1%"}]}},
            {"mark": {"type": "tick", "color": "#1d2330", "thickness": 2},
             "encoding": {"x": x, "y": {"field": "expected_share", "type": "quantitative"}}}]})
    method = ", ".join(sorted({r["method"] for r in rows if r["method"]})) or "none"
    present = {n for n in OPTIONAL_STRAGGLER_COLUMNS if any(f"{n}_s" in r for r in rows)}
    doubted = [r["label"] for r in rows if r["straggler"] == "yes, in doubt"]
    rule = str((folder.summary.get("methods") or {}).get("straggler") or "")
    cost = folder.summary.get("step_cost")
    # the replay's word on where it ran (the per-rank costs are the table's columns, not prose)
    cost_note = "; ".join(f"{k}: {v}" for k, v in cost.items() if not isinstance(v, (dict, list))) \
        if isinstance(cost, dict) else ""
    return Chart(
        id=f"fleet-{index}-stragglers", section=SECTION, title=f"Straggler vote: {Path(folder.out_dir).name}", spec=spec,
        draw=bool(bars),
        note=(f"Bars: the {len(bars)} ranks most often last; tick: the share expected by chance (1/members). "
              f"Step cost: what the rank's late arrivals cost a step, median over steps (method: {method})."
              + (" Time held: the sum of its margins over the collectives it was last at (how long it kept them "
                 "waiting); fair: what it would hold if every member were equally likely last. A rank late by far "
                 "at a few collectives is named by it with a short bar." if "held" in present else "")
              + (f" Straggler rule: {rule}." if rule else "") + (f" Step cost {cost_note}." if cost_note else "")
              + (f" In doubt ({', '.join(doubted)}): named only with collectives where another member's op ended "
                 "more than 1 us before the rank arrived, impossible on one clock; without them the vote does not "
                 "name it, so its lateness may be a clock offset between ranks (clock-suspect lasts: such "
                 "collectives it was last at)." if doubted else "")),
        findings=tuple(findings),
        tables=(Table(dataset="stragglers", title="straggler table", columns=(
            Column(field="rank", title="rank", unit=NUMBER), Column(field="node", title="node"),
            Column(field="times_last", title="times last", unit=NUMBER),
            Column(field="share_last", title="share last", unit="1"),
            Column(field="expected_share", title="expected", unit="1"),
            Column(field="over_expected", title="share / expected", unit=RATIO),
            Column(field="median_lateness_s", title="median lateness", unit="s"),
            *(Column(field=f"{n}_s", title=title, unit="s") for n, title in OPTIONAL_STRAGGLER_COLUMNS.items()
              if n in ("median_margin", "held", "fair_held") and n in present),
            Column(field="step_cost_s", title="step cost", unit="s"),
            *(Column(field=f"{n}_s", title=title, unit="s") for n, title in OPTIONAL_STRAGGLER_COLUMNS.items()
              if n == "mean_step_cost" and n in present),
            Column(field="step_s", title="step time", unit="s"),
            Column(field="method", title="method"),
            *((Column(field="clock_suspect_last", title="clock-suspect lasts", unit=NUMBER),)
              if any("clock_suspect_last" in r for r in rows) else ()),
            Column(field="straggler", title="straggler"))),))


def rank_chart(index: int, folder: FleetFolder, findings: list[dict[str, Any]]) -> Chart:
    """Tables only: every rank's figures (the ranks most often last, then most waiting, past the cap)."""
    table = folder.table("ranks")
    names: list[str] = [n for n in ("rank", "node", "collectives", "times_last", "wait_ns", "compute_ns", "communication_ns",
                         "idle_ns", "median_lateness_ns", "steps", "window_ns")
             if n in table]  # a folder reduced before ranks had window_ns
    rows = [{n: _plain(table[n][i]) for n in names} for i in range(folder.rows("ranks"))]
    if len(rows) > MAX_TABLE_RANKS:
        rows = sorted(rows, key=lambda r: (-r["times_last"], -r["wait_ns"], r["rank"]))[:MAX_TABLE_RANKS]
    rows = [_ns_to_s(r, "wait", "compute", "communication", "idle", "median_lateness",
                     *(("window",) if "window_ns" in table else ())) for r in rows]
    more = folder.rows("ranks") - len(rows)
    return Chart(
        id=f"fleet-{index}-ranks", section=SECTION, title=f"Every rank: {Path(folder.out_dir).name}", draw=False,
        spec=tables_only({"ranks": rows}), findings=tuple(findings),
        note=("Per rank. Collectives, times last, wait (sum over its collectives of last arrival - its arrival) and "
              "median lateness: every matched collective of the job. Compute, communication and idle: in the rank's "
              "own analysis window (its length in the window column), as parity trace analyze prints them (with step markers, the first step is left "
              "out as warm-up). Steps: the steps with device work in its trace."
              + (f" {more} more ranks (fewer times last, less wait) are in ranks.parquet." if more > 0 else "")),
        tables=(Table(dataset="ranks", title="per rank", columns=(
            Column(field="rank", title="rank", unit=NUMBER), Column(field="node", title="node"),
            Column(field="collectives", title="collectives", unit=NUMBER),
            Column(field="times_last", title="times last", unit=NUMBER), Column(field="wait_s", title="wait", unit="s"),
            *((Column(field="window_s", title="window", unit="s"),) if "window_ns" in table else ()),
            Column(field="compute_s", title="compute", unit="s"),
            Column(field="communication_s", title="communication", unit="s"), Column(field="idle_s", title="idle", unit="s"),
            Column(field="median_lateness_s", title="median lateness", unit="s"),
            Column(field="steps", title="steps", unit=NUMBER))),))


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def fleet_charts(folders: list[FleetFolder]) -> list[Chart]:
    """Every chart and panel of each fleet folder, in page order."""
    charts: list[Chart] = []
    for i, folder in enumerate(folders):
        headline = fleet_headline(folder)
        routed = route_findings(folder.findings)
        charts += [summary_chart(i, folder, headline, routed.get("summary", [])),
                   heatmap_chart(i, folder, routed.get("heatmap", [])),
                   skew_chart(i, folder, headline, routed.get("skew", [])),
                   straggler_chart(i, folder, routed.get("stragglers", [])),
                   rank_chart(i, folder, routed.get("ranks", []))]
    return charts
