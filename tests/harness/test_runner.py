"""The runner on the fake device and a real SQLite store: order, errors as data, resume, ETA.

The suites are ``tests/tiny_suites.py``, which the CLI and crash tests also load in real
processes through ``PARITY_PLUGINS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from parity.harness import registry
from parity.harness.runner import ProgressEvent, estimate_eta_s, estimate_run_eta_s, run_suites
from parity.harness.suite import CaseSpec, Suite
from parity.model import CaseResult, ParityError
from parity.store import Store


from tiny_suites import OtherSuite, TinyOptions, TinySuite, _device  # noqa: F401


@pytest.fixture()
def store(tmp_path: Path):
    with Store.open(tmp_path / "runs.sqlite") as opened:
        yield opened


def test_tiny_suite_satisfies_the_protocol() -> None:
    assert isinstance(TinySuite(), Suite)


def test_eta_is_cost_weighted() -> None:
    # 6 s spent on 3 units of cost -> 2 s per unit; 4.5 units left -> 9 s.
    assert estimate_eta_s(elapsed_s=6.0, done_cost=3.0, remaining_cost=4.5) == pytest.approx(9.0)
    assert estimate_eta_s(elapsed_s=6.0, done_cost=3.0, remaining_cost=0.0) == 0.0
    assert estimate_eta_s(elapsed_s=1.0, done_cost=0.0, remaining_cost=5.0) is None


def test_run_eta_uses_each_suites_own_rate() -> None:
    # gemm: 10 s for 20 cost units (0.5 s/unit), 8 units left -> 4 s.
    # membw: 3 s for 1 unit (3 s/unit), 2 units left -> 6 s.
    # latency not started: pooled rate 13 s / 21 units, 7 units left -> 13/3 s.
    spent = {"gemm": (10.0, 20.0), "membw": (3.0, 1.0)}
    remaining = {"gemm": 8.0, "membw": 2.0, "latency": 7.0}
    assert estimate_run_eta_s(spent=spent, remaining=remaining) == pytest.approx(4 + 6 + 13 / 3)
    assert estimate_run_eta_s(spent={}, remaining=remaining) is None
    assert estimate_run_eta_s(spent=spent, remaining={"gemm": 0.0}) == 0.0


def test_run_stores_every_case_and_summary(store: Store) -> None:
    events: list[ProgressEvent] = []
    suites = [TinySuite(), OtherSuite()]
    outcome = run_suites(
        store,
        device=_device(),
        suites=suites,
        options={"tiny": {"cases": 3}},
        progress=events.append,
        argv=["parity", "run"],
    )
    assert outcome.ok and outcome.measured == 3 + 8 and outcome.skipped == 0
    run = store.get_run(outcome.run.run_id)
    assert run.status == "complete"
    assert run.config == {
        "device": "fake",
        "suites": ["tiny", "other"],
        "quick": False,
        "options": {"tiny": {"cases": 3}, "other": {}},
    }
    assert run.provenance["command_line"] == ["parity", "run"] and run.provenance["device_identity"]
    assert run.summary["ok"] is True
    # FakeDevice times every call 1.0, 1.1 or 0.9 ms: the median is 1 ms, so 99 FLOP / 1 ms.
    assert run.summary["suites"]["tiny"]["summary"] == {"measured": 3, "sum_i": 3, "median_rate": 99_000.0}
    (figure,) = run.summary["suites"]["tiny"]["figures"]
    assert figure["name"] == "tiny.median_rate" and figure["value"] == 99_000.0 and figure["unit"] == "FLOP/s"
    assert [c.key for c in store.cases(run.run_id, "tiny")] == ["case-000", "case-001", "case-002"]
    assert all(len(c.samples["main"]) >= 5 for c in outcome.cases)
    first = store.cases(run.run_id, "tiny")[0]
    assert first.check == {"passed": True, "method": "sum(range(100)) == 4950"}
    assert first.metrics["flop"] == 99.0 and first.metrics["flop_per_s"] == pytest.approx(99_000.0)
    assert first.metrics["median_s"] == pytest.approx(1e-3) and len(first.metrics["ci95_s"]) == 2
    # setup ran once per suite per run and its state reached every case of that run only
    assert [(s.setups, s.teardowns) for s in suites] == [(1, 1), (1, 1)]
    assert [c.metrics["cases_in_this_process"] for c in store.cases(run.run_id, "tiny")] == [1, 2, 3]

    phases = [e.phase for e in events]
    assert phases == ["start"] + ["case", "measured"] * 11 + ["summary", "done"]
    assert all(e.run_id == run.run_id for e in events)
    measured = [e for e in events if e.phase == "measured"]
    assert [e.done for e in measured] == list(range(1, 12)) and {e.total for e in events} == {11}
    assert measured[-1].eta_s == 0.0 and all(e.eta_s is not None for e in measured)
    assert events[1].eta_s is None  # nothing timed yet before the first case


def test_each_case_is_committed_before_the_next_starts(store: Store) -> None:
    seen: list[int] = []

    def check(event: ProgressEvent) -> None:
        if event.phase == "case":
            seen.append(len(store.done_keys(event.run_id, "tiny")))

    run_suites(
        store,
        device=_device(),
        suites=[TinySuite()],
        options={"tiny": {"cases": 4}},
        progress=check,
    )
    assert seen == [0, 1, 2, 3]


def test_errors_are_rows_and_the_sweep_goes_on(store: Store) -> None:
    options = {"tiny": {"cases": 5, "raise_on": ["case-001"], "wrong": ["case-003"]}}
    outcome = run_suites(store, device=_device(), suites=[TinySuite()], options=options)
    assert not outcome.ok
    cases = {c.key: c for c in store.cases(outcome.run.run_id)}
    assert len(cases) == 5
    assert cases["case-001"].error == "RuntimeError: boom at case-001"
    assert cases["case-001"].params == {"i": 1} and "raised_at" in cases["case-001"].telemetry
    assert cases["case-003"].error is None and not cases["case-003"].ok
    assert store.get_run(outcome.run.run_id).status == "failed"
    tiny = outcome.suites[0]
    assert (tiny.cases, tiny.failed, tiny.errors) == (5, 2, 1)
    assert tiny.summary == {"measured": 4, "sum_i": 0 + 2 + 3 + 4, "median_rate": 99_000.0}
    assert cases["case-003"].check["passed"] is False
    assert [f.code for f in cases["case-003"].findings if f.severity.value == "error"] == ["wrong-result"]


def test_interrupted_run_resumes_without_measuring_twice(store: Store) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_suites(
            store,
            device=_device(),
            suites=[TinySuite()],
            options={"tiny": {"cases": 7, "interrupt_at": "case-004"}},
        )
    (run,) = store.list_runs()
    assert run.status == "running"
    assert store.done_keys(run.run_id, "tiny") == {f"case-{i:03d}" for i in range(4)}

    again = TinySuite()
    events: list[ProgressEvent] = []
    outcome = run_suites(
        store,
        device=_device(),
        suites=[again],
        options={"tiny": {"cases": 7}},
        resume_run_id=run.run_id[:15],
        progress=events.append,
    )
    assert again.measured == ["case-004", "case-005", "case-006"]
    assert (outcome.measured, outcome.skipped) == (3, 4) and events[0].done == 4
    keys = [c.key for c in store.cases(run.run_id)]
    assert keys == [f"case-{i:03d}" for i in range(7)]
    finished = store.get_run(run.run_id)
    assert finished.status == "complete" and len(finished.provenance["resumes"]) == 1


def test_resume_on_another_device_model_is_refused(store: Store, monkeypatch) -> None:
    outcome = run_suites(
        store, device=_device(), suites=[TinySuite()], options={"tiny": {"cases": 1}}
    )
    other = _device()
    real = other.properties()
    monkeypatch.setattr(
        other, "properties", lambda: type(real)(**{**real.__dict__, "name": "Another Accelerator"})
    )
    with pytest.raises(ParityError, match="Another Accelerator"):
        run_suites(store, device=other, suites=[TinySuite()], resume_run_id=outcome.run.run_id)


class BrokenSuite(TinySuite):
    name = "broken"

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def cases(self, *, device: Any, quick: bool, options: TinyOptions) -> list[CaseSpec]:
        if self.mode == "cases":
            raise ValueError("no shapes for this dtype")
        if self.mode == "duplicate":
            return [CaseSpec(suite=self.name, key="same"), CaseSpec(suite=self.name, key="same")]
        return [CaseSpec(suite=self.name, key="a", params={"i": 0})]

    def measure(self, case: CaseSpec, *, device: Any, options: TinyOptions, state: Any) -> CaseResult:
        return CaseResult(suite=self.name, key="not-" + case.key)

    def summarize(self, results: list[CaseResult], *, options: TinyOptions) -> dict[str, Any]:
        raise ZeroDivisionError("division by zero")


def test_broken_suites_fail_clearly(store: Store) -> None:
    with pytest.raises(ParityError, match="suite 'broken' could not list its cases: ValueError"):
        run_suites(store, device=_device(), suites=[BrokenSuite("cases")])
    with pytest.raises(ParityError, match="lists case key 'same' twice"):
        run_suites(store, device=_device(), suites=[BrokenSuite("duplicate")])
    assert store.list_runs() == []  # nothing half-started
    outcome = run_suites(store, device=_device(), suites=[BrokenSuite("wrong-key")])
    (case,) = outcome.cases
    assert case.key == "a" and "returned ('broken', 'not-a')" in (case.error or "")
    assert not outcome.ok


def test_summary_errors_fail_the_run(store: Store) -> None:
    class BadSummary(TinySuite):
        def summarize(self, results, *, options):
            raise ZeroDivisionError("division by zero")

    outcome = run_suites(
        store, device=_device(), suites=[BadSummary()], options={"tiny": {"cases": 2}}
    )
    assert not outcome.ok and all(c.ok for c in outcome.cases)
    assert outcome.suites[0].summary_error == "ZeroDivisionError: division by zero"
    assert store.get_run(outcome.run.run_id).status == "failed"


def test_registry_lookup_plugins_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARITY_PLUGINS", "tiny_suites:TinySuite")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    assert "tiny" in registry.names() and registry.names()[:3] == ["gemm", "membw", "latency"]
    assert registry.get_suite("tiny").name == "tiny"
    assert [s.name for s in registry.resolve(["tiny", "tiny,tiny"])] == ["tiny"]
    with pytest.raises(
        ParityError, match=r"unknown suite 'nope'; known suites: gemm, membw, latency.*tiny"
    ):
        registry.resolve(["tiny,nope"])

    from parity.model.family import Family, register_family, unregister_family

    register_family(Family(name="ghost", suite="parity.families.ghost_suite:GhostSuite"))
    try:
        with pytest.raises(
            ParityError,
            match="suite 'ghost' cannot be imported: no module named 'parity.families.ghost_suite'",
        ):
            registry.get_suite("ghost")
    finally:
        unregister_family("ghost")

    registry.register(OtherSuite)
    try:
        assert registry.get_suite("other").name == "other"
    finally:
        registry.unregister("other")
    with pytest.raises(ParityError, match="unknown suite 'other'"):
        registry.get_suite("other")

    monkeypatch.setenv("PARITY_PLUGINS", "tiny_suites:NotThere")
    with pytest.raises(
        ParityError,
        match="PARITY_PLUGINS entry 'tiny_suites:NotThere': module tiny_suites has no 'NotThere'",
    ):
        registry.names()


def test_registry_reads_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    point = metadata.EntryPoint(name="tiny", value="tiny_suites:TinySuite", group="parity.suites")
    monkeypatch.setattr(
        registry.metadata, "entry_points", lambda group: [point] if group == "parity.suites" else []
    )
    assert "tiny" in registry.names()
    assert isinstance(registry.get_suite("tiny"), TinySuite)


class RecheckSuite(TinySuite):
    """TinySuite whose ``recheck`` asks for case-001 again (as an off-trend point would be)."""

    def recheck(self, results: list[CaseResult], *, options: TinyOptions) -> list[CaseSpec]:
        first = next(r for r in results if r.key == "case-001")
        return [CaseSpec(suite=self.name, key="case-001/again", params={**first.params, "again_of": first.key})]


def test_rechecked_cases_are_measured_once_after_the_sweep(store: Store) -> None:
    suite = RecheckSuite()
    outcome = run_suites(store, device=_device(), suites=[suite], quick=True)
    keys = [c.key for c in store.cases(outcome.run.run_id, "tiny")]
    assert keys[-1] == "case-001/again" and suite.measured[-1] == "case-001/again"
    again = next(c for c in store.cases(outcome.run.run_id, "tiny") if c.key == "case-001/again")
    assert again.params["again_of"] == "case-001" and again.ok
    before = list(suite.measured)
    run_suites(store, device=_device(), suites=[suite], quick=True, resume_run_id=outcome.run.run_id)
    assert suite.measured == before  # already measured again: not a third time
