"""Repeated-block search: hand-made cases and seeded random sequences against plain references.

The references below restate the search rules with Python lists, one candidate at a time and
in the documented order, so any shortcut in :mod:`parity.trace.repeats` (batched anchors,
pruning, cheaper identity checks) must give exactly the same Repeat.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from parity.trace import repeats
from parity.trace.repeats import (
    MAX_CANDIDATES,
    MIN_IDENTICAL_FRACTION,
    Repeat,
    _leading_copies,
    _segments_identical,
    find_block_run,
    find_repeats,
)


def _tried_counts(seq: list[int], min_repeats: int) -> list[tuple[int, list[int]]]:
    """(count, names with it by id) for the counts tried, most items explained first."""
    counts = Counter(seq)
    groups: dict[int, list[int]] = {}
    for name in sorted(counts):
        if counts[name] >= min_repeats:
            groups.setdefault(counts[name], []).append(name)
    ordered = sorted(sorted(groups), key=lambda c: -c * len(groups[c]))  # stable: ties by count
    return [(c, groups[c]) for c in ordered[:MAX_CANDIDATES]]


def reference_repeats(seq: list[int], min_repeats: int = 3, min_length: int = 2) -> tuple | None:
    if len(seq) < 2 * min_repeats:
        return None
    best = None
    for c, names in _tried_counts(seq, min_repeats):
        anchor = min(names, key=seq.index)
        starts = [i for i, x in enumerate(seq) if x == anchor]
        gaps = Counter(b - a for a, b in zip(starts, starts[1:]))
        if not gaps:
            continue
        top = max(gaps.values())
        length = min(g for g, k in gaps.items() if k == top)
        if length < min_length or top < MIN_IDENTICAL_FRACTION * (len(starts) - 1):
            continue
        segments = Counter(tuple(seq[s : s + length]) for s in starts if s + length <= len(seq))
        identical = max(segments.values(), default=0) / len(starts)
        if identical < MIN_IDENTICAL_FRACTION:
            continue
        if best is None or (c * length, length) > (best[0] * best[2], best[2]):
            best = (c, starts, length, anchor, identical)
    return None if best is None else (best[3], best[1], best[2], best[4])


def reference_block_run(seq: list[int], min_repeats: int = 2, min_length: int = 2) -> tuple | None:
    if len(seq) < min_repeats * min_length:
        return None
    best = None
    for _, names in _tried_counts(seq, min_repeats):
        for anchor in names[:4]:
            pos = [i for i, x in enumerate(seq) if x == anchor]
            runs = []  # (first index into pos, gaps in the run, gap)
            for j in range(len(pos) - 1):
                gap = pos[j + 1] - pos[j]
                if runs and runs[-1][0] + runs[-1][1] == j and runs[-1][2] == gap:
                    runs[-1][1] += 1
                else:
                    runs.append([j, 1, gap])
            mine = None
            for j, size, gap in sorted(runs, key=lambda r: -r[1] * r[2])[:3]:
                first = pos[j : j + size + 1]
                if gap < min_length:
                    continue
                if first[-1] + gap > len(seq):
                    first = first[:-1]
                if len(first) < min_repeats:
                    continue
                k = 1
                while k < len(first) and seq[first[k] : first[k] + gap] == seq[first[0] : first[0] + gap]:
                    k += 1
                if k >= min_repeats and (mine is None or k * gap > mine[1] * mine[2]):
                    mine = (first[:k], k, gap)
            if mine and (best is None or (mine[1] * mine[2], mine[2]) > (best[1] * best[2], best[2])):
                best = (*mine, anchor)
    return None if best is None else (best[3], best[0], best[2], 1.0)


def _as_tuple(rep: Repeat | None) -> tuple | None:
    return None if rep is None else (rep.anchor, rep.starts.tolist(), rep.length, rep.identical)


def _planted(rng: random.Random) -> list[int]:
    """Random blocks repeated back to back (some copies with one name changed) between noise."""
    alphabet = rng.randint(1, 10)
    seq: list[int] = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.6:
            block = [rng.randrange(alphabet) for _ in range(rng.randint(1, 7))]
            for _ in range(rng.randint(1, 9)):
                copy = list(block)
                if rng.random() < 0.15:
                    copy[rng.randrange(len(copy))] = rng.randrange(alphabet)
                seq += copy
        else:
            seq += [rng.randrange(alphabet) for _ in range(rng.randint(0, 9))]
    return seq


@pytest.mark.parametrize("small", [0, 10**9], ids=["numpy", "lists"])
@pytest.mark.parametrize("seed", range(3))
def test_random_sequences_match_the_plain_reference(seed: int, small: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(repeats, "SMALL", small)  # every sequence through one of the two paths
    rng = random.Random(seed)
    for _ in range(300):
        seq = _planted(rng)
        arr = np.array(seq, dtype=np.int64)
        for min_repeats in (2, 3):
            assert _as_tuple(find_repeats(arr, min_repeats=min_repeats)) == reference_repeats(seq, min_repeats)
            assert _as_tuple(find_block_run(arr, min_repeats=min_repeats)) == reference_block_run(seq, min_repeats)
        assert _as_tuple(find_block_run(arr, min_length=1)) == reference_block_run(seq, min_length=1)


def test_long_sequence_matches_the_plain_reference() -> None:
    assert repeats.SMALL < 2040  # this one goes through the numpy path
    rng = random.Random(7)
    layer = [rng.randrange(40) for _ in range(23)]
    step = [50] + layer * 12 + [rng.randrange(40) for _ in range(90)] + [51]
    seq = step * 5 + [rng.randrange(60) for _ in range(200)]
    arr = np.array(seq)
    assert _as_tuple(find_repeats(arr)) == reference_repeats(seq)
    assert _as_tuple(find_block_run(arr)) == reference_block_run(seq)
    assert find_block_run(arr).length == 23


def test_block_run_prefers_the_longer_block_on_equal_coverage() -> None:
    # 1 2 repeated 6 times (12 items) and 3 4 5 6 repeated 3 times (12 items): the longer wins
    seq = np.array([1, 2] * 6 + [3, 4, 5, 6] * 3)
    rep = find_block_run(seq)
    assert (rep.anchor, rep.length, rep.count, rep.starts.tolist()) == (3, 4, 3, [12, 16, 20])


def test_block_run_cut_off_by_the_end_is_not_counted() -> None:
    rep = find_block_run(np.array([7, 1, 2, 1, 2, 1]))
    assert (rep.anchor, rep.length, rep.starts.tolist()) == (1, 2, [1, 3])


def test_segments_identical_finds_a_majority_that_is_not_the_first_segment() -> None:
    seq = np.array([1, 9, 1, 2, 1, 2, 1, 2, 1, 8])
    # segments of length 2 at 0, 2, 4, 6, 8: (1 9) (1 2) (1 2) (1 2) (1 8) -> 3 of 5
    assert _segments_identical(seq, np.array([0, 2, 4, 6, 8]), 2) == 3 / 5
    # a segment cut off by the end counts against the fraction
    assert _segments_identical(seq, np.array([2, 4, 9]), 2) == 2 / 3
    assert _segments_identical(seq, np.array([9]), 2) == 0.0


def test_leading_copies_stops_at_the_first_differing_block() -> None:
    seq = np.array([5, 1, 2, 1, 2, 1, 3, 1, 2])
    assert _leading_copies(seq, 1, 2, 4) == 2
    assert _leading_copies(seq, 1, 2, 2) == 2
    assert _leading_copies(seq, 1, 2, 1) == 1
