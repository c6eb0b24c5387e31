"""Figures that cannot be true (parity.metrics.validity): each rule on hand-computed cases, and
a figure's findings through its dict form."""

from __future__ import annotations

import pytest

from parity.metrics.validity import (
    faster_together,
    fraction_above_one,
    non_positive_rate,
    outside_bounds,
    overlap_outside_unit,
    replay_against_bounds,
)
from parity.model.figure import Figure, told_apart
from parity.model.findings import INVALID, Finding, Severity, untrusted_codes


def _is_invalid(found: Finding | None) -> bool:
    return found is not None and found.code == INVALID and found.severity is Severity.INVALID


def test_a_fraction_above_one_beyond_its_ci_is_invalid() -> None:
    # the run: square.2048 at 312% of P, CI [2.9, 3.3]
    found = fraction_above_one(3.12, (2.9, 3.3), what="square.2048")
    assert _is_invalid(found)
    assert "312.0%" in found.message and "square.2048" in found.message


def test_a_fraction_whose_ci_reaches_one_is_not() -> None:
    assert fraction_above_one(1.02, (0.98, 1.05), what="x") is None
    assert fraction_above_one(0.9, None, what="x") is None
    assert fraction_above_one(None, None, what="x") is None


def test_a_fraction_above_one_without_a_ci_is_invalid() -> None:
    assert _is_invalid(fraction_above_one(1.08, None, what="best shape"))


@pytest.mark.parametrize("overlap", [13.82, -9.07, 1.0001, -0.0001])
def test_an_overlap_outside_zero_one_is_invalid_whatever_its_ci(overlap: float) -> None:
    assert _is_invalid(overlap_outside_unit(overlap, (-20.0, 20.0)))


def test_the_message_says_which_side() -> None:
    assert "above 1" in overlap_outside_unit(13.82).message
    assert "below 0" in overlap_outside_unit(-9.07).message


@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0, None])
def test_an_overlap_inside_zero_one_is_not(overlap: float | None) -> None:
    assert overlap_outside_unit(overlap) is None


def test_faster_together_beyond_both_cis_is_invalid() -> None:
    # together [2.0, 2.2] ms ends below alone [3.0, 3.1] ms
    found = faster_together((2.0e-3, 2.2e-3), (3.0e-3, 3.1e-3), what="the gemm")
    assert _is_invalid(found)
    assert "[2, 2.2] ms" in found.message and "[3, 3.1] ms" in found.message


def test_faster_together_within_the_cis_is_not() -> None:
    assert faster_together((2.0e-3, 3.05e-3), (3.0e-3, 3.1e-3), what="k") is None  # CIs meet
    assert faster_together((4.0e-3, 5.0e-3), (3.0e-3, 3.1e-3), what="k") is None  # slower together
    assert faster_together(None, (3.0e-3, 3.1e-3), what="k") is None


def test_a_replay_outside_its_bounds_is_invalid() -> None:
    # the trace: vector=inf replays 0.975x against bounds [1.31, 1.86]
    found = outside_bounds(0.975, 1.312, 1.860, what="replay speedup")
    assert _is_invalid(found)
    assert "0.975x" in found.message and "[1.312x, 1.860x]" in found.message
    assert _is_invalid(outside_bounds(1.9, 1.312, 1.860, what="replay"))


def test_a_replay_between_one_and_its_bounds_is_a_warning_only_where_ops_waited() -> None:
    why = "2 of 5 ops in the window waited for work elsewhere"
    found = replay_against_bounds(1.1, 1.312, 1.860, waited=2, why=why, what="replay speedup")
    assert found.code == "replay-waits-elsewhere" and found.severity is Severity.WARNING
    assert found.message == f"replay speedup 1.100x lies between 1 and its bounds [1.312x, 1.860x]: {why}"
    assert _is_invalid(replay_against_bounds(1.1, 1.312, 1.860, waited=0, why="", what="replay"))  # nothing explains it
    assert _is_invalid(replay_against_bounds(0.975, 1.312, 1.860, waited=2, why=why, what="replay"))  # slower: never
    assert _is_invalid(replay_against_bounds(1.9, 1.312, 1.860, waited=2, why=why, what="replay"))  # saves too much
    assert replay_against_bounds(1.5, 1.312, 1.860, waited=2, why=why, what="replay") is None
    assert replay_against_bounds(None, 1.312, 1.860, waited=2, why=why, what="replay") is None
    # a slowdown (k < 1): bounds [0.6, 0.8]; 0.9 loses less than they say (toward 1), 1.05 gains
    assert replay_against_bounds(0.9, 0.6, 0.8, waited=1, why=why, what="replay").severity is Severity.WARNING
    assert _is_invalid(replay_against_bounds(1.05, 0.6, 0.8, waited=1, why=why, what="replay"))
    assert replay_against_bounds(1.0, 1.312, 1.860, waited=1, why=why, what="replay").severity is Severity.WARNING


def test_speedups_that_differ_never_print_alike() -> None:
    # 3 decimals unless they would print different values alike; then as many as tell them apart
    assert told_apart(0.975, 1.312, 1.860) == ["0.975", "1.312", "1.860"]
    assert told_apart(1.00025, 1.00028, 1.00028) == ["1.00025", "1.00028", "1.00028"]
    assert told_apart(1.0, 1.0) == ["1.000", "1.000"]
    assert told_apart(1.0, 1.0 + 1e-12) == ["1.0000000", "1.0000000"]  # at most 7 decimals
    found = outside_bounds(1.00005, 1.00028, 1.00028, what="replay speedup")
    assert _is_invalid(found) and "1.0001x lies outside its own bounds [1.0003x, 1.0003x]" in found.message


def test_a_replay_on_its_bound_up_to_rounding_is_not() -> None:
    assert outside_bounds(1.312 * (1 - 1e-12), 1.312, 1.860, what="r") is None
    assert outside_bounds(1.860, 1.312, 1.860, what="r") is None
    assert outside_bounds(None, 1.0, 2.0, what="r") is None


@pytest.mark.parametrize("rate", [0.0, -3e9])
def test_a_rate_that_is_not_positive_is_invalid(rate: float) -> None:
    assert _is_invalid(non_positive_rate(rate, what="copy", unit="B/s"))


def test_a_positive_rate_is_not() -> None:
    assert non_positive_rate(1.0, what="copy", unit="B/s") is None
    assert non_positive_rate(None, what="copy", unit="B/s") is None


def test_a_figure_keeps_its_findings_through_its_dict() -> None:
    finding = overlap_outside_unit(13.82)
    figure = Figure(name="overlap.overlap_fraction", value=13.82, unit="count", method="m", findings=(finding,))
    data = figure.to_dict()
    assert data["findings"] == [{"code": "invalid", "severity": "invalid", "message": finding.message,
                                 "hint": finding.hint}]
    assert Figure.from_dict(data) == figure
    assert Figure.from_dict({k: v for k, v in data.items() if k != "findings"}).findings == ()


def test_untrusted_codes_are_invalid_and_contended() -> None:
    findings = [Finding(code="contended", severity=Severity.WARNING, message="m"),
                Finding(code="high-variance", severity=Severity.WARNING, message="m"),
                Finding(code="invalid", severity=Severity.INVALID, message="m")]
    assert untrusted_codes(findings) == {"contended", "invalid"}
    assert Finding.from_dict(findings[2].to_dict()) == findings[2]


def test_doubt_text_names_each_reason_with_its_sides() -> None:
    from parity.model.findings import doubt_text

    assert doubt_text([["contended"], []]) == "contended in A"
    assert doubt_text([["contended"], ["contended", "invalid"]]) == "contended in A and B; invalid in B"
    assert doubt_text([[], [], ["invalid"]]) == "invalid in C"
    assert doubt_text(None) == "" and doubt_text([[], []]) == ""


def test_untrusted_clause_hand_cases() -> None:
    from parity.compare.wording import untrusted_clause

    assert untrusted_clause({"A": (5, {"contended"}), "B": (0, set())}, 34) == (
        "A could not vouch for 5 of these 34 cases (contended): figures that cannot be trusted")
    assert untrusted_clause({"A": (0, set()), "B": (0, set())}, 3) == ""


def test_caveat_clause_hand_cases() -> None:
    from parity.compare.wording import caveat_clause

    assert caveat_clause({"A": {"one-rank": 54}, "B": {}}, 54) == (
        "A measured 54 of these 54 cases on one rank, where no data crosses a link")
    assert caveat_clause({"A": {}, "B": {}}, 3) == ""
