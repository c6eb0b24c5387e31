"""Find a repeating block in a sequence of kernel names (training steps, decoder layers).

A model's step (or a layer inside it) launches the same kernels in the same order every time,
so its name sequence is a block repeated R times. :func:`find_repeats` finds it without a
Python loop over kernels: among names that occur the same number of times ``c >= min_repeats``,
an *anchor* name (one that occurs once per block) splits the sequence into ``c`` segments; the
candidate is accepted when most segments are identical name for name. Among accepted
candidates the one that explains the most kernels wins (ties: the longer block), so a whole
training step beats a layer inside it when both repeat.

Sequences of at most :data:`SMALL` items are searched with Python lists instead (same rules,
same answers): there a handful of list operations costs less than numpy's per-call overhead.
"""

from __future__ import annotations

import msgspec
import numpy as np

MIN_IDENTICAL_FRACTION = 0.8  # share of segments that must equal the most common segment
MAX_CANDIDATES = 12  # distinct occurrence counts tried, most common first (at most 63)
SMALL = 512  # sequences up to this many items are searched with Python lists (faster below ~600)


class Repeat(msgspec.Struct, frozen=True, kw_only=True):
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


def _candidate_counts(counts: np.ndarray, min_repeats: int) -> tuple[list[int], list[int]]:
    """Occurrence counts ``c >= min_repeats`` to try and how many names have each, the counts
    that explain the most items (names times ``c``) first, at most :data:`MAX_CANDIDATES`."""
    names_with = np.bincount(counts)  # names_with[c]: how many names occur c times
    names_with[: max(min_repeats, 0)] = 0
    values = np.flatnonzero(names_with)
    how_many = names_with[values]
    order = np.argsort(-how_many * values, kind="stable")[:MAX_CANDIDATES]
    return values[order].tolist(), how_many[order].tolist()


def _positions(seq: np.ndarray, anchors: list[int], counts: np.ndarray) -> dict[int, np.ndarray]:
    """Ascending indices of every anchor's occurrences, from one stable sort of the occurrences
    of all anchors together (grouped by name, each group in sequence order)."""
    wanted = np.zeros(len(counts), dtype=bool)
    wanted[anchors] = True
    where = np.flatnonzero(wanted[seq])
    grouped = where[np.argsort(seq[where], kind="stable")]
    out: dict[int, np.ndarray] = {}
    offset = 0
    for anchor, c in zip(sorted(anchors), counts[sorted(anchors)].tolist()):
        out[anchor] = grouped[offset : offset + c]
        offset += c
    return out


def _segments_identical(seq: np.ndarray, starts: np.ndarray, length: int) -> float:
    """Fraction of segments ``seq[s : s+length]`` equal to the most common such segment.

    Segments equal to the first one are counted by comparing against it; only when those are
    not a strict majority (so another segment might be the most common) are the segments
    viewed as raw bytes and the largest group of equal ones counted with ``np.unique``.
    """
    usable = starts[starts + length <= len(seq)]
    if len(usable) == 0:
        return 0.0
    block = seq[usable[:, None] + np.arange(length)[None, :]]  # (segments, length)
    most = int(np.count_nonzero((block == block[0]).all(axis=1)))
    if 2 * most <= len(usable):
        rows = np.ascontiguousarray(block).view(np.dtype((np.void, block.itemsize * length))).ravel()
        most = int(np.unique(rows, return_counts=True)[1].max())
    return most / len(starts)


def _common_gap(starts: np.ndarray) -> tuple[int, int]:
    """The gap between consecutive ``starts`` shared by more than half of the gaps and how many
    share it, or ``(0, 0)`` when no gap is. A value held by a strict majority is the middle
    one of the sorted gaps, so no counting of every value is needed."""
    gaps = np.diff(starts)
    if len(gaps) == 0:
        return 0, 0
    middle = int(np.partition(gaps, len(gaps) // 2)[len(gaps) // 2])
    share = int(np.count_nonzero(gaps == middle))
    return (middle, share) if 2 * share > len(gaps) else (0, 0)


def _occurrences(items: list[int]) -> dict[int, list[int]]:
    """Indices of every name's occurrences, the names in order of first occurrence."""
    where: dict[int, list[int]] = {}
    for i, name in enumerate(items):
        if name in where:
            where[name].append(i)
        else:
            where[name] = [i]
    return where


def _tried_small(where: dict[int, list[int]], min_repeats: int) -> list[tuple[int, int]]:
    """:func:`_candidate_counts` from :func:`_occurrences` (``min_repeats >= 1``), as pairs."""
    how_many: dict[int, int] = {}
    for at in where.values():
        if len(at) >= min_repeats:
            how_many[len(at)] = how_many.get(len(at), 0) + 1
    tried = sorted(sorted(how_many), key=lambda c: -c * how_many[c])[:MAX_CANDIDATES]  # stable
    return [(c, how_many[c]) for c in tried]


def _anchors_small(items: list[int], min_repeats: int) -> list[tuple[int, list[int], int, int]]:
    """Per tried count: (anchor, its occurrences, common gap, how many gaps share it), as
    :func:`find_repeats` builds them for long sequences, with lists and dicts."""
    where = _occurrences(items)
    first_with: dict[int, int] = {}
    for name, at in where.items():
        first_with.setdefault(len(at), name)
    out = []
    for c, _ in _tried_small(where, min_repeats):
        starts = where[first_with[c]]
        gaps: dict[int, int] = {}
        for a, b in zip(starts, starts[1:]):
            gaps[b - a] = gaps.get(b - a, 0) + 1
        length, share = max(gaps.items(), key=lambda gs: gs[1], default=(0, 0))
        out.append((first_with[c], starts, *((length, share) if 2 * share > c - 1 else (0, 0))))
    return out


def _anchors_large(seq: np.ndarray, min_repeats: int) -> list[tuple[int, np.ndarray, int, int]]:
    """Per tried count: (anchor, its occurrences, common gap, how many gaps share it); the
    anchor is the first-occurring name with that count."""
    counts = np.bincount(seq)
    tried, _ = _candidate_counts(counts, min_repeats)
    if not tried:
        return []
    names, first = np.unique(seq, return_index=True)
    by_first = names[np.argsort(first)]  # names in order of first occurrence
    seen, where = np.unique(counts[by_first], return_index=True)  # first name with each count
    anchor_of = dict(zip(seen.tolist(), by_first[where].tolist()))
    anchors = [anchor_of[c] for c in tried if c in anchor_of]  # a count of 0 has no occurrence
    positions = _positions(seq, anchors, counts)
    return [(a, positions[a], *_common_gap(positions[a])) for a in anchors]


def _segments_identical_small(items: list[int], starts: list[int], length: int) -> float:
    """:func:`_segments_identical` on lists: segments counted as tuples."""
    seen: dict[tuple[int, ...], int] = {}
    for s in starts:
        if s + length <= len(items):
            key = tuple(items[s : s + length])
            seen[key] = seen.get(key, 0) + 1
    return max(seen.values(), default=0) / len(starts)


def find_repeats(
    seq: np.ndarray, *, min_repeats: int = 3, min_length: int = 2, max_length: int = 200_000
) -> Repeat | None:
    """The repeated block that explains most of ``seq`` (int name ids), or ``None``.

    A candidate anchor is the first-occurring name among those with exactly ``c`` occurrences;
    its occurrences must be spaced by a common gap (the block length) for at least
    :data:`MIN_IDENTICAL_FRACTION` of segments, and those segments must be identical. The
    candidates are checked for identical segments in order of (coverage, length), largest
    first (no two tie: coverage is ``c`` times length and every ``c`` differs), so the first
    one that passes is the answer and the rest are never compared.
    """
    seq = np.asarray(seq, dtype=np.int64)
    n = len(seq)
    if n < 2 * min_repeats:
        return None
    small = n <= SMALL and min_repeats >= 1
    items = seq.tolist() if small else []
    candidates = []
    for anchor, starts, length, share in _anchors_small(items, min_repeats) if small else _anchors_large(seq, min_repeats):
        if len(starts) < 2:
            continue
        if length < min_length or length > max_length or share < MIN_IDENTICAL_FRACTION * (len(starts) - 1):
            continue
        candidates.append((len(starts) * length, length, anchor, starts))
    for _, length, anchor, starts in sorted(candidates, key=lambda c: (c[0], c[1]), reverse=True):
        if small:
            identical = _segments_identical_small(items, starts, length)
        else:
            identical = _segments_identical(seq, starts, length)
        if identical >= MIN_IDENTICAL_FRACTION:
            return Repeat(anchor=anchor, starts=np.asarray(starts, dtype=np.int64), length=length, identical=identical)
    return None


def _anchor_runs(seq: np.ndarray, anchors: list[int]) -> tuple[np.ndarray, ...]:
    """The runs of equally spaced occurrences each anchor offers, at most three per anchor, the
    most items spanned (gaps in the run times gap) first, ties in sequence order: arrays of
    (anchor rank in ``anchors``, rank among the anchor's runs, first index, gap, gaps in the
    run). All anchors are done together: their occurrences are grouped by name with one stable
    sort of small codes (1, 2, ... in order of name id; a radix sort), and the runs of equal
    gaps are found inside each group."""
    code = np.zeros(int(seq.max()) + 1, dtype=np.uint8)  # at most 4 * MAX_CANDIDATES anchors
    code[sorted(anchors)] = np.arange(1, len(anchors) + 1)
    coded = code[seq]
    where = np.flatnonzero(coded)
    order = np.argsort(coded[where], kind="stable")
    pos, name = where[order], coded[where][order]
    gaps = np.diff(pos)
    inside = name[1:] == name[:-1]  # gap j joins two occurrences of one name
    opens = inside.copy()
    opens[1:] &= ~(inside[:-1] & (gaps[1:] == gaps[:-1]))
    bounds = np.append(np.flatnonzero(opens | ~inside), len(gaps))  # a run ends at the next one
    is_run = opens[bounds[:-1]]
    run_first = bounds[:-1][is_run]
    run_gaps = np.diff(bounds)[is_run]
    run_gap = gaps[run_first]
    run_name = name[run_first]
    # by name, then items spanned (at most len(seq)) largest first; stable: ties in sequence order
    ranked = np.argsort(run_name * np.int64(len(seq) + 1) + (len(seq) - run_gaps * run_gap), kind="stable")
    lo = np.searchsorted(run_name, code[anchors])
    hi = np.searchsorted(run_name, code[anchors], side="right")
    slot = lo[:, None] + np.arange(3)[None, :]  # (anchor, place) -> index into ranked
    rank, place = np.nonzero(slot < hi[:, None])
    picked = run_first[ranked[slot[rank, place]]]
    return rank, place, pos[picked], gaps[picked], run_gaps[ranked[slot[rank, place]]]


def _offers_large(seq: np.ndarray, min_repeats: int, min_length: int) -> tuple[list[int], list[tuple[int, ...]]]:
    """The anchors of :func:`find_block_run` in the order tried and the runs they offer as
    ``(most items it could explain, anchor rank, run rank, first index, gap, repetitions)``;
    repetitions leave out a last one cut off by the end of ``seq``."""
    counts = np.bincount(seq)
    tried, how_many = _candidate_counts(counts, min_repeats)
    if not tried:
        return [], []
    by_count = np.argsort(counts, kind="stable")  # names grouped by count, by id inside
    lo = np.searchsorted(counts[by_count], tried).tolist()
    anchors = [a for s, k in zip(lo, how_many) for a in by_count[s : s + min(k, 4)].tolist()]
    rank, place, first, gap, size = _anchor_runs(seq, anchors)
    most = size + 1 - (first + (size + 1) * gap > len(seq))
    keep = (gap >= min_length) & (most >= min_repeats)
    columns = (most * gap, rank, place, first, gap, most)
    return anchors, list(zip(*(c[keep].tolist() for c in columns)))


def _leading_copies(seq: np.ndarray, first: int, length: int, most: int) -> int:
    """How many of the ``most`` back-to-back blocks ``seq[first + i*length : ...]`` equal the
    first one before one differs: comparing the stretch with itself shifted by one block, the
    first mismatch at offset ``j`` falls in block ``j // length + 1``."""
    stretch = seq[first : first + most * length]
    differ = stretch[length:] != stretch[:-length]
    j = int(np.argmax(differ)) if len(differ) else 0
    return j // length + 1 if len(differ) and differ[j] else most


def _leading_copies_small(items: list[int], first: int, length: int, most: int) -> int:
    """:func:`_leading_copies` on a list, one block compared at a time."""
    block = items[first : first + length]
    k = 1
    while k < most and items[first + k * length : first + (k + 1) * length] == block:
        k += 1
    return k


def _runs_small(at: list[int]) -> list[tuple[int, int, int]]:
    """Runs of equal gaps in one anchor's occurrences ``at`` as ``(first index, gap, gaps in
    the run)``, the three spanning the most items first (ties in sequence order)."""
    runs: list[list[int]] = []  # [first index, gap, gaps in the run]
    for a, b in zip(at, at[1:]):
        if runs and runs[-1][1] == b - a:
            runs[-1][2] += 1
        else:
            runs.append([a, b - a, 1])
    return [(r[0], r[1], r[2]) for r in sorted(runs, key=lambda r: -r[1] * r[2])[:3]]  # stable


def _offers_small(items: list[int], min_repeats: int, min_length: int) -> tuple[list[int], list[tuple[int, ...]]]:
    """:func:`_offers_large` with lists and dicts (``min_repeats >= 1``)."""
    where = _occurrences(items)
    by_count: dict[int, list[int]] = {}
    for name in sorted(where):
        by_count.setdefault(len(where[name]), []).append(name)
    anchors = [a for c, _ in _tried_small(where, min_repeats) for a in by_count[c][:4]]
    offers = []
    for rank, anchor in enumerate(anchors):
        for place, (first, gap, size) in enumerate(_runs_small(where[anchor])):
            most = size + 1 - (first + (size + 1) * gap > len(items))
            if gap >= min_length and most >= min_repeats:
                offers.append((most * gap, rank, place, first, gap, most))
    return anchors, offers


def find_block_run(seq: np.ndarray, *, min_repeats: int = 2, min_length: int = 2) -> Repeat | None:
    """The longest stretch of one block repeated back to back (a model's layers), or ``None``.

    Unlike :func:`find_repeats` the block need not span the whole sequence: a forward pass of
    L identical layers followed by a backward pass is found from the forward layers' anchor
    occurrences whose gaps stay equal, the repetitions being checked name for name. Anchors are
    the first four names (by id) of each tried occurrence count; each anchor offers its three
    runs of equal gaps spanning the most items. An anchor's best run explains the most kernels
    (ties: the earlier run); the best anchor's run explains the most kernels (ties: the longer
    block, then the earlier anchor). Runs are compared name for name in order of how many
    kernels they could explain at most, and the search stops once no run left could reach the
    best found, which cannot change the answer.
    """
    seq = np.asarray(seq, dtype=np.int64)
    n = len(seq)
    if n < min_repeats * min_length:
        return None
    small = n <= SMALL and min_repeats >= 1
    items = seq.tolist() if small else []
    anchors, offers = _offers_small(items, min_repeats, min_length) if small else _offers_large(seq, min_repeats, min_length)
    offers.sort(key=lambda o: o[0], reverse=True)
    found: list[tuple[int, int, int, int, int, int]] = []  # (coverage, rank, place, first, gap, k)
    top = -1
    for bound, rank, place, first, gap, most in offers:
        if bound < top:
            break
        k = _leading_copies_small(items, first, gap, most) if small else _leading_copies(seq, first, gap, most)
        if k >= min_repeats and k * gap >= top:
            top = k * gap
            found.append((top, rank, place, first, gap, k))
    winners = {}
    for cover, rank, place, first, gap, k in found:
        if cover == top and (rank not in winners or place < winners[rank][0]):
            winners[rank] = (place, first, gap, k)
    if not winners:
        return None
    rank = min(winners, key=lambda r: (-winners[r][2], r))
    _, first, gap, k = winners[rank]
    return Repeat(anchor=anchors[rank], starts=first + gap * np.arange(k, dtype=np.int64), length=gap, identical=1.0)
