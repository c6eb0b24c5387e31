"""Find a repeating block in a sequence of kernel names (training steps, decoder layers).

A model's step (or a layer inside it) launches the same kernels in the same order every time,
so its name sequence is a block repeated R times. :func:`find_repeats` finds it without a
Python loop over kernels: among names that occur the same number of times ``c >= min_repeats``,
an *anchor* name (one that occurs once per block) splits the sequence into ``c`` segments; the
candidate is accepted when most segments are identical name for name. Among accepted
candidates the one that explains the most kernels wins (ties: the longer block), so a whole
training step beats a layer inside it when both repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_IDENTICAL_FRACTION = 0.8  # share of segments that must equal the most common segment
MAX_CANDIDATES = 12  # distinct occurrence counts tried, most common first


@dataclass(frozen=True, kw_only=True)
class Repeat:
    """A block repeated in a sequence: ``starts[i]`` is the index where repetition ``i`` begins.

    Repetition ``i`` spans ``starts[i] .. starts[i+1]-1``; the last one spans ``length`` items.
    ``identical`` is the fraction of repetitions equal to the most common one.
    """

    anchor: int  # the name id that opens every repetition
    starts: np.ndarray  # int64 indices into the sequence
    length: int  # items in the most common repetition
    identical: float

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def coverage(self) -> int:
        """Items explained: repetitions times block length."""
        return self.count * self.length


def _segments_identical(seq: np.ndarray, starts: np.ndarray, length: int) -> float:
    """Fraction of segments ``seq[s : s+length]`` equal to the most common such segment."""
    usable = starts[starts + length <= len(seq)]
    if len(usable) == 0:
        return 0.0
    block = seq[usable[:, None] + np.arange(length)[None, :]]  # (segments, length)
    _, inverse, counts = np.unique(block, axis=0, return_inverse=True, return_counts=True)
    return float(counts.max()) / len(starts)


def find_repeats(
    seq: np.ndarray, *, min_repeats: int = 3, min_length: int = 2, max_length: int = 200_000
) -> Repeat | None:
    """The repeated block that explains most of ``seq`` (int name ids), or ``None``.

    A candidate anchor is the first-occurring name among those with exactly ``c`` occurrences;
    its occurrences must be spaced by a common gap (the block length) for at least
    :data:`MIN_IDENTICAL_FRACTION` of segments, and those segments must be identical.
    """
    seq = np.asarray(seq, dtype=np.int64)
    n = len(seq)
    if n < 2 * min_repeats:
        return None
    counts = np.bincount(seq)
    values, how_many = np.unique(counts[counts >= min_repeats], return_counts=True)
    if len(values) == 0:
        return None
    # try the occurrence counts that the most names share (one per block is the common case)
    order = np.argsort(-how_many * values, kind="stable")[:MAX_CANDIDATES]
    first_seen = np.full(len(counts), n, dtype=np.int64)
    np.minimum.at(first_seen, seq, np.arange(n))
    best: Repeat | None = None
    for c in values[order].tolist():
        names = np.flatnonzero(counts == c)
        anchor = int(names[np.argmin(first_seen[names])])
        starts = np.flatnonzero(seq == anchor)
        gaps = np.diff(starts)
        if len(gaps) == 0:
            continue
        gap_values, gap_counts = np.unique(gaps, return_counts=True)
        length = int(gap_values[np.argmax(gap_counts)])
        if length < min_length or length > max_length or gap_counts.max() < MIN_IDENTICAL_FRACTION * len(gaps):
            continue
        identical = _segments_identical(seq, starts, length)
        if identical < MIN_IDENTICAL_FRACTION:
            continue
        candidate = Repeat(anchor=anchor, starts=starts, length=length, identical=identical)
        if best is None or (candidate.coverage, candidate.length) > (best.coverage, best.length):
            best = candidate
    return best


def _runs_of_equal(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start index and length of each run of equal consecutive values."""
    if len(values) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    change = np.flatnonzero(np.diff(values) != 0) + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [len(values)])))
    return starts, lengths


def find_block_run(seq: np.ndarray, *, min_repeats: int = 2, min_length: int = 2) -> Repeat | None:
    """The longest stretch of one block repeated back to back (a model's layers), or ``None``.

    Unlike :func:`find_repeats` the block need not span the whole sequence: a forward pass of
    L identical layers followed by a backward pass is found from the forward layers' anchor
    occurrences whose gaps stay equal, the repetitions being checked name for name. The best
    candidate explains the most kernels (ties: the longer block).
    """
    seq = np.asarray(seq, dtype=np.int64)
    n = len(seq)
    if n < min_repeats * min_length:
        return None
    counts = np.bincount(seq)
    values, how_many = np.unique(counts[counts >= min_repeats], return_counts=True)
    order = np.argsort(-how_many * values, kind="stable")[:MAX_CANDIDATES]
    best: Repeat | None = None
    for c in values[order].tolist():
        for anchor in np.flatnonzero(counts == c)[:4].tolist():
            candidate = _best_run(seq, anchor, min_repeats, min_length)
            if candidate and (best is None or (candidate.coverage, candidate.length) > (best.coverage, best.length)):
                best = candidate
    return best


def _best_run(seq: np.ndarray, anchor: int, min_repeats: int, min_length: int) -> Repeat | None:
    positions = np.flatnonzero(seq == anchor)
    gaps = np.diff(positions)
    run_starts, run_lengths = _runs_of_equal(gaps)
    best: Repeat | None = None
    for i in np.argsort(-run_lengths * gaps[run_starts] if len(gaps) else [], kind="stable")[:3].tolist():
        length = int(gaps[run_starts[i]])
        first = positions[run_starts[i] : run_starts[i] + run_lengths[i] + 1]
        if length < min_length:
            continue
        if first[-1] + length > len(seq):
            first = first[:-1]  # the last repetition is cut off by the end of the sequence
        if len(first) < min_repeats:
            continue
        block = seq[first[:, None] + np.arange(length)[None, :]]
        same = np.all(block == block[0], axis=1)
        k = int(np.argmin(same)) if not same.all() else len(same)  # leading identical repetitions
        if k < min_repeats:
            continue
        candidate = Repeat(anchor=anchor, starts=first[:k], length=length, identical=1.0)
        if best is None or candidate.coverage > best.coverage:
            best = candidate
    return best
