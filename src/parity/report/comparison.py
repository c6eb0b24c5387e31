"""Rendering a comparison's ``to_dict()`` document (runs, traces or fleets): a terminal table and a
GitHub-flavoured Markdown document with the same cells. Never computes a figure: the cells are
the document's numbers in humans' units.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from parity.model.figure import UNITS, format_value

MAX_ROWS = 200


def _value(value: Any, unit: str | None) -> str:
    if value is None:
        return "-"
    if unit in UNITS:
        return format_value(value, unit)
    if unit == "us":
        return f"{value / 1e3:,.3f} ms" if abs(value) >= 1000 else f"{value:,.1f} us"
    return f"{value:.4g}"


def _ratio(ratio: Any, ci: Any) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.3g}x" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")


def _share(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def case_cells(doc: dict[str, Any], *, limit: int = MAX_ROWS) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows of text cells and which rows are marked, for both renderers."""
    labels = [r["label"] for r in doc["runs"]]
    traces = doc["kind"] == "traces"
    header = ["kind" if traces else "suite", "case", *labels]
    if traces:
        header += [f"share {label}" for label in labels]
    header += ["ratio" if not traces else f"speed {labels[1]} / {labels[0]}", "marked"]
    rows, marks = [], []
    for case in doc["cases"][:limit]:
        cells = [case["suite"], case["key"], *(_value(v, case.get("unit")) for v in case["values"])]
        if traces:
            cells += [_share(s) for s in case.get("shares") or []]
        cells += [_ratio(case.get("ratio"), case.get("ratio_ci95")), "MARKED" if case.get("marked") else ""]
        rows.append(cells)
        marks.append(bool(case.get("marked")))
    return header, rows, marks


def _summary_cells(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for figure in doc.get("summary") or []:
        scope = figure.get("scope") or {}
        where = ", ".join(f"{k}={v}" for k, v in scope.items() if k not in ("runs",))
        ci = figure.get("ci95")
        value = format_value(figure.get("value"), figure["unit"]) if figure["unit"] in UNITS else str(figure.get("value"))
        if ci:
            value += f" [{format_value(ci[0], figure['unit'])}, {format_value(ci[1], figure['unit'])}]"
        out.append([figure["name"], value, where, figure.get("note") or ""])
    return out


def _audit_cells(doc: dict[str, Any]) -> list[list[str]]:
    return [[a["condition"], " | ".join("-" if v is None else str(v) for v in a["values"]), a["matters"],
             "refused" if a["refused"] else ""] for a in doc.get("audit") or []]


def render_comparison(doc: dict[str, Any], *, limit: int = MAX_ROWS) -> Group:
    """The terminal form: runs, per-case table, summary, audit and claims."""
    parts: list[Any] = []
    for run in doc["runs"]:
        window = run.get("window")
        extra = (f"window {window.get('length_us', 0) / 1e3:.3g} ms ({window.get('source')}), rank {run.get('rank')}"
                 if window else f"{run.get('mode')}, {'quick' if run.get('quick') else 'full'}")
        if run.get("mode") == "fleet":
            extra = f"{run.get('ranks')} ranks, {run.get('ranks_per_node') or '?'} per node, {run.get('out_dir')}"
        parts.append(Text(f"{run['label']}  {run.get('id') or run.get('source')}  {extra}"))
    header, rows, marks = case_cells(doc, limit=limit)
    table = Table(title="cases" + (f" (first {limit} of {len(doc['cases'])})" if len(doc["cases"]) > limit else ""),
                  title_justify="left", box=box.SIMPLE_HEAD)
    for name in header:
        table.add_column(name, justify="left" if name in ("suite", "kind", "case", "marked") else "right")
    for row_cells, marked in zip(rows, marks):
        table.add_row(*row_cells, style="yellow" if marked else None)
    parts.append(table)
    for title, columns, cells in (("summary", ("figure", "value", "scope", "note"), _summary_cells(doc)),
                                  ("fairness audit", ("condition", "values", "why it matters", ""), _audit_cells(doc))):
        if cells:
            extra_table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
            for name in columns:
                extra_table.add_column(name)
            for row in cells:
                extra_table.add_row(*row)
            parts.append(extra_table)
    if not doc.get("audit"):
        parts.append(Text("fairness audit: no condition differs"))
    parts.extend(Text(f"claim: {c}") for c in doc.get("claims") or [])
    return Group(*parts)


def _md_escape(text: str) -> str:
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _md_table(header: list[str] | tuple[str, ...], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return lines


def comparison_markdown(doc: dict[str, Any], *, limit: int = MAX_ROWS) -> str:
    """GitHub Markdown: the runs, the per-case table, the summary, the audit and the claims."""
    lines = [f"## parity compare ({doc['kind']})", ""]
    runs = [[r["label"], str(r.get("id") or r.get("source")), str(r.get("mode")),
             f"{r.get('ranks')} ranks" if r.get("mode") == "fleet"
             else str((r.get("window") or {}).get("source", "quick" if r.get("quick") else "full"))] for r in doc["runs"]]
    lines += _md_table(["run", "id", "mode", "window or size"], runs) + [""]
    header, rows, _ = case_cells(doc, limit=limit)
    lines += _md_table(header, rows) + [""]
    if doc.get("ratio_method"):
        lines += [f"Ratio: {_md_escape(doc['ratio_method'])}.", ""]
    summary = _summary_cells(doc)
    if summary:
        lines += _md_table(["figure", "value", "scope", "note"], summary) + [""]
    audit = _audit_cells(doc)
    lines += (_md_table(["condition", "values", "why it matters", "refused"], audit) if audit
              else ["Fairness audit: no condition differs."]) + [""]
    lines += [f"- {_md_escape(c)}" for c in doc.get("claims") or []]
    return "\n".join(lines).rstrip() + "\n"
