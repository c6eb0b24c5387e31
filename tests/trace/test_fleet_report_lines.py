"""The terminal lines ``parity trace fleet`` prints: every number from the headline, named
stragglers, and each finding with its count."""

from __future__ import annotations

from parity.report.fleet import fleet_lines


def test_lines_carry_the_headline_stragglers_and_findings() -> None:
    headline = {"ranks": 8, "collectives": 1200, "skew_median_ns": 20_000, "skew_p99_ns": 1_500_000,
                "wait_total_ns": 3_000_000_000, "straggler_ranks": [5, 1021],
                "ops": [{"op": "all_reduce", "collectives": 1200, "skew_median_ns": 20_000,
                         "comm_median_ns": 400_000, "busbw_median_bps": 12.5e9}]}
    summary = {"findings": {"p2p_not_matched": {"count": 4, "examples": []},
                            "clock_offset_suspected": {"count": 2, "examples": [{"rank": 3, "ops": 2}]}}}
    stragglers = [{"rank": 5, "node": "n0", "times_last": 900, "share_last": 0.75, "expected_share": 0.125,
                   "median_lateness_ns": 1913, "step_cost_ns": 11_536, "step_ns": 215_769_424, "method": "replay"},
                  {"rank": 3, "node": "", "times_last": 12, "share_last": 0.01, "expected_share": 0.125,
                   "median_lateness_ns": 10, "step_cost_ns": 0, "step_ns": 215_769_424, "method": "first-order"},
                  {"rank": 1021, "node": "", "times_last": 200, "share_last": 0.5, "expected_share": 0.125,
                   "median_lateness_ns": 40_000, "step_cost_ns": 90_000, "step_ns": 215_769_424,
                   "method": "first-order", "held_ns": 18_000_000, "fair_held_ns": 2_250_000,
                   "mean_step_cost_ns": 60_000}]
    lines = fleet_lines(headline, summary, stragglers)
    assert lines[0] == ("8 ranks, 1,200 matched collectives; arrival skew median 20 us, p99 1.5 ms; "
                        "total wait 3 s")
    # the clock finding's caveat beside the figures it concerns, then again with the findings
    assert lines[1] == ("  clock offset suspected: 2 ops ended more than 1 us before their collective's last member "
                        "arrived, so the skew, waits and arrival order here carry an offset between the ranks' clocks "
                        "(finding below)")
    lines = lines[:1] + lines[2:]
    assert lines[1] == "  all_reduce: 1,200 collectives, skew median 20 us, comm median 400 us, busbw median 12.5 GB/s"
    assert lines[2] == "stragglers by arrival order: rank 5, rank 1021"
    # one line per named rank, in the vote's order; rank 3 is in the table but not named
    assert lines[3] == ("  rank 5 (node n0): last in 900 collectives (75% of its collectives, 12.5% expected), "
                        "median 1.913 us late; step cost 11.54 us of a 215.8 ms step (replay)")
    # a folder with the time test's columns, and a mean step cost other than the median
    assert lines[4] == ("  rank 1021: last in 200 collectives (50% of its collectives, 12.5% expected), median 40 us "
                        "late; kept its collectives waiting 18 ms in all (2.25 ms its fair share); step cost 90 us in "
                        "the median step, 60 us on average, of a 215.8 ms step (first-order)")
    assert lines[5:] == ["finding clock_offset_suspected: 2 (rank 3, ops 2)", "finding p2p_not_matched: 4"]


def test_no_straggler_is_said_plainly() -> None:
    headline = {"ranks": 2, "collectives": 0, "skew_median_ns": None, "skew_p99_ns": None, "wait_total_ns": 0,
                "straggler_ranks": [], "ops": []}
    assert fleet_lines(headline, {}) == ["2 ranks, 0 matched collectives; arrival skew median -, p99 -; total wait 0 us",
                                         "stragglers by arrival order: none named"]


def test_one_rank_is_counted_in_the_singular() -> None:
    headline = {"ranks": 1, "collectives": 0, "skew_median_ns": None, "skew_p99_ns": None, "wait_total_ns": 0,
                "straggler_ranks": [], "ops": []}
    assert fleet_lines(headline, {})[0] == "1 rank, 0 matched collectives; arrival skew median -, p99 -; total wait 0 us"


def test_a_straggler_in_doubt_says_why() -> None:
    headline = {"ranks": 2, "collectives": 60, "skew_median_ns": 5e14, "skew_p99_ns": 5e14, "wait_total_ns": 3e16,
                "straggler_ranks": [1], "straggler_ranks_in_doubt": [1], "ops": []}
    row = {"rank": 1, "node": "", "times_last": 60, "share_last": 1.0, "expected_share": 0.5,
           "median_lateness_ns": 3.6e14, "step_cost_ns": 7e15, "step_ns": 161_900_000, "method": "first-order",
           "clock_suspect_last": 58, "in_doubt": True}
    lines = fleet_lines(headline, {}, [row])
    assert lines[1] == "stragglers by arrival order: rank 1 (in doubt: clock offset)"
    assert lines[2].endswith("(first-order); IN DOUBT: at 58 of the 60 collectives it was last at, another member's "
                             "op ended more than 1 us before it arrived, impossible on one clock (finding "
                             "clock_offset_suspected), and without them the vote does not name it: its lateness may "
                             "be a clock offset between ranks")
    assert "IN DOUBT" not in fleet_lines(dict(headline, straggler_ranks_in_doubt=[]), {}, [dict(row, in_doubt=False)])[2]
