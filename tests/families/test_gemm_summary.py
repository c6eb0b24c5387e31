"""The GEMM summary record: typed, versioned, SI only, one place for a shape's efficiency."""

from __future__ import annotations

import pytest

from parity.families.gemm.summary import GemmSummary

ROW = {"m": 64, "n": 64, "k": 64, "name": "sq", "class": "compute-bound", "near_ridge": False,
       "arithmetic_intensity": 21.3, "best_backend": "matmul",
       "backends": {"matmul": {"key": "bf16/matmul/64x64x64", "ok": True, "error": None,
                               "achieved_flops": 3e12, "best_flops": 3.3e12, "attainable_flops": 4e12,
                               "efficiency": 0.75, "fraction_of_ceiling": 0.75},
                    "linear": {"key": "bf16/linear/64x64x64", "ok": False, "error": "out of memory"}}}


def test_round_trip_and_version() -> None:
    record = GemmSummary(ceiling_flops=4e12, bandwidth_bps=2e11, dtype="bf16", device_name="dev",
                         efficiency_compute_bound={"median": 0.75, "n": 1}, rows=[ROW], statistic="median")
    stored = record.to_dict()
    assert stored["version"] == GemmSummary.VERSION
    assert GemmSummary.from_dict(stored) == record
    assert record.median_efficiency_compute_bound == 0.75


def test_stored_summary_is_si_only() -> None:
    stored = GemmSummary(ceiling_flops=4e12, bandwidth_bps=2e11, rows=[ROW]).to_dict()
    assert not [k for k in stored if k.endswith(("_tflops", "_gbps", "_us"))]
    assert "median_efficiency_compute_bound" not in stored


def test_an_earlier_version_is_read_and_its_copies_dropped() -> None:
    old = {"ceiling_flops": 4e12, "ceiling_tflops": 4.0, "bandwidth_gbps": 200.0, "bandwidth_bps": 2e11,
           "median_efficiency_compute_bound": 0.5, "efficiency_compute_bound": {"median": 0.5, "n": 2},
           "classes": None, "case_figures": {"rows": {}}}
    record = GemmSummary.from_dict(old)
    assert record.ceiling_flops == 4e12 and record.bandwidth_bps == 2e11
    assert record.classes == {}  # a stored None takes the empty value
    assert record.median_efficiency_compute_bound == 0.5


def test_case_figures_are_derived_from_the_rows() -> None:
    figures = GemmSummary(dtype="bf16", device_name="dev", statistic="median", rows=[ROW]).case_figures
    # Only the backend that ran: 3e12 FLOP/s is 3 TFLOP/s in the export's unit; efficiency as in the row.
    assert list(figures["rows"]) == ["bf16/matmul/64x64x64"]
    row = figures["rows"]["bf16/matmul/64x64x64"]
    assert row["tflops"] == pytest.approx(3.0)
    assert row["efficiency"] == 0.75 and row["class"] == "compute-bound" and row["device"] == "dev"
    assert figures["units"]["efficiency"] == "1" and figures["statistic"] == "median"
