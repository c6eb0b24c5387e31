"""The fleet report in a real browser (headless Chromium through playwright, every request but
the file refused, as in ``test_report_browser.py``): a 4-rank and a 1,024-rank x 20-step
hand-made fleet folder; no console message, every chart drawn, every number in every table
equal to the JSON block, the heatmap's colour switch redraws, the findings are shown as text."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_report_rows import write_fleet_folder
from tests.browser.test_report_browser import CHROMIUM, _check_page, _open, artifacts, browser  # noqa: F401 (fixtures)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; CI does)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("vl_convert") is None, reason="vl-convert-python is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow is not installed (the fleet extra)"),
]
FLEET_CHARTS = {"fleet-0-heatmap", "fleet-0-skew", "fleet-0-stragglers"}


def _report(folder: Path, out: Path) -> Path:
    from parity.cli.report import build_report

    _, path, _ = build_report(runs=[], fleet_dirs=(str(folder),), output=out)
    return path


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet-small-report")
    return _report(write_fleet_folder(tmp / "out"), tmp / "fleet.html")


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet-large-report")
    return _report(write_fleet_folder(tmp / "out", ranks=1024, steps=20, late=700, ranks_per_node=8),
                   tmp / "fleet.html")


def test_the_fleet_report_draws_offline_with_findings_as_text(browser: Any, small_report: Path,
                                                              artifacts: Path) -> None:
    shown = _open(browser, small_report, artifacts / "fleet-small")
    _check_page(shown, FLEET_CHARTS)
    findings = [f for c in shown["block"]["charts"] for f in c["findings"]]
    assert {f["code"] for f in findings} == {"straggler-by-arrival", "p2p-not-matched"}
    assert "node-1" in shown["texts"] and "first-order" in shown["texts"]
    page = browser.new_page()
    page.goto(small_report.resolve().as_uri())
    beside = page.eval_on_selector_all("#chart-fleet-0-stragglers ul.findings li", "es => es.map(e => e.textContent)")
    bold = page.eval_on_selector_all("ul.findings b", "es => es.length")
    page.close()
    assert beside == ["warning: rank 3 arrived last at 6 of 6 collectives (expected 1/4) "
                      "(look at rank <b>host stalls</b>, data loading and its NIC)"] and bold == 0


def test_1024_ranks_draw_and_the_heatmap_colour_switch_redraws(browser: Any, large_report: Path,
                                                              artifacts: Path) -> None:
    shown = _open(browser, large_report, artifacts / "fleet-1024")
    _check_page(shown, FLEET_CHARTS)
    heatmap = dict((v[0], v[2]) for v in shown["vis"])["vis-fleet-0-heatmap"]
    assert 0 < heatmap <= 128 * 20 + 200  # the binned cells (plus axes), not 20,480 rectangles
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.goto(large_report.resolve().as_uri())
    page.wait_for_selector("html[data-charts-done]", timeout=60_000)
    select = "#vis-fleet-0-heatmap select"
    assert page.eval_on_selector(select, "s => s.value") == "lateness_s"
    rects = "#vis-fleet-0-heatmap g.mark-rect.role-mark path"
    fills = page.eval_on_selector_all(rects, "es => new Set(es.map(e => e.getAttribute('fill'))).size")
    page.select_option(select, "compute_s")
    page.wait_for_timeout(300)
    after = page.eval_on_selector_all(rects, "es => es.length")
    page.close()
    assert console == [] and fills > 1 and after == 128 * 20
