"""Deciding which GEMM shape is fastest on a machine whose speed drifts while it is measured.

On a shared host (other jobs start and stop, a sibling core is taken or freed) the same shape
can read 1.5x faster a second later. Single probes taken at different moments then rank the
moment, not the shape: the shape probed during a quiet spell wins. The helpers here compare
shapes only through timings taken next to each other, so a drift slower than one timing
cancels out:

- ``time_relative``: a shape timed right after a reference shape; its score is the ratio of
  the two rates (dimensionless, 1.0 = as fast as the reference);
- ``Bracket``: many shapes scored against one reference timed before and after each;
- ``run_contest``: every candidate timed once per round, rounds repeated, the candidates'
  order rotated each round; a candidate's score is the median over rounds of its rate over
  the round's median rate. The winner has the best score;
- ``alternate``: two shapes timed in A B B A order for many rounds (a linear drift hits both
  alike), medians of each side and the median of the per-pair ratios.

An ``evaluate(m, n, k, budget_s)`` callback does the timing (FLOP/s), so all of this is tested
without a device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.stats import median

# Rounds a contest runs even past its deadline: fewer leave a median of two.
MIN_ROUNDS = 3
Dims = tuple[int, int, int]
Evaluate = Callable[[int, int, int, float], float]  # (m, n, k, budget_s) -> FLOP/s


def time_relative(evaluate: Evaluate, dims: Dims, reference: Dims, *, budget_s: float) -> tuple[float, float]:
    """Time ``reference`` then ``dims`` back to back; return (rate of ``dims`` in FLOP/s,
    score = rate of ``dims`` / rate of ``reference``)."""
    base = evaluate(*reference, budget_s)
    rate = evaluate(*dims, budget_s)
    return rate, rate / base


class Bracket:
    """Scores shapes one after another against a ``reference`` timed before and after each
    (reference, A, reference, B, reference, ...: two timings per shape, the reference timings
    shared between neighbours). A shape's score is its rate over the faster of its two
    reference timings: interference only slows a timing down, so the faster one is the better
    estimate of the reference's undisturbed rate, and a shape cannot score high just because
    its one reference timing was disturbed."""

    def __init__(self, evaluate: Evaluate, reference: Dims, *, budget_s: float) -> None:
        self.evaluate = evaluate
        self.reference = reference
        self.budget_s = budget_s
        self.before: float | None = None
        self.timings = 0

    def score(self, dims: Dims) -> tuple[float, float]:
        """Time ``dims`` inside the bracket; return (its rate in FLOP/s, rate / reference rate)."""
        if self.before is None:
            self.before = self._time(self.reference)
        rate = self._time(dims)
        after = self._time(self.reference)
        base = max(self.before, after)
        self.before = after
        return rate, rate / base

    def _time(self, dims: Dims) -> float:
        self.timings += 1
        return self.evaluate(*dims, self.budget_s)


@dataclass(frozen=True, kw_only=True)
class Contest:
    """The outcome of ``run_contest``: rates in FLOP/s per candidate and round, scores
    (median over rounds of rate / round median) per candidate."""

    winner: Dims
    rates: dict[Dims, list[float]]
    scores: dict[Dims, float]

    @property
    def best_flops(self) -> float:
        """The winner's best round: its highest sustained rate (each round is the median of
        its timed calls). Interference from other work only slows a round down, so the best
        round is the estimate least disturbed by it (STREAM's best-of-N convention)."""
        return max(self.rates[self.winner])

    @property
    def median_flops(self) -> float:
        """The winner's median round rate, FLOP/s."""
        return median(self.rates[self.winner])

    def to_dict(self) -> dict[str, Any]:
        ranked = sorted(self.scores, key=self.scores.__getitem__, reverse=True)
        return {
            "winner": {"m": self.winner[0], "n": self.winner[1], "k": self.winner[2]},
            "best_flops": self.best_flops,
            "median_flops": self.median_flops,
            "candidates": [{"m": d[0], "n": d[1], "k": d[2], "score": self.scores[d],
                            "median_flops": median(self.rates[d])} for d in ranked],
        }


def run_contest(evaluate: Evaluate, candidates: list[Dims], *, budget_s: float, rounds: int,
                clock: Callable[[], float] | None = None, deadline: float | None = None,
                min_rounds: int = MIN_ROUNDS) -> Contest:
    """Time every candidate ``budget_s`` once per round for ``rounds`` rounds, the order rotated
    by one each round (no candidate always runs first); score each by the median over rounds of
    its rate divided by the median rate of its round. Ties go to the earlier candidate.

    With ``clock`` and ``deadline`` (a ``clock()`` value), no round starts after ``min_rounds``
    once the last round's length says the next would end past the deadline."""
    unique = list(dict.fromkeys(candidates))
    if not unique:
        raise ValueError("run_contest needs at least one candidate")
    rates: dict[Dims, list[float]] = {d: [] for d in unique}
    relative: dict[Dims, list[float]] = {d: [] for d in unique}
    for index in range(max(1, rounds)):
        began = clock() if clock is not None else 0.0
        shift = index % len(unique)
        order = unique[shift:] + unique[:shift]
        timed = {dims: evaluate(*dims, budget_s) for dims in order}
        middle = median(list(timed.values()))
        for dims, rate in timed.items():
            rates[dims].append(rate)
            relative[dims].append(rate / middle)
        if clock is not None and deadline is not None and index + 1 >= min_rounds:
            now = clock()
            if now + (now - began) > deadline:
                break
    scores = {d: median(r) for d, r in relative.items()}
    winner = max(unique, key=lambda d: (scores[d], -unique.index(d)))
    return Contest(winner=winner, rates=rates, scores=scores)


@dataclass(frozen=True, kw_only=True)
class Alternation:
    """Two shapes timed alternately: each side's rates (FLOP/s) in the order taken."""

    a: Dims
    b: Dims
    rates_a: list[float]
    rates_b: list[float]

    @property
    def ratio_of_medians(self) -> float:
        """median(rates_a) / median(rates_b)."""
        return median(self.rates_a) / median(self.rates_b)

    @property
    def median_pair_ratio(self) -> float:
        """Median over rounds of rate_a / rate_b, each pair timed next to each other."""
        return median([x / y for x, y in zip(self.rates_a, self.rates_b)])


def alternate(evaluate: Evaluate, a: Dims, b: Dims, *, budget_s: float, rounds: int) -> Alternation:
    """Time ``a`` and ``b`` alternately for ``rounds`` rounds, in A B, B A, A B ... order, so a
    drift that is linear over a pair slows both sides alike."""
    rates_a: list[float] = []
    rates_b: list[float] = []
    for index in range(rounds):
        if index % 2 == 0:
            rates_a.append(evaluate(*a, budget_s))
            rates_b.append(evaluate(*b, budget_s))
        else:
            rates_b.append(evaluate(*b, budget_s))
            rates_a.append(evaluate(*a, budget_s))
    return Alternation(a=a, b=b, rates_a=rates_a, rates_b=rates_b)
