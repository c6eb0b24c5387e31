"""The overlap suite's figures judge themselves: CIs from the iterations' raw samples, and an
``invalid`` finding for an overlap outside [0, 1] or a kernel faster together than alone
beyond the CIs (hand-made samples and rows)."""

from __future__ import annotations

import pytest

from parity.families.overlap.figures import overlap_figures
from parity.families.overlap.summary import OverlapRow, OverlapSummary, case_ci95, summarize_overlap
from parity.model import CaseResult
from parity.model.samples import Samples


def _samples(**series_ms: list[float]) -> dict[str, Samples]:
    return {name: Samples(values_s=tuple(v * 1e-3 for v in values), method="host-clock")
            for name, values in series_ms.items()}


STEADY = dict(exchange_alone=[4.0] * 5, kernel_alone=[2.0] * 5, exchange_together=[6.0] * 5,
              kernel_together=[3.0] * 5, main=[5.0] * 5)


def test_steady_samples_give_zero_width_cis_at_the_hand_computed_values() -> None:
    ci = case_ci95(_samples(**STEADY))
    # overlap (4 + 2 - 5) / 2 = 0.5; slowdowns 6/4 = 1.5 and 3/2 = 1.5
    assert ci["overlap_fraction"] == pytest.approx((0.5, 0.5))
    assert ci["exchange_slowdown"] == pytest.approx((1.5, 1.5))
    assert ci["kernel_slowdown"] == pytest.approx((1.5, 1.5))
    assert ci["both_s"] == pytest.approx((5e-3, 5e-3))


def test_series_of_unequal_length_give_no_paired_cis() -> None:
    ci = case_ci95(_samples(**{**STEADY, "main": [5.0] * 4}))
    assert "overlap_fraction" not in ci and "kernel_slowdown" not in ci
    assert ci["kernel_alone_s"] == pytest.approx((2e-3, 2e-3))


def _row(**values) -> OverlapRow:
    base = dict(key="dispatch+gemm", ok=True, kernel="gemm", exchange_alone_s=4e-3, kernel_alone_s=2e-3,
                exchange_together_s=6e-3, kernel_together_s=3e-3, both_s=5e-3, exchange_slowdown=1.5,
                kernel_slowdown=1.5, overlap_fraction=0.5)
    return OverlapRow(**{**base, **values})


def _codes(summary: OverlapSummary) -> dict[str, list[str]]:
    return {f.name: [g.code for g in f.findings] for f in overlap_figures(summary)}


def test_a_steady_case_has_no_finding() -> None:
    assert _codes(OverlapSummary(rows=(_row(),))) == {"overlap.exchange_slowdown": [],
                                                      "overlap.kernel_slowdown": [],
                                                      "overlap.overlap_fraction": []}


def test_the_issues_overlap_of_1382_percent_is_invalid() -> None:
    row = _row(overlap_fraction=13.82, ci95={"overlap_fraction": (7.1, 44.5)})
    (figure,) = [f for f in overlap_figures(OverlapSummary(rows=(row,))) if f.name == "overlap.overlap_fraction"]
    assert figure.ci95 == (7.1, 44.5)
    (finding,) = figure.findings
    assert finding.code == "invalid" and "1382.0%" in finding.message and "above 1" in finding.message


def test_a_negative_overlap_is_invalid() -> None:
    assert _codes(OverlapSummary(rows=(_row(overlap_fraction=-9.07),)))["overlap.overlap_fraction"] == ["invalid"]


def test_faster_together_beyond_the_cis_is_invalid_within_them_is_not() -> None:
    apart = _row(kernel_slowdown=0.24, ci95={"kernel_together_s": (11e-3, 22e-3), "kernel_alone_s": (36e-3, 78e-3)})
    meet = _row(kernel_slowdown=0.9, ci95={"kernel_together_s": (1.8e-3, 2.1e-3), "kernel_alone_s": (2.0e-3, 2.2e-3)})
    assert _codes(OverlapSummary(rows=(apart,)))["overlap.kernel_slowdown"] == ["invalid"]
    assert _codes(OverlapSummary(rows=(meet,)))["overlap.kernel_slowdown"] == []


def test_the_summary_keeps_the_cis_through_its_dict() -> None:
    result = CaseResult(suite="overlap", key="dispatch+gemm", check={"passed": True}, samples=_samples(**STEADY),
                        metrics={"exchange_alone_s": 4e-3, "kernel_alone_s": 2e-3, "both_s": 5e-3,
                                 "overlap_fraction": 0.5, "kernel": "gemm"})
    summary = summarize_overlap([result])
    assert summary.rows[0].interval("overlap_fraction") == pytest.approx((0.5, 0.5))
    assert OverlapSummary.from_dict(summary.to_dict()) == summary


def test_the_overlap_chart_shows_the_invalid_findings_beside_it() -> None:
    from parity.families.overlap.views import overlap_charts
    from parity.model import RunRecord
    from parity.report.views import RunData

    row = _row(overlap_fraction=13.82)
    summary = OverlapSummary(rows=(row,), world_size=2, backend="gloo")
    figures = [f.to_dict() for f in overlap_figures(summary)]
    run = RunRecord(run_id="r1", created_at="t", status="complete")
    charts = {c.id: c for c in overlap_charts([RunData(label="r1", run=run, summary=summary.to_dict(),
                                                           figures=figures)])}
    (finding,) = charts["overlap-fraction"].findings
    assert finding["code"] == "invalid"
    assert finding["message"].startswith("overlap.overlap_fraction [dispatch+gemm]: overlap achieved (dispatch+gemm) "
                                         "1382.0% is above 1")
