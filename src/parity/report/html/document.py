"""The report's data: every chart and table, built from stored runs, trace inputs and a
comparison, as one JSON-ready dict (the page's data block and ``parity report --json``).

Each suite of the runs is drawn by its family's registered view
(``parity.report.views.suite_view``: the family's ``charts`` over every run that holds the suite,
or the generic view's tables of figures and cases), in a section the view names, ordered by the
families' ``order``. Every run's typed figures and provenance are tables built without per-family
code, so a family from another package appears without new report code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from parity.model.findings import CONTENDED, INVALID, Severity
from parity.model.result import CaseResult, RunRecord
from parity.model.schema import envelope
from parity.report.comparison_page import relabel_comparison
from parity.report.html.chart import Chart, Column, Table, flatten, key_values, run_labels, tables_only
from parity.report.html.colours import colour_runs
from parity.report.html.compare_charts import compared_runs, comparison_charts
from parity.report.html.fleet_charts import fleet_charts
from parity.report.html.trace_charts import TraceInput, trace_charts
from parity.report.run_summary import left_out_suites
from parity.report.views import RunData, View, suite_view
from parity.trace.fleet.folder import FleetFolder

# Page sections in order: (id, heading), the suites' own sections between the first and the
# rest. A chart names its section by id.
FIRST_SECTIONS = (("figures", "Figures of every run"),)
LAST_SECTIONS = (
    ("traces", "Trace timelines"),
    ("whatif", "What-if sensitivity"),
    ("fleet", "Fleet: ranks, collectives, stragglers"),
    ("compare", "Comparison"),
    ("audit", "Fairness audit"),
    ("provenance", "Provenance"),
)
FIGURE_COLUMNS = (
    Column(field="suite", title="suite"), Column(field="name", title="figure"),
    Column(field="value", title="value", unit_field="unit"),
    Column(field="ci_low", title="CI low", unit_field="unit"), Column(field="ci_high", title="CI high", unit_field="unit"),
    Column(field="best", title="best", unit_field="unit"), Column(field="method", title="method"),
    Column(field="scope", title="scope"), Column(field="note", title="note"),
    Column(field="findings", title="findings"))


def _suites(run: RunRecord) -> dict[str, dict[str, Any]]:
    return dict((run.summary or {}).get("suites") or {})


def figure_rows(run: RunRecord) -> list[dict[str, Any]]:
    """Every typed figure of every suite of ``run``, one row each (any family, no per-family code);
    ``findings`` lists the figure's own findings as ``code: message``."""
    rows = []
    for suite, data in _suites(run).items():
        for f in data.get("figures") or []:
            ci = f.get("ci95") or (None, None)
            rows.append({"suite": suite, "name": f["name"], "value": f.get("value"), "unit": f["unit"],
                         "ci_low": ci[0], "ci_high": ci[1], "best": f.get("best"), "method": f.get("method", ""),
                         "scope": key_values(f.get("scope") or {}),
                         "note": f.get("note", ""),
                         "findings": "; ".join(f"{g.get('code')}: {g.get('message')}" for g in f.get("findings") or [])})
    return rows


def invalid_findings(run: RunRecord, suite: str | None = None) -> list[dict[str, Any]]:
    """The ``invalid`` findings of every figure of ``run`` (of ``suite`` only, when given), each
    message naming its figure (``suite figure [case]: ...``), to show beside its table or chart."""
    out = []
    for name, data in _suites(run).items():
        if suite is not None and name != suite:
            continue
        for f in data.get("figures") or []:
            case = (f.get("scope") or {}).get("case")
            where = f"{name} {f.get('name')}" + (f" [{case}]" if case is not None else "")
            out += [{**g, "message": f"{where}: {g.get('message')}"} for g in f.get("findings") or []
                    if g.get("code") == INVALID]
    return out


def case_warnings(run: RunRecord, cases: list[CaseResult], label: str,
                  suite: str | None = None) -> list[dict[str, Any]]:
    """One finding per suite of ``run`` (of ``suite`` only, when given) and per code of every
    warning its cases or figures carry (``contended``, ``high-variance``, ...; an ``invalid``
    figure is :func:`invalid_findings`' own line): how many cases, which, and the first message."""
    hits: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for case in cases:
        for g in case.findings:
            if g.severity in (Severity.WARNING, Severity.ERROR) or g.code == CONTENDED:
                hits.setdefault((case.suite, g.code), []).append((case.key, g.to_dict()))
    for name, data in _suites(run).items():
        for f in data.get("figures") or []:
            for g in f.get("findings") or []:
                if g.get("code") == CONTENDED:
                    key = str((f.get("scope") or {}).get("case") or f.get("name"))
                    hits.setdefault((name, CONTENDED), []).append((key, g))
    out = []
    for (name, code), found in hits.items():
        if suite is not None and name != suite:
            continue
        keys = list(dict.fromkeys(w for w, _ in found))
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        first = found[0][1]
        out.append({**first, "message": f"{label}: {len(keys)} {name} case(s) {code} ({shown}); first: "
                                        f"{first.get('message')}"})
    for name, why in (left_out_suites(run).items() if suite is None else ()):
        out.append({"code": "left-out", "severity": "warning", "message": f"{label}: suite {name} left out: {why}",
                    "hint": ""})
    return sorted(out, key=lambda f: (f.get("code") != CONTENDED, str(f.get("message"))))


def _run_panels(index: int, run: RunRecord, cases: list[CaseResult], label: str) -> list[Chart]:
    figures = Chart(id=f"run-{index}-figures", section="figures", title=f"Figures: {label}", draw=False,
                    spec=tables_only({"figures": figure_rows(run)}),
                    note=f"Run {run.run_id} ({run.status}), created {run.created_at}: every derived figure with "
                         "its method, scope and 95% CI, whatever family made it.",
                    tables=(Table(dataset="figures", columns=FIGURE_COLUMNS),),
                    findings=tuple([*invalid_findings(run), *case_warnings(run, cases, label)]))
    provenance = Chart(id=f"run-{index}-provenance", section="provenance", title=f"Provenance: {label}", draw=False,
                       spec=tables_only({"provenance": flatten({"config": run.config, **run.provenance})}),
                       note="What was asked and where it ran, as recorded with the run.",
                       tables=(Table(dataset="provenance", columns=(Column(field="key", title="key"),
                                                                    Column(field="value", title="value"))),))
    return [figures, provenance]


def suites_present(runs: list[tuple[RunRecord, list[CaseResult]]]) -> list[str]:
    """Every suite the runs hold (a stored summary or a case), by the families' ``order``, then
    suites of no installed family in the order met."""
    from parity.model.family import families

    met = list(dict.fromkeys([name for run, cases in runs for name in [*_suites(run), *(c.suite for c in cases)]]))
    if not met:  # a report of traces or fleets alone loads no family
        return []
    ranked = [name for family in families().values() for name in (family.name, *family.stored_as) if name in met]
    ranked = list(dict.fromkeys(ranked))
    return ranked + [name for name in met if name not in ranked]


def suite_data(suite: str, runs: list[tuple[RunRecord, list[CaseResult]]], labels: list[str]) -> list[RunData]:
    """One ``RunData`` per run that holds ``suite``: its stored summary, figures and cases."""
    out = []
    for label, (run, cases) in zip(labels, runs):
        entry = _suites(run).get(suite) or {}
        mine = [c for c in cases if c.suite == suite]
        if entry or mine:
            out.append(RunData(label=label, run=run, summary=dict(entry.get("summary") or {}),
                               figures=list(entry.get("figures") or []), cases=mine))
    return out


def suite_views(runs: list[tuple[RunRecord, list[CaseResult]]]) -> list[tuple[str, View]]:
    """``(suite, view)`` for every suite of the runs, in section order."""
    return [(suite, suite_view(suite)) for suite in suites_present(runs)]


def sections_for(views: list[tuple[str, View]]) -> list[tuple[str, str]]:
    """The page's sections: figures, then each view's section once (its first heading), then the
    fixed ones (traces, what-if, fleet, comparison, audit, provenance)."""
    fixed = {sid for sid, _ in FIRST_SECTIONS + LAST_SECTIONS}
    middle = dict.fromkeys(tuple(view.section) for _, view in views if view.section[0] not in fixed)
    seen: dict[str, str] = {}
    for sid, heading in middle:
        seen.setdefault(sid, heading)
    return [*FIRST_SECTIONS, *seen.items(), *LAST_SECTIONS]


def report_charts(runs: list[tuple[RunRecord, list[CaseResult]]], traces: list[TraceInput],
                  comparison: dict[str, Any] | None, fleets: Sequence[FleetFolder] = (),
                  views: list[tuple[str, View]] | None = None, run_names: dict[str, str] | None = None) -> list[Chart]:
    """Every chart and panel of the report, in no particular order (the page orders by section).
    A suite's charts carry its runs' ``invalid`` findings and case warnings (on its first chart),
    and tell the runs apart by colour. ``run_names`` names compared runs the report does not hold."""
    labels = run_labels([run for run, _ in runs])
    charts: list[Chart] = []
    for i, (label, (run, cases)) in enumerate(zip(labels, runs)):
        charts += _run_panels(i, run, cases, label)
    for suite, view in suite_views(runs) if views is None else views:
        drawn = [colour_runs(chart, labels) for chart in view.charts(suite_data(suite, runs, labels))]
        warnings = [g for label, (run, cases) in zip(labels, runs)
                    for g in [*_named(invalid_findings(run, suite), label, len(runs)),
                              *case_warnings(run, cases, label, suite)]]
        if drawn and warnings:
            drawn[0] = replace(drawn[0], findings=(*drawn[0].findings, *warnings))
        charts += drawn
    charts += trace_charts(traces)
    charts += fleet_charts(list(fleets))
    if comparison is not None:
        names = {**(run_names or {}), **{run.run_id: label for label, (run, _) in zip(labels, runs)}}
        charts += comparison_charts(comparison, labels=names)
    return charts


def _named(findings: list[dict[str, Any]], label: str, runs: int) -> list[dict[str, Any]]:
    """Findings with the run's label in front when the report has several runs."""
    return findings if runs < 2 else [{**f, "message": f"{label}: {f.get('message')}"} for f in findings]


def report_data(*, runs: Sequence[tuple[RunRecord, list[CaseResult]]] = (), traces: Sequence[TraceInput] = (),
                comparison: dict[str, Any] | None = None, fleets: Sequence[FleetFolder] = (),
                title: str = "parity report", run_names: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole report as one dict with ``schema_version`` and ``kind: report``; ``fleets`` are
    fleet output folders (``parity.trace.fleet.folder.read_fleet_folder``); ``run_names`` maps
    the ids of compared runs the report does not hold to their labels (``run_labels``)."""
    run_list, trace_list, fleet_list = list(runs), list(traces), list(fleets)
    views = suite_views(run_list)
    held = dict(zip([r.run_id for r, _ in run_list], run_labels([r for r, _ in run_list])))
    if comparison is not None:
        comparison = relabel_comparison(comparison, {**(run_names or {}), **held})
    charts = report_charts(run_list, trace_list, comparison, fleet_list, views, run_names)
    order = sections_for(views)
    named = {sid for sid, _ in order}
    strays = [(sid, sid) for sid in dict.fromkeys(c.section for c in charts) if sid not in named]
    order[len(order) - len(LAST_SECTIONS):len(order) - len(LAST_SECTIONS)] = strays  # a chart never goes missing
    sections: list[dict[str, Any]] = [
        {"id": sid, "title": heading, "charts": [c.id for c in charts if c.section == sid]} for sid, heading in order]
    lines = {"compare": list((comparison or {}).get("claims") or []),
             "whatif": [t.whatif_note for t in trace_list if t.whatif_note]}
    if comparison and comparison.get("forced"):
        lines["compare"].insert(0, "This comparison was forced across different conventions: every marked line "
                                   "mixes them.")
    for section in sections:
        section["lines"] = lines.get(section["id"], [])
    return envelope("report", {
        "title": title,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "runs": [{"run_id": run.run_id, "label": held[run.run_id], "status": run.status, "created_at": run.created_at,
                  "cases": len(cases)} for run, cases in run_list],
        "compared": compared_runs(comparison, {**(run_names or {}), **held}),
        "traces": [{"path": t.path, "format": t.analysis.get("format"), "window": t.analysis.get("window")}
                   for t in trace_list],
        "fleets": [{"path": f.out_dir, "ranks": f.ranks, "ranks_per_node": f.ranks_per_node} for f in fleet_list],
        "sections": [s for s in sections if s["charts"] or s["lines"]],
        "charts": [c.to_dict() for c in charts],
    })
