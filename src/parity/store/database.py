"""The embedded results store: one SQLite file holding runs and their measured cases.

Durability: every write is its own ``BEGIN IMMEDIATE ... COMMIT`` in WAL mode, so a process
killed at any moment (SIGKILL, the OOM killer, Ctrl-C) loses at most the case it was measuring,
and two processes writing at once wait for each other (``busy_timeout``) instead of corrupting
the file or dropping rows. ``synchronous=NORMAL``: in WAL mode a commit survives the process
dying; after an OS crash or power loss the file stays consistent but the last commits may be
gone (``parity run --resume`` measures them again). ``FULL`` would fsync every case, about 20
times the cost per case for no gain against a killed process (``benchmarks/store_commit.py``).
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult, RunRecord
from parity.store.figures import (
    INSERT_FIGURE,
    SELECT_FIGURES,
    StoredFigure,
    figure_from_row,
    figure_row,
    with_case_findings,
)
from parity.store.opening import BUSY_TIMEOUT_MS, prepare_with_retries
from parity.store.read_only import open_read_only
from parity.store.rows import (
    INSERT_CASE,
    case_findings,
    case_from_row,
    case_row,
    dump_json,
    load_json,
    run_from_row,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

ENV_VAR = "PARITY_DB"
RUN_STATUSES = ("running", "complete", "failed")


def default_path() -> Path:
    """``$PARITY_DB`` if set, else ``results.sqlite`` in the user's data directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("parity")) / "results.sqlite"


def now_utc() -> str:
    """The current time as an ISO 8601 UTC string with microseconds (sorts as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_run_id() -> str:
    """A short readable id: UTC date and time to the second plus 4 random hex digits."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(2)}"


def unused_run_id(conn: sqlite3.Connection, *, table: str = "runs", prefix: str = "") -> str:
    """``prefix`` + a :func:`new_run_id` that no row of ``table`` (``runs``,
    ``trace_analyses`` or ``fleet_analyses``) holds yet, drawn inside the caller's write
    transaction."""
    if table not in ("runs", "trace_analyses", "fleet_analyses"):
        raise ValueError(f"no id column to draw from in table {table!r}")
    for _ in range(8):
        candidate = prefix + new_run_id()
        if not conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (candidate,)).fetchone():
            return candidate
    what = {"runs": "run", "trace_analyses": "trace analysis"}.get(table, "fleet analysis")
    raise ParityError(f"could not draw an unused {what} id after 8 tries; retry the command")


def _sqlite_errors_as_parity_errors(method: Callable[..., T]) -> Callable[..., T]:
    """A damaged file surfaces mid-way (``database disk image is malformed``): name the file."""

    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise ParityError(
                f"results store {self.path} failed: {exc}; check the disk or move the file aside"
            ) from None

    return wrapper


@dataclass(frozen=True, kw_only=True)
class CaseCounts:
    """How many cases a run holds: all, those that are not ok, and those with an error."""

    total: int = 0
    failed: int = 0
    errors: int = 0


class Store:
    """A results database. Open with :meth:`Store.open`; use as a context manager to close."""

    def __init__(self, *, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Store:
        """Open (creating if needed) the store at ``path``, ``$PARITY_DB`` or the default path.

        A file that is not SQLite, not a parity store, or from a newer parity raises
        :class:`ParityError` naming the file. ``read_only`` (the commands that only read:
        ``runs list``, ``runs show``, ``compare``, ``report``) opens an existing store without
        writing to it or creating anything (:func:`parity.store.read_only.open_read_only`):
        a missing store reads as an empty one.
        """
        target = Path(path).expanduser() if path is not None else default_path()
        if target.is_dir():
            raise ParityError(f"results store {target} is a directory; pass a file path to --db")
        if read_only:
            conn = open_read_only(target)
            if conn is not None:
                return cls(conn=conn, path=target)
            # an older schema in a writable file: migrated by the writable open below
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParityError(
                f"cannot create {target.parent} for the results store: {exc.strerror}; "
                "pass --db with a writable path"
            ) from None
        try:
            conn = sqlite3.connect(
                str(target), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise ParityError(
                f"cannot open results store {target}: {exc}; check the path"
            ) from None
        try:
            found = prepare_with_retries(conn, target)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise ParityError(
                f"{target} is not a usable results store ({exc}); move it aside or pass --db"
            ) from None
        except BaseException:
            conn.close()
            raise
        log.debug("opened results store %s (schema found: %d)", target, found)
        return cls(conn=conn, path=target)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One committed write transaction; waits for other writers up to ``busy_timeout``."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ParityError(f"results store {self.path} is busy or read-only ({exc})") from None
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- runs ----------------------------------------------------------------------------------

    @_sqlite_errors_as_parity_errors
    def create_run(self, *, config: dict[str, Any], provenance: dict[str, Any]) -> RunRecord:
        """Start a run in state ``running`` and return its record."""
        created = now_utc()
        with self._write() as conn:
            run_id = unused_run_id(conn)
            conn.execute(
                "INSERT INTO runs (id, created_at, updated_at, status, config, provenance,"
                " summary) VALUES (?, ?, ?, 'running', ?, ?, '{}')",
                (run_id, created, created, dump_json(config), dump_json(provenance)),
            )
        return RunRecord(run_id=run_id, created_at=created, config=config, provenance=provenance)

    @_sqlite_errors_as_parity_errors
    def finish_run(self, run_id: str, *, status: str, summary: dict[str, Any]) -> None:
        """Record a run's final status (``complete`` or ``failed``) and its summary."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not one of {RUN_STATUSES}")
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE runs SET status = ?, summary = ?, updated_at = ? WHERE id = ?",
                (status, dump_json(summary), now_utc(), run_id),
            )
            if cur.rowcount != 1:
                raise self._unknown(run_id)

    @_sqlite_errors_as_parity_errors
    def update_provenance(self, run_id: str, provenance: dict[str, Any]) -> None:
        """Replace a run's provenance (the runner appends each resume to it)."""
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE runs SET provenance = ?, updated_at = ? WHERE id = ?",
                (dump_json(provenance), now_utc(), run_id),
            )
            if cur.rowcount != 1:
                raise self._unknown(run_id)

    @_sqlite_errors_as_parity_errors
    def get_run(self, run_id: str) -> RunRecord:
        """The run with this id, a unique prefix of it, or ``latest``."""
        return run_from_row(self._run_row(run_id))

    @_sqlite_errors_as_parity_errors
    def resolve_run_id(self, run_id: str) -> str:
        """The full id of ``run_id`` (an id, a unique prefix, ``latest`` or ``latest~N``, the Nth
        run before the latest)."""
        return str(self._run_row(run_id)[0])

    def _run_row(self, run_id: str) -> tuple[Any, ...]:
        cols = "id, created_at, status, config, provenance, summary"
        back = latest_back(run_id, "latest", what="run")
        if back is not None:
            row = self._conn.execute(
                f"SELECT {cols} FROM runs ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?", (back,)
            ).fetchone()
            if row is None and back == 0:
                raise ParityError(f"no runs in {self.path} yet; start one with parity run")
            if row is None:
                held = self._conn.execute("SELECT count(*) FROM runs").fetchone()[0]
                raise ParityError(f"{self.path} holds {held} run(s); there is no {run_id}")
            return row
        row = self._conn.execute(f"SELECT {cols} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is not None:
            return row
        escaped = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._conn.execute(
            f"SELECT {cols} FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
            (escaped + "%",),
        ).fetchall()
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            some = ", ".join(r[0] for r in rows[:5])
            raise ParityError(f"run id {run_id!r} is ambiguous ({some}...); give more of it")
        raise self._unknown(run_id)

    def _unknown(self, run_id: str) -> ParityError:
        return ParityError(f"no run {run_id!r} in {self.path}; see parity runs list")

    @_sqlite_errors_as_parity_errors
    def list_runs(self, *, limit: int | None = None) -> list[RunRecord]:
        """Runs, newest first."""
        sql = "SELECT id, created_at, status, config, provenance, summary FROM runs"
        sql += " ORDER BY created_at DESC, id DESC"
        params: tuple[Any, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (int(limit),)
        return [run_from_row(row) for row in self._conn.execute(sql, params)]

    @_sqlite_errors_as_parity_errors
    def case_counts(self) -> dict[str, CaseCounts]:
        """Per run id: how many cases, how many not ok, how many errors."""
        rows = self._conn.execute(
            "SELECT run_id, count(*), sum(ok = 0), sum(error IS NOT NULL)"
            " FROM cases GROUP BY run_id"
        )
        return {r[0]: CaseCounts(total=r[1], failed=r[2] or 0, errors=r[3] or 0) for r in rows}

    # -- cases ---------------------------------------------------------------------------------

    @_sqlite_errors_as_parity_errors
    def add_case(self, run_id: str, case: CaseResult) -> None:
        """Store one measured case and commit it before returning.

        A case with the same ``(suite, key)`` already in the run is replaced, so the run holds
        each case exactly once whatever the order of writers.
        """
        row = case_row(run_id, case, now_utc())
        with self._write() as conn:
            try:
                conn.execute(INSERT_CASE, row)
            except sqlite3.IntegrityError:
                raise self._unknown(run_id) from None
            conn.execute("UPDATE runs SET updated_at = ? WHERE id = ?", (row[-1], run_id))

    @_sqlite_errors_as_parity_errors
    def add_figures(self, run_id: str, suite: str, figures: Sequence[Figure | StoredFigure]) -> None:
        """Store the figures of ``suite`` in the run, replacing those it had (a resumed run is
        summarised again); a ``Figure`` whose scope names a ``case`` is that case's, and carries
        the case's findings."""
        rows = [f if isinstance(f, StoredFigure) else StoredFigure.of(suite, f) for f in figures]
        if any(r.suite != suite for r in rows):
            raise ValueError(f"figures of another suite given for suite {suite!r}")
        created = now_utc()
        with self._write() as conn:
            if not conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                raise self._unknown(run_id)
            rows = with_case_findings(rows, case_findings(conn, run_id, suite))
            conn.execute("DELETE FROM figures WHERE run_id = ? AND suite = ?", (run_id, suite))
            conn.executemany(INSERT_FIGURE, [figure_row(run_id, r, created, dump_json) for r in rows])

    @_sqlite_errors_as_parity_errors
    def figures(self, run_id: str, suite: str | None = None) -> list[StoredFigure]:
        """The run's stored figures in the order they were stored, optionally of one suite."""
        sql, params = SELECT_FIGURES, (run_id,) if suite is None else (run_id, suite)
        if suite is not None:
            sql += " AND suite = ?"
        return [figure_from_row(row, load_json) for row in self._conn.execute(sql + " ORDER BY id", params)]

    def transaction(self) -> Any:
        """One committed write transaction (``with store.transaction() as conn``), for the
        store's import and trace-analysis modules; waits for other writers."""
        return self._write()

    @_sqlite_errors_as_parity_errors
    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read statement (for the store's sibling modules)."""
        return self._conn.execute(sql, params).fetchall()

    @_sqlite_errors_as_parity_errors
    def done_keys(self, run_id: str, suite: str) -> set[str]:
        """Keys of the cases of ``suite`` already stored in the run (what a resume skips)."""
        rows = self._conn.execute(
            "SELECT key FROM cases WHERE run_id = ? AND suite = ?", (run_id, suite)
        )
        return {r[0] for r in rows}

    @_sqlite_errors_as_parity_errors
    def cases(self, run_id: str, suite: str | None = None) -> list[CaseResult]:
        """The run's cases in the order they were first stored, optionally of one suite."""
        sql = (
            "SELECT suite, key, params, samples, metrics, check_result, findings, telemetry, error"
            " FROM cases WHERE run_id = ?"
        )
        params: tuple[Any, ...] = (run_id,)
        if suite is not None:
            sql += " AND suite = ?"
            params += (suite,)
        return [case_from_row(row) for row in self._conn.execute(sql + " ORDER BY id", params)]

    @_sqlite_errors_as_parity_errors
    def export(self, run_id: str, fmt: str, path: str | os.PathLike[str], *, table: str = "cases") -> Path:
        """Write run ``run_id`` as ``json``, ``csv`` or ``parquet`` to ``path`` (csv and parquet:
        one row per case, or with ``table="figures"`` one row per stored figure)."""
        from parity.store.export import write_export

        run = self.get_run(run_id)
        return write_export(run, self.cases(run.run_id), fmt=fmt, path=Path(path), figures=self.figures(run.run_id),
                            table=table)

    @_sqlite_errors_as_parity_errors
    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` verdict (``ok`` when the file is sound)."""
        return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])


def latest_back(text: str, latest: str, *, what: str) -> int | None:
    """How many back from the newest ``text`` names: 0 for ``latest``, N for ``latest~N``, None
    when it is neither; a ParityError naming ``what`` for ``latest~`` without a number."""
    if not is_latest(text, latest):
        return None
    back = text.removeprefix(latest).removeprefix("~") or "0"
    if not back.isdigit():
        raise ParityError(f"bad {what} {text!r}; write {latest}~N with N a number, e.g. {latest}~1")
    return int(back)


def is_latest(text: str, latest: str) -> bool:
    """Whether ``text`` is ``latest`` (``latest``, ``fleet:latest``) or ``latest~N``."""
    return text == latest or text.startswith(latest + "~")
