"""Two processes writing to one store at once: no lost rows, no corruption."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from parity.model.errors import ParityError
from parity.store import Store

WRITER = r"""
import sys
from parity.model import CaseResult, Samples
from parity.store import Store

path, run_id, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Store.open(path) as store:
    if run_id == "new":
        run_id = store.create_run(config={"writer": tag}, provenance={}).run_id
    for i in range(count):
        store.add_case(run_id, CaseResult(
            suite=tag, key=f"{tag}-{i:04d}", params={"i": i},
            samples={"main": Samples(values_s=[1e-3 * (i + 1)] * 8, method="fake")},
            metrics={"i": i},
        ))
print(run_id)
"""

COUNT = 100


def _start(path: Path, run_id: str, tag: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), run_id, tag, str(COUNT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.strip()


def test_two_writers_into_one_run(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run(config={}, provenance={}).run_id
    procs = [_start(path, run_id, tag) for tag in ("left", "right")]
    for proc in procs:
        _finish(proc)
    with Store.open(path) as store:
        cases = store.cases(run_id)
        assert len(cases) == 2 * COUNT
        for tag in ("left", "right"):
            assert store.done_keys(run_id, tag) == {f"{tag}-{i:04d}" for i in range(COUNT)}
        assert store.integrity_check() == "ok"


def test_two_writers_racing_to_create_a_fresh_store(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    procs = [_start(path, "new", tag) for tag in ("a", "b")]
    run_ids = [_finish(proc) for proc in procs]
    assert len(set(run_ids)) == 2
    with Store.open(path) as store:
        assert store.integrity_check() == "ok"
        for run_id, tag in zip(run_ids, ("a", "b"), strict=True):
            assert [c.key for c in store.cases(run_id)] == [f"{tag}-{i:04d}" for i in range(COUNT)]


def test_opening_tries_again_while_another_process_holds_the_new_file(tmp_path: Path, monkeypatch) -> None:
    """SQLite answers "database is locked" at once (no waiting) to one of two connections that
    both want the exclusive lock of a new file; opening tries again and succeeds."""
    from parity.store import opening

    real, calls = opening.migrate, []

    def migrate_after_two_refusals(conn, *, source):
        calls.append(source)
        if len(calls) <= 2:
            raise sqlite3.OperationalError("database is locked")
        return real(conn, source=source)

    monkeypatch.setattr(opening, "migrate", migrate_after_two_refusals)
    with Store.open(tmp_path / "fresh.sqlite") as store:
        assert store.integrity_check() == "ok"
    assert len(calls) == 3


def test_opening_does_not_retry_other_errors(tmp_path: Path, monkeypatch) -> None:
    from parity.store import opening

    calls = []

    def broken(conn, *, source):
        calls.append(source)
        raise sqlite3.OperationalError("no such table: runs")

    monkeypatch.setattr(opening, "migrate", broken)
    with pytest.raises(ParityError, match="not a usable results store"):
        Store.open(tmp_path / "fresh.sqlite")
    assert len(calls) == 1
