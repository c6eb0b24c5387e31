"""The link preflight's slow-link rule and the drift of busbw (parity.metrics.links), by hand."""

from __future__ import annotations

import pytest

from parity.metrics.links import (cumulative_starts, drift_last_first, drift_spread, link_key, one_way_bandwidth,
                                  percentile, slow_links, windows)
from parity.model.errors import ParityError


def test_one_way_bandwidth_is_size_over_half_the_round_trip() -> None:
    assert one_way_bandwidth(1e6, 2e-3) == pytest.approx(1e9)
    assert one_way_bandwidth(1e6, 0.0) is None


def test_a_shaped_link_among_fast_ones_is_slow_and_the_rest_are_not() -> None:
    # median of (10, 10, 0.125) GB/s is 10; threshold 0.5·10 = 5: only the shaped link
    links = {"A<->A": 10e9, "B<->B": 10e9, "A<->B": 0.125e9}
    assert slow_links(links) == ["A<->B"]
    assert slow_links({"A<->A": 10e9, "B<->B": 6e9}) == []  # 6 >= 0.5·8
    assert slow_links({"A<->A": 10e9, "B<->B": 3e9}) == ["B<->B"]  # 3 < 0.5·6.5
    assert slow_links({"A<->B": 1e6}) == []  # nothing to compare with
    with pytest.raises(ParityError, match="fraction"):
        slow_links(links, fraction=1.5)


def test_link_keys_are_sorted_pairs_of_nodes() -> None:
    assert link_key("b", "a") == "a<->b" == link_key("a", "b")


def test_windows_cut_by_iteration_start() -> None:
    cut = windows([0.0, 1.0, 2.0, 3.0], [4.0, 2.0, 8.0, 6.0], window_s=2.0, end_s=4.0)
    assert [w.iterations for w in cut] == [2, 2] and [w.start_s for w in cut] == [0.0, 2.0]
    assert [w.median_bps for w in cut] == [3.0, 7.0]
    assert cut[0].p1_bps == pytest.approx(2.0 + 2.0 * 0.01)  # 2 + (4 - 2)·0.01
    assert cut[1].p99_bps == pytest.approx(6.0 + 2.0 * 0.99)
    # a last window spanning under half a window (2.0 to 2.5 s) joins the one before
    assert [w.iterations for w in windows([0.0, 1.0, 2.0], [1.0, 1.0, 1.0], window_s=2.0, end_s=2.5)] == [3]
    # an empty window (nothing starts in [2, 4)) is left out; the next keeps its own start
    gap = windows([0.0, 1.0, 4.5, 5.0], [1.0, 1.0, 2.0, 2.0], window_s=2.0, end_s=6.0)
    assert [(w.start_s, w.iterations) for w in gap] == [(0.0, 2), (4.0, 2)]
    with pytest.raises(ParityError, match="must not decrease"):
        windows([1.0, 0.5], [1.0, 1.0], window_s=1.0)


def test_cumulative_starts_of_a_run_stored_without_stamps() -> None:
    assert cumulative_starts([1.0, 2.0, 0.5]) == [0.0, 1.0, 3.0]
    # the old clock: times (1, 1, 1, 1) cut by 2 s windows give two windows of two
    starts = cumulative_starts([1.0, 1.0, 1.0, 1.0])
    assert [w.iterations for w in windows(starts, [1.0] * 4, window_s=2.0, end_s=4.0)] == [2, 2]


def test_drift_figures_by_hand() -> None:
    assert drift_spread([10.0, 8.0, 9.0]) == pytest.approx(2.0 / 9.0)
    assert drift_last_first([10.0, 9.0, 5.0]) == pytest.approx(-0.5)
    assert percentile(list(range(1, 102)), 1.0) == pytest.approx(2.0)
