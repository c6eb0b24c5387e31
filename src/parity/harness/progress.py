"""Progress of a run: the events the runner sends, and the cost-weighted ETA behind them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.harness.suite import CaseSpec
from parity.harness.strategies import Stopwatch


@dataclass(frozen=True, kw_only=True)
class ProgressEvent:
    """Where a run stands, sent to the progress callback.

    ``phase`` is ``start`` (cases counted), ``case`` (about to measure ``suite``/``key``),
    ``measured`` (that case is stored; ``ok`` says how it went), ``summary`` (summarising) or
    ``done``. ``done``/``total`` count cases including those a resume skipped; ``eta_s`` is the
    cost-weighted estimate of the time left (None until one case has been timed).
    """

    phase: str
    done: int
    total: int
    run_id: str = ""
    skipped: int = 0
    suite: str = ""
    key: str = ""
    ok: bool | None = None
    elapsed_s: float = 0.0
    eta_s: float | None = None


ProgressCallback = Callable[[ProgressEvent], None]


def estimate_eta_s(*, elapsed_s: float, done_cost: float, remaining_cost: float) -> float | None:
    """Seconds left, assuming time is proportional to the cases' declared ``cost``.

    ``eta = elapsed_s / done_cost * remaining_cost``: the time per unit of cost measured so far
    in this process (skipped cases excluded), times the cost still to go. None before any cost
    has been timed.
    """
    if done_cost <= 0:
        return None
    return elapsed_s / done_cost * max(remaining_cost, 0.0)


def estimate_run_eta_s(
    *, spent: dict[str, tuple[float, float]], remaining: dict[str, float]
) -> float | None:
    """Seconds left over several suites, whose costs are expected seconds
    (:class:`parity.harness.suite.CaseSpec`).

    ``spent[s] = (T_s, D_s)``: seconds taken by suite ``s``'s measured cases and their summed
    cost. ``eta = sum_s remaining[s] * r_s`` with ``r_s = T_s / D_s``, each suite's own rate
    (how far its expectation was off on this device); a suite not started yet uses the pooled
    rate ``sum T / sum D``. None before any cost has been timed.
    """
    pooled = estimate_eta_s(
        elapsed_s=sum(t for t, _ in spent.values()),
        done_cost=sum(d for _, d in spent.values()),
        remaining_cost=1.0,
    )
    if pooled is None:
        return None
    eta = 0.0
    for suite, cost in remaining.items():
        seconds, done = spent.get(suite, (0.0, 0.0))
        rate = estimate_eta_s(elapsed_s=seconds, done_cost=done, remaining_cost=1.0)
        eta += max(cost, 0.0) * (pooled if rate is None else rate)
    return eta


class Tracker:
    """Progress bookkeeping of one sweep: counts, time and cost per suite, the events sent."""

    def __init__(
        self,
        *,
        run_id: str,
        total: int,
        todo: list[tuple[Any, CaseSpec]],
        report: ProgressCallback,
    ) -> None:
        self.run_id, self.total, self.skipped = run_id, total, total - len(todo)
        self.done, self.measured = self.skipped, 0
        self.remaining: dict[str, float] = {}
        for suite, case in todo:
            self.remaining[suite.name] = self.remaining.get(suite.name, 0.0) + case.cost
        self.spent: dict[str, tuple[float, float]] = {}
        self.report = report
        self.clock = Stopwatch()

    def emit(self, phase: str, *, suite: str = "", key: str = "", ok: bool | None = None) -> None:
        elapsed = self.clock.elapsed_s()
        eta = estimate_run_eta_s(spent=self.spent, remaining=self.remaining)
        if phase in ("summary", "done"):
            eta = 0.0
        self.report(
            ProgressEvent(
                phase=phase,
                done=self.done,
                total=self.total,
                run_id=self.run_id,
                skipped=self.skipped,
                suite=suite,
                key=key,
                ok=ok,
                elapsed_s=elapsed,
                eta_s=eta,
            )
        )

    def count(self, suite: str, case: CaseSpec, *, seconds: float) -> None:
        self.done, self.measured = self.done + 1, self.measured + 1
        taken, cost = self.spent.get(suite, (0.0, 0.0))
        self.spent[suite] = (taken + seconds, cost + case.cost)
        self.remaining[suite] = self.remaining.get(suite, 0.0) - case.cost
