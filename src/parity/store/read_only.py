"""Opening a results store for reading only: nothing is created, nothing is written.

``parity runs list``, ``runs show``, ``runs export``, ``compare`` and ``report`` read a store; they must work on
a store another user owns, on a read-only mount or a snapshot, and must not leave a folder or
an empty store behind when pointed at a path that does not exist (they read it as an empty
store held in memory, and say it has no runs). An existing store is opened read-only with
``query_only``; the schema is checked, never migrated. A store is in WAL mode, and SQLite
reading a WAL file with ``mode=ro`` creates its ``-wal`` and ``-shm`` files beside the store
when they are absent (and cannot, on a read-only file system). They are absent exactly when no
process has the store open (the last connection to close removes them): then every commit is
in the file itself and it is opened ``immutable``, which creates nothing. When they exist a
writer may be running, and ``mode=ro`` reads its commits from them. (A writer that starts and
checkpoints during an ``immutable`` read, a matter of milliseconds, can make that read fail;
the command is then run again.)

A store of an older schema is migrated when its file is writable (the writable open does it:
the store exists, so nothing new is created) and refused on a read-only one.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from parity.model.errors import ParityError
from parity.store.opening import BUSY_TIMEOUT_MS
from parity.store.schema import STORE_VERSION, check_compatible, migrate


def open_read_only(target: Path) -> sqlite3.Connection | None:
    """A read-only connection to the store at ``target``; None when its schema is older and the
    file is writable (the caller migrates it). A store that does not exist reads as an empty
    one held in memory, so each command says what it says of a store without runs ("no runs in
    PATH yet") and nothing is created."""
    if not target.exists():
        conn = sqlite3.connect(":memory:", isolation_level=None)
        migrate(conn, source=str(target))
        conn.execute("PRAGMA query_only = ON")
        return conn
    try:
        conn = _connect(target, immutable=not _sidecar(target, "-wal").exists())
        version = check_compatible(conn, source=str(target))
    except sqlite3.DatabaseError as exc:
        if _sidecar(target, "-wal").exists() and not _writable(target):
            raise ParityError(f"cannot read {target} ({exc}): its -wal file holds commits and this file system is "
                              "read-only; open it once where it is writable, or copy the store with its -wal "
                              "file") from None
        raise ParityError(f"{target} is not a usable results store ({exc}); check the path or pass --db") from None
    if version < STORE_VERSION:
        conn.close()
        if _writable(target):
            return None
        raise ParityError(f"{target} has store schema {version}, older than this parity ({STORE_VERSION}), and "
                          "cannot be upgraded here (read-only); open a writable copy with parity runs list --db COPY")
    return conn


def _connect(target: Path, *, immutable: bool) -> sqlite3.Connection:
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    conn = sqlite3.connect(f"file:{quote(str(target.resolve()))}?{flags}", uri=True,
                           timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA query_only = ON")
    return conn


def _writable(target: Path) -> bool:
    """Whether the store and its folder (where SQLite keeps ``-wal`` and ``-shm``) can be written."""
    return os.access(target, os.W_OK) and os.access(target.parent, os.W_OK)


def _sidecar(target: Path, suffix: str) -> Path:
    return target.with_name(target.name + suffix)
