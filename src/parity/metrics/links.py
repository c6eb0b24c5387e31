"""Named formulas of the link preflight and of busbw drift over time (docs/definitions.md,
"Link preflight" and "Drift of busbw").

Preflight, per pair of ranks ``(a, b)`` timed by ping-pong (``a`` sends ``S`` bytes, ``b`` sends
them back; ``t_rt`` the round trip, the maximum over ranks per iteration, then its median):

- one-way time ``t = t_rt / 2``; bandwidth ``bw = S / t`` (B/s); latency is ``t`` of a tiny ``S``;
- a *link* is a pair of nodes (``(A, A)``: the ranks within node ``A``; ``(A, B)``: between
  nodes), its bandwidth the median over the rank pairs it holds;
- a link is *slow* when ``bw < fraction · median over links of bw`` (``fraction`` 0.5 unless
  told), so one slow link among fast ones is named, however many rank pairs it carries.

Drift, of a run that repeats one size for a duration: per window ``w`` (the iterations that
start in ``[k·W, (k+1)·W)``, seconds of wall clock since the first timed one; runs stored
without start stamps use cumulative timed seconds), the median, p1 and p99 of busbw;

- ``drift_spread = (max_w m_w - min_w m_w) / median_w m_w`` over the window medians ``m_w``;
- ``drift_last_first = m_last / m_first - 1`` (negative: the link got slower).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from parity.model.errors import ParityError

SLOW_FRACTION = 0.5


def one_way_bandwidth(size_bytes: float, round_trip_s: float) -> float | None:
    """``bw = S / (t_rt / 2)`` in B/s; None when the round trip is not positive.
    Example: 1 MB there and back in 2 ms is 1e6 / 1e-3 = 1e9 B/s."""
    if round_trip_s <= 0 or size_bytes < 0:
        return None
    return float(size_bytes) / (round_trip_s / 2.0)


def link_key(node_a: str, node_b: str) -> str:
    """A link's name: its two nodes sorted, ``A<->B`` (``A<->A`` within a node)."""
    first, second = sorted((str(node_a), str(node_b)))
    return f"{first}<->{second}"


def slow_links(bandwidths_bps: Mapping[str, float], *, fraction: float = SLOW_FRACTION) -> list[str]:
    """The links whose bandwidth is below ``fraction`` of the median over all links, slowest
    first (module docstring). Example: {AA: 10e9, BB: 10e9, AB: 0.125e9}, median 10e9,
    threshold 5e9: ["AB"]. One link alone is never slow (nothing to compare it with)."""
    if not 0 < fraction < 1:
        raise ParityError(f"the slow-link fraction must lie in (0, 1), not {fraction}")
    if len(bandwidths_bps) < 2:
        return []
    median = statistics.median(bandwidths_bps.values())
    slow = [name for name, value in bandwidths_bps.items() if value < fraction * median]
    return sorted(slow, key=lambda name: bandwidths_bps[name])


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between order statistics. Example: p1 of 1..101
    is 2."""
    ordered = sorted(values)
    if not ordered:
        raise ParityError("no values to take a percentile of")
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True, kw_only=True)
class Window:
    """One window of a duration run: its start (seconds since the first timed iteration),
    iterations, and the median, p1 and p99 of busbw over them, B/s."""

    start_s: float
    iterations: int
    median_bps: float
    p1_bps: float
    p99_bps: float


def windows(starts_s: Sequence[float], rates_bps: Sequence[float], *, window_s: float,
            end_s: float | None = None) -> list[Window]:
    """Cut iterations into windows of ``window_s`` seconds by their start (module docstring):
    window ``k`` holds the iterations that start in ``[k·W, (k+1)·W)``, empty windows are left
    out, and a last window that spans under half a window (to ``end_s``, the end of the last
    iteration; its start where not given) joins the one before it. Example: starts
    (0, 1, 2, 3) s, window 2 s, end 4 s give two windows of two iterations; starts (0, 1, 2),
    end 2.5 s give one window of three."""
    if window_s <= 0:
        raise ParityError(f"a window must be longer than 0 s, not {window_s}")
    if len(starts_s) != len(rates_bps) or not starts_s:
        raise ParityError("windows need one rate per timed iteration, and at least one")
    if any(b < a for a, b in zip(starts_s, starts_s[1:])):
        raise ParityError("iteration starts must not decrease")
    groups: list[list[int]] = []
    starts: list[float] = []
    for index, start in enumerate(starts_s):
        k = int(start // window_s)
        if not starts or k * window_s > starts[-1]:
            groups.append([])
            starts.append(k * window_s)
        groups[-1].append(index)
    end = starts_s[-1] if end_s is None else max(end_s, starts_s[-1])
    if len(groups) > 1 and end - starts[-1] < window_s / 2:
        groups[-2].extend(groups.pop())
        starts.pop()
    return [_window(start, [rates_bps[i] for i in group]) for start, group in zip(starts, groups)]


def cumulative_starts(times_s: Sequence[float]) -> list[float]:
    """Each iteration's start in cumulative timed seconds, the clock of a run stored without
    start stamps. Example: times (1, 2, 0.5) give starts (0, 1, 3)."""
    starts, elapsed = [], 0.0
    for seconds in times_s:
        starts.append(elapsed)
        elapsed += seconds
    return starts


def _window(start_s: float, rates: list[float]) -> Window:
    return Window(start_s=start_s, iterations=len(rates), median_bps=statistics.median(rates),
                  p1_bps=percentile(rates, 1.0), p99_bps=percentile(rates, 99.0))


def drift_spread(window_medians: Sequence[float]) -> float:
    """``(max m_w - min m_w) / median m_w`` (module docstring). Example: (10, 8, 9) -> 2/9."""
    if not window_medians:
        raise ParityError("drift needs at least one window")
    middle = statistics.median(window_medians)
    return (max(window_medians) - min(window_medians)) / middle if middle > 0 else 0.0


def drift_last_first(window_medians: Sequence[float]) -> float:
    """``m_last / m_first - 1`` (module docstring). Example: (10, 9, 5) -> -0.5."""
    if not window_medians or window_medians[0] <= 0:
        raise ParityError("drift needs a first window with a positive median")
    return window_medians[-1] / window_medians[0] - 1.0
