"""Named trace metrics: each is one function whose docstring gives its formula (docs/definitions.md, Traces).

Inputs are interval arrays in ns (see :mod:`parity.trace.intervals`) already clipped to the
window ``W``; outputs are ns or dimensionless ratios. Invariants (busy <= |W|, overlap <= each
side) are asserted, because a violated one means a wrong number, not a slow one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parity.trace.intervals import (
    concurrency_histogram,
    intersection_length,
    pairwise_intersection_lengths,
)

Pair = tuple[np.ndarray, np.ndarray]


def busy_ns(streams_at_once_ns: np.ndarray, window_ns: int) -> int:
    """``|∪_s busy(s)| = |W| - h[0]``: the device's union busy time in the window, ns, where
    ``h[0]`` (:func:`streams_at_once`) is the window time during which no stream runs."""
    busy = window_ns - int(streams_at_once_ns[0])
    assert 0 <= busy <= window_ns, f"busy {busy} ns outside the window {window_ns} ns"
    return busy


def busy_fraction(busy: int, window_ns: int) -> float:
    """``busy(s) / |W|``: the share of the window a stream is busy ("busy 88.8% of the time")."""
    return busy / window_ns if window_ns > 0 else 0.0


def share_of_summed(busy: int, busy_all: Sequence[int]) -> float:
    """``busy(s) / Σ_t busy(t)``: a stream's share of summed device time (the "72.6%" figure)."""
    total = int(sum(busy_all))
    return busy / total if total > 0 else 0.0


def mean_concurrency(busy_all: Sequence[int], window_ns: int) -> float:
    """``Σ_s busy(s) / |W|``: how many streams run at once on average over the window."""
    return int(sum(busy_all)) / window_ns if window_ns > 0 else 0.0


def idle_ns(device_busy: int, window_ns: int) -> int:
    """``|W| - |∪_s busy(s)|``: window time during which no stream of the device runs."""
    assert 0 <= device_busy <= window_ns
    return window_ns - device_busy


def overlap_ns(a: Pair, b: Pair) -> int:
    """``|A ∩ B|``: time during which both interval sets are active (pairwise stream overlap,
    compute/communication overlap). :func:`intersection_length` checks ``0 <= |A ∩ B| <=
    min(|A|, |B|)`` with the lengths it already has."""
    return intersection_length(a, b)


def pairwise_overlap_ns(sets: Sequence[Pair]) -> np.ndarray:
    """``O[a, b] = |S_a ∩ S_b|``: the time sets ``a`` and ``b`` (streams; compute and
    communication) are busy together, for every pair of merged sets at once (``O[a, a]`` is
    set ``a``'s busy time); each entry equals :func:`overlap_ns` of the pair."""
    return pairwise_intersection_lengths(sets)


def exposed_ns(comm_ns: int, overlap_ns: int) -> int:
    """``|C \\ K| = |C| - |C ∩ K|``: exposed communication, the communication time no compute
    hides, from the communication time and its overlap with compute (:func:`overlap_ns`)."""
    assert 0 <= overlap_ns <= comm_ns, f"overlap {overlap_ns} ns exceeds communication {comm_ns} ns"
    return comm_ns - overlap_ns


def streams_at_once(sets: Sequence[Pair], lo: int, hi: int, *, merged: bool = False) -> np.ndarray:
    """``h[c]`` = ns of ``[lo, hi)`` during which exactly ``c`` streams are busy, ``c = 0..S``.

    ``h[0]`` is the idle time and ``Σ_c c·h[c] / |W|`` equals :func:`mean_concurrency`;
    ``merged=True`` when each set is already merged and inside ``[lo, hi)``.
    """
    return concurrency_histogram(sets, lo, hi, merged=merged)


def free_ns(span_ns: int, computing_or_communication_ns: int) -> int:
    """Ascend ``Free = span - |Computing ∪ Communication|`` of a step, ns."""
    assert 0 <= computing_or_communication_ns <= span_ns
    return span_ns - computing_or_communication_ns
