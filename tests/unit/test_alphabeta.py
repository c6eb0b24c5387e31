"""The α-β fit and its prediction check (parity.metrics.alphabeta), on hand-computed cases."""

from __future__ import annotations

import pytest

from parity.metrics.alphabeta import Point, check_predictions, fit_alpha_beta, weighted_line
from parity.model.errors import ParityError


def test_weighted_line_matches_the_hand_solved_normal_equations() -> None:
    # x (0, 1, 2), t (1, 3, 4), w = 1/t = (1, 1/3, 1/4); times 12: W 19, X 10, XX 16, T 36, XT 36;
    # det 19·16 - 10² = 204; α = (36·16 - 10·36)/204 = 216/204, s = (19·36 - 10·36)/204 = 324/204.
    alpha, slope = weighted_line([0.0, 1.0, 2.0], [1.0, 3.0, 4.0])
    assert alpha == pytest.approx(216 / 204, rel=1e-12)
    assert slope == pytest.approx(324 / 204, rel=1e-12)


def _points(alpha: float, beta: float, sizes: list[int], *, op: str = "all_reduce", world: int = 4) -> list[Point]:
    factor = 2 * (world - 1) / world
    return [Point(op=op, dimension="inter", world_size=world, size_bytes=s, time_s=alpha + s * factor / beta,
                  run_id="r1") for s in sizes]


def test_exact_points_give_back_alpha_and_beta_with_a_collapsed_ci() -> None:
    fit = fit_alpha_beta(_points(20e-6, 1.25e8, [2**k for k in range(10, 23, 2)]))
    assert fit.alpha_s == pytest.approx(20e-6, rel=1e-9)
    assert fit.beta_bps == pytest.approx(1.25e8, rel=1e-9)
    assert fit.beta_ci_bps == pytest.approx((1.25e8, 1.25e8), rel=1e-6)
    assert fit.points == 7 and fit.world_sizes == (4,) and fit.runs == ("r1",)


def test_a_fit_predicts_another_rank_count_through_the_bus_factor() -> None:
    fit = fit_alpha_beta(_points(0.0, 1e9, [2**20, 2**22], world=2))
    # on 4 ranks all_reduce of 1e9 B moves 1e9 · 1.5 bus bytes: 1.5 s at 1e9 B/s
    assert fit.predict(op="all_reduce", size_bytes=1e9, world_size=4) == pytest.approx(1.5)


def test_the_check_reports_relative_errors_by_hand() -> None:
    fit = fit_alpha_beta([Point(op="sendrecv", dimension="intra", world_size=2, size_bytes=s, time_s=s / 1e9)
                          for s in (1e6, 2e6)])
    held = [Point(op="sendrecv", dimension="intra", world_size=2, size_bytes=1e9, time_s=1.1),
            Point(op="sendrecv", dimension="intra", world_size=2, size_bytes=2e9, time_s=2.0)]
    check = check_predictions(fit, held, tolerance=0.05)
    assert check.predictions[0].relative_error == pytest.approx(1 / 1.1 - 1)  # -0.0909
    assert check.predictions[1].relative_error == pytest.approx(0.0, abs=1e-9)
    assert check.max_abs_error == pytest.approx(1 - 1 / 1.1)
    assert check.within is False
    assert check_predictions(fit, held, tolerance=0.10).within is True


def test_a_fit_and_a_check_count_the_points_in_doubt() -> None:
    clean = _points(0.0, 1e9, [2**20, 2**22, 2**24])
    doubtful = [Point(op="all_reduce", dimension="inter", world_size=4, size_bytes=2**26, time_s=0.1, doubts=("contended",)),
                Point(op="all_reduce", dimension="inter", world_size=4, size_bytes=2**27, time_s=0.2,
                      doubts=("contended", "invalid"))]  # fmt: skip
    fit = fit_alpha_beta(clean + doubtful[:1])
    assert fit.doubtful_points == 1 and fit.doubts == ("contended",)
    assert fit.to_dict()["doubtful_points"] == 1 and fit.to_dict()["doubts"] == ["contended"]
    assert fit_alpha_beta(clean).doubtful_points == 0 and fit_alpha_beta(clean).doubts == ()
    check = check_predictions(fit_alpha_beta(clean), doubtful[1:] + clean[:1])
    assert check.doubtful_points == 1 and check.to_dict()["predictions"][0]["doubts"] == ["contended", "invalid"]


def test_bad_inputs_are_refused_in_one_line() -> None:
    with pytest.raises(ParityError, match="two or more sizes"):
        weighted_line([1.0, 1.0], [1.0, 2.0])
    with pytest.raises(ParityError, match="one collective and dimension"):
        fit_alpha_beta(_points(0, 1e9, [1, 2]) + _points(0, 1e9, [1, 2], op="all_gather"))
    with pytest.raises(ParityError, match="do not grow"):
        fit_alpha_beta([Point(op="sendrecv", dimension="x", world_size=2, size_bytes=s, time_s=t)
                        for s, t in ((1, 2.0), (2, 1.0))])


def test_calculon_efficiency_curve_by_hand() -> None:
    from parity.export.simulators import calculon_matrix, calculon_memory, efficiency_curve

    # [64, inf): 0.9; [1, 64): median(0.5, 0.7) = 0.6; [0.1, 1): none; [0, 0.1): 0.2.
    points = [(100.0, 0.9), (2.0, 0.5), (3.0, 0.7), (0.01, 0.2)]
    assert efficiency_curve(points, (64.0, 1.0, 0.1, 0.0)) == [[64.0, 0.9], [1.0, 0.6], [0.0, 0.2]]
    # The smallest bucket measured stands for everything below it; an efficiency over 1 is capped.
    assert efficiency_curve([(100.0, 1.2), (2.0, 0.5)], (64.0, 1.0, 0.1, 0.0)) == [[64.0, 1.0], [0.0, 0.5]]
    matrix = calculon_matrix([(128e9, 0.8e12), (2e9, 0.4e12)], peak_flop_per_s=1e12, dtype="bfloat16")
    assert matrix == {"tflops": 1.0, "gflops_efficiency": {"bfloat16": [[64.0, 0.8], [0.0, 0.4]]}}
    memory = calculon_memory([(200e6, 90e9), (5e6, 60e9)], bandwidth_bps=100e9, capacity_bytes=80 * 2**30)
    assert memory == {"GBps": 100.0, "MB_efficiency": [[100.0, 0.9], [0.0, 0.6]], "GiB": 80.0}
