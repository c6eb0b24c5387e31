"""What the whole-command tests of test-file suites share: the environment that loads a suite
from this folder through ``PARITY_PLUGINS``, and the stored cases read by an independent,
read-only connection (so a test can watch a run that another process is writing)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def plugin_env(db: Path, plugin: str) -> dict[str, str]:
    """This process's environment, with ``plugin`` (``module:Class`` in this folder) loadable
    and ``db`` as the results store."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    env["PARITY_PLUGINS"] = plugin
    env["PARITY_DB"] = str(db)
    return env


def stored_cases(db: Path) -> list[tuple[str, str, int]]:
    """``(run_id, key, copies)`` for every stored case, by key; empty before the tables exist."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(
            "SELECT run_id, key, count(*) FROM cases GROUP BY run_id, key ORDER BY key"
        ).fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []
    finally:
        conn.close()
