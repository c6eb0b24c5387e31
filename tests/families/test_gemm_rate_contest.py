"""Comparing shapes on a machine whose speed drifts: relative timing, contests, alternation."""

from __future__ import annotations

import pytest

from parity.ceilings.contest import Bracket, alternate, run_contest, time_relative

TRUE = {(1, 1, 1): 1.00e9, (2, 2, 2): 1.05e9, (3, 3, 3): 0.90e9, (4, 4, 4): 1.02e9}


def drifting(load_by_call: list[float]):
    """An evaluator whose machine speed is ``load_by_call[i]`` for the i-th call (cycled)."""
    calls: list[tuple[int, int, int]] = []

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        load = load_by_call[len(calls) % len(load_by_call)]
        calls.append((m, n, k))
        return TRUE[(m, n, k)] * load

    return evaluate, calls


def test_time_relative_times_the_reference_first_and_returns_the_ratio() -> None:
    evaluate, calls = drifting([1.0, 1.0])
    rate, score = time_relative(evaluate, (2, 2, 2), (1, 1, 1), budget_s=0.1)
    assert calls == [(1, 1, 1), (2, 2, 2)]
    assert rate == pytest.approx(1.05e9) and score == pytest.approx(1.05)


def test_contest_picks_the_fastest_shape_through_bursts_of_speed() -> None:
    # Every fourth call runs 1.5x faster (a sibling core freed for a moment): a single probe
    # would crown whichever shape happened to land on it; per-round medians do not.
    evaluate, calls = drifting([1.0, 1.0, 1.0, 1.5])
    contest = run_contest(evaluate, [(1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)], budget_s=0.1, rounds=7)
    assert contest.winner == (2, 2, 2)
    assert len(calls) == 28 and all(len(r) == 7 for r in contest.rates.values())
    assert contest.best_flops == pytest.approx(1.05e9 * 1.5)
    assert contest.median_flops == pytest.approx(1.05e9)
    assert contest.to_dict()["candidates"][0] == {"m": 2, "n": 2, "k": 2, "score": contest.scores[(2, 2, 2)],
                                                  "median_flops": contest.median_flops}


def test_contest_rotates_the_order_each_round() -> None:
    evaluate, calls = drifting([1.0])
    run_contest(evaluate, [(1, 1, 1), (2, 2, 2), (3, 3, 3)], budget_s=0.1, rounds=3)
    firsts = [calls[i] for i in (0, 3, 6)]
    assert firsts == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]


def test_contest_stops_at_the_deadline_after_its_minimum_rounds() -> None:
    now = [0.0]

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        now[0] += budget_s
        return TRUE[(m, n, k)]

    contest = run_contest(evaluate, [(1, 1, 1), (2, 2, 2)], budget_s=1.0, rounds=9, clock=lambda: now[0],
                          deadline=7.0, min_rounds=3)
    # Rounds take 2 s: after round 3 (t=6) a fourth would end at 8 > 7.
    assert [len(r) for r in contest.rates.values()] == [3, 3]
    short = run_contest(evaluate, [(1, 1, 1)], budget_s=1.0, rounds=9, clock=lambda: now[0], deadline=0.0,
                        min_rounds=3)
    assert len(short.rates[(1, 1, 1)]) == 3


def test_contest_needs_a_candidate() -> None:
    evaluate, _ = drifting([1.0])
    with pytest.raises(ValueError):
        run_contest(evaluate, [], budget_s=0.1, rounds=3)


def test_alternate_times_in_abba_order_and_pairs_cancel_a_step_in_speed() -> None:
    # The machine is 1.5x faster for the second half: each pair sees one speed, so the median
    # pair ratio is the true ratio, 1.05.
    evaluate, calls = drifting([1.0] * 10 + [1.5] * 10)
    duel = alternate(evaluate, (2, 2, 2), (1, 1, 1), budget_s=0.1, rounds=10)
    assert calls[:4] == [(2, 2, 2), (1, 1, 1), (1, 1, 1), (2, 2, 2)]
    assert duel.median_pair_ratio == pytest.approx(1.05)
    assert duel.ratio_of_medians == pytest.approx(1.05)
    assert len(duel.rates_a) == len(duel.rates_b) == 10


def test_bracket_shares_reference_timings_and_divides_by_the_faster_one() -> None:
    # The reference's second timing is disturbed (0.6x): A's score still uses the undisturbed
    # first one, and B's uses the third.
    evaluate, calls = drifting([1.0, 1.0, 0.6, 1.0, 1.0])
    bracket = Bracket(evaluate, (1, 1, 1), budget_s=0.1)
    rate_a, score_a = bracket.score((2, 2, 2))
    rate_b, score_b = bracket.score((4, 4, 4))
    assert calls == [(1, 1, 1), (2, 2, 2), (1, 1, 1), (4, 4, 4), (1, 1, 1)]
    assert bracket.timings == 5
    assert rate_a == pytest.approx(1.05e9) and score_a == pytest.approx(1.05)
    assert rate_b == pytest.approx(1.02e9) and score_b == pytest.approx(1.02)
