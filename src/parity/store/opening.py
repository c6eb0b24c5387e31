"""Setting up a connection to a results store, with retries while another process holds it."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from parity.store.schema import migrate

log = logging.getLogger(__name__)
BUSY_TIMEOUT_MS = 60_000  # how long a statement waits for another process's lock


def _prepare(conn: sqlite3.Connection, target: Path) -> int:
    """Set the connection up (WAL, foreign keys) and migrate; the schema version found."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        log.warning("%s: journal mode %s, not wal; concurrent writers may wait", target, mode)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return migrate(conn, source=str(target))


def prepare_with_retries(conn: sqlite3.Connection, target: Path) -> int:
    """:func:`_prepare`, tried again while the database is busy, up to ``BUSY_TIMEOUT_MS``.

    Two processes that open a new store at once can both hold a shared lock and ask for the
    exclusive one (to switch the file to WAL, or to create the tables). SQLite answers one of
    them "database is locked" at once, without waiting, since waiting could never succeed;
    that one has let its lock go when the statement fails, so trying again after the other
    has finished succeeds.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            return _prepare(conn, target)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or time.monotonic() + delay > deadline:
                raise
            log.debug("%s: busy while opening (%s); trying again", target, exc)
            time.sleep(delay)
            delay = min(2 * delay, 0.25)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED and their extended codes
    return "locked" in str(exc) or "busy" in str(exc)
