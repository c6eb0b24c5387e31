"""Decode formulas on hand-computed cases."""

import pytest

from parity.metrics.decode import (
    DecodePoint,
    interactivity_per_user,
    offline_tpot_s,
    pareto_front,
    request_tpot_s,
    throughput_at_target,
    throughput_per_concurrency,
    tokens_per_s_per_card,
)


def test_request_tpot_is_vllms_definition():
    assert request_tpot_s(1.0, 0.1, 10) == pytest.approx(0.1)
    assert request_tpot_s(1.0, 0.1, 1) is None


def test_offline_tpot_divides_the_step_by_accepted_tokens():
    assert offline_tpot_s(0.009, 1.8) == pytest.approx(0.005)
    with pytest.raises(ValueError):
        offline_tpot_s(0.0)


def test_tokens_per_card_and_both_interactivities():
    assert tokens_per_s_per_card(64, 0.005, 4) == pytest.approx(3200.0)
    assert interactivity_per_user(0.005) == pytest.approx(200.0)
    assert throughput_per_concurrency(6400.0, 32) == pytest.approx(200.0)


def test_pareto_front_drops_dominated_points():
    points = [DecodePoint(0.001, 100), DecodePoint(0.002, 90), DecodePoint(0.003, 300), DecodePoint(0.003, 250)]
    front = pareto_front(points)
    assert [(p.tpot_s, p.throughput) for p in front] == [(0.001, 100), (0.003, 300)]


def test_at_target_interpolates_inside_and_refuses_outside():
    front = pareto_front([DecodePoint(0.002, 1000), DecodePoint(0.006, 3000)])
    inside = throughput_at_target(front, 0.005)
    assert inside.status == "interpolated" and inside.value == pytest.approx(2500.0)
    assert throughput_at_target(front, 0.002).status == "measured"
    below = throughput_at_target(front, 0.001)
    above = throughput_at_target(front, 0.010)
    assert below.value is None and below.status == "not reached" and "below" in below.reason
    assert above.value is None and above.status == "not reached" and "above" in above.reason
    assert above.to_dict()["value"] == "not reached"
    # the front's last point is its highest throughput, which need not be the slowest point measured:
    # batch 1 (4.23 ms, 236) is beaten by batch 2 (4.12 ms, 486); a 5 ms target is met by both
    noisy = pareto_front([DecodePoint(0.00423, 236.0, label=1), DecodePoint(0.00412, 486.0, label=2)])
    past = throughput_at_target(noisy, 0.005)
    assert past.value is None and past.status == "not reached"
    assert "at least 486 tok/s (batch 2, TPOT 4.12 ms)" in past.reason and "slowest measured" not in past.reason
    assert throughput_at_target([], 0.005).status == "not reached"
