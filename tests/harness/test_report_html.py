"""The HTML report's data and page, without a browser: charts per family from stored rows,
every figure without per-family code, escaping, units at the edge, the CLI."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from parity.cli.main import cli
from parity.model.errors import ParityError
from parity.report.html.chart import Column, Table
from parity.report.html.compare_charts import FORCED_MARK
from parity.report.html.document import figure_rows, flatten, report_data
from parity.report.html.page import (
    CLAMP_CHARS,
    column_scale,
    json_block,
    ratio_text,
    render_page,
    render_table,
    significant,
)
from parity.report.html.trace_charts import timeline_segments
from parity.store import Store
from parity.trace.table import ActivityTable
from tests.report_rows import KERNEL_NAME, comparison_dict, synthetic_run


def _charts(data: dict) -> dict[str, dict]:
    return {c["id"]: c for c in data["charts"]}


def test_json_block_cannot_be_ended_by_a_value_and_reads_back_equal() -> None:
    data = {"name": "</script><script>alert(1)</script>", "c": "<!-- & -->", "n": [1.5, None]}
    text = json_block(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data


def test_significant_digits_and_column_scales() -> None:
    assert significant(1234.5678) == "1235"
    assert significant(0.000123456) == "0.0001235"
    assert significant(123456.7) == "123,457"
    assert column_scale("s", [3e-6, 5e-6, 1e-3]) == ("us", 1e-6)  # the median sets the unit
    assert column_scale("B", [4096, 8192]) == ("KiB", 1024)
    assert column_scale("FLOP/s", [2e14]) == ("TFLOP/s", 1e12)
    assert column_scale("FLOP/s", [1.1e10]) == ("GFLOP/s", 1e9)
    assert column_scale("1", [0.5]) == ("%", 0.01)
    assert column_scale("FLOP/B", [12.0]) == ("FLOP/B", 1.0)


def test_table_escapes_text_and_shows_numbers_in_the_columns_unit() -> None:
    table = Table(dataset="d", title="t<i>", columns=(Column(field="name", title="kernel"),
                                                     Column(field="t", title="time", unit="s"),
                                                     Column(field="v", title="value", unit_field="unit")))
    text = render_table(table.to_dict(), [{"name": KERNEL_NAME, "t": 2.5e-6, "v": 3e12, "unit": "B/s"}])
    assert KERNEL_NAME not in text and html.escape(KERNEL_NAME) in text
    assert "t&lt;i&gt;" in text and "<th>time (us)</th>" in text
    assert '<td class="num" data-scale="1e-06">2.5</td>' in text
    assert ">3000 GB/s<" in text


def test_only_a_very_long_text_is_clamped_on_screen() -> None:
    table = Table(dataset="d", title="", columns=(Column(field="scope", title="scope"),))
    scope = "dtype: bf16, device: AMD EPYC, shape: {m: 8192, n: 1024, k: 2048}, ceiling_from: None " * 3
    assert len(scope) <= CLAMP_CHARS and "clamp" not in render_table(table.to_dict(), [{"scope": scope}])
    text = render_table(table.to_dict(), [{"scope": "x" * (CLAMP_CHARS + 1)}])
    assert '<span class="clamp">' in text


def test_a_ratio_near_one_never_reads_one() -> None:
    assert ratio_text(1.00003) == "1.00003" and ratio_text(0.99997) == "0.99997"
    assert ratio_text(1.0) == "1" and ratio_text(1.31) == "1.31" and ratio_text(1.00025) == "1.0003"
    table = Table(dataset="d", title="", columns=(Column(field="replay", title="replay", unit="x"),
                                                  Column(field="n", title="n", unit="number")))
    text = render_table(table.to_dict(), [{"replay": 1.00003, "n": 1.00003}])
    assert ">1.00003<" in text and ">1<" in text  # a plain number keeps 4 significant digits


def test_a_column_blank_in_every_row_is_left_out_and_named() -> None:
    table = Table(dataset="d", title="cases", columns=(Column(field="name", title="case"),
                                                       Column(field="speedup", title="vs torch", unit="x"),
                                                       Column(field="t", title="time", unit="s")))
    text = render_table(table.to_dict(), [{"name": "a", "speedup": None, "t": 1e-3}, {"name": "b", "speedup": "", "t": 2e-3}])
    assert "vs torch" not in text.split("</caption>")[1] and 'data-fields="name t"' in text
    assert "<caption>cases (no value in any row: vs torch)</caption>" in text
    text = render_table(table.to_dict(), [{"name": "a", "speedup": 1.5, "t": 1e-3}, {"name": "b", "t": 2e-3}])
    assert 'data-fields="name speedup t"' in text and "no value" not in text  # one value keeps the column
    assert 'data-fields="name speedup t"' in render_table(table.to_dict(), [])  # no row: every heading


def test_every_family_is_drawn_from_stored_rows() -> None:
    run, cases = synthetic_run()
    charts = _charts(report_data(runs=[(run, cases)]))
    assert {"decode-throughput", "serving-throughput", "comm-busbw", "latency-size", "latency-blocks"} <= set(charts)
    decode = charts["decode-throughput"]["spec"]["datasets"]
    assert [p["tpot_s"] for p in decode["points"]] == pytest.approx([0.010, 0.012, 0.014, 0.016])
    assert decode["targets"] == [{"series": "decode.throughput_at_tpot", "figure": "decode.throughput_at_tpot",
                                  "tpot_target_s": 0.015, "tokens_per_s_per_card": 2100.0, "note": ""}]
    serving = charts["serving-throughput"]["spec"]["datasets"]
    assert [p["tokens_per_s_per_card"] for p in serving["points"]] == [40.0, 320.0, 1280.0]
    assert serving["targets"][0]["tokens_per_s_per_card"] is None  # not reached: null, never made up
    assert serving["targets"][0]["note"] == "not reached in the measured range" and serving["reached"] == []
    busbw = charts["comm-busbw"]["spec"]["datasets"]["points"]
    assert len(busbw) == 6 and {p["series"] for p in busbw} == {"all_reduce fp32 out-of-place",
                                                              "all_gather fp32 out-of-place"}
    knees = charts["latency-blocks"]["spec"]["datasets"]["knees"]
    assert knees == [{"series": "base pages", "blocks": 2, "latency_s": pytest.approx(1.1e-9),
                      "slope_before_s": 0.0, "slope_after_s": pytest.approx(0.65e-9)}]
    plateaus = charts["latency-size"]["spec"]["datasets"]["plateaus"]
    assert [p["level"] for p in plateaus] == ["L1", "L2"]


def test_a_family_without_report_code_still_shows_its_figures() -> None:
    run, cases = synthetic_run()
    rows = figure_rows(run)
    new = [r for r in rows if r["suite"] == "newfamily"]
    assert new[0] == {"suite": "newfamily", "name": "newfamily.widgets_per_s", "value": 12345.678, "unit": "count",
                      "ci_low": None, "ci_high": None, "best": None, "method": "method of newfamily.widgets_per_s",
                      "scope": f"subset: {KERNEL_NAME}", "note": "", "findings": ""}  # key: value, not JSON
    assert len(new) == 2 and new[1]["scope"].startswith("condition_0: a_value_without_spaces_0_")
    page = render_page(report_data(runs=[(run, cases)]), library_js="")
    assert "newfamily.widgets_per_s" in page and "12,346" in page
    assert KERNEL_NAME not in page.split('<script type="application/json"')[0]


def test_provenance_flattens_nested_records() -> None:
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x", "e": {}}) == [
        {"key": "a.b", "value": "1"}, {"key": "a.c", "value": "[1, 2]"}, {"key": "d", "value": "x"},
        {"key": "e", "value": "{}"}]
    assert flatten({"vote": {"threshold": 8.764053269347762, "alpha": 0.01}}) == [
        {"key": "vote.threshold", "value": "8.76405"}, {"key": "vote.alpha", "value": "0.01"}]


def test_comparison_section_shows_ratios_marks_audit_and_claims() -> None:
    data = report_data(comparison=comparison_dict(forced=True))
    charts = _charts(data)
    cases = charts["compare-ratios"]["spec"]["datasets"]["cases"]
    assert [c["ratio"] for c in cases] == [2.5, 2.0]
    assert [c["marked"] for c in cases] == ["", FORCED_MARK]
    assert cases[0]["value_0"] == 2.0e14 and cases[0]["value_1"] == 5.0e14
    assert [t["title"] for t in charts["compare-ratios"]["tables"][0]["columns"]][2:4] == ["A100 · run-a",
                                                                                          "H100 · run-b"]
    audit = charts["compare-audit"]["spec"]["datasets"]["audit"]
    assert audit[1] == {"condition": "byte convention", "values": f"stream | {KERNEL_NAME}", "matters": "yes",
                        "refused": "refused"}
    lines = {s["id"]: s["lines"] for s in data["sections"]}["compare"]
    assert lines[0].startswith("This comparison was forced") and "2.5x" in lines[1]
    page = render_page(data, library_js="")
    assert "500 TFLOP/s" in page and FORCED_MARK in page
    unforced = report_data(comparison=comparison_dict(forced=False))
    assert not {s["id"]: s["lines"] for s in unforced["sections"]}["compare"][0].startswith("This comparison")


def _table(starts: list[int], ends: list[int], streams: list[int]) -> ActivityTable:
    n = len(starts)
    return ActivityTable(
        rank=np.zeros(n, np.int32), device=np.zeros(n, np.int32), stream=np.array(streams, np.int64),
        kind=np.zeros(n, np.int8), name_id=np.zeros(n, np.int32), start_ns=np.array(starts, np.int64),
        end_ns=np.array(ends, np.int64), correlation=np.full(n, -1, np.int64), step=np.full(n, -1, np.int32),
        names=[KERNEL_NAME], extra={}, meta={})


def test_timeline_clips_to_the_window_and_merges_past_the_limit() -> None:
    table = _table([0, 100, 300, 1000, 50], [200, 250, 400, 1200, 60], [7, 7, 7, 7, 9])
    codes = np.zeros(5, np.int16)
    segs = timeline_segments(table, codes, ["matrix"], rank=0, start_ns=100, end_ns=1100)
    lanes = [s["lane"] for s in segs]
    assert lanes == ["rank 0 · device 0 · stream 7"] * 4  # the stream-9 kernel lies before the window
    assert [(round(s["start_s"] * 1e9), round(s["end_s"] * 1e9)) for s in segs] == [(0, 100), (0, 150), (200, 300),
                                                                                   (900, 1000)]
    merged = timeline_segments(table, codes, ["matrix"], rank=0, start_ns=100, end_ns=1100, limit=2)
    # past 2 bars, neighbours closer than |W|/2 = 500 ns merge: 100..400 is one bar, 1000.. another
    assert [(round(s["start_s"] * 1e9), round(s["end_s"] * 1e9), s["kernels"]) for s in merged] == [
        (0, 300, 3), (900, 1000, 1)]
    assert merged[0]["name"] == f"3 activities from {KERNEL_NAME}"


def _store_with(db: Path) -> str:
    run, cases = synthetic_run()
    with Store.open(db) as store:
        stored = store.create_run(config=run.config, provenance=run.provenance)
        for case in cases:
            store.add_case(stored.run_id, case)
        store.finish_run(stored.run_id, status="complete", summary=run.summary)
    return stored.run_id


def test_cli_writes_the_report_its_json_and_svgs(tmp_path: Path) -> None:
    pytest.importorskip("vl_convert")
    db = tmp_path / "s.sqlite"
    run_id = _store_with(db)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(cli, ["report", run_id, "--db", str(db), "-o", str(out), "--json",
                                      str(tmp_path / "r.json"), "--svg-dir", str(tmp_path / "svg")])
    assert result.exit_code == 0, result.output
    assert f"report: {out}" in result.output
    page = out.read_text()
    assert page.count("<script") == 3 and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["kind"] == "report" and data["runs"][0]["run_id"] == run_id
    drawn = sorted(c["id"] for c in data["charts"] if c["draw"])
    assert sorted(p.stem for p in (tmp_path / "svg").glob("*.svg")) == drawn
    assert all((tmp_path / "svg" / f"{i}.svg").read_text().lstrip().startswith("<svg") for i in drawn)


def test_cli_refuses_an_unknown_run_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    _store_with(db)
    from parity.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["report", "no-such-run", "--db", str(db), "-o", str(tmp_path / "r.html")])
    assert exit_info.value.code == 2


def test_a_trace_without_a_what_if_keeps_its_timeline_and_says_why() -> None:
    from parity.report.html.trace_charts import TraceInput

    analysis = {"format": "kineto", "window": {"length_us": 10.0, "source": "span", "detail": "whole"},
                "streams": [{"rank": 0, "device": 0, "stream": 7, "kernels": 1, "busy_us": 5.0, "busy_fraction": 0.5,
                             "share_of_summed": 1.0}], "ranks": []}
    trace = TraceInput(path="/x/t.json", analysis=analysis, whatif=None, whatif_note="t.json: no what-if (why)",
                       segments=[{"lane": "rank 0 · device 0 · stream 7", "start_s": 0.0, "end_s": 5e-6,
                                  "category": "matrix", "name": KERNEL_NAME, "kernels": 1}])
    data = report_data(traces=[trace])
    assert [c["id"] for c in data["charts"]] == ["trace-0-timeline"]
    assert {s["id"]: s["lines"] for s in data["sections"]}["whatif"] == ["t.json: no what-if (why)"]
    streams = data["charts"][0]["spec"]["datasets"]["streams"]
    assert streams == [{"lane": "rank 0 · device 0 · stream 7", "kernels": 1, "busy_s": pytest.approx(5e-6), "busy_fraction": 0.5,
                        "share_of_summed": 1.0}]


def test_cli_draws_a_comparison_file_and_refuses_a_wrong_one(tmp_path: Path) -> None:
    pytest.importorskip("vl_convert")
    good, bad = tmp_path / "c.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"schema_version": 1, "kind": "compare", **comparison_dict()}))
    bad.write_text(json.dumps({"runs": []}))
    out = tmp_path / "c.html"
    result = CliRunner().invoke(cli, ["report", "--comparison", str(good), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "compare-ratios" in out.read_text() and FORCED_MARK in out.read_text()
    from parity.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(["report", "--comparison", str(bad), "-o", str(out)])
    assert exit_info.value.code == 2


@pytest.mark.parametrize(("path", "value", "says"), [
    (("cases", 1, "ratio"), "2.5", "$.cases[1].ratio"),
    (("runs", 0), "run-a", "$.runs[0]"),
    (("audit", 0, "values"), {"a": 1}, "$.audit[0].values"),
    (("summary", 0, "ci95"), [1, 2, 3], "$.summary[0].ci95"),
    (("claims",), [1], "$.claims[0]"),
    # values no comparison writes: a ratio is a quotient of positive times, a CI runs low to high
    (("cases", 0, "ratio"), -3.0, "$.cases[0].ratio is -3.0, not a ratio"),
    (("cases", 1, "ratio"), 0.0, "$.cases[1].ratio is 0.0, not a ratio"),
    (("cases", 0, "ratio_ci95"), [0.0, 1.5], "$.cases[0].ratio_ci95[0] is 0.0, not a ratio"),
    (("cases", 0, "ratio_ci95"), [2.0, 1.0], "$.cases[0].ratio_ci95 runs from 2.0 down to 1.0"),
])  # fmt: skip
def test_a_comparison_file_field_of_the_wrong_type_is_named(tmp_path: Path, path: tuple, value: object,
                                                            says: str) -> None:
    """A field the pages read holding the wrong type: one line naming its path, before drawing."""
    from parity.cli.report import read_comparison

    document = {"schema_version": 1, "kind": "compare", **comparison_dict()}
    read_comparison(str(_write(tmp_path / "good.json", document)))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    with pytest.raises(ParityError) as caught:
        read_comparison(str(_write(tmp_path / "bad.json", document)))
    message = str(caught.value)
    assert message.startswith(f"--comparison {tmp_path / 'bad.json'}: ") and says in message and "\n" not in message


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


def test_roofline_draws_each_shape_under_the_roof_min_p_ai_b() -> None:
    from parity.families.gemm.charts import gemm_charts

    # P = 100 FLOP/s, B = 10 B/s: ridge 10 FLOP/B; shapes at AI 4 and 40 span the roof from 2 to 80.
    summary = {"ceiling_flops": 100.0, "bandwidth_bps": 10.0, "ridge_flop_per_byte": 10.0, "dtype": "bf16",
               "measured": 2, "rows": [
                   {"m": 1, "n": 2, "k": 3, "name": "a", "arithmetic_intensity": 4.0, "class": "memory-bound",
                    "backends": {"matmul": {"achieved_flops": 20.0, "attainable_flops": 40.0, "efficiency": 0.5}}},
                   {"m": 4, "n": 5, "k": 6, "name": "b", "arithmetic_intensity": 40.0, "class": "compute-bound",
                    "backends": {"matmul": {"achieved_flops": 90.0, "attainable_flops": 100.0, "efficiency": 0.9}}}]}
    roofline, histogram = gemm_charts([("dev", summary)])
    roof = roofline.spec["datasets"]["roof"]
    assert roof[0]["arithmetic_intensity"] == pytest.approx(2.0) and roof[0]["attainable_flops"] == pytest.approx(20.0)
    assert roof[-1]["arithmetic_intensity"] == pytest.approx(80.0) and roof[-1]["attainable_flops"] == 100.0
    assert {"arithmetic_intensity": 10.0, "attainable_flops": 100.0, "series": "dev"} in roof  # the ridge itself
    assert [s["efficiency"] for s in roofline.spec["datasets"]["shapes"]] == [0.5, 0.9]
    assert histogram.spec["datasets"]["shapes"] == roofline.spec["datasets"]["shapes"]


def test_a_latency_curve_without_knees_or_plateaus_draws_no_empty_layer() -> None:
    """An empty layer has no extent and Vega warns in the console: leave it out."""
    from parity.families.latency.views import latency_charts

    summary = {"size_curves": [{"page": "4k", "points": [{"working_set_bytes": 4096, "latency_s": 1e-9}],
                                "plateaus": []}],
               "blocks_curves": [{"page": "4k", "points": [{"blocks": 1, "latency_s": 80e-9},
                                                           {"blocks": 2, "latency_s": 81e-9}], "knees": []}]}
    for chart in latency_charts([("run", summary)]):
        layers = chart.spec["layer"]
        assert all(layer["data"]["name"] not in ("knees", "plateaus") for layer in layers), chart.id
