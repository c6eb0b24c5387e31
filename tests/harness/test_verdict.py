"""The run's verdict: figures that are ``invalid`` or ``contended`` are counted per suite, stored
with the run, and turn the last line from OK into DOUBTFUL (hand-made outcomes, then a run on
the fake device)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from parity.harness.runner import run_suites
from parity.harness.verdict import doubtful_figures, run_doubtful
from parity.model import CaseResult, Finding, RunRecord, Severity
from parity.report.run_summary import doubtful_counts, doubtful_line, render_run_summary, verdict_text
from parity.store import Store
from parity.store.figures import StoredFigure

from tiny_suites import DoubtfulSuite, TinySuite, _device
from verdicts import ok_or_contended

CONTENDED = Finding(code="contended", severity=Severity.WARNING, message="others held 2 cores")
INVALID = Finding(code="invalid", severity=Severity.INVALID, message="312% of P")
NOISY = Finding(code="high-variance", severity=Severity.WARNING, message="spread")


def _figure(name: str, *, case: str | None = None, findings: tuple[Finding, ...] = ()) -> StoredFigure:
    return StoredFigure(suite="s", name=name, value=1.0, unit="1", case=case, findings=findings)


def test_the_docstring_example() -> None:
    # a: case x (contended); b: case y with its own invalid; c: over the cases, so contended too
    cases = [CaseResult(suite="s", key="x", findings=(CONTENDED,)), CaseResult(suite="s", key="y")]
    figures = [_figure("a", case="x"), _figure("b", case="y", findings=(INVALID,)), _figure("c")]
    assert doubtful_figures(figures, cases) == (3, {"contended": 2, "invalid": 1})


def test_a_figure_with_two_reasons_counts_once() -> None:
    cases = [CaseResult(suite="s", key="x", findings=(CONTENDED,))]
    figures = [_figure("a", case="x", findings=(INVALID,))]
    assert doubtful_figures(figures, cases) == (1, {"contended": 1, "invalid": 1})


def test_other_findings_make_nothing_doubtful() -> None:
    cases = [CaseResult(suite="s", key="x", findings=(NOISY,))]
    assert doubtful_figures([_figure("a", case="x", findings=(NOISY,)), _figure("b")], cases) == (0, {})


def test_a_flagged_case_without_a_figure_still_counts() -> None:
    cases = [CaseResult(suite="s", key="x", findings=(CONTENDED,)), CaseResult(suite="s", key="y")]
    assert doubtful_figures([_figure("a", case="y")], cases) == (1, {"contended": 1})


def test_the_run_adds_its_suites() -> None:
    class Outcome:
        def __init__(self, doubtful: int, by: dict[str, int]) -> None:
            self.doubtful, self.doubtful_by = doubtful, by

    assert run_doubtful([Outcome(2, {"invalid": 2}), Outcome(1, {"contended": 1, "invalid": 1})]) == \
        {"figures": 3, "by_reason": {"contended": 1, "invalid": 3}}


def _run(*, ok: bool = True, doubtful: dict | None = None, suites: dict | None = None) -> RunRecord:
    summary: dict = {"ok": ok, "suites": suites or {"gemm": {"summary_error": None}}}
    if doubtful is not None:
        summary["doubtful"] = doubtful
    return RunRecord(run_id="r1", created_at="t", status="complete" if ok else "failed", summary=summary)


CASES = [CaseResult(suite="gemm", key="a", check={"passed": True})]


def test_ok_only_when_nothing_is_doubtful() -> None:
    assert verdict_text(_run(), CASES).plain == "OK (1 cases, 0 not ok)"
    assert verdict_text(_run(doubtful={"figures": 0, "by_reason": {}}), CASES).plain == "OK (1 cases, 0 not ok)"


def test_doubtful_names_how_many_and_why() -> None:
    run = _run(doubtful={"figures": 3, "by_reason": {"invalid": 1, "contended": 2}})
    assert verdict_text(run, CASES).plain == \
        "DOUBTFUL: 3 figures cannot be trusted: contended 2, invalid 1 (1 cases, 0 not ok)"
    assert doubtful_line(1, {"invalid": 1}) == "DOUBTFUL: 1 figure cannot be trusted: invalid 1"


def test_a_failed_run_stays_failed_and_says_what_is_doubtful() -> None:
    run = _run(ok=False, doubtful={"figures": 1, "by_reason": {"invalid": 1}})
    bad = [CaseResult(suite="gemm", key="a", error="boom")]
    assert verdict_text(run, bad).plain == "FAILED (1 cases, 1 not ok; 1 figure cannot be trusted: invalid 1)"


def test_counts_from_suites_when_the_run_has_no_total() -> None:
    suites = {"a": {"doubtful": {"figures": 1, "by_reason": {"invalid": 1}}},
              "b": {"doubtful": {"figures": 2, "by_reason": {"contended": 2}}}, "c": {}}
    assert doubtful_counts(_run(suites=suites)) == (3, {"invalid": 1, "contended": 2})


def test_the_summary_lists_invalid_figures_before_the_verdict() -> None:
    figure = {"name": "overlap.overlap_fraction", "value": 13.8, "unit": "count", "method": "m",
              "scope": {"case": "dispatch+gemm"}, "findings": [INVALID.to_dict()]}
    run = _run(suites={"overlap": {"figures": [figure]}}, doubtful={"figures": 1, "by_reason": {"invalid": 1}})
    console = Console(width=200, record=True)
    console.print(render_run_summary(run, [CaseResult(suite="overlap", key="dispatch+gemm", check={"passed": True})]))
    lines = console.export_text().rstrip().splitlines()
    assert lines[-2] == "invalid: overlap overlap.overlap_fraction [dispatch+gemm]: 312% of P"
    assert lines[-1].startswith("DOUBTFUL: 1 figure cannot be trusted: invalid 1")
    assert "overlap_fraction 13.8 (invalid)" in lines[4]  # the headline marks the figure


@pytest.fixture()
def store(tmp_path: Path):
    with Store.open(tmp_path / "runs.sqlite") as opened:
        yield opened


def test_a_run_counts_its_doubtful_figures_and_stores_them(store: Store) -> None:
    outcome = run_suites(store, device=_device(), suites=[DoubtfulSuite(), TinySuite()],
                         options={"doubtful": {"cases": 2}, "tiny": {"cases": 2}})
    doubtful, tiny = outcome.suites
    # doubtful.fraction (invalid, and over a contended case), tiny.median_rate (over it), case-000 itself
    assert (doubtful.doubtful, doubtful.doubtful_by) == (3, {"contended": 3, "invalid": 1})
    assert (tiny.doubtful, tiny.doubtful_by) == (0, {})
    assert outcome.ok and outcome.doubtful == 3
    run = store.get_run(outcome.run.run_id)
    assert run.status == "complete"
    assert run.summary["doubtful"] == {"figures": 3, "by_reason": {"contended": 3, "invalid": 1}}
    assert run.summary["suites"]["doubtful"]["doubtful"]["figures"] == 3
    stored = {f.name: f for f in store.figures(run.run_id, "doubtful")}
    assert [f.code for f in stored["doubtful.fraction"].findings] == ["invalid"]
    assert verdict_text(run, store.cases(run.run_id)).plain.startswith(
        "DOUBTFUL: 3 figures cannot be trusted: contended 3, invalid 1")


def test_tests_take_ok_or_a_verdict_doubtful_for_contention_alone() -> None:
    assert ok_or_contended("run r1: 3 cases, 0 failed - OK") and ok_or_contended("OK (3 cases, 0 not ok)")
    assert ok_or_contended("run r1: 3 cases, 0 failed - DOUBTFUL: 2 figures cannot be trusted: contended 2")
    assert ok_or_contended("DOUBTFUL: 1 figure cannot be trusted: contended 1 (3 cases, 0 not ok)")
    assert not ok_or_contended("DOUBTFUL: 2 figures cannot be trusted: invalid 2 (3 cases, 0 not ok)")
    assert not ok_or_contended("DOUBTFUL: 3 figures cannot be trusted: contended 2, invalid 1")
    assert not ok_or_contended("run r1: 3 cases, 1 failed - FAILED") and not ok_or_contended("FAILED (3 cases, 1 not ok)")
