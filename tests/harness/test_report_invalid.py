"""The HTML report shows each figure's findings beside its table: an ``invalid`` figure of a
run in the figures panel, an invalid what-if replay beside the sensitivity chart."""

from __future__ import annotations

from parity.model import CaseResult, RunRecord
from parity.model.figure import Figure
from parity.model.findings import Finding, Severity
from parity.report.html.document import figure_rows, invalid_findings, report_data
from parity.report.html.page import render_page
from parity.report.html.trace_charts import TraceInput, sensitivity_chart

INVALID = Finding(code="invalid", severity=Severity.INVALID, message="overlap 1382% is above 1", hint="run again")


def _run() -> RunRecord:
    figure = Figure(name="overlap.overlap_fraction", value=13.82, unit="count", method="m",
                    scope={"case": "dispatch+gemm"}, findings=(INVALID,))
    fine = Figure(name="overlap.kernel_slowdown", value=1.1, unit="count", method="m", scope={"case": "dispatch+gemm"})
    return RunRecord(run_id="r1", created_at="t", status="complete",
                     summary={"ok": True, "suites": {"overlap": {"figures": [figure.to_dict(), fine.to_dict()]}}})


def test_the_figures_table_has_a_findings_column() -> None:
    rows = figure_rows(_run())
    assert [r["findings"] for r in rows] == ["invalid: overlap 1382% is above 1", ""]


def test_the_figures_panel_carries_each_invalid_finding_naming_its_figure() -> None:
    (found,) = invalid_findings(_run())
    assert found["message"] == "overlap overlap.overlap_fraction [dispatch+gemm]: overlap 1382% is above 1"
    assert found["severity"] == "invalid"


def test_the_page_shows_it_beside_the_table() -> None:
    data = report_data(runs=[(_run(), [CaseResult(suite="overlap", key="dispatch+gemm")])])
    page = render_page(data, library_js="")
    assert ('<li class="finding invalid" data-code="invalid"><strong>invalid</strong>: overlap '
            'overlap.overlap_fraction [dispatch+gemm]: overlap 1382% is above 1 (run again)</li>') in page


def test_the_sensitivity_chart_carries_the_whatif_findings() -> None:
    replay = {"code": "invalid", "severity": "invalid", "message": "replay speedup for vector=2 0.976x lies "
              "outside its own bounds [1.135x, 1.301x]", "hint": ""}
    row = {"category": "vector", "k": 2.0, "first_order": 1.29, "low": 1.135, "high": 1.301, "replay": 0.976,
           "invalid": True}
    trace = TraceInput(path="t.json", analysis={}, segments=[],
                       whatif={"findings": [replay], "sensitivity": {"rows": [row], "findings": []}})
    chart = sensitivity_chart(0, trace)
    assert chart is not None and chart.findings == (replay,)
    assert "invalid" in [c.field for c in chart.tables[0].columns]
