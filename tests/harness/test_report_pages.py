"""Pages fit for an article, without a browser: runs named by their label and told apart by hue,
per-case ratios sorted and read, a comparison's new optional fields tolerated, warnings beside the
charts they concern, time axes in their unit, flat tables in print, the compared runs in the
header."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from typing import Any

import pytest

from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult, RunRecord
from parity.report.comparison_page import comparison_page, reading, relabel_comparison, size_of
from parity.report.html.chart import Chart, key_values, run_label, run_labels, vega_lite
from parity.report.html.colours import colour_runs, run_shades
from parity.report.html.compare_charts import comparison_charts, ratio_domain
from parity.report.html.document import case_warnings, report_data
from parity.report.html.page import render_page
from parity.report.html.trace_charts import TraceInput, sensitivity_chart, timeline_chart
from parity.report.units import time_scale
from tests.report_rows import comparison_dict, synthetic_run


def _run(run_id: str, label: str | None = None, device: str = "AMD EPYC") -> RunRecord:
    config = {"device": "cpu", **({"label": label} if label is not None else {})}
    return RunRecord(run_id=run_id, created_at="2026-12-01T00:00:00+00:00", config=config,
                     provenance={"device": {"properties": {"name": device}}}, status="complete", summary={})


def test_a_run_is_named_by_its_label_else_a_short_id_never_its_device() -> None:
    assert run_label(_run("20261201-222257-9381", "  baseline  bf16 ")) == "baseline bf16"
    assert run_label(_run("20261201-222257-9381")) == "run 9381"
    assert run_label(_run("plain")) == "run plain"


def test_two_runs_never_share_a_legend_name() -> None:
    same = run_labels([_run("20261201-1-aaaa", "x"), _run("20261201-2-bbbb", "x")])
    assert same == ["x (20261201-1-aaaa)", "x (20261201-2-bbbb)"]
    assert run_labels([_run("a-1", "run 1"), _run("b-1")]) == ["run 1 (a-1)", "run 1 (b-1)"]
    assert len(set(run_labels([_run("a"), _run("a")]))) == 2  # the same run twice still reads twice


def test_each_run_has_its_own_hue_and_no_colour_is_reused_across_runs() -> None:
    series = [f"{run} · {op} {regime}" for run in ("A", "B") for op in ("copy", "triad", "scale", "add")
              for regime in ("warm", "cold")]
    spec = vega_lite({"points": [{"series": s, "y": 1} for s in series], "ceiling": [{"series": "A"}]}, {"layer": [
        {"data": {"name": "points"}, "mark": "line", "encoding": {"color": {"field": "series", "type": "nominal"}}},
        {"data": {"name": "points"}, "mark": "point", "encoding": {"color": {"field": "series", "type": "nominal"}}},
        {"data": {"name": "ceiling"}, "mark": "rule", "encoding": {}}]})
    chart = colour_runs(Chart(id="c", section="s", title="t", spec=spec, tables=()), ["A", "B"])
    scales = [layer["encoding"]["color"]["scale"] for layer in chart.spec["layer"][:2]]
    assert scales[0] == scales[1]  # layers agree
    domain, colours = scales[0]["domain"], scales[0]["range"]
    assert domain == series and "A" not in domain  # the ceiling rule draws no colour: no legend entry
    assert len(set(colours)) == 16  # 16 series, 16 colours: none reused, so none shared by two runs
    assert set(colours[:8]) == set(run_shades(0, 8)) and set(colours[8:]) == set(run_shades(1, 8))
    assert spec["layer"][0]["encoding"]["color"] == {"field": "series", "type": "nominal"}  # the view's spec is kept


def test_a_colour_field_that_names_no_run_is_left_alone() -> None:
    spec = vega_lite({"d": [{"category": "matrix"}, {"category": "vector"}]},
                     {"data": {"name": "d"}, "mark": "bar", "encoding": {"color": {"field": "category"}}})
    chart = Chart(id="c", section="s", title="t", spec=spec, tables=())
    assert colour_runs(chart, ["A", "B"]) is chart


def test_a_ratio_reads_no_difference_when_its_ci_holds_one() -> None:
    assert reading(1.31, [1.22, 1.40]) == "faster"
    assert reading(0.8, [0.7, 0.9]) == "slower"
    assert reading(0.93, [0.86, 1.02]) == "no difference measured"
    assert reading(2.0, None) == "no CI"
    assert reading(None, None) == "no ratio"
    assert reading(2.0, [1.9, 2.1], comparable=False) == "not comparable"
    assert reading(2.0, [1.9, 2.1], marked=True) == "forced: conventions differ"


def test_cases_sort_by_intensity_else_size_within_their_group() -> None:
    assert size_of({"arithmetic_intensity": 12.0, "bytes": 4}) == ("arithmetic intensity", 12.0)
    assert size_of({"op": "copy", "bytes": 4096, "max_bytes": 1}, {"bytes"}) == ("size (B)", 4096.0)
    assert size_of({"m": 64, "n": 32, "k": 2, "max_samples": 500}) == ("size", 4096.0)
    cases = [{"suite": "s", "key": f"{op}/{n}", "params": {"op": op, "bytes": n, "max_bytes": 1 << 20},
              "values": [1.0, 1.0], "ratio": 1.0, "ratio_ci95": [0.9, 1.1]}
             for op, n in (("triad", 65536), ("copy", 65536), ("copy", 1024), ("triad", 1024), ("copy", 8192),
                           ("triad", 8192))]
    page = comparison_page({"runs": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}], "cases": cases})
    assert [r.key for r in page.ratios] == ["copy/1024", "copy/8192", "copy/65536", "triad/1024", "triad/8192",
                                            "triad/65536"]


def test_the_axis_fits_the_data_with_one_on_it() -> None:
    low, high = ratio_domain([{"ratio": 1.3, "ratio_low": 1.2, "ratio_high": 1.4}])
    assert low < 1.0 < 1.4 < high < 1.6  # 1 is always on the axis; no decade to spare
    assert ratio_domain([{"ratio": None, "ratio_low": None, "ratio_high": None}]) is None


def test_new_optional_fields_of_a_comparison_are_drawn_and_old_ones_still_draw() -> None:
    doc = comparison_dict(forced=False)
    doc["cases"][0] |= {"ci_kind": "between-run (3 runs per side)"}
    doc["cases"][1] |= {"comparable": False, "reason": "dtype bf16 vs fp32"}
    doc["summary"][0] |= {"comparable": False, "reason": "no GEMM case joined"}
    ratios, audit = comparison_charts(doc)
    rows = {r["case"]: r for r in ratios.spec["datasets"]["ratios"]}
    assert rows["bf16/matmul/4096x4096x4096"]["ci_kind"] == "between-run (3 runs per side)"
    assert rows["copy/1048576"]["reading"] == "not comparable"
    messages = [f["message"] for f in ratios.findings]
    assert "membw copy/1048576: not comparable (dtype bf16 vs fp32)" in messages
    assert "gemm.median_efficiency.compute-bound: not comparable (no GEMM case joined)" in messages
    assert audit.spec["datasets"]["summary"][0]["comparable"] == "no: no GEMM case joined"
    doc["ci_kind"], doc["not_comparable"] = "within-run only", [{"name": "gemm.ceiling", "comparable": False,
                                                                 "reason": "dtype differs"}]
    warned = [f["message"] for f in comparison_charts(doc)[0].findings]
    assert "gemm.ceiling: not comparable (dtype differs)" in warned and any("within-run only" in m for m in warned)
    old = comparison_charts(comparison_dict(forced=True))[0]  # no new field: within-run, said beside the chart
    assert any("within-run only" in f["message"] for f in old.findings)
    assert any(f["code"] == "forced" for f in old.findings)


def test_each_case_is_a_labelled_row_of_the_ratio_chart_with_its_ci() -> None:
    chart = comparison_charts(comparison_dict(forced=False))[0]
    panels = chart.spec["vconcat"]
    assert [p["title"]["text"] for p in panels] == ["gemm", "membw"]
    point = panels[0]["layer"][2]["encoding"]
    assert point["y"]["field"] == "case" and point["x"]["scale"]["type"] == "log"
    bar = panels[0]["layer"][1]["encoding"]
    assert (bar["x"]["field"], bar["x2"]["field"]) == ("ratio_low", "ratio_high")
    assert [r["text"] for r in chart.spec["datasets"]["ratios"]] == ["2.5x", "2x"]


def test_the_page_names_the_compared_runs_by_the_reports_labels() -> None:
    doc = comparison_dict(forced=False)
    doc["runs"] = [{"id": "r-a", "label": "A: AMD EPYC", "device": "AMD EPYC"},
                   {"id": "r-b", "label": "B: AMD EPYC", "device": "AMD EPYC"}]
    doc["claims"] = ["on these 1 shapes, B: AMD EPYC runs at 2.5x the speed of A: AMD EPYC"]
    data = report_data(comparison=doc, run_names={"r-a": "baseline", "r-b": "tuned"})
    assert data["compared"] == [{"id": "r-a", "label": "baseline", "device": "AMD EPYC", "runs": "r-a"},
                                {"id": "r-b", "label": "tuned", "device": "AMD EPYC", "runs": "r-b"}]
    assert {s["id"]: s["lines"] for s in data["sections"]}["compare"] == [
        "on these 1 shapes, tuned runs at 2.5x the speed of baseline"]
    page = render_page(data, library_js="")
    assert "runs compared: baseline (r-a; AMD EPYC), tuned (r-b; AMD EPYC)" in page and "runs: none" not in page
    unlabelled = report_data(comparison=doc)  # no store at hand: the comparison's own names
    assert [r["label"] for r in unlabelled["compared"]] == ["A: AMD EPYC", "B: AMD EPYC"]


def test_a_side_of_several_runs_is_named_with_its_group_and_every_run() -> None:
    doc = comparison_dict(forced=False)
    doc["runs"] = [{"id": "r-a1", "ids": ["r-a1", "r-a2", "r-a3"], "label": "A: before", "device": "AMD EPYC",
                    "spec": "group:g-1", "group": "g-1"},
                   {"id": "r-b1", "ids": ["r-b1", "r-b2"], "label": "B: after", "device": "AMD EPYC",
                    "spec": "r-b1,r-b2", "group": "g-2"}]
    page = render_page(report_data(comparison=doc), library_js="")
    assert ("runs compared: A: before (group g-1, 3 runs: r-a1, r-a2, r-a3; AMD EPYC), "
            "B: after (a list, 2 runs: r-b1, r-b2; AMD EPYC)") in page


def test_relabelling_never_chains_one_name_into_another() -> None:
    doc = {"runs": [{"id": "1", "label": "run 1"}, {"id": "10", "label": "run 10"}],
           "claims": ["run 10 vs run 1"], "summary": []}
    assert relabel_comparison(doc, {"1": "run 10", "10": "new"})["claims"] == ["new vs run 10"]


def test_a_suites_contended_cases_are_said_beside_its_first_chart() -> None:
    hit = Finding(code="contended", severity=Severity.WARNING, message="measured under contention: 80% of 2 CPU(s)")
    noisy = Finding(code="high-variance", severity=Severity.WARNING, message="IQR 40% of the median")
    note = Finding(code="note", severity=Severity.INFO, message="fyi")
    cases = [CaseResult(suite="membw", key=f"copy/{n}", findings=((hit,) if n > 1024 else ()) + (noisy, note))
             for n in (1024, 2048, 4096)]
    contended, variance = case_warnings(_run("x-1"), cases, "baseline", "membw")
    assert contended["severity"] == "warning" and contended["code"] == "contended"
    assert contended["message"] == ("baseline: 2 membw case(s) contended (copy/2048, copy/4096); first: measured "
                                    "under contention: 80% of 2 CPU(s)")
    assert variance["message"].startswith("baseline: 3 membw case(s) high-variance (copy/1024, copy/2048, copy/4096)")
    assert case_warnings(_run("x-1"), cases, "baseline", "gemm") == []
    run, _ = synthetic_run()
    data = report_data(runs=[(run, [replace(c, findings=(hit,)) for c in cases])])
    first = next(c for c in data["charts"] if c["id"] == "run-0-figures")
    assert any(f["code"] == "contended" for f in first["findings"])


def test_a_suite_the_run_left_out_is_a_warning_of_the_whole_run() -> None:
    run = _run("x-1")
    why = "it needs 2 ranks or more and this run has 1 (parity run --ranks 2 --suite preflight)"
    run = replace(run, config={**run.config, "left_out": {"preflight": why}})
    (left,) = case_warnings(run, [], "baseline")
    assert left == {"code": "left-out", "severity": "warning", "hint": "",
                    "message": f"baseline: suite preflight left out: {why}"}
    assert case_warnings(run, [], "baseline", "membw") == []  # a suite's own panel: not its finding


def test_scope_reads_as_key_value_pairs() -> None:
    assert key_values({"dtype": "bf16", "cases": 15, "runs": ["A", "B"], "shape": {"m": 1}}) == \
        "dtype: bf16, cases: 15, runs: A, B, shape: {m: 1}"


def test_a_timeline_axis_is_in_the_unit_of_its_window() -> None:
    assert time_scale(0.0504) == ("ms", 1e-3) and time_scale(2e-5) == ("us", 1e-6) and time_scale(3.0) == ("s", 1.0)
    assert time_scale(5e-8) == ("ns", 1e-9)
    analysis = {"window": {"length_us": 50_400.0, "source": "steps", "detail": ""}, "streams": [], "ranks": []}
    trace = TraceInput(path="t.json", analysis=analysis, whatif=None,
                       segments=[{"lane": "l", "start_s": 0.01, "end_s": 0.02, "category": "matrix", "name": "k",
                                  "kernels": 1}])
    bars = timeline_chart(0, trace).spec["hconcat"][0]
    assert bars["encoding"]["x"]["title"] == "time in the window (ms)"
    assert {"calculate": "datum.start_s / 0.001", "as": "start_in_unit"} in bars["transform"]
    assert bars["encoding"]["x"]["axis"]["format"] != "~s"  # never "50m" under a title that says seconds
    assert timeline_chart(0, trace).note.startswith("Window 50.4 ms (steps")
    long = TraceInput(path="t.json", analysis={**analysis, "window": {"length_us": 12_920_244.0, "source": "span"}},
                      whatif=None, segments=trace.segments)
    assert timeline_chart(0, long).note.startswith("Window 12.9 s (span")  # was "1.292e+04 ms"


def test_a_replay_outside_its_bounds_is_marked_on_the_chart() -> None:
    row: dict[str, Any] = {"category": "vector", "k": 2.0, "first_order": 1.29, "low": 1.135, "high": 1.301,
                           "replay": 0.976, "invalid": True}
    trace = TraceInput(path="t.json", analysis={}, segments=[], whatif={"findings": [], "sensitivity": {"rows": [row]}})
    chart = sensitivity_chart(0, trace)
    assert chart is not None
    ring = chart.spec["spec"]["layer"][-1]
    assert ring["transform"] == [{"filter": "datum.invalid === true"}] and ring["mark"]["color"] == "#b3261e"
    inside = sensitivity_chart(0, replace(trace, whatif={"sensitivity": {"rows": [{**row, "invalid": False}]}}))
    assert inside is not None and len(inside.spec["spec"]["layer"]) == 2  # no empty layer
    waits = {**row, "replay": 1.05, "invalid": False, "waits_elsewhere": True}  # between 1 and the bounds
    explained = sensitivity_chart(0, replace(trace, whatif={"sensitivity": {"rows": [waits]}}))
    assert explained is not None and len(explained.spec["spec"]["layer"]) == 3
    amber = explained.spec["spec"]["layer"][-1]
    assert amber["transform"] == [{"filter": "datum.waits_elsewhere === true"}] and amber["mark"]["color"] == "#c77c02"
    assert "amber ring" in explained.note


def test_tables_are_flat_on_screen_and_in_print() -> None:
    css = resources.files("parity.report.html").joinpath("assets").joinpath("report.css").read_text()
    scroll = next(line for line in css.splitlines() if line.startswith(".scroll {"))
    assert "max-height" not in scroll
    printed = css.split("@media print", 1)[1]
    assert ".scroll, .scroll.long { overflow: visible; max-height: none;" in printed


def test_only_a_very_long_table_scrolls_and_only_on_screen() -> None:
    from parity.report.html.chart import Column, Table
    from parity.report.html.page import SCREEN_ROWS, render_table

    table = Table(dataset="d", columns=(Column(field="x", title="x"),)).to_dict()
    rows = [{"x": str(i)} for i in range(SCREEN_ROWS + 1)]
    assert render_table(table, rows[:SCREEN_ROWS]).startswith('<div class="scroll">')
    assert render_table(table, rows).startswith('<div class="scroll long">')
    assert render_table(table, rows, screen_rows=0).startswith('<div class="scroll">')


@pytest.mark.parametrize("columns,stacked", [(4, False), (9, True)])
def test_a_wide_table_goes_below_its_chart(columns: int, stacked: bool) -> None:
    from parity.report.html.page import render_chart

    chart = {"id": "c", "title": "t", "note": "", "draw": True, "findings": [],
             "spec": {"datasets": {"d": []}},
             "tables": [{"dataset": "d", "title": "", "columns": [
                 {"field": f"f{i}", "title": f"f{i}", "unit": "", "unit_field": ""} for i in range(columns)]}]}
    assert ('class="pair stacked"' in render_chart(chart)) is stacked


def test_three_runs_draw_two_ratios_per_case_in_two_colours() -> None:
    doc = comparison_dict(forced=False)
    doc["runs"].append({"id": "run-c", "label": "MI300 · run-c", "device": "MI300"})
    for case in doc["cases"]:
        case["values"].append(case["values"][0])
        case |= {"ratios": [None, case["ratio"], 1.0], "ratios_ci95": [None, case["ratio_ci95"], [0.95, 1.05]]}
    chart = comparison_charts(doc)[0]
    rows = chart.spec["datasets"]["ratios"]
    assert [(r["case"], r["against"], r["reading"]) for r in rows] == [
        ("bf16/matmul/4096x4096x4096", "H100 · run-b", "faster"),
        ("bf16/matmul/4096x4096x4096", "MI300 · run-c", "no difference measured"),
        ("copy/1048576", "H100 · run-b", "faster"), ("copy/1048576", "MI300 · run-c", "no difference measured")]
    colour = chart.spec["vconcat"][0]["layer"][2]["encoding"]["color"]["scale"]
    assert colour["domain"] == ["H100 · run-b", "MI300 · run-c"] and len(set(colour["range"])) == 2
    assert "yOffset" in chart.spec["vconcat"][0]["layer"][2]["encoding"]  # side by side, not on top


def test_a_summary_figure_that_is_not_comparable_says_so_in_its_column() -> None:
    """A summary figure keeps ``comparable`` in its scope: the page's column read it as yes."""
    from parity.report.html.compare_charts import summary_rows

    summary = [{"name": "gemm.median_efficiency.compute-bound.ratio", "value": None, "unit": "x",
                "note": "not comparable: scope differs: cases: 13 vs 15", "scope": {"comparable": False}},
               {"name": "gemm.ceiling.ratio", "value": 1.02, "unit": "x", "note": "", "scope": {"comparable": True}},
               {"name": "membw.ceiling.ratio", "value": 1.8, "unit": "x", "note": "forced: not comparable: dtype differs",
                "scope": {"comparable": False}}]
    assert [r["comparable"] for r in summary_rows({"summary": summary})] == [
        "no: scope differs: cases: 13 vs 15", "yes", "no: dtype differs"]


def test_a_trace_comparison_draws_without_a_ci_and_heads_its_columns_by_letter() -> None:
    from parity.compare.traces import TraceInput as Analysed
    from parity.compare.traces import compare_traces

    def analysis(matrix_us: float, steps: list[int]) -> dict[str, Any]:
        window = {"length_us": 1000.0 * (steps[1] - steps[0] + 1), "source": "steps", "steps": steps}
        return {"format": "kineto", "rules": "default", "ranks": [{
            "rank": 0, "window": window, "streams": [], "device": {"busy_us": matrix_us, "busy_fraction": 0.5},
            "categories": [{"category": "matrix", "time_us": matrix_us, "share_of_busy": 1.0}],
            "compute_communication": {}, "top_kernels": []}]}

    doc = compare_traces([Analysed(label="/t/a/rank0.json.gz", analysis=analysis(800.0, [2, 3])),
                          Analysed(label="/t/b/rank0.json.gz", analysis=analysis(400.0, [5, 5]))]).to_dict()
    ratios, _ = comparison_charts(doc)
    messages = [f["message"] for f in ratios.findings]
    assert not any("within-run" in m for m in messages)  # one analysis per side: no CI of any kind
    assert "none: one analysis per side" in ratios.note
    assert any("steps in the window differs: 2 vs 1" in m for m in messages)
    titles = [c.title for c in ratios.tables[0].columns]
    assert "A per step" in titles and "B per step" in titles  # letters: the labels are paths, named in the header
    row = ratios.spec["datasets"]["cases"][0]
    assert (row["value_0"], row["value_1"], row["ratio"]) == (400.0, 400.0, 1.0)
