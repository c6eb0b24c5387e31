"""What a family command prints: a header naming the run, the family's view of its summary
(``view_for(family).terminal(summary)``) or, for a family without a view, its figures as a
table, then the cases' warnings by code and each figure's ``invalid`` finding, then one line
with the case counts and OK, DOUBTFUL (figures that cannot be trusted) or FAILED."""

from __future__ import annotations

import inspect
from typing import Any


def print_family(console: Any, payload: dict[str, Any], *, db: str, extra: dict[str, Any]) -> None:
    """Print ``payload`` (``family_payload``'s document) on ``console``; ``extra`` are the
    command's own display flags, given to the view's ``terminal`` where it takes them."""
    from parity.report.views import print_view

    name, run_id = payload["suite"], payload["run_id"]
    console.print(f"{name} on {payload['device']} (run {run_id}, store {db})", markup=False)
    if payload["summary_error"]:
        console.print(f"summary failed: {payload['summary_error']}", style="red", markup=False)
    elif payload["summary"] or payload["figures"]:
        print_view(console, family_renderable(name, payload["summary"], payload["figures"], extra=extra))
    warned = warning_line(payload.get("cases") or [])
    if warned:
        console.print(warned, style="yellow", markup=False)
    for line in invalid_lines(payload["figures"]):
        console.print(line, style="magenta", markup=False)
    counts = payload["counts"]
    doubtful = payload.get("doubtful") or {"figures": 0, "by_reason": {}}
    verdict, style = ("OK", "green") if payload["ok"] else ("FAILED", "red")
    if payload["ok"] and doubtful["figures"]:
        from parity.report.run_summary import doubtful_line

        verdict, style = doubtful_line(doubtful["figures"], doubtful["by_reason"]), "magenta"
    console.print(f"run {run_id}: {counts['cases']} cases, {counts['failed']} failed - {verdict}", style=style,
                  markup=False)


def warning_line(cases: list[dict[str, Any]]) -> str:
    """``warnings: one-rank x6, outliers x1``: the cases' warning findings by code, most first
    (as ``parity run`` prints them); '' when there are none."""
    from collections import Counter

    codes = Counter(f.get("code") for c in cases for f in c.get("findings") or [] if f.get("severity") == "warning")
    return "warnings: " + ", ".join(f"{code} x{n}" for code, n in codes.most_common()) if codes else ""


def invalid_lines(figures: list[dict[str, Any]]) -> list[str]:
    """``invalid: overlap.overlap_fraction [dispatch+gemm]: why`` for each figure's ``invalid`` finding."""
    lines = []
    for figure in figures:
        case = (figure.get("scope") or {}).get("case")
        where = str(figure.get("name")) + (f" [{case}]" if case is not None else "")
        lines += [f"invalid: {where}: {f.get('message')}" for f in figure.get("findings") or []
                  if f.get("code") == "invalid"]
    return lines


def family_renderable(name: str, summary: dict[str, Any], figures: list[dict[str, Any]], *,
                      extra: dict[str, Any] | None = None) -> Any:
    """The family's terminal view of ``summary``, or the generic table of ``figures``."""
    from parity.report.views import view_for

    view = view_for(name)
    if view is None:
        return figures_table(name, figures)
    accepted = _accepted(view.terminal, extra or {})
    return view.terminal(summary, **accepted)


def _accepted(function: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """The items of ``extra`` that ``function`` takes as keywords (a view may take ``limit``)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}
    return {key: value for key, value in extra.items() if key in parameters and value is not None}


def figures_table(name: str, figures: list[dict[str, Any]]) -> Any:
    """Every figure as one row: name, value with its unit, CI, scope and method."""
    from rich.table import Table
    from rich.text import Text

    if not figures:
        return Text(f"{name}: no figures (the cases are in --json and parity runs show)")

    table = Table(title=f"{name}: {len(figures)} figures", title_justify="left")
    for column, justify in (("figure", "left"), ("value", "right"), ("unit", "left"), ("95% CI", "right"),
                            ("scope", "left"), ("method", "left")):
        table.add_column(column, justify=justify)
    for figure in figures:
        ci = figure.get("ci95")
        scope = ", ".join(f"{k}={v}" for k, v in (figure.get("scope") or {}).items())
        table.add_row(str(figure.get("name", "")), _number(figure.get("value")), str(figure.get("unit", "")),
                      f"{_number(ci[0])} to {_number(ci[1])}" if ci else "", scope, str(figure.get("method", "")))
    return table


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)

