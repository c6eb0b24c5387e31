"""The latency summary record (seconds, versioned, stored as a dict) and the family's view."""

from __future__ import annotations

import pytest

from parity.families.latency.summary import VERSION, LatencySummary, in_seconds
from parity.model.result import RunRecord

OLD = {
    "headline": {"L1_ns": 1.5, "first_knee_blocks": 2},
    "size_curves": [{"page": "4KiB", "stride_bytes": 64,
                     "points": [{"working_set_bytes": 4096, "latency_ns": 1.5, "huge_page_share": 0.0}],
                     "plateaus": [{"level": "L1", "latency_ns": 1.5, "page_walk_ns": None, "start_bytes": 4096,
                                   "size_bytes": 4096}]}],
    "plateaus": [{"level": "L1", "latency_ns": 1.5, "start_bytes": 4096, "size_bytes": 4096, "page": "4KiB"}],
    "blocks_curves": [{"page": "4KiB", "points": [{"blocks": 1, "latency_ns": 2.0}, {"blocks": 2, "latency_ns": 2.0},
                                                  {"blocks": 3, "latency_ns": 5.0}],
                       "knees": [{"blocks": 2, "latency_ns": 2.0, "slope_before_ns_per_block": 0.0,
                                  "slope_after_ns_per_block": 3.0, "rise": 0.5}]}],
    "blocks_curve": {"page": "4KiB", "points": [], "knees": []},
}


def test_ns_quantities_become_seconds_under_si_names() -> None:
    assert in_seconds({"latency_ns": 2.0, "slope_after_ns_per_block": 3.0, "blocks": 2, "page_walk_ns": None}) == {
        "latency_s": 2.0 * 1e-9, "slope_after_s_per_block": 3.0 * 1e-9, "blocks": 2, "page_walk_s": None}


def test_a_summary_of_the_ns_layout_is_read_in_seconds_and_round_trips() -> None:
    record = LatencySummary.from_dict(OLD)
    assert record.headline == {"L1_s": 1.5 * 1e-9, "first_knee_blocks": 2}  # as the figure computes it
    assert record.plateaus[0]["latency_s"] == pytest.approx(1.5e-9) and "latency_ns" not in record.plateaus[0]
    assert record.blocks_curve["knees"][0]["slope_after_s_per_block"] == pytest.approx(3e-9)
    stored = record.to_dict()
    assert stored["version"] == VERSION and "blocks_curve" not in stored
    assert LatencySummary.from_dict(stored) == record


def test_the_view_draws_both_latency_charts() -> None:
    from parity.report.views import RunData, view_for

    view = view_for("latency")
    assert view.section == ("latency", "Latency")
    stored = LatencySummary.from_dict(OLD).to_dict()
    charts = view.charts([RunData(label="a", run=RunRecord(run_id="a", created_at=""), summary=stored)])
    assert [c.id for c in charts] == ["latency-size", "latency-blocks"]
    knees = charts[1].to_dict()["spec"]["datasets"]["knees"]
    assert knees[0]["latency_s"] == pytest.approx(2e-9) and knees[0]["slope_after_s"] == pytest.approx(3e-9)
