"""Measured ceilings: the best sustained GEMM rate per dtype, and the device-copy bandwidth.

Compute ceiling ``P``. mamf-finder (Stas Bekman, "Maximum Achievable Matmul FLOPS finder",
ml-engineering) times every shape of a large (M, N, K) grid and keeps the best, which takes
hours. ``search_ceiling`` finds the same maximum within a time budget (its bounds, budgets
and the ladder's and grid's shapes: ``parity.ceilings.plan``), in five phases:

1. ladder: square shapes on a geometric ladder (``min_dim``·√2^i, aligned), smallest first,
   stopping before a shape whose predicted call time exceeds ``max_call_s`` or once the rate
   has fallen for ``patience`` sizes in a row past the best;
1b. anchors: the large shapes every search times, whatever the ladder found
   (``plan.anchor_shapes``: the largest cube whose call fits a quarter of ``max_call_s`` at the
   best rate seen or a quarter of the device's datasheet or ISA peak, whichever is higher, the
   long-K shape of the same work, and the cube half its side), scored as the grid
   scores; the best-scored anchor enters the contest unless it scored under a quarter of the
   best, so a ladder misled by a burst of load (every probe at K = 64) cannot keep the large
   shapes out of the running;
2. grid: every (M, N, K) with sides in ``s/4, s/2, s, 2s, 4s`` around the best square ``s``,
   nearest first (in log distance), so thin, wide, long-K and small shapes are in the running;
3. refine: a compass search with line extrapolation from the three best-scored shapes: each
   of M, N and K is scaled up and down by 2, 1.5 and 1.25, then stepped by 4, 2 and 1
   alignments, and every move that raises the rate is followed further along its line; each
   move is decided by timing the two shapes back to back;
4. contest: the refinements' end points and the best-scored shapes (``confirm_top`` in all)
   are timed ``confirm_repeats`` rounds (at least three; no more than the budget's end allows),
   interleaved and rotated (``rate_contest.run_contest``); the best-scored candidate wins;
5. confirm: the winner is timed ``confirm_repeats`` rounds more (``confirm_rounds``). Its
   contest rounds chose it, so they are the ones whose noise ran high (when finalists are
   close, the winner is the one that drew fast rounds); fresh rounds are not selected on.
   The search's ceiling is their median (every shape's statistic), stored with its shape, best
   round, dispersion and every candidate's contest score; a sweep then reads ``P`` from the
   winner's rounds timed through it (``parity.metrics.ceiling``).

Time. The ladder, the grid and the refinement stop at their share of the budget (25%, 45%,
80%), and sooner when what is left would not pay for the shortest contest and confirmation,
three rounds each, priced at the likely finalists' own cost per call (``_Search.past``).

Scores. A shared CPU's speed swings by tens of percent within seconds as other jobs start and
stop, so probes taken at different moments rank the moments, not the shapes. With
``plan.relative`` (the CPU default) a shape's score is its rate ratio to a shape timed next to
it, times that shape's score: on the ladder the previous square, timed just before
(``rate_contest.time_relative``); in the grid ``s``, timed before and after each shape
(``rate_contest.Bracket``). Without it (accelerators) a score is the shape's own probe.

The bandwidth ceiling ``B`` is ``parity.ceilings.bandwidth``'s, shared with membw.

The search takes its measurement as a callback and its budget clock as an argument, so the
algorithm is tested without a device; the GEMM callback on a device is
``parity.families.gemm.evaluator.gemm_rate_evaluator`` (declared Work the harness times).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from parity.ceilings.plan import SearchPlan, align_up, anchor_rate, anchor_shapes, grid_shapes, scout_sizes
from parity.ceilings.contest import (
    MIN_ROUNDS,
    Bracket,
    Contest,
    Dims,
    Evaluate,
    run_contest,
    time_relative,
)
from parity.metrics.ceiling import CeilingRounds, ceiling_rounds
from parity.stats import median

log = logging.getLogger(__name__)

# Refinement steps: factors first (to reach far shapes, e.g. a long K), then alignments.
REFINE_STEPS_MUL = (("mul", 2.0), ("mul", 1.5), ("mul", 1.25))
REFINE_STEPS_ADD = (4, 2, 1)
REFINE_STARTS = 3
# Shares of the budget after which each phase stops starting new probes.
LADDER_SHARE = 0.25
ANCHOR_SHARE = 0.35
GRID_SHARE = 0.45
REFINE_SHARE = 0.8
# The best anchor enters the contest when its score is at least this share of the best score:
# a shape four times slower than the best is not in the running, whatever the load did.
ANCHOR_ENTRY_SCORE = 0.25


@dataclass(kw_only=True)
class SearchResult:
    """What the search found: ``flops`` (FLOP/s, the winner's median confirmation round) at
    ``dims``, the contest, the confirmation rounds, every probe's latest rate and every scored
    shape's score."""

    contest: Contest
    confirm_rates: list[float]  # the winner's confirmation rounds, FLOP/s, in the order timed
    probes: dict[Dims, float] = field(default_factory=dict)
    scores: dict[Dims, float] = field(default_factory=dict)
    spent_s: float = 0.0
    phases: dict[str, int] = field(default_factory=dict)
    anchors: list[Dims] = field(default_factory=list)

    @property
    def flops(self) -> float:
        """The ceiling, FLOP/s: the winner's median confirmation round."""
        return median(self.confirm_rates)

    @property
    def best_flops(self) -> float:
        """The winner's best confirmation round, FLOP/s (quoted beside ``flops``)."""
        return max(self.confirm_rates)

    @property
    def rounds(self) -> CeilingRounds:
        """The winner's rounds and their dispersion (``parity.metrics.ceiling``)."""
        return ceiling_rounds(self.confirm_rates)

    @property
    def dims(self) -> Dims:
        """The contest winner's (M, N, K)."""
        return self.contest.winner

    def to_dict(self) -> dict[str, Any]:
        top = sorted(self.probes.items(), key=lambda kv: kv[1], reverse=True)[:10]
        return {
            "flops": self.flops,
            "shape": {"m": self.dims[0], "n": self.dims[1], "k": self.dims[2]},
            "best_flops": self.best_flops,
            "estimator": "median of the winner's confirmation rounds, timed after the contest (best round beside it)",
            "confirm_flops": list(self.confirm_rates),
            "probes": len(self.probes),
            "top_probes": [{"m": d[0], "n": d[1], "k": d[2], "flops": r} for d, r in top],
            "contest": self.contest.to_dict(),
            "spent_s": self.spent_s,
            "phases": dict(self.phases),
            "anchors": [{"m": d[0], "n": d[1], "k": d[2], "score": self.scores.get(d)} for d in self.anchors],
        }


class _Search:
    def __init__(self, evaluate: Evaluate, plan: SearchPlan, clock: Callable[[], float]) -> None:
        self.raw_evaluate = evaluate
        self.plan = plan
        self.clock = clock
        self.start = clock()
        self.probes: dict[Dims, float] = {}
        self.scores: dict[Dims, float] = {}
        self.phases = {"scout": 0, "anchor": 0, "grid": 0, "refine": 0, "contest": 0, "confirm": 0}
        self.anchors: list[Dims] = []
        self.overruns_s: dict[Dims, float] = {}
        self.champions: list[Dims] = []  # the refinements' end points (the latest: its center)

    def evaluate(self, m: int, n: int, k: int, budget_s: float) -> float:
        """``evaluate``, noting how far the call overran its budget (inputs, warm-up, calls
        longer than the budget), the latest per shape."""
        began = self.clock()
        rate = self.raw_evaluate(m, n, k, budget_s)
        self.overruns_s[(m, n, k)] = max(0.0, self.clock() - began - budget_s)
        return rate

    def spent(self) -> float:
        return self.clock() - self.start

    def contest_reserve_s(self) -> float:
        """Predicted seconds of the shortest contest and confirmation (``MIN_ROUNDS`` rounds
        each, which they run even past the budget's end): rounds x the sum, over the entrants
        as they stand (:meth:`candidates`, the missing ones at their median) and the costliest
        once more (the winner's confirmation, at its worst), of the round budget plus that
        shape's latest overrun.

        Priced per shape: the finalists are the large shapes, and with the cache flushed a
        large shape's call overruns its budget by its inputs and warm-up, many times what the
        ladder's small shapes do; priced at the median call, the contest started too late and
        its minimum rounds ran past the budget."""
        likely = self.candidates()
        costs = [self.plan.confirm_budget_s + self.overruns_s.get(d, 0.0) for d in likely]
        if not costs:
            return 0.0
        costs += [median(costs)] * max(0, self.plan.confirm_top - len(likely)) + [max(costs)]
        return MIN_ROUNDS * sum(costs)

    def past(self, share: float) -> bool:
        """True once a phase must stop starting probes: past ``share`` of the budget, or too
        late to leave the shortest contest and confirmation their time
        (:meth:`contest_reserve_s`). The contest takes the rounds the time left allows, up
        to ``confirm_repeats``."""
        return self.spent() > min(share * self.plan.budget_s, self.plan.budget_s - self.contest_reserve_s())

    def probe(self, dims: Dims, phase: str) -> float:
        if dims not in self.probes:
            self.probes[dims] = self.evaluate(*dims, self.plan.probe_budget_s)
            self.phases[phase] += 1
        return self.probes[dims]

    def too_slow(self, dims: Dims) -> bool:
        """True when the call is predicted to exceed ``max_call_s`` at the best rate seen."""
        return self.plan.too_slow(dims, max(self.probes.values(), default=0.0))

    def score(self, dims: Dims, reference: Dims | None, phase: str) -> float:
        """The rate of ``dims`` on the search's scale (FLOP/s). Plain: its probe. With
        ``plan.relative`` and a ``reference`` already scored: the reference's score times the
        ratio of the two rates timed back to back, so every score is drift-free relative to
        the others."""
        if not self.plan.relative or reference is None or reference == dims:
            self.scores.setdefault(dims, self.probe(dims, phase))
            return self.scores[dims]
        rate, ratio = time_relative(self.evaluate, dims, reference, budget_s=self.plan.probe_budget_s)
        self.probes[dims] = rate
        self.scores[dims] = self.scores[reference] * ratio
        self.phases[phase] += 2
        return self.scores[dims]

    def ladder(self) -> None:
        """Phase 1: squares up the ladder, each scored against the one before it."""
        best, falling, previous = 0.0, 0, None
        for size in scout_sizes(self.plan):
            dims = (size, size, size)
            if self.past(LADDER_SHARE) or self.too_slow(dims):
                break
            rate = self.score(dims, previous, "scout")
            previous = dims
            if rate > best:
                best, falling = rate, 0
            else:
                falling += 1
                if falling >= self.plan.patience:
                    break
        if not self.scores:
            size = scout_sizes(self.plan)[0]
            self.score((size, size, size), None, "scout")

    def best_square(self) -> Dims:
        """The best-scored square (the ladder's)."""
        squares = [d for d in self.scores if d[0] == d[1] == d[2]]
        return max(squares, key=self.scores.__getitem__)

    def anchor(self) -> None:
        """Phase 1b: score ``anchor_shapes`` at the best rate seen, against the best square as
        the grid does (bracketed with ``plan.relative``); stops at ``ANCHOR_SHARE``."""
        reference = self.best_square()
        bracket = Bracket(self.evaluate, reference, budget_s=self.plan.probe_budget_s)
        for dims in anchor_shapes(self.plan, anchor_rate(self.plan, max(self.probes.values(), default=0.0))):
            if self.past(ANCHOR_SHARE):
                break
            if dims != reference and self.plan.relative:
                self.probes[dims], ratio = bracket.score(dims)
                self.scores[dims] = self.scores[reference] * ratio
            elif dims not in self.scores:
                self.score(dims, reference, "anchor")
            self.anchors.append(dims)
        self.phases["anchor"] += bracket.timings

    def grid(self) -> None:
        """Phase 2: score the shapes of ``grid_shapes`` around the best-scored square (with
        ``plan.relative``, each bracketed by timings of that square, ``rate_contest.Bracket``)."""
        reference = self.best_square()
        bracket = Bracket(self.evaluate, reference, budget_s=self.plan.probe_budget_s)
        for dims in grid_shapes(reference[0], self.plan):
            if self.past(GRID_SHARE):
                break
            if dims == reference or self.too_slow(dims):
                continue
            if self.plan.relative:
                self.probes[dims], ratio = bracket.score(dims)
                self.scores[dims] = self.scores[reference] * ratio
            elif dims not in self.scores:
                self.score(dims, reference, "grid")
        self.phases["grid"] += bracket.timings

    def refine(self, start: Dims) -> None:
        """Compass search from ``start`` with line extrapolation: for each dimension and
        direction, keep scaling by the step (2, then 1.5, 1.25) or adding it (4, 2, 1
        alignments) while the rate improves; repeat a step until a full sweep finds nothing
        better, then take the next, finer step. Each move is decided by timing the neighbour
        and the current shape back to back, so a machine whose load drifts between probes
        (a shared CPU, a GPU warming up) cannot mislead the search."""
        center = start
        self.champions.append(center)
        steps = REFINE_STEPS_MUL + tuple(("add", float(self.plan.align * a)) for a in REFINE_STEPS_ADD)
        tried: set[tuple[Dims, Dims]] = set()
        for kind, step in steps:
            improved = True
            while improved:
                improved = False
                for axis in range(3):
                    for direction in (1, -1):
                        while not self.past(REFINE_SHARE):
                            neighbour = self._move(center, axis, direction, kind, step)
                            if neighbour is None or (center, neighbour) in tried:
                                break
                            if neighbour not in self.probes and self.too_slow(neighbour):
                                break
                            tried.add((center, neighbour))
                            if not self.beats(neighbour, center):
                                break
                            center, improved = neighbour, True
                            self.champions[-1] = center
                if self.past(REFINE_SHARE):
                    return

    def beats(self, challenger: Dims, holder: Dims) -> bool:
        """Time ``challenger`` then ``holder`` back to back; True when the challenger is faster.
        Both probes are recorded (the latest rate of a shape is kept)."""
        rate = self.evaluate(*challenger, self.plan.probe_budget_s)
        self.probes[challenger] = rate
        reference = self.evaluate(*holder, self.plan.probe_budget_s)
        self.probes[holder] = reference
        self.phases["refine"] += 2
        return rate > reference

    def _move(self, center: Dims, axis: int, direction: int, kind: str, step: float) -> Dims | None:
        """``center`` with one dimension scaled (``mul``) or shifted (``add``); None when out of
        range or when alignment leaves it unchanged."""
        value = center[axis]
        if kind == "mul":
            moved = align_up(value * step if direction > 0 else value / step, self.plan.align)
        else:
            moved = value + direction * int(step)
        if moved == value or not self.plan.min_dim <= moved <= self.plan.max_dim:
            return None
        dims = list(center)
        dims[axis] = moved
        return (dims[0], dims[1], dims[2])

    def candidates(self) -> list[Dims]:
        """The contest's entrants: the refinements' end points, then the best-scored shapes,
        ``confirm_top`` in all, and the best-scored anchor when none of them is one and its
        score is at least ``ANCHOR_ENTRY_SCORE`` of the best (one more)."""
        ranked = list(dict.fromkeys(self.champions))[: self.plan.confirm_top]
        for dims in sorted(self.scores, key=self.scores.__getitem__, reverse=True):
            if len(ranked) >= self.plan.confirm_top:
                break
            if dims not in ranked:
                ranked.append(dims)
        scored = [d for d in self.anchors if d in self.scores]
        if scored and not set(scored) & set(ranked):
            anchor = max(scored, key=self.scores.__getitem__)
            if self.scores[anchor] >= ANCHOR_ENTRY_SCORE * max(self.scores.values()):
                ranked.append(anchor)
        return ranked

    def contest(self) -> Contest:
        """Phase 4: the entrants' contest; rounds past the third stop at the budget's end."""
        entrants = self.candidates()
        contest = run_contest(self.evaluate, entrants, budget_s=self.plan.confirm_budget_s,
                              rounds=self.plan.confirm_repeats, clock=self.clock,
                              deadline=self.start + self.plan.budget_s)
        self.phases["contest"] += sum(len(r) for r in contest.rates.values())
        return contest

    def confirm(self, winner: Dims) -> list[float]:
        """Phase 5: the winner's fresh rounds (:func:`confirm_rounds`)."""
        rates = confirm_rounds(self.evaluate, winner, self.plan, clock=self.clock,
                               deadline=self.start + self.plan.budget_s)
        self.phases["confirm"] += len(rates)
        return rates


def confirm_rounds(evaluate: Evaluate, dims: Dims, plan: SearchPlan, *, clock: Callable[[], float] | None = None,
                   deadline: float | None = None) -> list[float]:
    """``dims`` timed ``plan.confirm_repeats`` rounds of ``plan.confirm_budget_s`` each, FLOP/s
    in the order timed: the rounds ``P`` is read from, taken after the contest chose ``dims``
    so that the choice does not bias them. A contest of one (``run_contest``), so its deadline
    rule: with ``clock`` and ``deadline``, no round starts after ``MIN_ROUNDS`` once the last
    round's length says the next would end past it."""
    return run_contest(evaluate, [dims], budget_s=plan.confirm_budget_s, rounds=plan.confirm_repeats,
                       clock=clock, deadline=deadline).rates[dims]


def search_ceiling(evaluate: Evaluate, plan: SearchPlan, *, clock: Callable[[], float]) -> SearchResult:
    """Find the best sustained rate ``evaluate`` reports, within ``plan.budget_s`` (see module).

    ``evaluate(m, n, k, budget_s)`` times one shape for about ``budget_s`` and returns FLOP/s;
    ``clock()`` is the search's budget clock in seconds (``parity.harness.strategies.Stopwatch()``
    on a device, a fake in tests): it decides when phases stop, and never times a probe.
    One probe of the smallest square runs before the clock starts: it pays for imports and
    library initialisation (seconds on a loaded CPU), which must not eat the search's budget.
    """
    first = scout_sizes(plan)[0]
    evaluate(first, first, first, plan.probe_budget_s)
    search = _Search(evaluate, plan, clock)
    search.ladder()
    search.anchor()
    search.grid()
    starts = sorted(search.scores, key=search.scores.__getitem__, reverse=True)
    for start in starts[:REFINE_STARTS]:
        search.refine(start)
    contest = search.contest()
    confirmation = search.confirm(contest.winner)
    log.info("compute ceiling %.4g FLOP/s (median confirmation round) at %s after %d probes", median(confirmation),
             contest.winner, len(search.probes))
    return SearchResult(contest=contest, confirm_rates=confirmation, probes=dict(search.probes),
                        scores=dict(search.scores), spent_s=search.spent(), phases=dict(search.phases),
                        anchors=list(search.anchors))
