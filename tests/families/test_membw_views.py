"""The membw summary record (SI units, versioned, stored as a dict) and the family's view."""

from __future__ import annotations

import pytest

from parity.families.membw.summary import VERSION, MembwSummary, summarize_membw
from parity.model.errors import ParityError
from parity.model.result import CaseResult, RunRecord


def _row(op: str, size: int, seconds: float) -> CaseResult:
    moved = 2 * size
    return CaseResult(suite="membw", key=f"{op}/{size}", params={"op": op, "bytes": size, "flush": True},
                      metrics={"operand_bytes": size, "bytes_moved": moved, "median_s": seconds, "iqr_s": 0.0,
                               "gbps": moved / seconds / 1e9, "operand_gbps": size / seconds / 1e9},
                      check={"passed": True})


def _ceiling(bps: float) -> CaseResult:
    size = 2**28
    return CaseResult(suite="membw", key="ceiling/copy", params={"kind": "ceiling", "op": "copy"},
                      metrics={"bandwidth_bps": bps, "gbps": bps / 1e9, "operand_bytes": size,
                               "bytes_moved": 2 * size, "median_s": 2 * size / bps}, check={"passed": True})


def test_the_record_is_in_bytes_per_second_and_round_trips() -> None:
    # copy of 1 MiB in 0.1 ms: 2 MiB / 1e-4 s = 20.97152 GB/s; the ceiling copy at 25 GB/s.
    record = summarize_membw([_ceiling(25e9), _row("copy", 2**20, 1e-4), _row("copy", 2**22, 4e-4)])
    assert isinstance(record, MembwSummary)
    stored = record.to_dict()
    assert stored["version"] == VERSION
    assert stored["ceiling"]["bps"] == 25e9 and "gbps" not in stored["ceiling"]
    point = stored["curves"][0]["points"][0]
    assert point["bandwidth_bps"] == pytest.approx(20.97152e9) and "gbps" not in point
    assert point["utilization_ceiling"] == pytest.approx(20.97152 / 25)
    assert stored["headline"]["ceiling_bps"] == 25e9
    assert MembwSummary.from_dict(stored) == record


def test_a_summary_of_the_gb_per_s_layout_is_read_in_bytes_per_second() -> None:
    old = {"headline": {"ceiling_gbps": 20.0, "copy_asymptotic_gbps": 18.0, "copy_warm_fixed_cost_s": 1e-6},
           "ceiling": {"gbps": 20.0, "op": "copy", "operand_bytes": 2**28, "method": "dedicated device-to-device copy"},
           "datasheet": {"gbps": 4800.0, "bps": 4.8e12, "device": "H200", "source": "datasheet"},
           "curves": [{"op": "copy", "asymptotic_gbps": 18.0, "points": [{"gbps": 2.0, "operand_gbps": 1.0}]}]}
    record = MembwSummary.from_dict(old)
    assert record.headline == {"ceiling_bps": 20e9, "copy_asymptotic_bps": 18e9, "copy_warm_fixed_cost_s": 1e-6}
    assert record.ceiling["bps"] == 20e9 and "gbps" not in record.ceiling
    assert record.datasheet == {"bps": 4.8e12, "device": "H200", "source": "datasheet"}
    assert record.curves[0]["asymptotic_bps"] == 18e9
    assert record.curves[0]["points"][0] == {"bandwidth_bps": 2e9, "operand_bps": 1e9}
    with pytest.raises(ParityError):
        MembwSummary.from_dict({"version": VERSION + 1, "headline": {}})


def test_the_view_draws_the_bandwidth_chart_in_the_memory_section() -> None:
    from parity.report.views import RunData, View, view_for

    view = view_for("membw")
    assert isinstance(view, View) and view.section == ("memory", "Memory bandwidth")
    stored = summarize_membw([_ceiling(25e9), _row("copy", 2**20, 1e-4), _row("copy", 2**22, 4e-4)]).to_dict()
    (chart,) = view.charts([RunData(label="a", run=RunRecord(run_id="a", created_at=""), summary=stored)])
    assert chart.id == "membw-bandwidth" and chart.section == "memory"
    data = chart.to_dict()["spec"]["datasets"]
    assert data["ceiling"][0]["bandwidth_bps"] == 25e9
    assert [p["bandwidth_bps"] for p in data["points"]] == pytest.approx([20.97152e9, 20.97152e9])
    assert view.charts([]) == []
