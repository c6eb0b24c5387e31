"""The results database's schema and how an older database is brought up to date.

The version lives in SQLite's ``PRAGMA user_version``; ``PRAGMA application_id`` marks the file
as a parity store so a foreign SQLite file is refused instead of being written into.

Migration path: ``MIGRATIONS[n]`` is the list of statements that turns version ``n`` into
``n + 1`` (``MIGRATIONS[0]`` creates the first schema on an empty file). :func:`migrate` applies
the missing steps in order inside one ``BEGIN IMMEDIATE`` transaction, so two processes opening
an old file at once migrate it exactly once, and a crash mid-way leaves the old version intact.
A step that must also rewrite rows has a data step (``parity.store.backfill.BACKFILLS[n]``)
that runs in the same transaction after its statements. To change the schema: append a step,
bump :data:`STORE_VERSION`, add a history line below and a test that opens a file of the
previous version.

History:
    1: runs (id, created_at, updated_at, status, config, provenance, summary) and cases
       (run_id, suite, key, params, samples, metrics, check_result, findings, telemetry, error,
       ok, created_at) with UNIQUE(run_id, suite, key). JSON columns hold UTF-8 JSON text.
    2: trace_analyses (id, created_at, label, paths, sha256, format, window, options, categories,
       streams, analysis): a stored ``parity trace analyze`` with the trace's paths, its SHA-256
       digest, the first rank's window, the per-rank categories and streams, and the whole
       analysis document. Version 1 files gain the empty table.
    3: fleet_analyses (id, created_at, label, out_dir, paths, ranks, ranks_per_node,
       skew_median_ns, skew_p99_ns, wait_total_ns, straggler_ranks, ops, stragglers, summary,
       headline): a stored ``parity trace fleet`` output folder: where it is, the rank files,
       the headline figures as columns (queryable in SQL), the figures per op, the straggler
       table and fleet.json. Version 2 files gain the empty table.
    4: figures (id, run_id, suite, case_key, name, scope, value, unit, method, ci_low, ci_high,
       best, note, findings, created_at): every figure of a run's suites as a row
       (``parity.store.figures``); ``case_key`` is NULL for a figure over a suite's cases.
    5: no new table: each offline decode case declares its headline, tokens/s per card
       (``parity.store.backfill.decode_headlines``); stored before, compare gave them no ratio.
    6: no new table: each latency slope and decode step names the sample sets and weights its
       headline is made of (``headline_medians``, ``parity.store.backfill.sample_medians``),
       where its samples give the headline back; stored before, compare gave them no within-run CI.
       Version 3 files get their runs' figures from the copies inside the run summaries, and
       their cases the headline compare chose for them then (``parity.store.headlines``).
"""

from __future__ import annotations

import sqlite3

from parity.model.errors import ParityError
from parity.store.backfill import BACKFILLS

# "PRTY" as a big-endian 32-bit integer: identifies a parity results file (``file`` shows it).
APPLICATION_ID = 0x50525459

STORE_VERSION = 6

_V1 = [
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        status TEXT NOT NULL,
        config TEXT NOT NULL,
        provenance TEXT NOT NULL,
        summary TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE cases (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        suite TEXT NOT NULL,
        key TEXT NOT NULL,
        params TEXT NOT NULL,
        samples TEXT NOT NULL,
        metrics TEXT NOT NULL,
        check_result TEXT NOT NULL,
        findings TEXT NOT NULL,
        telemetry TEXT NOT NULL,
        error TEXT,
        ok INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, suite, key)
    )
    """,
    "CREATE INDEX cases_by_run ON cases (run_id, suite)",
    "CREATE INDEX runs_by_time ON runs (created_at)",
]

_V2 = [
    """
    CREATE TABLE trace_analyses (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        label TEXT NOT NULL,
        paths TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        format TEXT NOT NULL,
        window TEXT NOT NULL,
        options TEXT NOT NULL,
        categories TEXT NOT NULL,
        streams TEXT NOT NULL,
        analysis TEXT NOT NULL
    )
    """,
    "CREATE INDEX trace_analyses_by_time ON trace_analyses (created_at)",
]

_V3 = [
    """
    CREATE TABLE fleet_analyses (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        label TEXT NOT NULL,
        out_dir TEXT NOT NULL,
        paths TEXT NOT NULL,
        ranks INTEGER NOT NULL,
        ranks_per_node INTEGER,
        skew_median_ns REAL,
        skew_p99_ns REAL,
        wait_total_ns INTEGER NOT NULL,
        straggler_ranks TEXT NOT NULL,
        ops TEXT NOT NULL,
        stragglers TEXT NOT NULL,
        summary TEXT NOT NULL,
        headline TEXT NOT NULL
    )
    """,
    "CREATE INDEX fleet_analyses_by_time ON fleet_analyses (created_at)",
]

_V4 = [
    """
    CREATE TABLE figures (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        suite TEXT NOT NULL,
        case_key TEXT,
        name TEXT NOT NULL,
        scope TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        method TEXT NOT NULL,
        ci_low REAL,
        ci_high REAL,
        best REAL,
        note TEXT NOT NULL,
        findings TEXT NOT NULL,
        created_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX figures_by_run ON figures (run_id, suite, name)",
]

MIGRATIONS: dict[int, list[str]] = {0: _V1, 1: _V2, 2: _V3, 3: _V4, 4: [], 5: []}


def read_header(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """``(application_id, user_version, number of tables)`` of an open database, read in one
    statement: one snapshot of the file. Read one statement each, outside a transaction, a
    store another process was creating could show its ids from before the creation and its
    tables from after it, and be taken for another application's database."""
    app_id, version, tables = conn.execute(
        "SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), "
        "(SELECT count(*) FROM sqlite_master WHERE type = 'table')"
    ).fetchone()
    return int(app_id), int(version), int(tables)


def check_compatible(conn: sqlite3.Connection, *, source: str) -> int:
    """Refuse foreign or newer files; return the file's schema version (0: empty file)."""
    app_id, version, tables = read_header(conn)
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and version == 0 and tables):
        raise ParityError(
            f"{source} is an sqlite database but not a parity results store; "
            "pass --db with another path"
        )
    if version > STORE_VERSION:
        raise ParityError(
            f"{source} has store schema {version}, newer than this parity ({STORE_VERSION}); "
            "upgrade parity to use it"
        )
    return version


def migrate(conn: sqlite3.Connection, *, source: str) -> int:
    """Bring the schema to :data:`STORE_VERSION`; return the version found before migrating.

    ``conn`` must be in autocommit mode (``isolation_level=None``) so the transaction here is
    the only one.
    """
    found = check_compatible(conn, source=source)
    if found == STORE_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = check_compatible(conn, source=source)  # another process may have migrated
        for version in range(found, STORE_VERSION):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            if version in BACKFILLS:
                BACKFILLS[version](conn)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {STORE_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found
