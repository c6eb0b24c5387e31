"""A comparison of two stored runs as a reader meets it: two quick real CPU runs, labelled
``baseline`` and ``tuned``, compared in ``parity report --compare`` and drawn from a
``parity compare --json`` file, opened in headless Chromium (driven by playwright, every network
request refused), screenshotted, and printed by ``chromium --headless --print-to-pdf``.

What must hold: no console message; no table in a scroll box that hides a row or a column, on
screen or in print media; every row of every table in the screenshots' boxes and in the PDF's
text; each case labelled on the ratio chart; the runs named by their labels in the header,
legends and PDF, each in colours no other run uses; the header of a report drawn from a
comparison file lists the runs it compares. Screenshots and the PDF are written as test artifacts
(``$PARITY_TEST_ARTIFACTS`` or a folder under pytest's tmp path)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from pdf_text import pdf_pages

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; CI does)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright is not installed"),
    pytest.mark.skipif(importlib.util.find_spec("vl_convert") is None, reason="vl-convert-python is not installed"),
]
LABELS = ("baseline", "tuned")
ROWS_JS = """() => Array.from(document.querySelectorAll('figure.chart table')).map(t => ({
  dataset: t.dataset.dataset, chart: t.closest('figure').id,
  rows: Array.from(t.tBodies[0].rows).map(r => Array.from(r.cells).map(c => c.textContent))}))"""
BOXES_JS = """() => Array.from(document.querySelectorAll('.scroll')).map(e => ({
  chart: e.closest('figure').id, sh: e.scrollHeight, ch: e.clientHeight, sw: e.scrollWidth, cw: e.clientWidth,
  maxh: getComputedStyle(e).maxHeight, overflowY: getComputedStyle(e).overflowY}))"""
LEGEND_JS = """id => Array.from(document.querySelectorAll('#' + id + ' g.role-legend-symbol path')).map(
  p => [p.getAttribute('fill') || p.style.fill, p.getAttribute('stroke') || p.style.stroke])"""
OUTSIDE_JS = """() => Array.from(document.querySelectorAll('main > section')).flatMap(s => {
  const box = s.getBoundingClientRect();
  return Array.from(s.querySelectorAll('table tr')).filter(r => {
    const b = r.getBoundingClientRect();
    return b.height <= 0 || b.top < box.top - 1 || b.bottom > box.bottom + 1;
  }).map(r => r.textContent.slice(0, 80));
})"""
SVG_TEXT_JS = "id => Array.from(document.querySelectorAll('#' + id + ' svg text')).map(t => t.textContent)"


def _parity(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "parity", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


def _squash(text: str) -> str:
    """Text as compared across HTML and PDF: ligatures unfolded, no whitespace (a PDF splits words
    where it kerns or wraps them)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def _label_copy(source_db: Path, db: Path, run_id: str, label: str) -> str:
    """The stored run copied into ``db`` with ``config["label"] = label`` (cases, summary and
    figures as stored): what ``parity run --label`` records, for a parity without that option."""
    from parity.store import Store

    with Store.open(source_db, read_only=True) as src:
        run, cases, figures = src.get_run(run_id), src.cases(run_id), src.figures(run_id)
    with Store.open(db) as dst:
        copy = dst.create_run(config={**run.config, "label": label}, provenance=run.provenance)
        for case in cases:
            dst.add_case(copy.run_id, case)
        for suite in dict.fromkeys(f.suite for f in figures):
            dst.add_figures(copy.run_id, suite, [f for f in figures if f.suite == suite])
        dst.finish_run(copy.run_id, status=run.status, summary=run.summary)
    return copy.run_id


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("PARITY_TEST_ARTIFACTS")
    path = Path(folder) / "comparison" if folder else tmp_path_factory.mktemp("comparison-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two quick real CPU runs (a few seconds each) labelled ``baseline`` and ``tuned``; the
    report of both with ``--compare``, and one drawn from their ``parity compare --json`` file."""
    tmp = tmp_path_factory.mktemp("comparison")
    (tmp / "shapes.csv").write_text("64,64,64\n128,128,128\n256,128,64\n")
    suites = "gemm,membw,latency" if importlib.util.find_spec("parity.families.latency.chase._chase") else "gemm,membw"
    raw, db = tmp / "raw.sqlite", tmp / "store.sqlite"
    has_label = "--label" in _parity("run", "--help", cwd=tmp).stdout
    ids = []
    for label in LABELS:
        run = _parity("run", "--quick", "--device", "cpu", "--suite", suites, "--db", str(db if has_label else raw),
                      *(("--label", label) if has_label else ()),
                      "--set", f"gemm.shapes={tmp / 'shapes.csv'}", "--set", "gemm.ceiling_budget_s=0.2",
                      "--set", "gemm.budget_s=0.02", "--set", "gemm.warmup_s=0.005", "--set", "membw.max_bytes=16384",
                      "--set", "membw.budget_s=0.01", "--set", 'membw.ops=["copy"]', "--set", "latency.max_bytes=65536",
                      "--set", "latency.pages=base", "--set", "latency.per_octave=1", cwd=tmp)
        found = re.search(r"^run (\S+) on cpu", run.stdout, re.M)
        assert found is not None, run.stdout + run.stderr
        ids.append(found.group(1) if has_label else _label_copy(raw, db, found.group(1), label))
    both = tmp / "both.html"
    made = _parity("report", *ids, "--compare", "--db", str(db), "-o", str(both), "--json", str(tmp / "both.json"), cwd=tmp)
    assert made.returncode == 0, made.stderr
    compare = _parity("compare", *ids, "--db", str(db), "--json", str(tmp / "compare.json"), cwd=tmp)
    assert compare.returncode == 0, compare.stderr
    from_file = tmp / "from-file.html"
    made = _parity("report", "--comparison", str(tmp / "compare.json"), "--db", str(db), "-o", str(from_file), cwd=tmp)
    assert made.returncode == 0, made.stderr
    return {"both": both, "from_file": from_file, "ids": ids, "data": json.loads((tmp / "both.json").read_text())}


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"])
        yield chromium
        chromium.close()


def _open(browser: Any, path: Path, shots: Path) -> dict[str, Any]:
    """Open ``path`` offline, wait for the charts, screenshot the header and each section; return
    the console, the tables' rows, the scroll boxes (screen and print media) and each table's
    rows' boxes against the screenshot of its section."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    url = path.resolve().as_uri()
    page.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort())
    page.goto(url)
    page.wait_for_selector("html[data-charts-done]", timeout=60_000)
    shots.mkdir(parents=True, exist_ok=True)
    page.query_selector("header").screenshot(path=str(shots / "header.png"))
    for section in page.query_selector_all("main > section"):
        section.screenshot(path=str(shots / f"{section.get_attribute('id')}.png"))
    shown = {"console": console, "tables": page.evaluate(ROWS_JS), "boxes": page.evaluate(BOXES_JS),
             "outside": page.evaluate(OUTSIDE_JS), "header": page.inner_text("header"),
             "legend": page.evaluate(LEGEND_JS, "vis-membw-bandwidth"),
             "legend_text": page.evaluate(SVG_TEXT_JS, "vis-membw-bandwidth"),
             "ratio_text": page.evaluate(SVG_TEXT_JS, "vis-compare-ratios")}
    page.set_viewport_size({"width": 960, "height": 1000})  # half of a 1,920 px screen
    shown["narrow_boxes"] = page.evaluate(BOXES_JS)
    page.emulate_media(media="print")
    page.set_viewport_size({"width": 1123, "height": 794})  # A4 landscape at 96 dpi, as printed
    shown["print_boxes"] = page.evaluate(BOXES_JS)
    try:  # an artifact to look at, not asserted on: headless Chromium can hang on a tall full-page shot
        page.screenshot(path=str(shots / "print-media.png"), full_page=True, timeout=20_000)
    except PlaywrightTimeout as exc:
        (shots / "print-media.txt").write_text(f"no print-media screenshot: {exc}\n")
    page.close()
    return shown


def _flat(boxes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scroll boxes that hide something: capped in height, or scrolled rows or columns."""
    return [b for b in boxes if b["maxh"] != "none" or b["sh"] > b["ch"] + 1 or b["sw"] > b["cw"] + 1]


def _print_pdf(html: Path, pdf: Path) -> list[str]:
    """``chromium --headless --print-to-pdf`` of the page (virtual time lets the charts draw first)."""
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                           "--proxy-server=127.0.0.1:9", "--virtual-time-budget=30000", f"--print-to-pdf={pdf}",
                           html.resolve().as_uri()], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0 and pdf.is_file(), done.stderr[-2000:]
    return pdf_pages(pdf)


def test_the_comparison_report_shows_every_row_label_and_run(browser: Any, compared: dict[str, Any],
                                                             artifacts: Path) -> None:
    shown = _open(browser, compared["both"], artifacts / "both")
    assert shown["console"] == []
    assert _flat(shown["boxes"]) == [] and _flat(shown["print_boxes"]) == []
    assert _flat(shown["narrow_boxes"]) == []  # every column also fits a 960 px window
    assert shown["outside"] == []  # every row lies inside its section's screenshot
    charts = {c["id"]: c for c in compared["data"]["charts"]}
    for table in shown["tables"]:  # every row of every table is on the page
        chart = charts[table["chart"][len("chart-"):]]
        assert len(table["rows"]) == max(1, len(chart["spec"]["datasets"][table["dataset"]])), table["chart"]
    for label in LABELS:  # runs named by their labels: header, legends, every run's own section
        assert label in shown["header"]
        assert any(t.startswith(f"{label} · ") for t in shown["legend_text"]), shown["legend_text"]
    assert "AMD" not in " ".join(shown["legend_text"]) and "Intel" not in " ".join(shown["legend_text"])
    fills = [fill for fill, _ in shown["legend"]]
    assert len(fills) == len(set(fills)) > 2  # no colour shared by two series, so none by two runs
    ratios = charts["compare-ratios"]["spec"]["datasets"]["ratios"]
    for row in ratios:  # each case is labelled on the ratio chart
        assert row["case"] in shown["ratio_text"], row["case"]
    assert any(t.startswith("speed relative to baseline") for t in shown["ratio_text"])


def test_the_printed_pdf_holds_every_row_of_every_table(browser: Any, compared: dict[str, Any],
                                                        artifacts: Path) -> None:
    shown = _open(browser, compared["both"], artifacts / "both-again")
    pages = _print_pdf(compared["both"], artifacts / "comparison.pdf")
    text = _squash("\n".join(pages))
    assert len(pages) > 1
    missing = [(t["chart"], cells) for t in shown["tables"] for cells in t["rows"]
               if _squash("".join(cells)) and not all(_squash(c) in text for c in cells)]
    assert missing == []
    for label in LABELS:
        assert _squash(f"speed relative to {LABELS[0]}") in text and _squash(label) in text
    ratios = {c["id"]: c for c in compared["data"]["charts"]}["compare-ratios"]["spec"]["datasets"]["ratios"]
    assert all(_squash(r["case"]) in text for r in ratios)


def test_a_report_of_a_comparison_file_lists_the_runs_it_compares(browser: Any, compared: dict[str, Any],
                                                                 artifacts: Path) -> None:
    shown = _open(browser, compared["from_file"], artifacts / "from-file")
    assert shown["console"] == [] and _flat(shown["boxes"]) == [] and shown["outside"] == []
    header = shown["header"]
    assert "runs: none" not in header and "runs compared: baseline" in header
    assert all(run_id in header for run_id in compared["ids"]) and "tuned" in header
