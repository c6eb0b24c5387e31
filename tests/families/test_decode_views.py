"""The decode family's view: the throughput charts from hand-made cases and figures, the
offline tables from a summary (also one stored before the summary was versioned)."""

from __future__ import annotations

from rich.console import Console

from parity.families.decode.summary import BatchPoint, DecodeSummary, FrontPoint, TargetThroughput
from parity.families.decode.views import VIEW, serving_table
from parity.model.result import CaseResult, RunRecord
from parity.report.views import RunData, View

RUN = RunRecord(run_id="r", created_at="2026-12-03T00:00:00+00:00", status="complete")


def _case(suite: str, key: str, **metrics: float) -> CaseResult:
    return CaseResult(suite=suite, key=key, params={"config": "tiny", "batch": 2}, metrics=metrics,
                      check={"passed": True})


def _text(renderable: object) -> str:
    console = Console(width=240, record=True)
    console.print(renderable)
    return console.export_text()


def test_one_chart_per_mode_with_its_points_and_targets() -> None:
    cases = [_case("decode", "batch=2", tpot_s=2e-3, tokens_per_s_per_card=1000.0),
             _case("serving", "c=1", median_tpot_s=5e-3, output_throughput_per_card=200.0)]
    figures = [{"name": "decode.offline.tokens_per_s_per_card.at_5ms", "value": None, "note": "",
                "scope": {"tpot_target_s": 5e-3}}]
    charts = {c.id: c for c in VIEW.charts([RunData(label="a", run=RUN, cases=cases, figures=figures)])}
    assert set(charts) == {"decode-throughput", "serving-throughput"} and isinstance(VIEW, View)
    offline = charts["decode-throughput"]
    assert offline.section == VIEW.section[0] == "decode"
    assert offline.dataset("points") == [{"series": "tiny", "key": "batch=2", "batch": 2, "tpot_s": 2e-3,
                                          "tokens_per_s_per_card": 1000.0}]
    assert offline.dataset("targets")[0]["note"] == "not reached in the measured range"
    assert offline.dataset("reached") == [] and charts["serving-throughput"].dataset("targets") == []


SUMMARY = DecodeSummary(
    cards=1, config="tiny", context=64, dtype="bfloat16", accepted_tokens_per_step=1.0,
    layers_run={"dense": 2, "head": 1}, layers_total={"dense": 4, "head": 1}, device="cpu",
    points=(BatchPoint(batch=1, tpot_s=2e-3, step_s=2e-3, tokens_per_s_per_card=500.0, cards=1, memory_bytes=2048,
                       memory_method="m", layers_run={}, layers_total={}, ok=True, flop_per_step=4e6,
                       bytes_per_step=2e6),),
    pareto=(FrontPoint(batch=1, tpot_s=2e-3, tokens_per_s_per_card=500.0),),
    at_target=(TargetThroughput(tpot_target_s=2e-3, value=500.0, status="measured", cards=1),
               TargetThroughput(tpot_target_s=1e-3, value=None, status="not reached", reason="below", cards=1)))


def test_the_offline_tables_format_si_values_in_ms() -> None:
    text = _text(VIEW.terminal({"run_id": "x", **SUMMARY.to_dict()}))
    assert "layers run: dense 2 of 4, head 1 of 1" in text and "OK: every case checked" in text
    # batch 1: step and TPOT 2 ms, 500 tok/s per card and per user (1 / 2 ms), 2 KiB, 4e6 / 2e6 = 2 FLOP/B
    assert "│     1 │         2 │         2 │            500 │            500 │  2 KiB │      2 │     * │    ok │" in text
    assert "not reached" in text and "below" in text


def test_a_summary_stored_before_the_version_reads_the_same() -> None:
    old = {**SUMMARY.to_dict(), "pareto": [{"batch": 1, "tpot_ms": 2.0, "tokens_per_s_per_card": 500.0}],
           "at_target": [{"tpot_ms": 2.0, "value": 500.0, "status": "measured", "reason": "", "cards": 1},
                         {"tpot_ms": 1.0, "value": "not reached", "status": "not reached", "reason": "below",
                          "cards": 1}]}
    del old["version"]
    assert DecodeSummary.from_dict(old) == SUMMARY


def test_the_online_table_has_a_row_per_level() -> None:
    rows = [{"max_concurrency": 4, "request_rate": 2.0, "completed": 8, "median_tpot_ms": 12.5,
             "client": {"busy_fraction_max": 0.25, "procs": 2}, "findings": ["client-bound"]}]
    text = _text(serving_table(rows, title="endpoint"))
    assert "c=4 2 req/s" in text and "12.5" in text and "25% x2" in text and "client-bound" in text
