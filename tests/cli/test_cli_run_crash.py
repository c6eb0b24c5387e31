"""A real ``parity run`` killed with SIGKILL mid-way, then resumed: every case exactly once.

The run measures the test-only ``tiny`` suite (``tests/tiny_suites.py``) on the real CPU device,
loaded through ``PARITY_PLUGINS``, into a real SQLite file.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from plugin_runs import kill_after_stored, plugin_env, stored_cases

CASES = 20


def _env(db: Path) -> dict[str, str]:
    return plugin_env(db, "tiny_suites:TinySuite")


def _stored(db: Path) -> list[tuple[str, str, int]]:
    return stored_cases(db)


@pytest.mark.slow
@pytest.mark.torch
def test_sigkill_mid_run_then_resume_keeps_every_case_once(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite"
    command = [
        sys.executable,
        "-m",
        "parity",
        "run",
        "--device",
        "cpu",
        "--suite",
        "tiny",
        "--set",
        f"tiny.cases={CASES}",
        "--set",
        "tiny.sleep_s=0.1",
    ]
    proc = subprocess.Popen(
        command, env=_env(db), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    kill_after_stored(proc, db, cases=3, within_s=60)
    assert proc.returncode == -signal.SIGKILL
    before = _stored(db)
    assert 3 <= len(before) < CASES, "the kill should land mid-run"
    (run_id,) = {row[0] for row in before}

    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "parity",
            "run",
            "--resume",
            run_id,
            "--json",
            str(tmp_path / "r.json"),
        ],
        env=_env(db),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    after = _stored(db)
    assert [key for _, key, _ in after] == [f"case-{i:03d}" for i in range(CASES)]
    assert all(copies == 1 and rid == run_id for rid, _, copies in after)
    doc = orjson.loads((tmp_path / "r.json").read_bytes())
    assert doc["ok"] is True and doc["run"]["status"] == "complete"
    assert (doc["skipped"], doc["measured"]) == (len(before), CASES - len(before))
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    # The typed options came back from the stored config; the summary is typed figures.
    assert doc["run"]["config"]["options"] == {"tiny": {"cases": CASES, "sleep_s": 0.1}}
    (suite,) = doc["suites"]
    (figure,) = suite["figures"]
    assert figure["name"] == "tiny.median_rate" and figure["unit"] == "FLOP/s" and figure["value"] > 0
    assert figure["scope"] == {"cases": CASES}
    # Declared work was timed, checked and rated by the harness for every case, before and after the kill.
    assert all(c["check"]["passed"] and c["metrics"]["flop_per_s"] > 0 for c in doc["cases"])
    # The whole run exports as one row per case.
    exported = tmp_path / "run.csv"
    export = subprocess.run(
        [sys.executable, "-m", "parity", "runs", "export", run_id, "--format", "csv", "--output", str(exported)],
        env=_env(db), capture_output=True, text=True, timeout=60,
    )
    assert export.returncode == 0, export.stderr
    import csv

    rows = list(csv.DictReader(exported.open()))
    assert [r["key"] for r in rows] == [f"case-{i:03d}" for i in range(CASES)]
    assert all(r["check_passed"] == "True" and float(r["metric.flop_per_s"]) > 0 for r in rows)
