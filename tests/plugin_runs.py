"""What the whole-command tests of test-file suites share: the environment that loads a suite
from this folder through ``PARITY_PLUGINS``, and the stored cases read by an independent,
read-only connection (so a test can watch a run that another process is writing)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def plugin_env(db: Path, plugin: str | None = None) -> dict[str, str]:
    """This process's environment, with this folder importable, ``plugin`` (``module:Class``
    in this folder or in a tier's folder under it, which is then importable too) registered
    when given, and ``db`` as the results store."""
    env = dict(os.environ)
    folders = [str(TESTS)]
    if plugin:
        module = plugin.split(":")[0].split(".")[0]
        folders += [str(path.parent) for path in sorted(TESTS.glob(f"*/{module}.py"))]
        env["PARITY_PLUGINS"] = plugin
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*folders, env.get("PYTHONPATH")]))
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


def stored_keys(db: Path) -> list[str]:
    """The keys of every stored case, sorted."""
    return [key for _, key, _ in stored_cases(db)]


def kill_after_stored(proc: subprocess.Popen[bytes], db: Path, *, cases: int, within_s: float) -> None:
    """SIGKILL ``proc`` once ``db`` holds ``cases`` cases; fail if it exits or takes longer."""
    deadline = time.monotonic() + within_s
    while len(stored_cases(db)) < cases:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, f"the run stored no {cases} cases within {within_s:g} s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
