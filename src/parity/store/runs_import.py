"""Reading a run exported on another machine (``parity runs export RUN --format json``) into
the local store, so runs made on different hosts can be compared on one.

The document is checked whole before anything is written: a JSON object of kind
``run-export`` with an integer ``schema_version`` no newer than this parity's, a run record and
a list of cases that keep :mod:`parity.store.import_schema` (ids that can name files, known
fields, numbers where numbers belong, positive times) and parse as :class:`RunRecord` and
:class:`CaseResult`. Then the run and every
case go in one transaction, so a file that fails any check, or a process killed mid-way, leaves
the store as it was. The run keeps its id, config, provenance, status, summary and figures; an
id already in the store is refused unless ``as_new`` draws a new one.

An export written before the store had a figures table has no ``figures`` list: its figures
are read from the copies inside its summary, and its cases get the headline compare chose for
them then (``parity.store.headlines``), as the migration does for a stored run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from parity.model.errors import ParityError, one_line
from parity.model.result import CaseResult, RunRecord
from parity.model.schema import check_version
from parity.store.database import RUN_STATUSES, Store, now_utc, unused_run_id
from parity.store.figures import INSERT_FIGURE, StoredFigure, figure_row, summary_figures, with_case_findings
from parity.store.headlines import declared_before, declared_decode, declared_medians
from parity.store.import_schema import check_document
from parity.store.rows import INSERT_CASE, case_row, dump_json

EXPORT_KIND = "run-export"
HOW_TO_EXPORT = "export it again with parity runs export RUN --format json"


@dataclass(frozen=True, kw_only=True)
class ImportedRun:
    """What an import wrote: the id the run has here, the id it had, its case count."""

    run_id: str
    original_id: str
    cases: int


@dataclass(frozen=True, kw_only=True)
class RunExport:
    """A checked run export: the run, its cases and its figures."""

    run: RunRecord
    cases: list[CaseResult]
    figures: list[StoredFigure]


def read_export(path: str | os.PathLike[str]) -> RunExport:
    """Parse and check a run export file; raises :class:`ParityError` naming the file."""
    source = Path(path)
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise ParityError(f"cannot read {source}: {exc.strerror}; check the path") from None
    return parse_export(raw, source=str(source))


def parse_export(raw: bytes, *, source: str) -> RunExport:
    """:func:`read_export` on bytes already read (``source`` names them in errors)."""
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ParityError(f"{source} is not JSON ({one_line(exc, 200)}); {HOW_TO_EXPORT}") from None
    if not isinstance(document, dict):
        raise ParityError(f"{source} holds a JSON {type(document).__name__}, not a run export; {HOW_TO_EXPORT}")
    check_version(document, source=source)
    kind = document.get("kind")
    if kind != EXPORT_KIND:
        raise ParityError(f"{source} is a {kind!r} document, not a {EXPORT_KIND!r}; {HOW_TO_EXPORT}")
    run_data, cases_data = document.get("run"), document.get("cases")
    if not isinstance(run_data, dict) or not isinstance(cases_data, list):
        raise ParityError(f"{source}: a run export needs a 'run' object and a 'cases' list; {HOW_TO_EXPORT}")
    figures_data = document.get("figures")
    if figures_data is not None and not isinstance(figures_data, list):
        raise ParityError(f"{source}: a run export's 'figures' must be a list; {HOW_TO_EXPORT}")
    check_document(document, source=source, how=HOW_TO_EXPORT)
    try:
        run = RunRecord.from_dict(run_data)
        cases = [CaseResult.from_dict(_object(c, "case")) for c in cases_data]
        if figures_data is None:  # written before the figures table
            figures = _legacy_figures(run, cases)
            cases = [_declared(c, declared_before(c.metrics)) for c in cases]
        else:
            figures = [StoredFigure.from_dict(_object(f, "figure")) for f in figures_data]
        cases = [_declare_since(c) for c in cases]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ParityError(f"{source}: malformed run export ({one_line(exc, 200)}); {HOW_TO_EXPORT}") from None
    _check_run(run, cases, source=source)
    try:
        dump_json([f.to_dict() for f in figures])
    except TypeError as exc:
        raise ParityError(f"{source}: malformed run export ({one_line(exc, 200)}); {HOW_TO_EXPORT}") from None
    return RunExport(run=run, cases=cases, figures=figures)


def _legacy_figures(run: RunRecord, cases: list[CaseResult]) -> list[StoredFigure]:
    """The figures inside an old export's summary, a figure of a case with the case's findings."""
    figures = summary_figures(run.summary)
    out: list[StoredFigure] = []
    for suite in dict.fromkeys(f.suite for f in figures):
        findings = {c.key: c.findings for c in cases if c.suite == suite}
        out += with_case_findings([f for f in figures if f.suite == suite], findings)
    return out


def _declared(case: CaseResult, added: dict[str, Any]) -> CaseResult:
    return replace(case, metrics={**case.metrics, **added}) if added else case


def _declare_since(case: CaseResult) -> CaseResult:
    """What a case exported before schemas 5 and 6 did not declare: an offline decode case's
    headline, and the sample sets a latency slope or a decode step is made of."""
    case = _declared(case, declared_decode(case.metrics))
    return _declared(case, declared_medians(case.metrics, {name: s.values_s for name, s in case.samples.items()}))


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"a {what} is a JSON {type(value).__name__}, not an object")
    return value


def _check_run(run: RunRecord, cases: list[CaseResult], *, source: str) -> None:
    """What ``from_dict`` lets through but the store cannot hold."""
    if not run.run_id.strip():
        raise ParityError(f"{source}: the run has an empty run_id; {HOW_TO_EXPORT}")
    if run.status not in RUN_STATUSES:
        raise ParityError(f"{source}: run status {run.status!r} is not one of {', '.join(RUN_STATUSES)}; "
                          f"{HOW_TO_EXPORT}")
    seen: set[tuple[str, str]] = set()
    for case in cases:
        if (case.suite, case.key) in seen:
            raise ParityError(f"{source}: case {case.suite}/{case.key} appears twice; {HOW_TO_EXPORT}")
        seen.add((case.suite, case.key))
    try:  # every column must serialise before the transaction starts
        dump_json([run.config, run.provenance, run.summary, [c.to_dict() for c in cases]])
    except TypeError as exc:
        raise ParityError(f"{source}: malformed run export ({one_line(exc, 200)}); {HOW_TO_EXPORT}") from None


def import_run(store: Store, path: str | os.PathLike[str], *, as_new: bool = False) -> ImportedRun:
    """Read the export at ``path`` into ``store`` (see the module docstring)."""
    return write_run(store, read_export(path), source=str(path), as_new=as_new)


def write_run(store: Store, export: RunExport, *, source: str, as_new: bool = False) -> ImportedRun:
    """Insert a checked run, its cases and its figures in one transaction."""
    run, cases = export.run, export.cases
    run_id = run.run_id
    with store.transaction() as conn:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
            if not as_new:
                raise ParityError(
                    f"{source}: run {run_id} is already in {store.path}; pass --as-new to import it "
                    "under a new id"
                )
            run_id = unused_run_id(conn)
        now = now_utc()
        conn.execute(
            "INSERT INTO runs (id, created_at, updated_at, status, config, provenance, summary)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (run_id, run.created_at, now, run.status, dump_json(run.config),
             dump_json(run.provenance), dump_json(run.summary)),
        )
        for case in cases:
            conn.execute(INSERT_CASE, case_row(run_id, case, now))
        for figure in export.figures:
            conn.execute(INSERT_FIGURE, figure_row(run_id, figure, now, dump_json))
    return ImportedRun(run_id=run_id, original_id=run.run_id, cases=len(cases))
