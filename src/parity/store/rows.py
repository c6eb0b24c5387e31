"""How runs and cases are written to and read from their table rows (JSON columns as text)."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from parity.model.findings import Finding
from parity.model.result import CaseResult, RunRecord
from parity.model.samples import Samples
from parity.model.schema import json_default


def dump_json(value: Any) -> str:
    """``value`` as JSON text (numpy values and non-string keys allowed)."""
    return orjson.dumps(
        value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS, default=json_default
    ).decode()


def load_json(text: str | None) -> Any:
    """The value of JSON text; None for an empty column."""
    return orjson.loads(text) if text else None


INSERT_CASE = (
    "INSERT INTO cases (run_id, suite, key, params, samples, metrics, check_result,"
    " findings, telemetry, error, ok, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (run_id, suite, key) DO UPDATE SET params = excluded.params,"
    " samples = excluded.samples, metrics = excluded.metrics,"
    " check_result = excluded.check_result, findings = excluded.findings,"
    " telemetry = excluded.telemetry, error = excluded.error, ok = excluded.ok,"
    " created_at = excluded.created_at"
)


def case_row(run_id: str, case: CaseResult, created: str) -> tuple[Any, ...]:
    """The values of :data:`INSERT_CASE` for one case (JSON columns as text)."""
    return (
        run_id,
        case.suite,
        case.key,
        dump_json(case.params),
        dump_json({name: s.to_dict() for name, s in case.samples.items()}),
        dump_json(case.metrics),
        dump_json(case.check),
        dump_json([f.to_dict() for f in case.findings]),
        dump_json(case.telemetry),
        case.error,
        int(case.ok),
        created,
    )


def run_from_row(row: tuple[Any, ...]) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        created_at=row[1],
        status=row[2],
        config=load_json(row[3]) or {},
        provenance=load_json(row[4]) or {},
        summary=load_json(row[5]) or {},
    )


def case_from_row(row: tuple[Any, ...]) -> CaseResult:
    samples = load_json(row[3]) or {}
    return CaseResult(
        suite=row[0],
        key=row[1],
        params=load_json(row[2]) or {},
        samples={name: Samples.from_dict(s) for name, s in samples.items()},
        metrics=load_json(row[4]) or {},
        check=load_json(row[5]) or {},
        findings=tuple(Finding.from_dict(f) for f in load_json(row[6]) or []),
        telemetry=load_json(row[7]) or {},
        error=row[8],
    )


def case_findings(conn: sqlite3.Connection, run_id: str, suite: str) -> dict[str, tuple[Finding, ...]]:
    """The findings of the run's cases of ``suite``, by case key (a findings column that does
    not parse counts as none)."""
    out: dict[str, tuple[Finding, ...]] = {}
    rows = conn.execute("SELECT key, findings FROM cases WHERE run_id = ? AND suite = ?", (run_id, suite))
    for key, text in rows.fetchall():
        try:
            out[key] = tuple(Finding.from_dict(f) for f in load_json(text) or [])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            out[key] = ()
    return out
