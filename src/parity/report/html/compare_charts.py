"""The comparison and fairness-audit section, drawn from a comparison dict.

The dict is what ``compare_runs(db, ids).to_dict()`` returns: ``runs`` (id, label, device),
``cases`` (suite, key, params, values per run, unit, ratio, ratio_ci95, marked), ``summary``
(figure dicts), ``audit`` (condition, values per run, matters, refused), ``claims`` and
``forced``. Nothing here computes a ratio: the report shows the comparison's own numbers.
"""

from __future__ import annotations

from typing import Any

from parity.report.html.chart import RATIO, Chart, Column, Table, log_axis, tables_only, vega_lite

FORCED_MARK = "forced: conventions differ"


def _label(run: dict[str, Any]) -> str:
    return str(run.get("label") or run.get("id"))


def comparison_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per joined case: its values under ``value_<i>`` (one per run, in the runs' order)."""
    rows = []
    for case in comparison.get("cases", []):
        ci = case.get("ratio_ci95") or (None, None)
        row = {"suite": case.get("suite"), "key": case.get("key"), "unit": case.get("unit", "count"),
               "ratio": case.get("ratio"), "ratio_low": ci[0], "ratio_high": ci[1],
               "marked": FORCED_MARK if case.get("marked") else ""}
        for i, value in enumerate(case.get("values", [])):
            row[f"value_{i}"] = value
        rows.append(row)
    return rows


def audit_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"condition": a.get("condition"),
             "values": " | ".join("-" if v is None else str(v) for v in a.get("values", [])),
             "matters": "yes" if a.get("matters") else "no", "refused": "refused" if a.get("refused") else ""}
            for a in comparison.get("audit", [])]


def summary_rows(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for f in comparison.get("summary", []):
        ci = f.get("ci95") or (None, None)
        rows.append({"name": f.get("name"), "value": f.get("value"), "unit": f.get("unit", "count"),
                     "ci_low": ci[0], "ci_high": ci[1], "method": f.get("method", ""),
                     "note": f.get("note", "")})
    return rows


def comparison_charts(comparison: dict[str, Any]) -> list[Chart]:
    """The per-case ratio chart (with its table) and the fairness audit table."""
    runs = comparison.get("runs", [])
    names = [_label(r) for r in runs]
    rows = comparison_rows(comparison)
    base = names[0] if names else "the first run"
    value_columns = tuple(Column(field=f"value_{i}", title=name, unit_field="unit") for i, name in enumerate(names))
    ratio = vega_lite({"cases": rows}, {"layer": [
        {"data": {"values": [{"one": 1}]}, "mark": {"type": "rule", "color": "#888"},
         "encoding": {"x": {"field": "one", "type": "quantitative"}}},
        {"data": {"name": "cases"}, "mark": {"type": "rule"},
         "encoding": {"x": {"field": "ratio_low", "type": "quantitative", "scale": {"type": "log"}},
                      "x2": {"field": "ratio_high"}, "y": {"field": "suite", "type": "nominal"}}},
        {"data": {"name": "cases"}, "mark": {"type": "point", "filled": True, "opacity": 0.7},
         "encoding": {"x": log_axis("ratio", f"ratio to {base}", fmt="~g"), "y": {"field": "suite", "type": "nominal",
                                                                               "title": None},
                      "color": {"field": "marked", "type": "nominal", "title": None,
                                "scale": {"domain": ["", FORCED_MARK], "range": ["#4c78a8", "#d62728"]},
                                "legend": None},
                      "tooltip": [{"field": "key"}, {"field": "ratio", "format": ".3f"}]}},
    ]}, height=max(80, 40 * len({r["suite"] for r in rows})))
    audit = tables_only({"audit": audit_rows(comparison), "summary": summary_rows(comparison)})
    return [
        Chart(id="compare-ratios", section="compare", title="Per-case ratios with their 95% CIs", spec=ratio,
              note=f"Each case joined across runs: value over {base}'s; red: compared across different conventions "
                   "because it was forced.",
              tables=(Table(dataset="cases", title="cases", columns=(
                  Column(field="suite", title="suite"), Column(field="key", title="case"), *value_columns,
                  Column(field="ratio", title="ratio", unit=RATIO), Column(field="ratio_low", title="CI low", unit=RATIO),
                  Column(field="ratio_high", title="CI high", unit=RATIO), Column(field="marked", title="mark"))),)),
        Chart(id="compare-audit", section="audit", title="Fairness audit: conditions that differ", spec=audit, draw=False,
              note="Every condition that differs between the runs, whether it matters for the comparison, and "
                   "whether it makes the comparison refused unless forced.",
              tables=(Table(dataset="audit", title="conditions", columns=(
                          Column(field="condition", title="condition"), Column(field="values", title=" | ".join(names)),
                          Column(field="matters", title="matters"), Column(field="refused", title="refused"))),
                      Table(dataset="summary", title="summary figures", columns=(
                          Column(field="name", title="figure"), Column(field="value", title="value", unit_field="unit"),
                          Column(field="ci_low", title="CI low", unit_field="unit"),
                          Column(field="ci_high", title="CI high", unit_field="unit"),
                          Column(field="method", title="method"), Column(field="note", title="note"))))),
    ]
