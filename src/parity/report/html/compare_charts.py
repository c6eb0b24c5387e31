"""The comparison and fairness-audit section, drawn from a comparison dict.

The dict is what ``compare_runs(db, ids).to_dict()`` returns: ``runs`` (id, label, device),
``cases`` (suite, key, params, values per run, unit, ratio, ratio_ci95, marked), ``summary``
(figure dicts), ``audit`` (condition, values per run, matters, refused), ``claims`` and
``forced``. Nothing here computes a ratio: the report shows the comparison's own numbers.
"""

from __future__ import annotations

from typing import Any

from parity.model.figure import ratio_number
from parity.report.comparison_page import READINGS, ComparisonPage, case_marks, comparison_page, value_titles
from parity.report.comparison_page import compared_runs as _compared
from parity.report.html.chart import RATIO, Chart, Column, Table, key_values, tables_only, vega_lite
from parity.report.html.colours import run_shades

FORCED_MARK = "forced: conventions differ"
# How each reading of a ratio is drawn: a point's shape (its colour is the run compared).
READING_SHAPES = {"faster": "triangle-right", "slower": "triangle-left", "no difference measured": "circle",
                  "no CI": "diamond", "not comparable": "cross", FORCED_MARK: "square", "no ratio": "circle"}
ROW_STEP = 18  # pixels per case in the ratio chart


def compared_runs(comparison: dict[str, Any] | None, labels: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The runs a comparison compares, for the page's header: ``id``, ``label``, ``device`` and
    ``runs`` (every run of a side of several)."""
    if not comparison:
        return []
    return [{"id": r.id, "label": r.label, "device": r.device, "runs": r.runs} for r in _compared(comparison, labels)]


def _comparable(item: dict[str, Any]) -> str:
    """``yes``, or ``no`` with the reason: a case says it at its top level, a summary figure in
    its scope (its note gives the reason)."""
    raw = item.get("scope")
    scope = raw if isinstance(raw, dict) else {}
    if item.get("comparable", scope.get("comparable", True)) is not False:
        return "yes"
    reason = item.get("reason") or str(item.get("note") or "").removeprefix("forced: ").removeprefix("not comparable: ")
    return "no" + (f": {reason}" if reason else "")


def comparison_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per joined case: its values under ``value_<i>`` (one per run, in the runs' order),
    the reading of its ratio; sorted by suite, then size or intensity (as the chart)."""
    rows = []
    page = comparison_page(comparison)
    rank = {(r.suite, r.key): i for i, r in reversed(list(enumerate(page.ratios)))}
    for case in sorted(comparison.get("cases", []), key=lambda c: rank.get((str(c.get("suite")), str(c.get("key"))), 0)):
        ci = case.get("ratio_ci95") or (None, None)
        row = {"suite": case.get("suite"), "key": case.get("key"), "unit": case.get("unit", "count"),
               "ratio": case.get("ratio"), "ratio_low": ci[0], "ratio_high": ci[1],
               "marked": case_marks(case, FORCED_MARK if case.get("marked") else ""),
               "reading": next((r.reading for r in page.ratios if (r.suite, r.key) == (str(case.get("suite")),
                                                                                        str(case.get("key")))), ""),
               "comparable": _comparable(case), "ci_kind": case.get("ci_kind") or page.ci_kind}
        for i, value in enumerate(case.get("values", [])):
            row[f"value_{i}"] = value
        mine = [r for r in page.ratios if (r.suite, r.key) == (str(case.get("suite")), str(case.get("key")))]
        for i, r in enumerate(mine, start=1):  # every run after the first: its own ratio to the first
            row |= {f"ratio_{i}": r.ratio, f"ratio_low_{i}": r.low, f"ratio_high_{i}": r.high, f"reading_{i}": r.reading}
        rows.append(row)
    return rows


def ratio_columns(names: list[str]) -> tuple[Column, ...]:
    """The cases table's ratio columns: one set (ratio, CI, reading) for two runs, one per run
    after the first, named by it, for more."""
    if len(names) <= 2:
        return (Column(field="ratio", title="ratio", unit=RATIO), Column(field="ratio_low", title="CI low", unit=RATIO),
                Column(field="ratio_high", title="CI high", unit=RATIO), Column(field="reading", title="reading"))
    return tuple(column for i, name in enumerate(names[1:], start=1) for column in (
        Column(field=f"ratio_{i}", title=f"{name}: ratio", unit=RATIO),
        Column(field=f"ratio_low_{i}", title="CI low", unit=RATIO), Column(field=f"ratio_high_{i}", title="CI high", unit=RATIO),
        Column(field=f"reading_{i}", title="reading")))


def audit_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"condition": a.get("condition"),
             "values": " | ".join("-" if v is None else str(v) for v in a.get("values", [])),
             "matters": _matters(a.get("matters")), "refused": "refused" if a.get("refused") else ""}
            for a in comparison.get("audit", [])]


def _matters(value: Any) -> str:
    """Why a condition matters (the audit's own words), or yes / no when it says only that."""
    if isinstance(value, str) and value:
        return value
    return "yes" if value else "no"


def summary_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for f in comparison.get("summary", []):
        ci = f.get("ci95") or (None, None)
        rows.append({"name": f.get("name"), "value": f.get("value"), "unit": f.get("unit", "count"),
                     "ci_low": ci[0], "ci_high": ci[1], "method": f.get("method", ""),
                     "note": f.get("note", ""), "ci_kind": f.get("ci_kind") or "",
                     "comparable": _comparable(f), "scope": key_values(f.get("scope") or {})})
    return rows


def ratio_rows(page: ComparisonPage) -> list[dict[str, Any]]:
    """One row per (case, run compared) with a ratio: what the ratio chart draws, in its sorted
    order (a case without one is in the table only, read "no ratio")."""
    return [{"rank": i, "suite": r.suite, "case": r.key, "against": r.against, "ratio": r.ratio, "ratio_low": r.low,
             "ratio_high": r.high, "reading": r.reading, "size": r.size, "size_name": r.size_name,
             "ci_kind": r.ci_kind, "doubt": r.doubt,
             "text": "" if r.ratio is None else f"{ratio_number(r.ratio)}x" + (f" ({r.doubt})" if r.doubt else ""),
             "text_at": r.high if r.high is not None else r.ratio}
            for i, r in enumerate(r for r in page.ratios if r.ratio is not None)]


def ratio_domain(rows: list[dict[str, Any]]) -> list[float] | None:
    """The x range of the ratio chart: every ratio and CI end and 1, with a margin; None when
    there is no ratio."""
    values = [v for r in rows for v in (r["ratio"], r["ratio_low"], r["ratio_high"])
              if isinstance(v, (int, float)) and v > 0]
    if not values:
        return None
    low, high = min([*values, 1.0]), max([*values, 1.0])
    margin = max((high / low) ** 0.06, 1.05)
    return [low / margin, high * margin]


def ratio_spec(page: ComparisonPage, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Cases down the side (sorted by size or intensity within each suite, each labelled), the
    ratio as a point with its CI as a bar, a line at 1; one colour per run compared, one shape
    per reading."""
    base = page.runs[0].label if page.runs else "the first run"
    against = list(dict.fromkeys(r["against"] for r in rows))
    domain = ratio_domain(rows)
    x = {"field": "ratio", "type": "quantitative", "title": f"speed relative to {base} (x, log scale)",
         "scale": {"type": "log", **({"domain": domain, "nice": False} if domain else {})},
         "axis": {"format": "~g", "tickCount": 8}}
    y = {"field": "case", "type": "nominal", "title": None, "sort": {"field": "rank", "op": "min"},
         "axis": {"labelLimit": 280}}
    colour = {"field": "against", "type": "nominal", "title": f"compared with {base}",
              "scale": {"domain": against, "range": [run_shades(i + 1, 1)[0] for i in range(len(against))]},
              "legend": {"orient": "bottom", "titleLimit": 400}}
    offset = {"yOffset": {"field": "against", "type": "nominal", "scale": {"domain": against}}} if len(against) > 1 else {}
    present = [r for r in READINGS if any(row["reading"] == r for row in rows)]
    shape = {"field": "reading", "type": "nominal", "title": "reading",
             "scale": {"domain": present, "range": [READING_SHAPES[r] for r in present]}, "legend": {"orient": "bottom"}}
    tooltip = [{"field": "suite"}, {"field": "case"}, {"field": "against"}, {"field": "ratio", "format": ".4g"},
               {"field": "ratio_low", "format": ".4g"}, {"field": "ratio_high", "format": ".4g"}, {"field": "reading"},
               {"field": "doubt", "title": "could not vouch"}]
    one = {"datum": 1, **{k: v for k, v in x.items() if k != "field"}}
    layer: list[dict[str, Any]] = [
        {"mark": {"type": "rule", "color": "#888", "strokeDash": [3, 3]}, "encoding": {"x": one}},
        {"mark": {"type": "rule", "strokeWidth": 2}, "encoding": {
            "x": {**x, "field": "ratio_low"}, "x2": {"field": "ratio_high"}, "y": y, "color": colour, **offset}},
        {"mark": {"type": "point", "filled": True, "size": 60, "opacity": 0.95}, "encoding": {
            "x": x, "y": y, "color": colour, "shape": shape, "tooltip": tooltip, **offset}},
        {"mark": {"type": "text", "align": "left", "dx": 8, "fontSize": 10, "color": "#333"}, "encoding": {
            "x": {**x, "field": "text_at"}, "y": y, "text": {"field": "text"}, **offset}},
    ]
    height = {"step": ROW_STEP * max(1, len(against))}
    suites = list(dict.fromkeys(r["suite"] for r in rows))
    return {"vconcat": [{"title": {"text": suite, "anchor": "start", "fontSize": 13}, "data": {"name": "ratios"},
                         "transform": [{"filter": {"field": "suite", "equal": suite}}], "width": 440,
                         "height": height, "layer": layer} for suite in suites],
            "resolve": {"scale": {"x": "shared", "y": "independent", "color": "shared", "shape": "shared"}}}


def comparison_charts(comparison: dict[str, Any], labels: dict[str, str] | None = None) -> list[Chart]:
    """The per-case ratio chart (with its table and the comparison's warnings) and the fairness
    audit table. ``labels`` maps run ids to the report's run labels."""
    page = comparison_page(comparison, labels)
    names = [r.label for r in page.runs]
    base = names[0] if names else "the first run"
    rows = comparison_rows(comparison)
    ratios = ratio_rows(page)
    value_columns = tuple(Column(field=f"value_{i}", title=title, unit_field="unit")
                          for i, title in enumerate(value_titles(comparison, names)))
    datasets = {"cases": rows, "ratios": ratios}
    spec = vega_lite(datasets, ratio_spec(page, ratios)) if ratios else tables_only(datasets)
    audit = tables_only({"audit": audit_rows(comparison), "summary": summary_rows(comparison)})
    return [
        Chart(id="compare-ratios", section="compare", title="Per-case ratios with their 95% CIs", spec=spec,
              draw=bool(ratios), findings=page.warnings,
              note=(f"Each case joined across runs: its speed relative to {base} (above 1: faster), sorted by "
                    f"size or arithmetic intensity within each suite; bars: 95% CI ({page.ci_kind}); a CI that "
                    "holds 1 reads 'no difference measured'. Square: compared across different conventions "
                    "because it was forced."),
              tables=(Table(dataset="cases", title="cases", columns=(
                  Column(field="suite", title="suite"), Column(field="key", title="case"), *value_columns,
                  *ratio_columns(names), Column(field="marked", title="mark"))),)),
        Chart(id="compare-audit", section="audit", title="Fairness audit: conditions that differ", spec=audit, draw=False,
              note="Every condition that differs between the runs, why it matters for the comparison, and "
                   "whether it makes the comparison refused unless forced.",
              tables=(Table(dataset="audit", title="conditions", columns=(
                          Column(field="condition", title="condition"), Column(field="values", title=" | ".join(names)),
                          Column(field="matters", title="why it matters"), Column(field="refused", title="refused"))),
                      Table(dataset="summary", title="summary figures", columns=(
                          Column(field="name", title="figure"), Column(field="value", title="value", unit_field="unit"),
                          Column(field="ci_low", title="CI low", unit_field="unit"),
                          Column(field="ci_high", title="CI high", unit_field="unit"),
                          Column(field="comparable", title="comparable"), Column(field="scope", title="scope"),
                          Column(field="method", title="method"), Column(field="note", title="note"))))),
    ]
