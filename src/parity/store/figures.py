"""Stored figures: every figure a run's suites derived, one row each, the table export and
compare read (never a suite's summary).

A row is a :class:`parity.model.figure.Figure` with where it belongs: the suite, and the case
when the figure is of one case (``case``; None for a figure over the suite's cases). Two kinds
of figure reach the table when a suite is summarised:

- the suite's ``figures(summary)``: figures over cases (``gemm.ceiling``,
  ``membw.copy.asymptotic``), or of one case when their scope names it (``scope["case"]``);
- the per-case table a summary may carry as ``case_figures``: ``{"units": {name: unit},
  "statistic": method, "rows": {case key: {name: value}}}``. Each name with a unit becomes a
  figure of that case (its value may be None); each name without one (a class, a dtype, a
  flag) is a property of the case and goes into the scope of the case's figures, where a query
  filters on it (``scope["class"] == "compute-bound"``). Values keep the unit the suite declared.

``findings`` holds the :class:`Finding` records that judge a figure: a figure of a case carries
its case's findings (high variance, throttling, a wrong result: whatever makes the case's
numbers doubtful makes the figures derived from them so), followed by the figure's own (a
``Figure``'s ``findings``: ``invalid`` when it cannot be true).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from parity.model.figure import Figure
from parity.model.findings import Finding

CASE_TABLE = "case_figures"  # the summary key of the optional per-case table (module docstring)


@dataclass(frozen=True, kw_only=True)
class StoredFigure:
    """One row of the figures table: a figure of ``suite`` (of its case ``case`` when set)."""

    suite: str
    name: str
    value: float | None
    unit: str
    method: str = ""
    scope: dict[str, Any] = field(default_factory=dict)
    case: str | None = None
    ci95: tuple[float, float] | None = None
    best: float | None = None
    note: str = ""
    findings: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, suite: str, figure: Figure) -> StoredFigure:
        """The row of a suite's figure; a scope with ``case`` makes it that case's figure."""
        case = figure.scope.get("case")
        return cls(suite=suite, name=figure.name, value=figure.value, unit=figure.unit, method=figure.method,
                   scope=dict(figure.scope), case=str(case) if case is not None else None, ci95=figure.ci95,
                   best=figure.best, note=figure.note, findings=tuple(figure.findings))

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "case": self.case, "name": self.name, "value": self.value, "unit": self.unit,
                "method": self.method, "scope": dict(self.scope),
                "ci95": list(self.ci95) if self.ci95 is not None else None, "best": self.best, "note": self.note,
                "findings": [f.to_dict() for f in self.findings]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoredFigure:
        ci = data.get("ci95")
        case = data.get("case")
        return cls(suite=str(data["suite"]), name=str(data["name"]), value=_number(data.get("value")),
                   unit=str(data.get("unit") or ""), method=str(data.get("method") or ""),
                   scope=dict(data.get("scope") or {}), case=str(case) if case is not None else None,
                   ci95=(float(ci[0]), float(ci[1])) if ci else None, best=_number(data.get("best")),
                   note=str(data.get("note") or ""),
                   findings=tuple(Finding.from_dict(f) for f in data.get("findings") or []))


def with_case_findings(figures: Iterable[StoredFigure],
                       findings: Mapping[str, tuple[Finding, ...]]) -> list[StoredFigure]:
    """Each figure of a case with its case's findings (by case key) before its own; a finding
    the figure already holds (same code and message) is not repeated."""
    out = []
    for f in figures:
        if f.case is None:
            out.append(f)
            continue
        own = {(g.code, g.message) for g in f.findings}
        inherited = tuple(g for g in findings.get(f.case, ()) if (g.code, g.message) not in own)
        out.append(replace(f, findings=inherited + tuple(f.findings)))
    return out


def _number(value: Any) -> float | None:
    """A finite float, or None (SQLite has no NaN: it would read back as NULL anyway)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def suite_figures(suite: str, figures: Iterable[Figure], summary: Mapping[str, Any] | None) -> list[StoredFigure]:
    """Every stored row of one suite: its figures, then its summary's per-case table."""
    rows = [StoredFigure.of(suite, f) for f in figures]
    table = (summary or {}).get(CASE_TABLE)
    if isinstance(table, Mapping):
        rows += case_table_figures(suite, table)
    return rows


def case_table_figures(suite: str, table: Mapping[str, Any]) -> list[StoredFigure]:
    """The figures of a ``case_figures`` table, one per case and named value with a unit."""
    units: Mapping[str, Any] = table["units"] if isinstance(table.get("units"), Mapping) else {}
    method = str(table.get("statistic") or "")
    rows: Mapping[str, Any] = table["rows"] if isinstance(table.get("rows"), Mapping) else {}
    out: list[StoredFigure] = []
    for key, values in rows.items():
        if not isinstance(values, Mapping):
            continue
        measured = {n: v for n, v in values.items() if _is_figure(n, v, units)}
        scope = {"case": str(key), **{n: v for n, v in values.items() if n not in measured}}
        out += [StoredFigure(suite=suite, case=str(key), name=str(n), value=_number(v), unit=str(units.get(n) or ""),
                             method=method, scope=scope) for n, v in measured.items()]
    return out


def _is_figure(name: str, value: Any, units: Mapping[str, Any]) -> bool:
    """A named value with a declared unit is a figure; without one, a number still is."""
    if units.get(name):
        return True
    return name not in units and isinstance(value, (int, float)) and not isinstance(value, bool)


def summary_figures(summary: Mapping[str, Any] | None) -> list[StoredFigure]:
    """The figures a run's stored summary holds (``suites[name]["figures"]`` and each suite
    summary's per-case table): what runs stored before the figures table (schema 3 and older)
    and run exports of that time carry. A figure that does not parse is left out."""
    suites = (summary or {}).get("suites")
    out: list[StoredFigure] = []
    for name, outcome in (suites.items() if isinstance(suites, Mapping) else ()):
        if not isinstance(outcome, Mapping):
            continue
        figures = []
        for data in outcome.get("figures") or []:
            try:
                figures.append(Figure.from_dict(data))
            except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                continue
        inner = outcome.get("summary")
        out += suite_figures(str(name), figures, inner if isinstance(inner, Mapping) else None)
    return out


INSERT_FIGURE = (
    "INSERT INTO figures (run_id, suite, case_key, name, scope, value, unit, method, ci_low, ci_high, best, note,"
    " findings, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SELECT_FIGURES = (
    "SELECT suite, case_key, name, scope, value, unit, method, ci_low, ci_high, best, note, findings"
    " FROM figures WHERE run_id = ?"
)


def figure_row(run_id: str, figure: StoredFigure, created: str, dump: Any) -> tuple[Any, ...]:
    """The values of :data:`INSERT_FIGURE` for one figure (``dump`` writes JSON text)."""
    low, high = figure.ci95 if figure.ci95 is not None else (None, None)
    return (run_id, figure.suite, figure.case, figure.name, dump(figure.scope), _number(figure.value), figure.unit,
            figure.method, low, high, _number(figure.best), figure.note,
            dump([f.to_dict() for f in figure.findings]), created)


def figure_from_row(row: tuple[Any, ...], load: Any) -> StoredFigure:
    """A :data:`SELECT_FIGURES` row as its record (``load`` reads JSON text)."""
    suite, case, name, scope, value, unit, method, low, high, best, note, findings = row
    return StoredFigure(suite=suite, case=case, name=name, scope=load(scope) or {}, value=value, unit=unit,
                        method=method, ci95=(low, high) if low is not None and high is not None else None,
                        best=best, note=note, findings=tuple(Finding.from_dict(f) for f in load(findings) or []))
