"""The figures table: what the runner stores when a suite's figures are made, the per-case table
of a summary as figures of cases, the migration of a schema-3 store (figures back-filled from
the run summaries, each case's headline declared as compare chose it), and the exports and
imports that carry the figures."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import orjson
import pytest
from legacy_store import RUN_A, RUN_B, write_v3_store
from tiny_suites import TinySuite, _device

from parity.harness.runner import run_suites
from parity.model import ParityError
from parity.model.figure import Figure
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult
from parity.store import STORE_VERSION, Store
from parity.store.figures import StoredFigure, case_table_figures, summary_figures
from parity.store.headlines import declared_before
from parity.store.runs_import import import_run

CEILING = Figure(name="x.ceiling", value=2e12, unit="FLOP/s", method="median of rounds", scope={"dtype": "bf16"},
                 ci95=(1.9e12, 2.1e12), best=2.2e12, note="hand")


def _run(store: Store) -> str:
    run = store.create_run(config={"suites": ["x"]}, provenance={"device": {"properties": {"name": "H200"}}})
    return run.run_id


def test_figures_round_trip_replace_per_suite_and_name_their_case(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run_id = _run(store)
        of_case = Figure(name="x.rate", value=5.0, unit="FLOP/s", method="m", scope={"case": "k1", "dtype": "bf16"})
        flagged = StoredFigure(suite="x", name="x.spread", value=0.5, unit="1",
                               findings=(Finding(code="high-variance", severity=Severity.WARNING, message="m"),))
        store.add_figures(run_id, "x", [CEILING, of_case, flagged])
        store.add_figures(run_id, "y", [Figure(name="y.time", value=1e-6, unit="s", method="median")])
        got = store.figures(run_id, "x")
        assert got[0] == StoredFigure.of("x", CEILING) and got[0].ci95 == (1.9e12, 2.1e12) and got[0].best == 2.2e12
        assert got[1].case == "k1" and got[1].scope == {"case": "k1", "dtype": "bf16"}
        assert got[2].findings[0].code == "high-variance"
        assert StoredFigure.from_dict(orjson.loads(orjson.dumps(got[2].to_dict()))) == got[2]
        throttled = Finding(code="throttled", severity=Severity.WARNING, message="power cap")
        store.add_case(run_id, CaseResult(suite="x", key="k1", findings=(throttled,), check={"passed": True}))
        store.add_figures(run_id, "x", [CEILING, of_case])  # a figure of a case carries its findings
        assert [f.findings for f in store.figures(run_id, "x")] == [(), (throttled,)]
        store.add_figures(run_id, "x", [CEILING])  # summarised again (a resume): replaced, y kept
        assert [f.name for f in store.figures(run_id)] == ["y.time", "x.ceiling"]
        with pytest.raises(ParityError, match="no run 'nope'"):
            store.add_figures("nope", "x", [CEILING])
        with pytest.raises(ValueError, match="another suite"):
            store.add_figures(run_id, "x", [StoredFigure.of("y", CEILING)])


def test_a_summary_case_table_becomes_figures_of_cases_with_properties_in_scope() -> None:
    table = {"units": {"tflops": "TFLOP/s", "efficiency": "1", "best_flops": "FLOP/s", "class": "", "near": ""},
             "statistic": "median over median",
             "rows": {"k1": {"tflops": 80, "efficiency": 0.8, "best_flops": None, "class": "compute-bound",
                             "near": True, "extra": 3.5}}}
    rows = case_table_figures("gemm", table)
    scope = {"case": "k1", "class": "compute-bound", "near": True}
    assert [(r.name, r.value, r.unit, r.case, r.scope, r.method) for r in rows] == [
        ("tflops", 80.0, "TFLOP/s", "k1", scope, "median over median"),
        ("efficiency", 0.8, "1", "k1", scope, "median over median"),
        ("best_flops", None, "FLOP/s", "k1", scope, "median over median"),
        ("extra", 3.5, "", "k1", scope, "median over median")]
    summary = {"suites": {"gemm": {"figures": [CEILING.to_dict(), {"name": "broken"}], "summary": {"case_figures": table}},
                          "odd": "not a suite"}}
    assert [f.name for f in summary_figures(summary)] == ["x.ceiling", "tflops", "efficiency", "best_flops", "extra"]
    assert summary_figures(None) == [] and summary_figures({"suites": []}) == []


def test_the_runner_stores_each_suites_figures_when_it_summarises(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        outcome = run_suites(store, device=_device(), suites=[TinySuite()], options={"tiny": {"cases": 3}})
        assert outcome is not None
        stored = store.figures(outcome.run.run_id)
        assert [StoredFigure.of("tiny", f) for f in outcome.suites[0].figures] == stored
        assert stored[0].name == "tiny.median_rate" and stored[0].unit == "FLOP/s" and stored[0].value


def test_headlines_declared_for_old_cases_hand_cases() -> None:
    assert declared_before({"achieved_flops": 5.0, "flop_per_s": 5.0, "median_s": 1.0}) == {
        "headline_metric": "achieved_flops", "headline_from_samples": True}
    assert declared_before({"ceiling_flops": 5.0, "median_s": 1.0}) == {"headline_metric": "ceiling_flops"}
    assert declared_before({"gbps": 0.0, "ns_per_load": 3.0}) == {"headline_metric": "ns_per_load"}
    assert declared_before({"flop_per_s": 1.0, "tokens_per_s": 3.0}) == {}  # canonical: nothing to declare
    assert declared_before({"median_s": 1.0}) == {} and declared_before({"bandwidth_bps": 1.0}) == {}
    assert declared_before({"headline_metric": "median_s", "gbps": 2.0}) == {}


def test_a_version_3_store_gets_its_figures_and_headlines(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    write_v3_store(path)
    throttled = Finding(code="throttled", severity=Severity.WARNING, message="power cap")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE cases SET findings = ? WHERE run_id = ? AND key = 'bf16/matmul/512x512x512'",
                 (orjson.dumps([throttled.to_dict()]).decode(), RUN_A))
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        figures = store.figures(RUN_A)
        flagged = {(f.case, f.name) for f in figures if f.findings == (throttled,)}
        assert flagged == {("bf16/matmul/512x512x512", n) for n in ("tflops", "best_flops", "efficiency",
                                                                     "arithmetic_intensity")}
        suite_level = [(f.suite, f.name) for f in figures if f.case is None]
        assert suite_level == [("gemm", "gemm.ceiling"), ("gemm", "gemm.median_efficiency.compute-bound"),
                               ("gemm", "gemm.speedup.tuned"), ("gemm", "gemm.speedup.tuned"),
                               ("gemm", "gemm.best_fraction_of_ceiling"), ("membw", "membw.ceiling"),
                               ("latency", "latency.L1")]
        ceiling = figures[0]
        assert ceiling.value == 100e12 and ceiling.ci95 == (98e12, 101e12) and ceiling.best == 102e12
        assert figures[4].value is None and figures[4].note == "no ceiling"
        efficiency = next(f for f in figures if f.case == "bf16/matmul/512x512x512" and f.name == "efficiency")
        assert efficiency.value == pytest.approx(0.5) and efficiency.scope["class"] == "memory-bound"
        assert len(store.figures(RUN_B)) == len(figures) == 7 + 5 * 4
        heads = {c.key: (c.metrics.get("headline_metric"), c.metrics.get("headline_from_samples"))
                 for c in store.cases(RUN_A)}
        assert heads["ceiling/bf16"] == ("ceiling_flops", None)
        assert heads["bf16/matmul/4096x4096x4096"] == ("achieved_flops", True)
        assert heads["copy/1048576"] == ("gbps", True) and heads["size/16384"] == ("ns_per_load", None)
        assert heads["llama/b8"] == ("tokens_per_s", None) and heads["rmsnorm/1024"] == (None, None)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION == 6
    conn.close()
    with Store.open(path) as store:  # opening again migrates nothing twice
        assert len(store.figures(RUN_A)) == 27


def test_exports_carry_the_figures_and_imports_keep_them(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "v3.sqlite"
    write_v3_store(path)
    with Store.open(path) as store:
        document = orjson.loads(store.export(RUN_A, "json", tmp_path / "a.json").read_bytes())
        figures = store.figures(RUN_A)
        rows = list(csv.DictReader(store.export(RUN_A, "csv", tmp_path / "f.csv", table="figures").open()))
        table = pq.read_table(store.export(RUN_A, "parquet", tmp_path / "f.parquet", table="figures")).to_pylist()
        cases = list(csv.DictReader(store.export(RUN_A, "csv", tmp_path / "c.csv").open()))
    assert [StoredFigure.from_dict(f) for f in document["figures"]] == figures
    assert len(rows) == len(table) == 27
    assert rows[0]["name"] == "gemm.ceiling" and float(rows[0]["value"]) == 100e12 and rows[0]["unit"] == "FLOP/s"
    assert rows[0]["case"] == "" and rows[0]["scope.dtype"] == "bf16" and rows[0]["device_name"] == "NVIDIA H200"
    assert float(rows[0]["ci95_low"]) == 98e12 and table[0]["ci95_high"] == 101e12 and table[0]["best"] == 102e12
    shape = next(r for r in cases if r["key"] == "bf16/matmul/4096x4096x4096")
    assert float(shape["figure.efficiency"]) == pytest.approx(0.5) and shape["figure.class"] == "compute-bound"
    with Store.open(tmp_path / "new.sqlite") as store:
        import_run(store, tmp_path / "a.json")
        assert store.figures(RUN_A) == figures
        assert [c.to_dict() for c in store.cases(RUN_A)] == document["cases"]
    old = orjson.loads(orjson.dumps({k: v for k, v in document.items() if k != "figures"}))  # before schema 4
    for case in old["cases"]:
        for key in ("headline_metric", "headline_from_samples"):
            case["metrics"].pop(key, None)
    (tmp_path / "old.json").write_bytes(orjson.dumps(old))
    with Store.open(tmp_path / "old.sqlite") as store:
        import_run(store, tmp_path / "old.json")
        assert store.figures(RUN_A) == figures
        assert [c.to_dict() for c in store.cases(RUN_A)] == document["cases"]
