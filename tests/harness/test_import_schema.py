"""``parity runs import``: every bad input refused by the schema before anything is
written (a run id that would leave the reports folder, ``suite: null``, string metrics, negative
and zero times, unknown fields), and no file name made from stored text leaving its folder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from parity.cli.main import main
from parity.cli.report import default_report_path
from parity.model.errors import ParityError
from parity.model.ids import file_in, is_id
from parity.store import Store
from parity.store.runs_import import import_run, parse_export
from run_exports import stored_run, valid_document


def counts(store: Store) -> tuple[int, int, int]:
    return tuple(store.query(f"SELECT count(*) FROM {t}")[0][0] for t in ("runs", "cases", "figures"))  # type: ignore[return-value]


def test_a_valid_export_passes_the_schema_and_imports(tmp_path: Path) -> None:
    document = valid_document(tmp_path)
    parse_export(orjson.dumps(document), source="run.json")
    with Store.open(tmp_path / "target.sqlite") as store:
        imported = import_run(store, tmp_path / "run.json")
        assert imported.cases == 1 and counts(store) == (1, 1, 1)


def _set(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for step in path[:-1]:
        target = target[step]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return changed


_DELETE = object()
BAD = [  # (where, value, what the one-line refusal says)
    (("run", "run_id"), "../../etc/passwd", "is not an id"),
    (("run", "run_id"), "..", "is not an id"),
    (("run", "run_id"), "a/b", "is not an id"),
    (("run", "run_id"), "", "is not an id"),
    (("run", "run_id"), 42, "is not an id"),
    (("run", "created_at"), "yesterday", "is not an ISO 8601 time"),
    (("run", "config"), [], "not an object"),
    (("run", "colour"), "red", "unknown field 'colour'"),
    (("cases", 0, "suite"), None, "suite None is not an id"),
    (("cases", 0, "suite"), "../x", "is not an id"),
    (("cases", 0, "key"), "", "key '' is not non-empty text"),
    (("cases", 0, "metrics", "bytes_per_s"), "fast", "metric bytes_per_s = 'fast' is not a number"),
    (("cases", 0, "metrics", "median_s"), "2 ms", "metric median_s = '2 ms' is not a number"),
    (("cases", 0, "metrics", "median_s"), -0.002, "is a negative time"),
    (("cases", 0, "metrics", "ci95_s"), [0.001, "x"], "is not a number"),
    (("cases", 0, "metrics", "headline_metric"), "nothing", "which is not one of its metrics"),
    (("cases", 0, "metrics", "headline_medians"), {"main": "1"}, "not an object of sample sets and finite weights"),
    (("cases", 0, "metrics", "headline_medians"), [1.0], "not an object of sample sets and finite weights"),
    (("cases", 0, "samples", "main", "values_s"), [0.001, -0.002], "not a time in seconds"),
    (("cases", 0, "samples", "main", "values_s"), [0.0, 0.0, 0.0], "median of 0 s"),
    (("cases", 0, "samples", "main", "values_s"), ["1"], "not a time in seconds"),
    (("cases", 0, "samples", "main", "values_s"), [], "not a non-empty list"),
    (("cases", 0, "samples", "main", "calls_per_sample"), 0, "calls_per_sample 0 is not an integer >= 1"),
    (("cases", 0, "samples", "main", "speed"), 1, "unknown field 'speed'"),
    (("cases", 0, "params"), "bytes=4096", "params is a JSON string, not an object"),
    (("cases", 0, "findings"), [{"code": "x", "severity": "fatal", "message": "m"}], "severity 'fatal'"),
    (("cases", 0, "flavour"), "sweet", "unknown field 'flavour'"),
    (("figures", 0, "value"), "2e6", "value = '2e6' is not a number"),
    (("figures", 0, "suite"), None, "suite None is not an id"),
    (("extra",), 1, "unknown field 'extra'"),
]


@pytest.mark.parametrize(("where", "value", "expected"), BAD, ids=[f"{'.'.join(map(str, w))}={v!r}" for w, v, _ in BAD])
def test_each_bad_field_is_one_line_naming_the_file_and_nothing_is_written(
        tmp_path: Path, where: tuple[Any, ...], value: Any, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(_set(valid_document(tmp_path), where, value)))
    with Store.open(tmp_path / "target.sqlite") as store:
        with pytest.raises(ParityError) as info:
            import_run(store, path)
        assert counts(store) == (0, 0, 0)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and expected in message, message
    assert message.endswith("export it again with parity runs export RUN --format json")


def test_the_cli_refuses_a_traversing_run_id_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "evil.json"
    path.write_bytes(orjson.dumps(_set(valid_document(tmp_path), ("run", "run_id"), "../../etc/passwd")))
    db = tmp_path / "target.sqlite"
    with pytest.raises(SystemExit) as info:
        main(["runs", "import", str(path), "--db", str(db)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and "'../../etc/passwd' is not an id" in err
    assert not db.exists()  # refused before the store is opened


def test_ids_hand_cases() -> None:
    assert is_id("20261203-141447-7b60") and is_id("t-20261203-141447-7b60") and is_id("a.b_c-1")
    for bad in ("", ".", "..", "../x", "a/b", "a\\b", "-x", ".hidden", "a b", "x" * 129, None, 3):
        assert not is_id(bad), bad
    assert file_in("reports", "run-1", ".html") == Path("reports/run-1.html")
    with pytest.raises(ValueError, match="cannot name a file"):
        file_in("reports", "../../etc/passwd", ".html")


def test_no_report_or_export_file_named_by_a_stored_id_leaves_its_folder(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A store written before ids were checked may hold any id: the report next to the store
    and the default export name refuse it rather than write outside their folder."""
    assert default_report_path(tmp_path / "r.sqlite", "20261203-1") == tmp_path / "reports" / "20261203-1.html"
    with pytest.raises(ParityError, match="cannot name a file.*parity report RUN_ID -o FILE"):
        default_report_path(tmp_path / "r.sqlite", "../../../tmp/evil")
    db = tmp_path / "old.sqlite"
    with Store.open(db) as store:
        run_id = store.create_run(config={"device": "cpu", "suites": []}, provenance={}).run_id
        with store.transaction() as conn:  # as an unchecked import of an earlier version stored it
            conn.execute("UPDATE runs SET id = '../evil' WHERE id = ?", (run_id,))
    with pytest.raises(SystemExit) as info:
        main(["runs", "export", "../evil", "--db", str(db)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "cannot name a file" in err and "--output" in err
    assert not (tmp_path.parent / "evil.json").exists() and not list(tmp_path.parent.glob("parity-*evil*"))


def test_a_run_with_findings_of_every_severity_goes_out_and_back(tmp_path: Path) -> None:
    """A figure that cannot be true (``invalid``, as any CPU quick run's negative overlap) was
    refused by the import of parity's own export."""
    from parity.model.figure import Figure
    from parity.model.findings import Finding, Severity

    findings = tuple(Finding(code=f"code-{s.value}", severity=s, message=f"a {s.value} finding") for s in Severity)
    with Store.open(tmp_path / "source.sqlite") as store:
        run_id = stored_run(store)
        store.add_figures(run_id, "demo", [Figure(name="share", value=-14.5, unit="1", method="(a + b - both) / min(a, b)",
                                                  scope={"case": "case/1"}, findings=findings)])
        exported = store.export(run_id, "json", tmp_path / "run.json")
    with Store.open(tmp_path / "target.sqlite") as store:
        import_run(store, exported)
        stored = store.query("SELECT findings FROM figures WHERE name = 'share'")
    assert [f["severity"] for f in orjson.loads(stored[0][0])] == [s.value for s in Severity]
