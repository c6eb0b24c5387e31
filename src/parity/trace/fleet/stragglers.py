"""Per-rank figures of the arrival order, the straggler vote and its first-order step cost.

The vote (``docs/definitions.md``, Fleet trace analysis) counts, per rank, the collectives it
arrived at last. Without a straggler every member of a collective is equally likely to be
last, so a rank's count is a sum of independent Bernoulli trials of mean ``expected_share``;
a rank is a straggler when its count is far beyond what luck gives one rank in the fleet
(a Chernoff bound at a fleet-wide error of :data:`VOTE_ALPHA`), at least
:data:`VOTE_SHARE_RATIO` times its fair share, and when last it typically kept the others
waiting at least :data:`VOTE_FLOOR_NS` (so a clock offset or launch jitter of a few hundred ns
names no one).

The count misses a rank that is late only at some of its collectives but by far (a host stall
every few steps, at the first of a step's several collectives): last in a share hardly above
its fair one, it holds up the job more than any rank that is last by jitter. So the vote also
weighs each collective by its margin (the last arrival minus the one before it): the time a
rank kept its collectives waiting, ``held``, against its fair share of that time. Without a
straggler the members of a collective are exchangeable, so whatever the margins, each member
is last with chance ``1/members``: a Hoeffding bound on the weighted sum tests it at the same
fleet-wide error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from parity.trace.fleet.figures import grouped_median_ns, grouped_sum_ns

VOTE_ALPHA = 0.01  # chance that the whole fleet names any fair rank a straggler
VOTE_SHARE_RATIO = 2.0  # a straggler is last at least twice as often as its fair share
VOTE_FLOOR_NS = 1_000  # ... and when last, by a median margin of at least 1 µs
CLOCK_FLOOR_NS = 1_000  # an op ending more than this before its collective's last arrival: a clock offset
FIRST_ORDER = "first-order"


@dataclass(frozen=True)
class RankOrder:
    """Per-rank figures of the arrival order, arrays indexed like ``ranks`` (ascending)."""

    ranks: np.ndarray
    collectives: np.ndarray  # matched collectives the rank took part in
    voted: np.ndarray  # of those, with at least two members
    times_last: np.ndarray
    wait_ns: np.ndarray
    median_lateness_ns: np.ndarray
    expected_share: np.ndarray
    median_margin_ns: np.ndarray
    step_cost_ns: np.ndarray  # median over steps
    mean_step_cost_ns: np.ndarray
    held_ns: np.ndarray  # Σ margin over the collectives it was last at
    fair_held_ns: np.ndarray  # Σ margin / members over its voted collectives (float)
    margin_sq_sum: np.ndarray  # Σ margin² over its voted collectives (ns², float)


def share_last(times_last: np.ndarray, voted: np.ndarray) -> np.ndarray:
    """``share_last = times_last / n``, ``n`` the rank's collectives with at least two members
    (0 when ``n = 0``). Example: last in 30 of 120 -> 0.25."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(voted > 0, times_last / np.maximum(voted, 1), 0.0)


def expected_share(inverse_members_sum: np.ndarray, voted: np.ndarray) -> np.ndarray:
    """``expected_share = (1/n) Σ_c 1/members_c`` over the rank's voted collectives: its share
    of lasts when every member is equally likely to be last. Example: 60 ops of 8 members and
    60 of 4 -> (60/8 + 60/4) / 120 = 0.1875."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(voted > 0, inverse_members_sum / np.maximum(voted, 1), 0.0)


def chernoff_exponent(voted: np.ndarray, share: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``n · KL(a ‖ p)`` with ``a`` the share last, ``p`` the expected share and ``KL(a ‖ p) =
    a ln(a/p) + (1-a) ln((1-a)/(1-p))``, for ``a > p`` (else 0). By the Chernoff–Hoeffding bound
    a fair rank is last in a share ``>= a`` with probability at most ``exp(-n · KL)``; it holds
    for trials of unequal means too, with ``p`` their mean. Example: n = 100, a = 0.5, p = 0.25
    -> 100 · (0.5 ln 2 + 0.5 ln(2/3)) = 14.38."""
    a = np.asarray(share, dtype=np.float64)
    p = np.clip(np.asarray(expected, dtype=np.float64), 1e-300, 1 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        head = np.where(a > 0, a * np.log(a / p), 0.0)
        tail = np.where(a < 1, (1 - a) * np.log((1 - a) / (1 - p)), 0.0)
    return np.where(a > p, voted * (head + tail), 0.0)


def fair_held_ns(rank_idx: np.ndarray, margin_ns: np.ndarray, members: np.ndarray, ranks: int) -> np.ndarray:
    """Per rank, ``fair = Σ_c m_c / members_c`` over its voted collectives (one row each:
    ``rank_idx``, the collective's margin ``m_c``, its member count): the time the rank would
    keep its collectives waiting if every member were equally likely to be last (float ns).
    Example: margins 120 us in a 4-member collective and 30 us in a 24-member one -> 30 + 1.25
    = 31.25 us."""
    return np.bincount(rank_idx, weights=np.asarray(margin_ns, dtype=np.float64) / members, minlength=ranks)


def hoeffding_exponent(held: np.ndarray, fair: np.ndarray, margin_sq_sum: np.ndarray) -> np.ndarray:
    """``2 (held - fair)² / Σ_c m_c²`` for ``held > fair`` (else 0). Without a straggler,
    ``held = Σ_c m_c X_c`` with ``X_c`` the rank being last at ``c``, independent, of mean
    ``1/members_c`` whatever the margins (the members are exchangeable) and ``m_c X_c`` in
    ``[0, m_c]``: by Hoeffding's inequality ``P(held - fair >= t) <= exp(-2 t² / Σ m_c²)``.
    Example: held 480, fair 120, margins 4 x 120 -> 2 · 360² / 57,600 = 4.5."""
    held = np.asarray(held, dtype=np.float64)
    fair = np.asarray(fair, dtype=np.float64)
    sq = np.asarray(margin_sq_sum, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((held > fair) & (sq > 0), 2 * (held - fair) ** 2 / np.where(sq > 0, sq, 1), 0.0)


def vote_threshold(ranks_voted: int, alpha: float = VOTE_ALPHA) -> float:
    """``ln(R / α)``: an exponent above it leaves each fair rank a chance below ``α / R``, so
    the fleet of ``R`` voting ranks a chance below ``α`` of naming any fair rank (Bonferroni).
    Example: R = 8, α = 0.01 -> ln 800 = 6.68."""
    return float(np.log(max(ranks_voted, 1) / alpha))


@dataclass(frozen=True)
class VoteCells:
    """The vote's counts per (rank, process group), for ranks in more than one group: a rank
    late in one group only is diluted by its other groups' collectives in the pooled count."""

    rank: np.ndarray  # index into the ranks
    group: np.ndarray  # group code
    voted: np.ndarray
    times_last: np.ndarray
    expected_share: np.ndarray
    median_margin_ns: np.ndarray

    @staticmethod
    def of(rank_idx: np.ndarray, group: np.ndarray, members_per_row: np.ndarray, is_last: np.ndarray,
           margin_per_row: np.ndarray) -> VoteCells:
        """Cells of the voted rows (at least two members), only for ranks in two groups or more."""
        voted = members_per_row >= 2
        r, g = rank_idx[voted].astype(np.int64), group[voted].astype(np.int64)
        span = int(g.max()) + 1 if len(g) else 1
        keys, cell = np.unique(r * span + g, return_inverse=True)
        cell = cell.ravel()
        n = len(keys)
        count = np.bincount(cell, minlength=n)
        last = np.bincount(cell[is_last[voted]], minlength=n)
        inv = np.bincount(cell, weights=1.0 / members_per_row[voted], minlength=n)
        margin = grouped_median_ns(cell[is_last[voted]], margin_per_row[voted][is_last[voted]], n)
        cell_rank = keys // span
        several = np.bincount(cell_rank)[cell_rank] > 1 if n else np.zeros(0, bool)
        return VoteCells(rank=cell_rank[several], group=(keys % span)[several], voted=count[several],
                         times_last=last[several], expected_share=expected_share(inv, count)[several],
                         median_margin_ns=margin[several])


def vote_passes(voted: np.ndarray, times_last: np.ndarray, expected: np.ndarray, margin_ns: np.ndarray,
                threshold: float, *, ratio: float = VOTE_SHARE_RATIO, floor_ns: int = VOTE_FLOOR_NS) -> np.ndarray:
    """The vote's three tests on counts (per rank, or per rank and group): ``share_last >=
    ratio · expected_share``; ``chernoff_exponent >= threshold``; median margin when last (its
    arrival minus the latest other arrival) ``>= floor_ns``."""
    share = share_last(times_last, voted)
    exponent = chernoff_exponent(voted, share, expected)
    return ((voted > 0) & (times_last > 0) & (share >= ratio * expected) & (exponent >= threshold)
            & (margin_ns >= floor_ns))


def time_vote_passes(held: np.ndarray, fair: np.ndarray, margin_sq_sum: np.ndarray, times_last: np.ndarray,
                     threshold: float, *, ratio: float = VOTE_SHARE_RATIO, floor_ns: int = VOTE_FLOOR_NS) -> np.ndarray:
    """The vote's three tests on the time a rank kept its collectives waiting: ``held >= ratio
    · fair``; :func:`hoeffding_exponent` ``>= threshold``; the mean margin when last, ``held /
    times_last``, ``>= floor_ns`` (a clock offset makes a rank last by the same few hundred ns
    every time)."""
    held = np.asarray(held, dtype=np.float64)
    exponent = hoeffding_exponent(held, fair, margin_sq_sum)
    return ((times_last > 0) & (held >= ratio * np.asarray(fair, dtype=np.float64)) & (exponent >= threshold)
            & (held >= floor_ns * times_last))


def clock_suspect_rows(early_end_ns: np.ndarray, seg: np.ndarray, segments: int,
                       floor_ns: int = CLOCK_FLOOR_NS) -> np.ndarray:
    """Per matched row, whether its collective is clock-suspect: some member's op ended more than
    ``floor_ns`` before the last member arrived (:func:`parity.trace.fleet.figures.early_end_ns`),
    impossible on one shared clock, so the collective's arrival order may be a clock offset's.
    Example: collectives 0, 0, 1, 1 with early ends 0, 5,000, 0, 400 ns -> True, True, False, False."""
    flagged = np.bincount(seg[np.asarray(early_end_ns) > floor_ns], minlength=segments) > 0
    return flagged[seg]


def clock_suspect_lasts(rank_idx: np.ndarray, is_last: np.ndarray, suspect: np.ndarray, ranks: int) -> np.ndarray:
    """Per rank, the clock-suspect collectives (:func:`clock_suspect_rows`) it arrived at last.
    Example: rank 1 last at collectives 0 (suspect) and 1 (not) -> 1."""
    return np.bincount(rank_idx[is_last & suspect], minlength=ranks)


TIME_VOTE = -2  # named_by's code for the time test (-1: the counts over all collectives; >= 0: a group's)


def straggler_vote(order: RankOrder, cells: VoteCells | None = None, *, alpha: float = VOTE_ALPHA,
                   ratio: float = VOTE_SHARE_RATIO, floor_ns: int = VOTE_FLOOR_NS):
    """The stragglers: ranks whose counts pass :func:`vote_passes` over all their collectives,
    or over one group's for a rank in several groups (``cells``), or whose time held passes
    :func:`time_vote_passes`. Threshold ``ln(T / α)``, ``T`` the tests made (two per rank with
    a voted collective, counts and time, plus the cells), so the fleet's chance of naming any
    fair rank stays below ``α``. Returns ``(straggler per rank, named_by: rank index -> codes of
    the tests that named it (-1: the counts over all its collectives, :data:`TIME_VOTE`: the
    time held, a group code: that group's counts), T)``."""
    cells = cells or VoteCells(*(np.zeros(0, np.int64),) * 4, np.zeros(0), np.zeros(0, np.int64))
    tests = 2 * int((order.voted > 0).sum()) + int((cells.voted > 0).sum())
    threshold = vote_threshold(tests, alpha)
    pooled = vote_passes(order.voted, order.times_last, order.expected_share, order.median_margin_ns,
                         threshold, ratio=ratio, floor_ns=floor_ns)
    timed = time_vote_passes(order.held_ns, order.fair_held_ns, order.margin_sq_sum, order.times_last,
                             threshold, ratio=ratio, floor_ns=floor_ns)
    by_group = vote_passes(cells.voted, cells.times_last, cells.expected_share, cells.median_margin_ns,
                           threshold, ratio=ratio, floor_ns=floor_ns)
    straggler = pooled | timed
    straggler[cells.rank[by_group]] = True
    named_by: dict[int, list[int]] = {int(i): [-1] for i in np.flatnonzero(pooled)}
    for i in np.flatnonzero(timed).tolist():
        named_by.setdefault(i, []).append(TIME_VOTE)
    for i, g in zip(cells.rank[by_group].tolist(), cells.group[by_group].tolist()):
        named_by.setdefault(i, []).append(g)
    return straggler, named_by, tests


def step_costs_ns(rank_idx: np.ndarray, step: np.ndarray, margin_if_last: np.ndarray,
                  ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """First-order step cost per rank, ``(median, mean)``: per step, ``Σ`` over the collectives
    it arrived at last of its margin (its arrival minus the latest other arrival: what the group
    would have saved had it come with the one before it); then the median, and the mean
    (``floor(Σ / steps)``), over the steps in which it took part in a voted collective (a step it
    was never last in counts 0; rows without a step, -1, form one step). The median is the
    typical step's cost; the mean spreads a rank late every few steps over all of them.
    Example: margins 40 and 10 in step 1, none in steps 2 and 3 -> sums (50, 0, 0) -> median
    0, mean 16; in steps 1 and 2 only -> median floor(50 / 2) = 25, mean 25."""
    if not len(rank_idx):
        return np.zeros(ranks, dtype=np.int64), np.zeros(ranks, dtype=np.int64)
    order = np.lexsort((step, rank_idx))
    r, s, m = rank_idx[order], step[order], margin_if_last[order]
    new = np.r_[True, (r[1:] != r[:-1]) | (s[1:] != s[:-1])]
    cell = np.cumsum(new) - 1
    sums = grouped_sum_ns(cell, m, int(cell[-1]) + 1)
    steps = np.bincount(r[new], minlength=ranks)
    mean = grouped_sum_ns(r[new], sums, ranks) // np.maximum(steps, 1)
    return grouped_median_ns(r[new], sums, ranks), mean


def rank_order(ranks: np.ndarray, row_rank_idx: np.ndarray, members_per_row: np.ndarray,
               is_last: np.ndarray, wait: np.ndarray, lateness: np.ndarray, margin_per_row: np.ndarray,
               step: np.ndarray) -> RankOrder:
    """The per-rank figures from the matched rows (``row_rank_idx`` indexes ``ranks``)."""
    n = len(ranks)
    idx = row_rank_idx
    voted_row = members_per_row >= 2
    count = np.bincount(idx, minlength=n)
    voted = np.bincount(idx[voted_row], minlength=n)
    last = np.bincount(idx[is_last], minlength=n)
    inv = np.bincount(idx[voted_row], weights=1.0 / members_per_row[voted_row], minlength=n)
    waits = grouped_sum_ns(idx, wait, n)
    late = grouped_median_ns(idx[voted_row], lateness[voted_row], n)
    margin = grouped_median_ns(idx[is_last], margin_per_row[is_last], n)
    cost, mean = step_costs_ns(idx[voted_row], step[voted_row], np.where(is_last, margin_per_row, 0)[voted_row], n)
    m = margin_per_row[voted_row].astype(np.float64)  # every member's row carries its collective's margin
    return RankOrder(ranks=ranks, collectives=count, voted=voted, times_last=last, wait_ns=waits,
                     median_lateness_ns=late, expected_share=expected_share(inv, voted),
                     median_margin_ns=margin, step_cost_ns=cost, mean_step_cost_ns=mean,
                     held_ns=grouped_sum_ns(idx[is_last], margin_per_row[is_last], n),
                     fair_held_ns=fair_held_ns(idx[voted_row], m, members_per_row[voted_row], n),
                     margin_sq_sum=np.bincount(idx[voted_row], weights=m * m, minlength=n))  # fmt: skip
