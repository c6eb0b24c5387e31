"""The HTML report in a real browser: headless Chromium (Debian's ``chromium``, driven through
playwright, which never downloads a browser of its own here) with every network request
refused. A report of a quick real CPU run plus a real trace whose busiest kernel is renamed
``<script>alert(1)</script>``, and a report of synthetic rows with every other family and a
comparison: no console message, every chart drawn, every number shown equal to the JSON block,
the kernel name shown as text. A screenshot of each section is written as a test artifact
(``$PARITY_TEST_ARTIFACTS`` or a folder under pytest's tmp path)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from parity.report.html.page import CLAMP_CHARS
from tests.report_rows import KERNEL_NAME, comparison_dict, synthetic_run

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; CI does)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("vl_convert") is None, reason="vl-convert-python is not installed"),
]
TRACE = "kineto/hta/timeline_analysis/sampled_rank-0.json.gz"
CELLS_JS = """() => Array.from(document.querySelectorAll('figure.chart')).map(fig => ({
  chart: fig.id.slice('chart-'.length),
  tables: Array.from(fig.querySelectorAll('table')).map(t => ({
    dataset: t.dataset.dataset, fields: t.dataset.fields.split(' '),
    rows: Array.from(t.tBodies[0].rows).filter(r => !r.querySelector('td.empty')).map(r =>
      Array.from(r.cells).map(c => [c.textContent, c.dataset.scale || null]))}))}))"""


def _renamed_trace(source: Path, target: Path) -> str:
    """The trace with every event of its longest kernel renamed to ``KERNEL_NAME``."""
    with gzip.open(source, "rt") as f:
        trace = json.load(f)
    kernels = [e for e in trace["traceEvents"] if str(e.get("cat", "")).lower() == "kernel" and "dur" in e]
    longest = max(kernels, key=lambda e: float(e["dur"]))["name"]
    for event in trace["traceEvents"]:
        if event.get("name") == longest:
            event["name"] = KERNEL_NAME
    target.write_text(json.dumps(trace))
    return longest


def _parity(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "parity", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("PARITY_TEST_ARTIFACTS")
    path = Path(folder) / "report" if folder else tmp_path_factory.mktemp("report-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory: pytest.TempPathFactory, traces_dir: Path) -> dict[str, Any]:
    """A quick real CPU run (a few seconds: two GEMM shapes, small copies, a short chase) whose
    own report ``parity run`` writes, then ``parity report`` of it with the renamed trace."""
    tmp = tmp_path_factory.mktemp("cpu-report")
    (tmp / "shapes.csv").write_text("128,128,128\n256,256,256\n")
    suites = "gemm,membw,latency" if importlib.util.find_spec("parity.families.latency.chase._chase") else "gemm,membw"
    db = str(tmp / "store.sqlite")
    run = _parity("run", "--quick", "--device", "cpu", "--suite", suites, "--db", db,
                  "--set", f"gemm.shapes={tmp / 'shapes.csv'}", "--set", "gemm.ceiling_budget_s=0.3",
                  "--set", "gemm.budget_s=0.02", "--set", "gemm.warmup_s=0.005", "--set", "membw.max_bytes=65536",
                  "--set", "membw.budget_s=0.01", "--set", 'membw.ops=["copy","triad"]',
                  "--set", "latency.max_bytes=262144", "--set", "latency.pages=base",
                  "--set", "latency.per_octave=1", cwd=tmp)
    line = next((ln for ln in run.stdout.splitlines() if ln.startswith("report: ")), None)
    assert line is not None and "next to the store" in line, run.stdout + run.stderr
    run_report = Path(line.split()[1])
    assert run_report.parent == tmp / "reports" and run_report.is_file()
    longest = _renamed_trace(traces_dir / TRACE, tmp / "renamed.json")
    out = tmp / "report.html"
    made = _parity("report", "latest", "--db", db, "--trace", str(tmp / "renamed.json"), "-o", str(out),
                   "--json", str(tmp / "report.json"), cwd=tmp)
    assert made.returncode == 0, made.stderr
    return {"html": out, "json": tmp / "report.json", "run_report": run_report, "suites": suites,
            "renamed": longest}


@pytest.fixture(scope="module")
def synthetic_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from parity.report.html import render, write_report

    path = tmp_path_factory.mktemp("synthetic-report") / "report.html"
    return write_report(path, render(runs=[synthetic_run()], comparison=comparison_dict(forced=True)))


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"])
        yield chromium
        chromium.close()


def _open(browser: Any, path: Path, shots: Path) -> dict[str, Any]:
    """Open ``path`` with every request but its own refused; wait for the charts; screenshot
    each section; return what the page said, asked and shows."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    seen: dict[str, list[str]] = {"console": [], "requests": [], "dialogs": []}
    page.on("console", lambda m: seen["console"].append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: seen["console"].append(f"pageerror: {e}"))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    url = path.resolve().as_uri()

    def route(r: Any) -> None:
        seen["requests"].append(r.request.url)
        r.continue_() if r.request.url == url else r.abort()

    page.route("**/*", route)
    page.goto(url)
    page.wait_for_selector("html[data-charts-done]", timeout=60_000)
    shots.mkdir(parents=True, exist_ok=True)
    for section in page.query_selector_all("main > section"):
        section.screenshot(path=str(shots / f"{section.get_attribute('id')}.png"))
    result = {
        **seen,
        "block": json.loads(page.eval_on_selector("#parity-data", "e => e.textContent")),
        "vis": page.eval_on_selector_all(".vis", "es => es.map(e => [e.id, e.dataset.rendered, +e.dataset.marks])"),
        "cells": page.evaluate(CELLS_JS),
        "scripts": page.eval_on_selector_all("script", "es => es.length"),
        "texts": page.eval_on_selector_all("td", "es => es.map(e => e.textContent)"),
        # text cut on screen (only names over page.CLAMP_CHARS may be)
        "cut": page.eval_on_selector_all(
            "td.text", "es => es.filter(e => e.scrollHeight > e.clientHeight + 1 || "
                       "[...e.querySelectorAll('.clamp')].some(c => c.scrollHeight > c.clientHeight + 1))"
                       ".map(e => e.textContent)"),
        # tables wider than their panel (a screenshot would cut their last columns)
        "overflowing": page.eval_on_selector_all(
            ".scroll", "es => es.filter(e => e.scrollWidth > e.clientWidth + 1)"
                       ".map(e => (e.closest('figure') || {}).id || e.querySelector('caption')?.textContent || '?')"),
    }
    page.close()
    return result


def _check_numbers(shown: dict[str, Any]) -> int:
    """Every cell of every table equals its dataset value in the JSON block; the count checked."""
    charts = {c["id"]: c for c in shown["block"]["charts"]}
    checked = 0
    for fig in shown["cells"]:
        chart = charts[fig["chart"]]
        for table, cells in zip(chart["tables"], fig["tables"]):
            rows = chart["spec"]["datasets"][table["dataset"]]
            assert cells["dataset"] == table["dataset"] and len(cells["rows"]) == len(rows), fig["chart"]
            # the columns on the page: those with a value in some row (the caption names the others)
            columns = [c for c in table["columns"] if c["field"] in cells["fields"]]
            left_out = [c["field"] for c in table["columns"] if c not in columns]
            assert all(r.get(f) in (None, "") for r in rows for f in left_out), (fig["chart"], left_out)
            assert [c["field"] for c in columns] == cells["fields"], fig["chart"]
            for row, shown_row in zip(rows, cells["rows"]):
                assert len(shown_row) == len(columns), fig["chart"]
                for column, (text, scale) in zip(columns, shown_row):
                    value = row.get(column["field"])
                    if value is None or value == "":
                        assert text == "", (fig["chart"], column["field"], text)
                    elif scale is None:
                        assert text == str(value), (fig["chart"], column["field"], text, value)
                    else:
                        number = float(text.split()[0].replace(",", "")) * float(scale)
                        assert number == pytest.approx(value, rel=6e-4), (fig["chart"], column["field"], text, value)
                    checked += 1
    return checked


def _check_page(shown: dict[str, Any], expect_charts: set[str]) -> None:
    assert shown["console"] == [] and shown["dialogs"] == []
    assert len(shown["requests"]) == 1  # the file itself: nothing else was asked for
    drawn = {c["id"] for c in shown["block"]["charts"] if c["draw"]}
    assert expect_charts <= drawn
    assert sorted(v[0] for v in shown["vis"]) == sorted(f"vis-{i}" for i in drawn)
    assert all(rendered == "true" and marks > 0 for _, rendered, marks in shown["vis"]), shown["vis"]
    assert shown["scripts"] == 3  # the data block, the chart library, the drawing script
    assert shown["overflowing"] == [], shown["overflowing"]  # every column shows at 1,400 px
    assert [t for t in shown["cut"] if len(t) <= CLAMP_CHARS] == []  # a method, a scope: never cut
    assert _check_numbers(shown) > 0


def test_cpu_run_and_trace_report_opens_offline_with_every_chart_drawn(
        browser: Any, cpu_report: dict[str, Any], artifacts: Path) -> None:
    shown = _open(browser, cpu_report["html"], artifacts / "cpu-run")
    expect = {"gemm-roofline", "gemm-efficiency", "membw-bandwidth", "trace-0-timeline", "trace-0-sensitivity"}
    if "latency" in cpu_report["suites"]:
        expect |= {"latency-size", "latency-blocks"}
    _check_page(shown, expect)
    assert KERNEL_NAME in shown["texts"]  # shown as text, in the top-kernels table
    block = shown["block"]
    assert json.loads(cpu_report["json"].read_text())["charts"] == block["charts"]
    timeline = next(c for c in block["charts"] if c["id"] == "trace-0-timeline")
    assert any(s["name"] == KERNEL_NAME for s in timeline["spec"]["datasets"]["segments"])


def test_a_kernel_name_in_a_tooltip_is_text(browser: Any, cpu_report: dict[str, Any]) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(cpu_report["html"].resolve().as_uri())
    page.wait_for_selector("html[data-charts-done]", timeout=60_000)
    bars = page.query_selector_all("#vis-trace-0-timeline g.mark-rect.role-mark path")
    tip = None
    for bar in sorted(bars, key=lambda e: -(e.bounding_box() or {"width": 0})["width"])[:12]:
        bar.hover()
        page.wait_for_timeout(100)
        element = page.query_selector("#vg-tooltip-element")
        if element is not None and KERNEL_NAME in element.inner_text():
            tip = element.inner_html()
            break
    page.close()
    assert tip is not None and "&lt;script&gt;alert(1)&lt;/script&gt;" in tip and dialogs == []


def test_the_report_parity_run_writes_opens_too(browser: Any, cpu_report: dict[str, Any], artifacts: Path) -> None:
    shown = _open(browser, cpu_report["run_report"], artifacts / "run")
    _check_page(shown, {"gemm-roofline", "membw-bandwidth"})


def test_every_other_family_and_the_comparison_draw(browser: Any, synthetic_report: Path, artifacts: Path) -> None:
    shown = _open(browser, synthetic_report, artifacts / "synthetic")
    _check_page(shown, {"decode-throughput", "serving-throughput", "comm-busbw", "latency-size", "latency-blocks",
                        "compare-ratios"})
    assert any(KERNEL_NAME in t for t in shown["texts"]) and "forced: conventions differ" in shown["texts"]


def test_without_scripts_the_tables_still_read(browser: Any, synthetic_report: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(synthetic_report.resolve().as_uri())
    assert page.is_visible("noscript p") and page.inner_text("noscript p").startswith("Charts need JavaScript")
    tables = page.eval_on_selector_all("figure.chart table", "ts => ts.length")
    block = json.loads(page.eval_on_selector("#parity-data", "e => e.textContent"))
    assert tables == sum(len(c["tables"]) for c in block["charts"]) > 0
    assert page.eval_on_selector_all(".vis svg", "s => s.length") == 0  # nothing drew: the tables are the report
    context.close()
