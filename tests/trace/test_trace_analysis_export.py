"""Exports and terminal report of an analysis on a hand-built table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rich.console import Console

from parity.report.trace import format_us, render_analysis
from parity.trace import analyze
from parity.trace.builder import build_table
from parity.trace.categories import categorize, load_rules
from parity.trace.export import write_chrome_trace, write_csv
from parity.trace.table import Kind

ROWS = [
    dict(stream=7, name="ampere_sgemm", start_ns=1_000_000, end_ns=1_040_000),
    dict(stream=7, name="zz_custom_op", start_ns=1_050_000, end_ns=1_060_000),
    dict(stream=9, name="ncclDevKernel_AllReduce", start_ns=1_030_000, end_ns=1_070_000),
    dict(stream=1, kind=Kind.CPU_OP, device=-1, name="aten::mm", start_ns=990_000, end_ns=1_000_000),
]


def _result():
    table = build_table(ROWS)
    return table, analyze(table)


def test_csv_files(tmp_path: Path) -> None:
    _, result = _result()
    paths = write_csv(result, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["categories.csv", "kernels.csv", "streams.csv"]
    streams = list(csv.DictReader((tmp_path / "out" / "streams.csv").open()))
    assert {r["stream"] for r in streams} == {"7", "9"}
    s7 = next(r for r in streams if r["stream"] == "7")
    assert float(s7["busy_us"]) == 50.0 and float(s7["matrix_us"]) == 40.0
    cats = {r["category"]: r for r in csv.DictReader((tmp_path / "out" / "categories.csv").open())}
    assert float(cats["unmatched"]["time_us"]) == 10.0


def test_chrome_trace_marks_window_and_categories(tmp_path: Path) -> None:
    table, result = _result()
    path = write_chrome_trace(result, table, categorize(table, load_rules()), tmp_path / "t.json")
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    window = [e for e in events if e.get("name", "").startswith("window (")]
    assert len(window) == 1 and window[0]["ts"] == 0.0 and window[0]["dur"] == 70.0
    kernels = [e for e in events if e.get("cat") not in ("parity", None) and e["ph"] == "X"]
    assert {e["cat"] for e in kernels} == {"matrix", "communication", "unmatched"}
    assert len(kernels) == 3  # host rows are not exported
    lanes = [e for e in events if e["ph"] == "M" and e["args"]["name"].startswith("parity: ")]
    assert {e["args"]["name"] for e in lanes} >= {"parity: analysis window", "parity: matrix"}
    assert data["otherData"]["time_origin_ns"] == 1_000_000


def test_report_renders_window_and_unmatched() -> None:
    _, result = _result()
    console = Console(record=True, width=160)
    console.print(render_analysis(result))
    text = console.export_text()
    assert "window" in text and "span" in text and "unmatched" in text and "stream" in text


def test_report_prints_reader_warnings_and_counts_the_rest() -> None:
    from msgspec.structs import replace

    _, result = _result()
    console = Console(record=True, width=200)
    console.print(render_analysis(replace(result, warnings=("3 device activities overlap; kept as recorded",))))
    assert "reader warning: 3 device activities overlap; kept as recorded" in console.export_text()
    console = Console(record=True, width=200)
    console.print(render_analysis(replace(result, warnings=tuple(f"warning {i}" for i in range(7)))))
    text = console.export_text()
    assert "reader warning: warning 4" in text and "warning 5" not in text
    assert "and 2 more reader warnings (see --json)" in text


def test_format_us() -> None:
    assert format_us(812) == "812 us"
    assert format_us(12_400) == "12.4 ms"
    assert format_us(3_210_000) == "3.21 s"
