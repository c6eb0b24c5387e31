"""How a family is drawn: the views a family registers, and how the report finds them.

A family's view (``parity.model.family.Family.view``) draws its own summary: a terminal
renderable for its command and ``parity runs show``, and HTML charts for ``parity report``.
The report and compare call these and name no family; a family without a view is drawn by the
generic view (its figures and cases as tables).

    view = view_for(suite)  # the suite a run stored its summary under
    print_view(console, view.terminal(summary))
    charts = view.charts([RunData(label=..., run=run, summary=..., figures=..., cases=...)])
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from parity.model.errors import ParityError
from parity.model.result import CaseResult, RunRecord

if TYPE_CHECKING:
    from rich.console import RenderableType

    from parity.report.html.chart import Chart

log = logging.getLogger(__name__)

# A case's headline when no view chooses one: the harness's declared rates, then its time.
GENERIC_HEADLINES = (("flop_per_s", "FLOP/s"), ("bytes_per_s", "B/s"), ("median_s", "s"))


@dataclass(frozen=True, kw_only=True)
class RunData:
    """One run's share of one family: the run's ``label`` (legends, chart ids), the run, the
    family's stored ``summary`` dict, its figures (``Figure.to_dict()`` dicts) and its cases."""

    label: str
    run: RunRecord
    summary: dict[str, Any] = field(default_factory=dict)
    figures: list[dict[str, Any]] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)


@runtime_checkable
class View(Protocol):
    """What a family draws. ``section`` is the report section its charts go in, ``(id, heading)``;
    families may share one (``("communication", "Communication")``)."""

    section: tuple[str, str]

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        """The family's summary for the terminal (its command, ``parity runs show``)."""
        ...

    def charts(self, runs: list[RunData]) -> list[Chart]:
        """The family's HTML charts over every run given (one series per run); [] when none."""
        ...


def view_for(name: str) -> View | None:
    """The registered view of family ``name`` (or of the family that stores cases as suite
    ``name``), or None when the family registers none or no family draws ``name``."""
    from parity.model.family import family_of, load_object

    family = family_of(name)
    if family is None or not family.view:
        return None
    view = load_object(family.view, label=f"view of family {family.name!r}")
    if not isinstance(view, View):
        raise ParityError(f"view of family {family.name!r} ({family.view}) has no section, terminal and charts")
    return view


def suite_view(name: str) -> View:
    """The view that draws suite ``name``: its family's, else the generic one (a family that
    registers none, a suite of no family, a stored run of a family not installed now, a view
    that cannot be loaded: said in the log, and the run is still drawn)."""
    try:
        view = view_for(name)
    except ParityError as exc:
        log.warning("drawing suite %r with the generic view: %s", name, exc)
        view = None
    return view if view is not None else GenericView(name)


def suite_details(run: RunRecord) -> list[RenderableType]:
    """Each stored suite summary of ``run`` drawn by its view (:func:`suite_view`), for
    ``parity runs show``; a suite whose summary failed or is empty is left out (the run
    summary's row says why). Print each with :func:`print_view`."""
    stored = run.summary.get("suites", {}) if isinstance(run.summary, dict) else {}
    return [suite_view(name).terminal(dict(entry["summary"])) for name, entry in stored.items()
            if isinstance(entry, dict) and entry.get("summary") and not entry.get("summary_error")]


def print_view(console: Any, drawn: RenderableType) -> None:
    """Print what a view's ``terminal`` drew. A view may draw plain text (the collectives'
    nccl-tests layout): it is printed as written, lines as wide as they are (never wrapped
    mid-row) and ``[scale-up]`` as text, not console markup."""
    if isinstance(drawn, str):
        console.print(drawn, markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(drawn)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "suite"


def case_headline(case: CaseResult) -> tuple[str, float | None, str]:
    """``(metric, value, unit)`` of a case for the generic view: the first of
    :data:`GENERIC_HEADLINES` it holds as a number, else its first numeric metric (no unit
    known), else ``("", None, "")``."""
    numbers = {k: v for k, v in case.metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for metric, unit in GENERIC_HEADLINES:
        if metric in numbers:
            return metric, float(numbers[metric]), unit
    for metric, value in numbers.items():
        return metric, float(value), "number"
    return "", None, ""


def case_status(case: CaseResult) -> str:
    """``ok``, ``FAILED`` (ran, check or an error finding failed) or ``error`` (did not run)."""
    if case.error is not None:
        return "error"
    return "ok" if case.ok else "FAILED"


class GenericView:
    """How a suite with no view of its own is drawn: its figures and its cases as tables, and
    its summary's scalar values in the terminal. Names no family: it reads only the records
    every suite stores."""

    def __init__(self, name: str) -> None:
        from parity.model.family import family_of

        family = family_of(name)
        self.name = name
        heading = f"{name}: {family.description}" if family is not None and family.description else name
        self.section = (f"suite-{_slug(name)}", heading)

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        """The summary's numbers and words, two levels deep, one row each (lists are left to
        ``--json``)."""
        from rich import box
        from rich.table import Table as RichTable

        from parity.report.run_summary import format_value

        table = RichTable(title=self.name, title_justify="left", box=box.SIMPLE_HEAD)
        table.add_column("summary")
        table.add_column("value", justify="right")
        for key, value in _scalar_leaves(summary):
            table.add_row(key, format_value(key, value))
        return table

    def charts(self, runs: list[RunData]) -> list[Chart]:
        """A panel of every run's figures of this suite and one of its cases (tables only)."""
        from parity.report.html.chart import Chart, Column, Table, tables_only

        many = len(runs) > 1
        figures, cases = [], []
        for data in runs:
            for f in data.figures:
                ci = f.get("ci95") or (None, None)
                figures.append({"run": data.label, "name": f.get("name", ""), "value": f.get("value"),
                                "unit": f.get("unit", ""), "ci_low": ci[0], "ci_high": ci[1],
                                "method": f.get("method", ""), "note": f.get("note", "")})
            for case in data.cases:
                metric, value, unit = case_headline(case)
                cases.append({"run": data.label, "key": case.key,
                              "params": json.dumps(case.params, sort_keys=True, default=str),
                              "metric": metric, "value": value, "unit": unit or "number",
                              "status": case_status(case)})
        slug, (section, _) = _slug(self.name), self.section
        run_column = (Column(field="run", title="run"),) if many else ()
        out = []
        if figures:
            out.append(Chart(
                id=f"{slug}-figures", section=section, title=f"{self.name}: figures", draw=False,
                spec=tables_only({"figures": figures}),
                note="The suite's figures with their method and 95% CI (no chart of its own is registered).",
                tables=(Table(dataset="figures", columns=run_column + (
                    Column(field="name", title="figure"), Column(field="value", title="value", unit_field="unit"),
                    Column(field="ci_low", title="CI low", unit_field="unit"),
                    Column(field="ci_high", title="CI high", unit_field="unit"),
                    Column(field="method", title="method"), Column(field="note", title="note"))),)))
        if cases:
            out.append(Chart(
                id=f"{slug}-cases", section=section, title=f"{self.name}: cases", draw=False,
                spec=tables_only({"cases": cases}),
                note="Each case with its parameters, its headline metric (a declared rate, else the median "
                     "time) and its status.",
                tables=(Table(dataset="cases", columns=run_column + (
                    Column(field="key", title="case"), Column(field="params", title="parameters"),
                    Column(field="metric", title="metric"), Column(field="value", title="value", unit_field="unit"),
                    Column(field="status", title="status"))),)))
        return out


def _scalar_leaves(data: dict[str, Any], prefix: str = "", depth: int = 0) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            if depth < 1:
                found += _scalar_leaves(value, f"{name}.", depth + 1)
        elif isinstance(value, (str, int, float, bool)) or value is None:
            found.append((name, value))
    return found
