"""Searching the ceiling again around a shape that beat it (``search_around``).

``P`` is meant to be the best rate the device sustains; a sweep shape whose rate exceeds it
beyond both CIs says the search missed a region (a burst of load misled it, or its budget ran
out first). The GEMM suite then times, within a bounded budget, a compass search from that
shape (the challenger; ``parity.ceilings.compute``'s refinement: every move decided by timing
the two shapes back to back) and a contest of the refinement's end point, the challenger and
``P``'s own shape (the incumbent), interleaved and rotated rounds (``run_contest``). The
finding holds when the contest's winner is not the incumbent; the winner is then timed in fresh
confirmation rounds, as the search's winner is (``confirm_rounds``), so its rate is ``P``'s
statistic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.ceilings.compute import _Search, confirm_rounds
from parity.ceilings.contest import Contest, Dims, Evaluate, run_contest
from parity.ceilings.plan import SearchPlan
from parity.stats import median


@dataclass(frozen=True, kw_only=True)
class RaiseResult:
    """What ``search_around`` found: the contest of the refinement's end point, the challenger
    and the incumbent; ``holds`` when the incumbent lost it; the winner's confirmation rounds
    (FLOP/s; empty when it did not hold)."""

    challenger: Dims
    incumbent: Dims
    contest: Contest
    confirm_rates: list[float]
    probes: int
    spent_s: float

    @property
    def holds(self) -> bool:
        """True when a shape other than the incumbent won the contest."""
        return self.contest.winner != self.incumbent

    @property
    def flops(self) -> float | None:
        """The winner's median confirmation round (FLOP/s), None when it did not hold."""
        return median(self.confirm_rates) if self.holds and self.confirm_rates else None

    def to_dict(self) -> dict[str, Any]:
        def shape(d: Dims) -> dict[str, int]:
            return {"m": d[0], "n": d[1], "k": d[2]}

        return {"challenger": shape(self.challenger), "incumbent": shape(self.incumbent),
                "winner": shape(self.contest.winner), "holds": self.holds, "flops": self.flops,
                "confirm_flops": list(self.confirm_rates), "contest": self.contest.to_dict(),
                "probes": self.probes, "spent_s": self.spent_s,
                "statistic": "median of the winner's confirmation rounds, timed after the contest"}


def search_around(evaluate: Evaluate, *, challenger: Dims, incumbent: Dims, plan: SearchPlan,
                  clock: Callable[[], float]) -> RaiseResult:
    """Refine from ``challenger`` within ``plan.budget_s`` (its share for refinement), then a
    contest of the end point, ``challenger`` and ``incumbent``; confirm the winner when it is
    not the incumbent (see module)."""
    search = _Search(evaluate, plan, clock)
    search.scores[challenger] = search.probe(challenger, "refine")
    search.refine(challenger)
    entrants = list(dict.fromkeys([*search.champions, challenger, incumbent]))
    contest = run_contest(evaluate, entrants, budget_s=plan.confirm_budget_s, rounds=plan.confirm_repeats,
                          clock=clock, deadline=search.start + plan.budget_s)
    rates = (confirm_rounds(evaluate, contest.winner, plan, clock=clock, deadline=search.start + plan.budget_s)
             if contest.winner != incumbent else [])
    return RaiseResult(challenger=challenger, incumbent=incumbent, contest=contest, confirm_rates=rates,
                       probes=len(search.probes), spent_s=search.spent())
