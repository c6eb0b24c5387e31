"""The report and the registry read families through their registration: a registered family's
view draws its suite, a suite without one is drawn by the generic view (figures and cases as
tables), and sections follow the families' order. In-process, with the demo family of
``tests/plugin_family`` registered for the test (``test_family_plugin.py`` installs it by entry
point in real subprocesses)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from rich.console import Console

from parity.harness import registry
from parity.model.family import Family, family_of, register_family, unregister_family
from parity.model.result import CaseResult, RunRecord
from parity.model.samples import Samples
from parity.report.html.chart import Chart, tables_only
from parity.report.html.document import report_data, suites_present
from parity.report.views import GenericView, RunData, case_headline, print_view, suite_details, suite_view, view_for

PLUGIN = Path(__file__).resolve().parents[1] / "plugin_family"


@pytest.fixture()
def demo(monkeypatch: pytest.MonkeyPatch):
    """The demo family, importable and registered in this process."""
    monkeypatch.syspath_prepend(str(PLUGIN))
    from parity_plugin_demo import FAMILY

    register_family(FAMILY)
    yield FAMILY
    unregister_family(FAMILY.name)
    for name in [m for m in sys.modules if m.startswith("parity_plugin_demo")]:
        monkeypatch.delitem(sys.modules, name)


def _case(suite: str, key: str, **metrics: float) -> CaseResult:
    return CaseResult(suite=suite, key=key, params={"n": int(key.split("-")[-1])}, metrics=metrics,
                      check={"passed": True})


def _run(run_id: str, suites: dict, cases: list[CaseResult]) -> tuple[RunRecord, list[CaseResult]]:
    run = RunRecord(run_id=run_id, created_at="2026-12-01T00:00:00+00:00",
                    config={"device": "cpu", "suites": list(suites)}, provenance={}, status="complete",
                    summary={"suites": suites})
    return run, cases


def _demo_run(run_id: str) -> tuple[RunRecord, list[CaseResult]]:
    cases = [_case("demo", "sum-256", flop_per_s=2e8, median_s=1.275e-6),
             _case("demo", "sum-512", flop_per_s=4e8, median_s=1.2775e-6)]
    summary = {"version": 1, "cases": 2, "best_flop_per_s": 4e8, "median_flop_per_s": 3e8,
               "rates": {"sum-256": 2e8, "sum-512": 4e8}, "sizes": {"sum-256": 256, "sum-512": 512}}
    figures = [{"name": "demo.best_rate", "value": 4e8, "unit": "FLOP/s", "method": "best", "scope": {},
                "ci95": None, "best": None, "note": ""}]
    ghost = [CaseResult(suite="ghost", key="g-1", params={"n": 1}, metrics={"widgets": 3.0}, error=None,
                        check={"passed": False})]
    return _run(run_id, {"demo": {"summary": summary, "figures": figures},
                         "ghost": {"summary": {"widgets": 3.0}, "figures": [{"name": "ghost.widgets", "value": 3.0,
                                                                             "unit": "count"}]}}, cases + ghost)


def test_a_registered_family_is_a_suite_of_parity_run(demo: Family) -> None:
    names = registry.names()
    assert names.index("demo") == names.index("kernels") + 1  # order 50: after the built-ins (0 to 7)
    assert registry.get_suite("demo").name == "demo"


def test_the_report_draws_a_family_by_its_view_and_the_rest_generically(demo: Family) -> None:
    runs = [_demo_run("20261201-000000-aaaa"), _demo_run("20261201-000001-bbbb")]
    assert suites_present(runs) == ["demo", "ghost"]  # registered families first, then the unknown
    data = report_data(runs=runs)
    charts = {c["id"]: c for c in data["charts"]}
    rate = charts["demo-rate-by-size"]
    assert rate["section"] == "demo" and rate["draw"]
    assert [p["n"] for p in rate["spec"]["datasets"]["points"]] == [256, 512, 256, 512]
    cases = charts["ghost-cases"]["spec"]["datasets"]["cases"]
    assert [(c["key"], c["metric"], c["value"], c["status"]) for c in cases] == [("g-1", "widgets", 3.0, "FAILED")] * 2
    assert charts["ghost-figures"]["spec"]["datasets"]["figures"][0]["name"] == "ghost.widgets"
    assert [s["id"] for s in data["sections"]] == ["figures", "demo", "suite-ghost", "provenance"]
    assert "demo-figures" not in charts  # a family with a view draws only what its view gives


def test_a_stored_run_of_a_family_not_installed_is_drawn_generically() -> None:
    run = _demo_run("20261201-000000-aaaa")
    assert family_of("demo") is None and view_for("demo") is None
    assert isinstance(suite_view("demo"), GenericView)
    charts = {c["id"]: c for c in report_data(runs=[run])["charts"]}
    cases = charts["demo-cases"]["spec"]["datasets"]["cases"]
    assert [(c["key"], c["metric"], c["value"], c["unit"]) for c in cases] == [
        ("sum-256", "flop_per_s", 2e8, "FLOP/s"), ("sum-512", "flop_per_s", 4e8, "FLOP/s")]
    assert charts["demo-cases"]["tables"][0]["columns"][0]["field"] == "key"  # one run: no run column


def test_a_view_that_cannot_be_loaded_falls_back_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    register_family(Family(name="broken", suite="x:Y", view="parity_no_such_module:VIEW"))
    try:
        with caplog.at_level(logging.WARNING, logger="parity.report.views"):
            view = suite_view("broken")
    finally:
        unregister_family("broken")
    assert isinstance(view, GenericView)
    assert "no module named 'parity_no_such_module'" in caplog.text


def test_a_family_draws_the_suites_it_is_stored_as(demo: Family) -> None:
    register_family(Family(name="demo", suite=demo.suite, view=demo.view, order=demo.order,
                           stored_as=("demo-online",)))
    assert family_of("demo-online").name == "demo" and view_for("demo-online") is view_for("demo")
    assert "demo-online" not in registry.names()  # drawn, never run by parity run


def test_case_headline_prefers_declared_rates_then_time_then_any_number() -> None:
    rates = {"median_s": 2e-6, "bytes_per_s": 5e9, "flop_per_s": 1e9}
    assert case_headline(_case("s", "a-1", **rates)) == ("flop_per_s", 1e9, "FLOP/s")
    assert case_headline(_case("s", "a-1", median_s=2e-6, bytes_per_s=5e9)) == ("bytes_per_s", 5e9, "B/s")
    assert case_headline(_case("s", "a-1", widgets=7, median_s=2e-6)) == ("median_s", 2e-6, "s")
    assert case_headline(_case("s", "a-1", ok=True, widgets=7)) == ("widgets", 7.0, "number")
    assert case_headline(CaseResult(suite="s", key="k", error="oom")) == ("", None, "")


def test_generic_terminal_lists_the_summary_two_levels_deep() -> None:
    console = Console(width=100, record=True)
    summary = {"widgets": 3, "time_s": 2e-3, "nested": {"size_bytes": 2048, "deep": {"x": 1}}, "curve": [1, 2]}
    console.print(GenericView("ghost").terminal(summary))
    text = console.export_text()
    assert "widgets" in text and "2 ms" in text and "nested.size_bytes" in text and "2.048 kB" in text
    assert "deep" not in text and "curve" not in text


def test_runs_show_draws_each_suite_with_its_view(demo: Family) -> None:
    run, _ = _demo_run("20261201-000000-aaaa")
    console = Console(width=100, record=True)
    for drawn in suite_details(run):
        print_view(console, drawn)
    text = console.export_text()
    assert "demo: 2 sizes" in text and "0.4" in text  # the demo view: 4e8 FLOP/s as 0.4 GFLOP/s
    assert "ghost" in text and "widgets" in text  # the generic view


def test_a_view_drawn_as_text_is_printed_as_written() -> None:
    """The collectives' nccl-tests layout: rows wider than the terminal stay one line each, and a
    dimension in brackets is text, not console markup."""
    row = "# all_to_all [scale-up]" + " " * 40 + "out-of-place" + " " * 40 + "in-place  #wrong"
    console = Console(width=80, record=True)
    print_view(console, row + "\n" + "1024  256  fp32  [bold]")
    assert console.export_text().splitlines() == [row, "1024  256  fp32  [bold]"]


def test_a_chart_in_a_section_no_view_names_still_appears(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stray:
        section = ("mine", "Mine")

        def terminal(self, summary):
            return ""

        def charts(self, runs: list[RunData]) -> list[Chart]:
            return [Chart(id="stray", section="elsewhere", title="t", spec=tables_only({}), tables=(), draw=False)]

    monkeypatch.setattr("parity.report.html.document.suite_view", lambda name: Stray())
    data = report_data(runs=[_run("20261201-000000-aaaa", {"x": {"summary": {}}}, [])])
    assert [s["id"] for s in data["sections"]] == ["figures", "elsewhere", "provenance"]
