"""Trace analyses kept in the results store (``parity trace analyze --store``), so two traces
can be compared later, or on another machine, without reading them again.

A stored analysis keeps the trace's paths, its SHA-256 digest (``parity.trace.digest``), the
options it was made with (steps, window, rules), the first rank's window, every rank's
categories and streams, and the whole analysis document (``TraceAnalysis.to_dict()``), which is
what ``parity compare`` reads. Ids are ``trace-`` followed by a run-style id; ``latest`` is the
newest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.store.lookup import find_row
from parity.store.database import Store, dump_json, is_latest, load_json, now_utc, unused_run_id

ID_PREFIX = "trace-"
_COLUMNS = "id, created_at, label, paths, sha256, format, window, options, analysis"


@dataclass(frozen=True, kw_only=True)
class StoredTraceAnalysis:
    """One stored analysis: where the trace was, its digest, and the analysis document."""

    analysis_id: str
    created_at: str
    label: str
    paths: tuple[str, ...]
    sha256: str
    format: str
    window: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    analysis: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.analysis_id, "created_at": self.created_at, "label": self.label,
                "paths": list(self.paths), "sha256": self.sha256, "format": self.format,
                "window": dict(self.window), "options": dict(self.options), "analysis": dict(self.analysis)}


def add_trace_analysis(store: Store, *, paths: list[str], sha256: str, analysis: dict[str, Any],
                       options: dict[str, Any], label: str = "") -> StoredTraceAnalysis:
    """Store one analysis document and return it with its new id."""
    ranks = analysis.get("ranks") or []
    created = now_utc()
    with store.transaction() as conn:
        analysis_id = unused_run_id(conn, table="trace_analyses", prefix=ID_PREFIX)
        conn.execute(
            "INSERT INTO trace_analyses (id, created_at, label, paths, sha256, format, window, options,"
            " categories, streams, analysis) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (analysis_id, created, label or _default_label(paths), dump_json(list(paths)), sha256,
             str(analysis.get("format", "")), dump_json(analysis.get("window") or {}), dump_json(options),
             dump_json({str(r["rank"]): r.get("categories", []) for r in ranks}),
             dump_json(analysis.get("streams") or []), dump_json(analysis)),
        )
    return get_trace_analysis(store, analysis_id)


def _default_label(paths: list[str]) -> str:
    from pathlib import Path

    return ", ".join(Path(p).name for p in paths)


def is_trace_analysis_id(text: str) -> bool:
    """True for ids (or prefixes) of stored analyses: ``trace-...``, ``trace:latest`` or ``trace:latest~N``."""
    return text.startswith(ID_PREFIX) or is_latest(text, "trace:latest")


def get_trace_analysis(store: Store, analysis_id: str) -> StoredTraceAnalysis:
    """The stored analysis with this id, a unique prefix of it, ``trace:latest`` or ``trace:latest~N``."""
    row = find_row(store, table="trace_analyses", columns=_COLUMNS, wanted=analysis_id, latest="trace:latest",
                   what="trace analysis", plural="trace analyses", hint="store one with parity trace analyze --store")
    return _from_row(row)


def list_trace_analyses(store: Store) -> list[StoredTraceAnalysis]:
    """Every stored analysis, newest first."""
    rows = store.query(f"SELECT {_COLUMNS} FROM trace_analyses ORDER BY created_at DESC, id DESC")
    return [_from_row(row) for row in rows]


def _from_row(row: tuple[Any, ...]) -> StoredTraceAnalysis:
    return StoredTraceAnalysis(
        analysis_id=row[0], created_at=row[1], label=row[2], paths=tuple(load_json(row[3]) or ()),
        sha256=row[4], format=row[5], window=load_json(row[6]) or {}, options=load_json(row[7]) or {},
        analysis=load_json(row[8]) or {},
    )
