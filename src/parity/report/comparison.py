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

from parity.model.figure import UNITS, format_seconds, format_value, ratio_text
from parity.report.comparison_page import case_marks, run_ids, value_titles

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
    return "-" if ratio is None else ratio_text(ratio, ci)


def _share(value: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def case_cells(doc: dict[str, Any], *, limit: int = MAX_ROWS) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows of text cells and which rows are marked, for both renderers."""
    traces = doc["kind"] == "traces"
    # a trace's label can be a path: its columns go by its letter, the lines above name it
    labels = [r["label"].split(":", 1)[0] if traces else r["label"] for r in doc["runs"]]
    header = ["kind" if traces else "suite", "case", *value_titles(doc, [r["label"] for r in doc["runs"]])]
    if traces:
        header += [f"share {label}" for label in labels]
    header += ["ratio" if not traces else f"speed {labels[1]} / {labels[0]}", "marked"]
    rows, marks = [], []
    for case in doc["cases"][:limit]:
        cells = [case["suite"], case["key"], *(_value(v, case.get("unit")) for v in case["values"])]
        if traces:
            cells += [_share(s) for s in case.get("shares") or []]
        mark = "MARKED" if case.get("marked") else "not compared" if case.get("comparable") is False else ""
        cells += [_ratio(case.get("ratio"), case.get("ratio_ci95")),
                  case_marks(case, mark)]
        rows.append(cells)
        marks.append(bool(case.get("marked")))
    return header, rows, marks


NAME_WIDTH = 52  # the widest a figure's name or a condition is kept on one line
CASE_WIDTH = 32  # the widest a case key is kept on one line, so the values, ratio and mark fit beside it
MARK_WIDTH = 12  # the mark column never narrower (a narrow terminal wraps it, never hides it)


def _summary_cells(doc: dict[str, Any]) -> list[list[str]]:
    out = []
    for figure in doc.get("summary") or []:
        scope = figure.get("scope") or {}
        said = {"runs", "comparable"}  # the run ids head the page; a ratio not comparable says so in its note
        if figure["name"] == f"{scope.get('figure')}.ratio":
            said |= {"figure", "suite"}  # the name says them
        where = ", ".join(f"{k}={v}" for k, v in scope.items() if k not in said)
        ci = figure.get("ci95")
        if figure["unit"] == "x" and figure.get("value") is not None:  # a ratio, written as the cases' are
            value = ratio_text(figure["value"], ci)
        else:
            value = (format_value(figure.get("value"), figure["unit"]) if figure["unit"] in UNITS
                     else str(figure.get("value")))
            if ci:
                value += f" [{format_value(ci[0], figure['unit'])}, {format_value(ci[1], figure['unit'])}]"
        out.append([figure["name"], value, where, figure.get("note") or ""])
    return out


def _audit_cells(doc: dict[str, Any]) -> list[list[str]]:
    return [[a["condition"], " | ".join("-" if v is None else str(v) for v in a["values"]), a["matters"],
             "refused" if a["refused"] else ""] for a in doc.get("audit") or []]


def _window_source(window: dict[str, Any]) -> str:
    """How a trace's window was chosen, with its steps where it has them (``steps 1009-1010``)."""
    steps = window.get("steps")
    if isinstance(steps, list) and len(steps) == 2:
        return f"{window.get('source')}, step {steps[0]}" if steps[0] == steps[1] else \
            f"{window.get('source')}, steps {steps[0]}-{steps[1]}"
    return str(window.get("source"))


def render_comparison(doc: dict[str, Any], *, limit: int = MAX_ROWS) -> Group:
    """The terminal form: runs, per-case table, summary, audit and claims."""
    parts: list[Any] = []
    for run in doc["runs"]:
        window = run.get("window")
        extra = (f"window {format_seconds(window.get('length_us', 0) / 1e6)} ({_window_source(window)}), rank {run.get('rank')}"
                 if window else f"{run.get('mode')}, {'quick' if run.get('quick') else 'full'}")
        if run.get("mode") == "fleet":
            per_node = run.get("ranks_per_node")
            nodes = f"{per_node} per node" if per_node else "ranks per node not given"
            extra = f"{run.get('ranks')} ranks, {nodes}, {run.get('out_dir')}"
        parts.append(Text(f"{run['label']}  {run_ids(run)}  {extra}"))
    header, rows, marks = case_cells(doc, limit=limit)
    labels = {r["label"]: r["label"].split(":", 1)[0] for r in doc["runs"]}  # named in full above the table
    header = [labels.get(name, name) for name in header]
    table = Table(title="cases" + (f" (first {limit} of {len(doc['cases'])})" if len(doc["cases"]) > limit else ""),
                  title_justify="left", box=box.SIMPLE_HEAD)
    longest = max((len(row[1]) for row in rows), default=0)
    for name in header:  # a case's key on its line where it fits; a longer one wraps, never cut to "..."
        table.add_column(name, justify="left" if name in ("suite", "kind", "case", "marked") else "right",
                         overflow="fold", min_width=min(longest, CASE_WIDTH) if name == "case" else
                         MARK_WIDTH if name == "marked" else None)
    for row_cells, marked in zip(rows, marks):  # cells as Text: a name's "[...]" is not markup
        table.add_row(*map(Text, row_cells), style="yellow" if marked else None)
    parts.append(table)
    summary = [[Text(name) + Text("\n" + scope if scope else "", style="dim"), Text(value), Text(note)]
               for name, value, scope, note in _summary_cells(doc)]  # the scope under its figure's name
    audit = [list(map(Text, row)) for row in _audit_cells(doc)]
    tables: list[tuple[str, tuple[str, ...], list[list[Text]]]] = [
        ("summary", ("figure (scope)", "value", "note"), summary),
        ("fairness audit", ("condition", "values", "why it matters", ""), audit)]
    for title, columns, cell_rows in tables:
        if cell_rows:
            extra_table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
            longest = max(len(row[0].plain.split("\n")[0]) for row in cell_rows)
            for index, name in enumerate(columns):  # a figure's name on its line where it fits; nothing cut to "..."
                extra_table.add_column(name, overflow="fold", min_width=min(longest, NAME_WIDTH) if index == 0 else None)
            for row in cell_rows:
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
    runs = [[r["label"], run_ids(r), str(r.get("mode")),
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

