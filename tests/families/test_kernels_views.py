"""The kernels family's view: its chart's datasets for a hand-made summary, and the terminal."""

from __future__ import annotations

import pytest
from rich.console import Console

from parity.families.kernels.summary import KernelCheck, KernelRow, KernelsSummary, LibraryStatus, Speedup
from parity.families.kernels.views import VIEW
from parity.model.result import RunRecord
from parity.report.views import RunData, View


def _row(impl: str, *, flop_per_s: float | None, speedup: Speedup | None = None, error: str | None = None) -> KernelRow:
    return KernelRow(key=f"fp8_gemm/{impl}/128x256x512", op="fp8_gemm", impl=impl, shape="128x256x512",
                     ok=error is None, error=error, check=KernelCheck(passed=error is None, measure="relative_error",
                                                                     value=1e-3 if error is None else None,
                                                                     tolerance=2e-2),
                     median_s=None if flop_per_s is None else 2 * 128 * 256 * 512 / flop_per_s,
                     flop_per_s=flop_per_s, efficiency=None if flop_per_s is None else flop_per_s / 4e12,
                     speedup_vs_torch=speedup)


SUMMARY = KernelsSummary(
    ceilings_flops={"bf16": 4e12}, bandwidth_bps=1e11, device_name="cpu",
    rows=(_row("torch", flop_per_s=1e12), _row("deep_gemm", flop_per_s=3e12, speedup=Speedup(ratio=3.0, ci95=(2.5, 3.5))),
          _row("tile_kernels", flop_per_s=None, error="RuntimeError: boom")),
    libraries=(LibraryStatus(op="fp8_gemm", library="deep_gemm", status="measured"),
               LibraryStatus(op="fp8_gemm", library="tile_kernels", status="not-run", reason="not installed")),
    failed=("fp8_gemm/tile_kernels/128x256x512",))


def _run(label: str) -> RunData:
    run = RunRecord(run_id=label, created_at="2026-12-03T00:00:00+00:00", status="complete")
    return RunData(label=label, run=run, summary=SUMMARY.to_dict())


def test_the_view_is_a_view_with_its_own_section() -> None:
    assert isinstance(VIEW, View) and VIEW.section == ("kernels", "Kernel libraries")


def test_the_rate_chart_holds_each_measured_case_beside_its_torch_reference() -> None:
    (chart,) = VIEW.charts([_run("a")])
    assert chart.id == "kernels-rates" and chart.section == "kernels" and "torch" in chart.note
    rows = chart.dataset("rates")
    assert [r["impl"] for r in rows] == ["torch", "deep_gemm"]  # the failed case has no rate
    torch_row, library = rows
    assert torch_row["flop_per_s"] == 1e12 and torch_row["torch_flop_per_s"] == 1e12
    assert torch_row["speedup_vs_torch"] is None and torch_row["series"] == "torch"
    assert library["flop_per_s"] == 3e12 and library["torch_flop_per_s"] == 1e12
    assert (library["speedup_vs_torch"], library["speedup_ci_low"], library["speedup_ci_high"]) == (3.0, 2.5, 3.5)
    assert library["efficiency"] == pytest.approx(0.75) and library["check"] == "ok"
    # 2·128·256·512 FLOP at 3 TFLOP/s: 11.18 us per call
    assert library["median_s"] == pytest.approx(2 * 128 * 256 * 512 / 3e12)
    assert chart.tables[0].dataset == "rates"
    assert {c.field for c in chart.tables[0].columns} <= set(library)


def test_several_runs_are_one_series_per_run_and_implementation() -> None:
    (chart,) = VIEW.charts([_run("a"), _run("b")])
    assert [r["series"] for r in chart.dataset("rates")] == ["a · torch", "a · deep_gemm", "b · torch", "b · deep_gemm"]
    assert VIEW.charts([]) == []


def test_the_table_names_the_run_only_when_there_are_several() -> None:
    """The implementation has a column of its own; the run has one only when runs differ (one
    run's table once showed the implementation twice)."""
    (one,) = VIEW.charts([_run("a")])
    (two,) = VIEW.charts([_run("a"), _run("b")])
    fields = [c.field for c in one.tables[0].columns]
    assert "run" not in fields and "series" not in fields and fields.count("impl") == 1
    assert [c.field for c in two.tables[0].columns] == ["run", *fields]


def test_the_terminal_shows_ceilings_rows_and_library_reasons() -> None:
    console = Console(width=200, record=True)
    console.print(VIEW.terminal({"run_id": "x", **SUMMARY.to_dict()}))
    text = console.export_text()
    assert "ceilings: P(bf16) 4 TFLOP/s; B 100 GB/s" in text
    assert "3.00x [2.50, 3.50]" in text and "RuntimeError: boom" in text and "not installed" in text


def test_the_summary_round_trips_and_keeps_one_rate() -> None:
    data = SUMMARY.to_dict()
    assert data["version"] == 1 and data["operations"] == 3 and data["checked"] == 2
    assert "achieved_flops" not in data["rows"][0] and data["rows"][1]["speedup_vs_torch"]["ci95"] == [2.5, 3.5]
    assert KernelsSummary.from_dict(data) == SUMMARY
