"""Strategy objects of ``parity.timing`` a declared Work names: graph replay with an eager
fallback, paired A/B rounds, and the stopwatch a protocol's budget reads; through the harness."""

from __future__ import annotations

from typing import Any

import pytest

from parity.device.fake import FakeDevice
from parity.harness.measure import measure_work, time_work
from parity.harness.strategies import PairedRounds, ReplayFallback, Stopwatch
from parity.harness.suite import CaseSpec
from parity.harness.work import Work
from parity.timing.timed import Timed

MS = 1e-3
PASS = {"passed": True, "method": "none"}


def test_replay_fallback_times_eagerly_with_a_finding_when_capture_fails() -> None:
    class NoCapture(FakeDevice):
        def graph_replay(self, fn: Any, *, calls: int) -> Any:
            raise RuntimeError("capture not allowed\nsecond line")

    device = NoCapture(durations_s=[1 * MS], graphs=True)
    work = Work(call=lambda: None, check=lambda: PASS, strategy=ReplayFallback(graph=True), budget_s=5 * MS)
    timed = time_work(work, device=device)
    assert isinstance(timed, Timed)
    assert timed.metrics == {"graph": False}
    assert timed.findings[-1].code == "graph-failed"
    assert "RuntimeError: capture not allowed)" in timed.findings[-1].message
    assert timed.samples["main"].method == "fake"


def test_replay_fallback_without_graph_is_the_eager_protocol() -> None:
    device = FakeDevice(durations_s=[2 * MS])
    timed = time_work(Work(call=lambda: None, check=lambda: PASS, strategy=ReplayFallback(), budget_s=10 * MS),
                      device=device)
    assert timed.metrics == {"graph": False}
    assert not [f for f in timed.findings if f.code == "graph-failed"]
    assert timed.median_s == pytest.approx(2 * MS)


def test_paired_rounds_alternate_and_keep_each_sides_rounds() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    order: list[str] = []
    base = Work(call=lambda: order.append("b"), check=lambda: PASS, flush_cache=False, budget_s=12 * MS,
                min_samples=3, max_samples=12)
    cand = Work(call=lambda: order.append("c"), check=lambda: PASS, flush_cache=False, budget_s=12 * MS,
                min_samples=3, max_samples=12, strategy=PairedRounds(baseline=base, baseline_name="torch", rounds=4))
    timed = time_work(cand, device=device)
    # Rounds b c | c b | b c | c b (a side's round: its warm-up, then its samples), so the runs
    # of one side's calls are b, c (c c), b (b b), c (c c), b.
    runs = [order[0]] + [x for prev, x in zip(order, order[1:]) if x != prev]
    assert runs == ["b", "c", "b", "c", "b"]
    assert len(timed.metrics["baseline_rounds_s"]) == 4 == len(timed.metrics["candidate_rounds_s"])
    # Each round: 12 ms / 4 rounds of 1 ms calls = 3 samples (at least min_samples, at most 12 // 4).
    assert [len(r) for r in timed.metrics["candidate_rounds_s"]] == [3, 3, 3, 3]
    assert len(timed.samples["main"]) == 12
    assert timed.samples["main"].meta["alternated_with"] == "torch"
    assert timed.samples["main"].meta["rounds"] == 4


def test_measure_work_takes_a_timed_as_it_takes_a_measurement() -> None:
    device = FakeDevice(durations_s=[2 * MS])
    case = CaseSpec(suite="s", key="k", params={})
    work = Work(call=lambda: None, check=lambda: PASS, flop=4e6, strategy=ReplayFallback(), budget_s=10 * MS)
    row = measure_work(case, work, device=device)
    assert set(row.samples) == {"main"}
    assert row.metrics["median_s"] == pytest.approx(2 * MS)
    assert row.metrics["flop_per_s"] == pytest.approx(4e6 / (2 * MS))
    assert row.metrics["strategy"] == "fake"
    assert row.metrics["graph"] is False


def test_stopwatch_counts_up_from_zero() -> None:
    clock = Stopwatch()
    first = clock()
    assert 0.0 <= first <= clock()


def test_a_strategy_name_is_still_checked() -> None:
    with pytest.raises(ValueError, match="unknown timing strategy"):
        Work(call=lambda: None, check=lambda: PASS, strategy="slope")
