"""The communication families' typed summaries, figures and views on hand-made summaries: the
records round-trip, old GB/s summaries read as B/s, and each chart's dataset holds the rows
the summary gives (the MoE and overlap charts are new)."""

from __future__ import annotations

import pytest

from parity.families.collectives.figures import collectives_figures
from parity.families.collectives.summary import CollectivesSummary
from parity.families.moe.figures import moe_figures
from parity.families.moe.summary import MoeSummary
from parity.families.overlap.figures import overlap_figures
from parity.families.overlap.summary import OverlapSummary
from parity.model.family import families
from parity.model.result import RunRecord
from parity.report.views import RunData, View, view_for

RUN = RunRecord(run_id="r1", created_at="2026-12-01T00:00:00+00:00", config={}, provenance={}, status="complete",
                summary={})


def _collectives() -> dict:
    row = {"key": "all_reduce/fp32/in-place/1024", "op": "all_reduce", "dtype": "fp32", "placement": "in-place",
           "size_bytes": 1024, "count": 256, "world_size": 4, "backend": "gloo", "ok": True, "error": None,
           "wrong": 0, "time_s": 2e-4, "time_p99_s": 3e-4, "fastest_rank_s": 1e-4, "rank_median_s": [2e-4] * 4,
           "iterations": 20, "timing": "max-over-ranks", "algbw_bps": 5.12e6, "busbw_bps": 7.68e6}
    failed = {**row, "key": "all_gather/fp32/in-place/1024", "op": "all_gather", "error": "boom",
              "algbw_bps": None, "busbw_bps": None}
    return {"rows": [row, failed], "avg_busbw_bps": {"all_reduce": 7.68e6}, "avg_busbw_all_bps": 7.68e6,
            "wrong": 0, "ok": False, "world_size": 4, "backend": "gloo", "version": 2}


def _moe() -> dict:
    rates = [{"name": "algorithm", "convention": "algorithm bytes", "bytes": 4000.0, "bps": 4e6},
             {"name": "logical", "convention": "logical bytes", "bytes": 2000.0, "bps": 2e6},
             {"name": "cross_rank", "convention": "cross-rank bytes", "bytes": 1000.0, "bps": 1e6},
             {"name": "bus", "convention": "bus", "bytes": 2000.0, "bps": 1e6}]
    row = {"key": "low-latency/fp8/dispatch", "ok": True, "direction": "dispatch", "dispatch_dtype": "fp8",
           "world_size": 2, "backend": "gloo", "time_s": 1e-3, "time_p99_s": 2e-3, "fastest_rank_s": 5e-4,
           "conventions": rates, "algbw_bps": 2e6, "busbw_bps": 1e6, "check_method": "bytes"}
    combine = {**row, "key": "low-latency/fp8/combine", "direction": "combine",
               "conventions": [{**c, "bps": c["bps"] / 2} for c in rates]}
    return {"rows": [row, combine], "ok": True, "world_size": 2, "backend": "gloo", "routing": "uniform",
            "routing_digest": "ab" * 16, "imbalance_ratio": 1.25, "library_backends": {"deep_ep": "not installed"}}


def _overlap() -> dict:
    row = {"key": "dispatch+gemm", "ok": True, "kernel": "gemm", "exchange_alone_s": 4e-3, "kernel_alone_s": 2e-3,
           "exchange_together_s": 5e-3, "kernel_together_s": 3e-3, "both_s": 5e-3, "exchange_slowdown": 1.25,
           "kernel_slowdown": 1.5, "overlap_fraction": 0.5}
    return {"rows": [row, {"key": "dispatch+copy", "ok": False, "error": "boom"}], "ok": False, "world_size": 2,
            "backend": "gloo"}


def _runs(summary: dict, *labels: str) -> list[RunData]:
    return [RunData(label=label, run=RUN, summary=summary) for label in labels or ("run",)]


@pytest.mark.parametrize("typed, data", [(CollectivesSummary, _collectives), (MoeSummary, _moe),
                                         (OverlapSummary, _overlap)])
def test_summaries_round_trip_through_their_dict(typed, data) -> None:
    record = typed.from_dict(data())
    again = typed.from_dict(record.to_dict())
    assert again == record and record.to_dict()["version"] == typed.VERSION


def test_a_version_1_summary_in_gigabytes_per_second_reads_as_bytes_per_second() -> None:
    old = {"rows": [{"key": "k", "op": "all_reduce", "dtype": "fp32", "placement": "in-place", "size_bytes": 8,
                     "algbw_gbps": 2.0, "busbw_gbps": 3.0}], "avg_busbw_gbps": {"all_reduce": 3.0},
           "avg_busbw_all_gbps": 3.0, "ok": True}
    record = CollectivesSummary.from_dict(old)
    assert (record.rows[0].algbw_bps, record.rows[0].busbw_bps) == (2e9, 3e9)
    assert record.avg_busbw_bps == {"all_reduce": 3e9} and record.avg_busbw_all_bps == 3e9
    moe = MoeSummary.from_dict({"rows": [{"key": "k", "busbw_gbps": 0.5,
                                          "conventions": [{"name": "bus", "convention": "c", "bytes": 1.0,
                                                           "gbps": 0.5}]}]})
    assert moe.rows[0].busbw_bps == 5e8 and moe.rows[0].conventions[0].bps == 5e8


def test_figures_come_from_the_typed_records_in_si_units() -> None:
    [busbw] = collectives_figures(CollectivesSummary.from_dict(_collectives()))
    assert (busbw.name, busbw.value, busbw.unit) == ("collectives.all_reduce.busbw.avg", 7.68e6, "B/s")
    assert busbw.scope == {"op": "all_reduce", "world_size": 4, "backend": "gloo"}
    rates = moe_figures(MoeSummary.from_dict(_moe()))
    assert [(f.name, f.value) for f in rates[:4]] == [("moe.dispatch.algorithm", 4e6), ("moe.dispatch.logical", 2e6),
                                                      ("moe.dispatch.cross_rank", 1e6), ("moe.dispatch.bus", 1e6)]
    assert len(rates) == 8 and rates[4].value == 2e6
    overlap = overlap_figures(OverlapSummary.from_dict(_overlap()))
    assert [(f.name, f.value, f.unit) for f in overlap] == [("overlap.exchange_slowdown", 1.25, "count"),
                                                            ("overlap.kernel_slowdown", 1.5, "count"),
                                                            ("overlap.overlap_fraction", 0.5, "1")]


@pytest.mark.parametrize("name", ["collectives", "moe", "overlap"])
def test_each_family_registers_its_view_in_the_communication_section(name: str) -> None:
    assert families()[name].view == f"parity.families.{name}.views:VIEW"
    view = view_for(name)
    assert isinstance(view, View) and view.section == ("communication", "Communication")


def test_the_collectives_chart_keeps_its_id_and_points() -> None:
    [chart] = view_for("collectives").charts(_runs(_collectives()))
    assert chart.id == "comm-busbw" and chart.section == "communication" and chart.note
    assert chart.dataset("points") == [{"series": "all_reduce fp32 in-place", "op": "all_reduce", "dimension": "world",
                                        "size_bytes": 1024, "time_s": 2e-4, "algbw_bps": 5.12e6, "busbw_bps": 7.68e6,
                                        "wrong": 0}]
    two = view_for("collectives").charts(_runs(_collectives(), "a", "b"))[0].dataset("points")
    assert [p["series"] for p in two] == ["a · all_reduce fp32 in-place", "b · all_reduce fp32 in-place"]
    assert view_for("collectives").charts(_runs({"rows": []})) == []


def test_the_moe_chart_has_a_rate_per_exchange_and_convention() -> None:
    [chart] = view_for("moe").charts(_runs(_moe()))
    assert chart.id == "moe-rates" and chart.section == "communication" and "bytes per rank" in chart.note
    points = chart.dataset("rates")
    assert len(points) == 8
    assert points[0] == {"case": "low-latency/fp8/dispatch", "direction": "dispatch", "dispatch_dtype": "fp8",
                         "series": "algorithm", "convention": "algorithm bytes", "bytes": 4000.0, "time_s": 1e-3,
                         "bps": 4e6}
    assert [(p["case"], p["series"], p["bps"]) for p in points[4:6]] == [
        ("low-latency/fp8/combine", "algorithm", 2e6), ("low-latency/fp8/combine", "logical", 1e6)]
    assert {t.dataset for t in chart.tables} == {"rates"}


def test_the_overlap_charts_hold_times_alone_and_together_and_the_overlap() -> None:
    times, fraction = view_for("overlap").charts(_runs(_overlap()))
    assert (times.id, fraction.id) == ("overlap-times", "overlap-fraction") and times.note and fraction.note
    assert times.dataset("times") == [
        {"case": "dispatch+gemm", "work": "exchange", "mode": "alone", "time_s": 4e-3},
        {"case": "dispatch+gemm", "work": "exchange", "mode": "together", "time_s": 5e-3},
        {"case": "dispatch+gemm", "work": "gemm", "mode": "alone", "time_s": 2e-3},
        {"case": "dispatch+gemm", "work": "gemm", "mode": "together", "time_s": 3e-3},
        {"case": "dispatch+gemm", "work": "both", "mode": "together", "time_s": 5e-3}]
    assert fraction.dataset("overlap") == [{"case": "dispatch+gemm", "kernel": "gemm", "overlap_fraction": 0.5,
                                            "exchange_slowdown": 1.25, "kernel_slowdown": 1.5}]
    # (a + b - both) / min(a, b) = (4 + 2 - 5) / 2 ms = 0.5: the hand-made row is consistent
    assert (4e-3 + 2e-3 - 5e-3) / 2e-3 == pytest.approx(0.5)
    assert view_for("overlap").charts(_runs({"rows": [{"key": "x", "error": "boom"}]})) == []


def test_the_terminal_views_print_todays_text() -> None:
    moe = view_for("moe").terminal(_moe()).splitlines()
    assert moe[1] == ("low-latency/fp8/dispatch: p50 1000.0 us, p99 2000.0 us, fastest rank 500.0 us; "
                      "check passed (bytes)")
    assert moe[2] == "          0.00 GB/s           4,000 B  algorithm bytes"
    assert "imbalance (max/mean tokens per expert) 1.25, hash abababababababab" in moe[-3]
    assert moe[-2:] == ["# deep_ep: not installed", "OK"]
    overlap = view_for("overlap").terminal(_overlap()).splitlines()
    assert overlap[1] == ("dispatch+gemm: exchange alone 4000.0 us, together 5000.0 us (x1.25); gemm alone "
                          "2000.0 us, together 3000.0 us (x1.50); both 5000.0 us, overlap achieved 50%")
    assert overlap[2:] == ["dispatch+copy: error: boom", "FAILED"]
    assert view_for("collectives").terminal(_collectives()).splitlines()[-1] == "FAILED"


def test_interference_from_the_medians_by_hand() -> None:
    from parity.families.overlap.suite import interference

    medians = {"exchange_alone_s": 4e-3, "kernel_alone_s": 2e-3, "exchange_together_s": 5e-3,
               "kernel_together_s": 3e-3, "both_s": 5e-3}
    figures, findings = interference(medians)
    # slowdowns 5/4 and 3/2; overlap (4 + 2 - 5) / min(4, 2) = 0.5
    assert figures == pytest.approx({"exchange_slowdown": 1.25, "kernel_slowdown": 1.5, "overlap_fraction": 0.5})
    assert findings == ()
    faster, _ = interference({**medians, "kernel_together_s": 1e-3})
    _, said = interference({**medians, "kernel_together_s": 1e-3, "both_s": 7e-3})
    assert faster["kernel_slowdown"] == pytest.approx(0.5)
    assert [f.code for f in said] == ["faster-together", "negative-overlap"]  # (6 - 7) / 2 = -0.5
