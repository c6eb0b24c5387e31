"""Exports a user can query: per-case derived figures, provenance columns, units in Parquet."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_gemm_analysis import bandwidth_case, ceiling_case, shape_case

from parity.families.gemm.analysis import analyse
from parity.metrics.roofline import gemm_flops
from parity.model.result import CaseResult
from parity.store import Store
from parity.store.figures import suite_figures

PROVENANCE = {"device": {"type": "cuda", "properties": {"name": "NVIDIA H200"}}, "drivers": {"nvidia": "550.54"},
              "torch": {"version": "2.13.0"}, "host": {"hostname": "node7", "cpu_model": "Xeon"},
              "parity": {"version": "0.1.0", "git_revision": "abc"}}


def _stored_gemm_run(store: Store, fractions: tuple[float, float, float] = (0.5, 0.8, 0.5)) -> str:
    # P = 100 TFLOP/s, B = 1 TB/s, ridge 100 FLOP/B: 3072^3 and 6144^3 are compute-bound at 50% and
    # 80% of P (by default); 96^3 (AI 32) is memory-bound.
    cases: list[CaseResult] = [ceiling_case(), bandwidth_case()]
    for side, fraction in zip((3072, 6144, 96), fractions):
        cases.append(shape_case(side, side, side, seconds=gemm_flops(side, side, side) / (fraction * 100e12)))
    run = store.create_run(config={"device": "cuda:0", "suites": ["gemm"]}, provenance=PROVENANCE)
    for case in cases:
        store.add_case(run.run_id, case)
    analysed = analyse(cases)
    summary = analysed.to_dict() if hasattr(analysed, "to_dict") else dict(analysed)
    store.add_figures(run.run_id, "gemm", suite_figures("gemm", [], summary))  # as the runner does
    store.finish_run(run.run_id, status="complete",
                     summary={"ok": True, "suites": {"gemm": {"suite": "gemm", "summary": summary}}})
    return run.run_id


def test_csv_rows_carry_every_derived_figure_and_the_provenance(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        run_id = _stored_gemm_run(store)
        rows = list(csv.DictReader(store.export(run_id, "csv", tmp_path / "r.csv").open()))
    big = next(r for r in rows if r["key"] == "bf16/matmul/6144x6144x6144")
    assert float(big["figure.tflops"]) == pytest.approx(80.0)
    assert float(big["figure.fraction_of_ceiling"]) == pytest.approx(0.8)
    assert float(big["figure.efficiency"]) == pytest.approx(0.8)
    assert float(big["figure.attainable_flops"]) == pytest.approx(100e12)
    assert big["figure.class"] == "compute-bound" and big["figure.dtype"] == "bf16"
    assert big["figure.device"] == "NVIDIA H200" and float(big["figure.arithmetic_intensity"]) == pytest.approx(2048)
    small = next(r for r in rows if r["key"] == "bf16/matmul/96x96x96")
    assert small["figure.class"] == "memory-bound"
    assert float(small["figure.attainable_flops"]) == pytest.approx(32e12)  # AI 32 * 1 TB/s
    assert {r["device_name"] for r in rows} == {"NVIDIA H200"}
    assert big["driver"] == "nvidia 550.54" and big["torch_version"] == "2.13.0" and big["host"] == "node7"


def test_parquet_units_in_field_metadata_and_one_duckdb_query(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    duckdb = pytest.importorskip("duckdb")
    with Store.open(tmp_path / "r.sqlite") as store:
        path = store.export(_stored_gemm_run(store), "parquet", tmp_path / "h200.parquet")
    schema = pq.read_schema(path)
    assert schema.field("figure.tflops").metadata[b"unit"] == b"TFLOP/s"
    assert schema.field("figure.efficiency").metadata[b"unit"] == b"1"
    assert schema.field("metric.median_s").metadata[b"unit"] == b"s"
    assert schema.field("metric.achieved_flops").metadata[b"unit"] == b"FLOP/s"
    # The README's query, verbatim but for the path.
    query = README_QUERY.replace("'*.parquet'", f"'{path}'")
    assert duckdb.sql(query).fetchall() == [("NVIDIA H200", pytest.approx(0.65), 2)]


README_QUERY = """
SELECT device_name, median("figure.efficiency") AS median_efficiency, count(*) AS shapes
FROM '*.parquet'
WHERE suite = 'gemm' AND "figure.class" = 'compute-bound' AND "figure.dtype" = 'bf16'
GROUP BY device_name
""".strip()
