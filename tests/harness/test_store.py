"""The results store on real SQLite files: round trips, resume, versions, bad files, exports."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import orjson
import pytest

from parity.model import CaseResult, Finding, ParityError, Samples, Severity
from parity.store import STORE_VERSION, Store, default_path
from parity.store.export import export_csv


def _case(key: str, *, suite: str = "gemm", **extra) -> CaseResult:
    return CaseResult(
        suite=suite,
        key=key,
        params={"m": 64, "dtype": "bf16"},
        samples={
            "main": Samples(values_s=(1e-3, 1.5e-3, 2e-3), method="host-clock", resolution_s=1e-7)
        },
        metrics={"flop_per_s": 1.25e12, "bytes": 24576},
        check={"passed": True, "max_rel_error": 1e-3},
        findings=(Finding(code="high-variance", severity=Severity.WARNING, message="iqr 20%"),),
        telemetry={"clock_mhz": [1980, 1980]},
        **extra,
    )


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run = store.create_run(
            config={"device": "cpu", "suites": ["gemm"]}, provenance={"host": "x"}
        )
        case = _case("m64")
        store.add_case(run.run_id, case)
        store.add_case(run.run_id, CaseResult(suite="gemm", key="oom", error="out of memory"))
        assert store.cases(run.run_id) == [
            case,
            CaseResult(suite="gemm", key="oom", error="out of memory"),
        ]
        assert store.done_keys(run.run_id, "gemm") == {"m64", "oom"}
        assert store.done_keys(run.run_id, "membw") == set()
        counts = store.case_counts()[run.run_id]
        assert (counts.total, counts.failed, counts.errors) == (2, 1, 1)
        store.finish_run(run.run_id, status="failed", summary={"ok": False})
        again = store.get_run(run.run_id)
        assert again.status == "failed" and again.summary == {"ok": False}
        assert again.config == run.config and again.provenance == {"host": "x"}


def test_committed_rows_are_visible_to_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    writer = Store.open(path)
    run = writer.create_run(config={}, provenance={})
    writer.add_case(run.run_id, _case("a"))
    # No close, no explicit commit: a second process-like connection sees the row already.
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT key FROM cases").fetchall() == [("a",)]
    assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reader.close()
    writer.close()


def test_same_key_twice_keeps_one_row_with_the_latest(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run = store.create_run(config={}, provenance={})
        store.add_case(run.run_id, CaseResult(suite="s", key="k", error="first"))
        store.add_case(run.run_id, CaseResult(suite="s", key="k", metrics={"x": 1}))
        assert store.cases(run.run_id) == [CaseResult(suite="s", key="k", metrics={"x": 1})]


def test_run_ids_are_unique_readable_and_resolvable(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        ids = [store.create_run(config={}, provenance={}).run_id for _ in range(30)]
        assert len(set(ids)) == 30
        assert all(len(i) == len("20261129-230512-a3f9") and i[8] == "-" for i in ids)
        assert store.get_run("latest").run_id == ids[-1]
        assert store.resolve_run_id(ids[0]) == ids[0]
        with pytest.raises(ParityError, match="ambiguous"):
            store.get_run(ids[0][:8])
        with pytest.raises(
            ParityError, match=r"no run 'nope' in .*r\.sqlite; see parity runs list"
        ):
            store.get_run("nope")
        with pytest.raises(ParityError, match="no run 'nope'"):
            store.add_case("nope", _case("x"))


def test_unique_prefix_resolves(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        only = store.create_run(config={}, provenance={}).run_id
        assert store.resolve_run_id(only[:13]) == only
        assert store.get_run(only[:8]).run_id == only
        with pytest.raises(ParityError, match="no run '20991231'"):
            store.get_run("20991231")


def test_list_runs_newest_first(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        first = store.create_run(config={"n": 1}, provenance={})
        second = store.create_run(config={"n": 2}, provenance={})
        assert [r.run_id for r in store.list_runs()] == [second.run_id, first.run_id]
        assert [r.run_id for r in store.list_runs(limit=1)] == [second.run_id]


def test_default_path_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARITY_DB", str(tmp_path / "env.sqlite"))
    assert default_path() == tmp_path / "env.sqlite"
    with Store.open() as store:
        assert store.path == tmp_path / "env.sqlite"
    monkeypatch.delenv("PARITY_DB")
    assert default_path().parts[-2:] == ("parity", "results.sqlite")


def test_schema_version_is_recorded_and_newer_files_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
    conn.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(ParityError) as info:
        Store.open(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and "newer" in message


def test_foreign_and_corrupt_files_are_refused_in_one_line(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.sqlite"
    garbage.write_bytes(b"this is not a database at all\n" * 200)
    with pytest.raises(ParityError) as info:
        Store.open(garbage)
    assert str(garbage) in str(info.value) and "\n" not in str(info.value)

    foreign = tmp_path / "other.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(ParityError, match="not a parity results store"):
        Store.open(foreign)

    with pytest.raises(ParityError, match="is a directory"):
        Store.open(tmp_path)


def test_a_store_another_process_creates_while_it_is_checked_is_not_foreign(tmp_path: Path) -> None:
    """The check reads the file's ids and its tables as one snapshot: a store another process
    (a rank on another node, sharing the path) creates between two reads was taken for another
    application's database, its ids read before the creation and its tables after it."""
    from parity.store.schema import check_compatible

    path = tmp_path / "runs.sqlite"

    class Racing(sqlite3.Connection):
        statements = 0

        def execute(self, *args, **kwargs):  # the other process creates the store before the 3rd statement
            Racing.statements += 1
            if Racing.statements == 3:
                with Store.open(path):
                    pass
            return super().execute(*args, **kwargs)

    conn = sqlite3.connect(path, factory=Racing, isolation_level=None)
    try:
        for _ in range(3):  # before, during and after the creation
            assert check_compatible(conn, source=str(path)) in (0, STORE_VERSION)
    finally:
        conn.close()



def test_exports_json_csv_parquet(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run = store.create_run(config={"device": "cpu"}, provenance={})
        store.add_case(run.run_id, _case("m64"))
        store.add_case(
            run.run_id,
            CaseResult(suite="membw", key="1KiB", metrics={"bytes": "n/a"}, error="unsupported"),
        )
        doc = orjson.loads(store.export(run.run_id, "json", tmp_path / "run.json").read_bytes())
        assert doc["schema_version"] >= 1 and doc["kind"] == "run-export"
        assert doc["run"]["run_id"] == run.run_id
        assert doc["cases"][0]["samples"]["main"]["values_s"] == [1e-3, 1.5e-3, 2e-3]

        rows = list(csv.DictReader((store.export(run.run_id, "csv", tmp_path / "r.csv")).open()))
        assert [r["key"] for r in rows] == ["m64", "1KiB"]
        assert rows[0]["metric.flop_per_s"] == "1250000000000.0"
        assert rows[0]["finding_codes"] == "high-variance"
        assert rows[1]["error"] == "unsupported" and rows[1]["ok"] == "False"

        pq = pytest.importorskip("pyarrow.parquet")
        table = pq.read_table(store.export(run.run_id, "parquet", tmp_path / "r.parquet"))
        assert table.num_rows == 2
        assert table.column("metric.flop_per_s").to_pylist() == [1.25e12, None]
        # "bytes" is a number in one suite and text in the other: the column becomes text.
        assert table.column("metric.bytes").to_pylist() == ["24576", "n/a"]
        assert b"parity.run" in table.schema.metadata

        with pytest.raises(ParityError, match="unknown export format 'xml'"):
            store.export(run.run_id, "xml", tmp_path / "r.xml")


def test_parquet_without_pyarrow_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError("blocked")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    with Store.open(tmp_path / "r.sqlite") as store:
        run = store.create_run(config={}, provenance={})
        with pytest.raises(ParityError, match=r"pip install 'parity\[parquet\]'"):
            store.export(run.run_id, "parquet", tmp_path / "r.parquet")


def test_csv_of_an_empty_run_has_a_header(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run = store.create_run(config={}, provenance={})
        assert export_csv(store.get_run(run.run_id), []).decode().strip() == "run_id"


def test_damaged_pages_become_one_line_errors_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "damaged.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run(config={}, provenance={}).run_id
        for i in range(200):
            store.add_case(run_id, _case(f"k{i:03d}"))
    page = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    with path.open("r+b") as f:  # keep page 1 (header, schema), wreck the pages after it
        f.seek(2 * page)
        f.write(b"\xff" * (6 * page))
    with pytest.raises(ParityError) as info:
        with Store.open(path) as store:
            store.cases(run_id)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_migration_steps_upgrade_an_older_file_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented path: append a step to MIGRATIONS, bump STORE_VERSION, old files follow."""
    from parity.store import schema

    path = tmp_path / "old.sqlite"
    with Store.open(path) as store:
        run_id = store.create_run(config={"v": 1}, provenance={}).run_id
        store.add_case(run_id, _case("kept"))
    newer = schema.STORE_VERSION + 1
    monkeypatch.setattr(schema, "STORE_VERSION", newer)
    monkeypatch.setitem(schema.MIGRATIONS, newer - 1, ["ALTER TABLE runs ADD COLUMN label TEXT"])
    with Store.open(path) as store:
        assert [c.key for c in store.cases(run_id)] == ["kept"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == newer
    assert "label" in [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    conn.close()
