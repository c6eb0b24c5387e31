"""``analyze(table)``: per-stream busy time, overlap and idle in the steady-state window.

Everything is computed per rank on the device rows (kernels, copies, sets) clipped to that
rank's window, with the named formulas of :mod:`parity.trace.metrics`. A stream is the pair
(device, stream id); the device figures of a rank take all its streams together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace import metrics
from parity.trace.analysis_findings import rank_findings, unknown_core_findings
from parity.trace.ascend_steps import (
    ascend_steps,
    communication_op_mask,
    is_ascend,
    operator_task_mask,
)
from parity.trace.blocks import find_blocks
from parity.trace.categories import (
    COMMUNICATION,
    UNMATCHED,
    Categorization,
    Rules,
    categorize,
    load_rules,
)
from parity.trace.comm_matrix import communication_matrix
from parity.trace.intervals import grouped_sets, grouped_union_lengths, union_length
from parity.trace.peer_waits import peer_wait_mask
from parity.trace.ranks import rank_spread
from parity.trace.results import (
    CategoryStats,
    CommOverlap,
    DeviceStats,
    KernelStats,
    RankAnalysis,
    StreamOverlap,
    StreamStats,
    TraceAnalysis,
)
from parity.trace.table import ActivityTable, Kind, KindCode, distinct_sorted
from parity.trace.window import Window, choose_window, device_steps

log = logging.getLogger(__name__)

MAX_OVERLAP_STREAMS = 16  # pairwise overlap among the busiest streams only (S² pairs)


def clip_to_spans(start: np.ndarray, end: np.ndarray, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows that reach into ``[lo, hi)`` (a zero-length row when it starts inside), and
    their starts and ends clipped to it: ``(mask, start, end)``. ``lo`` and ``hi`` are one span
    or one per row. Example: rows [0, 10) and [20, 20) in span [5, 25) give both, clipped to
    [5, 10) and [20, 20)."""
    inside = (end > lo) & (start < hi) | ((start == end) & (start >= lo) & (start < hi))
    lo_in = lo[inside] if np.ndim(lo) else lo
    hi_in = hi[inside] if np.ndim(hi) else hi
    return inside, np.maximum(start[inside], lo_in), np.minimum(end[inside], hi_in)


class _Clipped:
    """One rank's device rows in its window: clipped starts/ends plus codes, computed once."""

    def __init__(self, table: ActivityTable, rows: np.ndarray, window: Window, cats: Categorization):
        inside, self.start, self.end = clip_to_spans(table.start_ns[rows], table.end_ns[rows],
                                                     window.start_ns, window.end_ns)
        self.rows = rows[inside]
        pairs = table.device[self.rows].astype(np.int64) << 40 | (table.stream[self.rows] & ((1 << 40) - 1))
        self.stream_keys, self.stream_code = np.unique(pairs, return_inverse=True)
        self.stream_code = self.stream_code.reshape(-1)
        first = np.zeros(len(self.stream_keys), dtype=np.int64)
        first[self.stream_code[::-1]] = np.arange(len(self.rows))[::-1]
        self.stream_ids = table.stream[self.rows[first]] if len(self.rows) else np.empty(0, np.int64)
        self.cat = cats.codes[self.rows].astype(np.int64)
        self.window = window


def _streams(table: ActivityTable, c: _Clipped, cats: Categorization, rank: int):
    """Per-stream figures, the busy time per stream and each stream's merged busy intervals."""
    n_streams, n_cats = len(c.stream_keys), len(cats.labels)
    sets, busy = grouped_sets(c.stream_code, c.start, c.end, n_streams)
    by_cat = grouped_union_lengths(c.stream_code * n_cats + c.cat, c.start, c.end, n_streams * n_cats)
    by_cat = exclusive_categories(c, by_cat.reshape(n_streams, n_cats), busy)
    counts = np.bincount(c.stream_code, minlength=n_streams)
    w = c.window.length_ns
    out = []
    for i, key in enumerate(c.stream_keys.tolist()):
        b = int(busy[i])
        assert b <= w, f"stream busy {b} ns exceeds the window {w} ns"
        out.append(StreamStats(
            rank=rank,
            device=int(key >> 40),
            stream=int(c.stream_ids[i]),
            kernels=int(counts[i]),
            busy_ns=b,
            busy_fraction=metrics.busy_fraction(b, w),
            share_of_summed=metrics.share_of_summed(b, busy.tolist()),
            categories={cats.labels[k]: int(by_cat[i, k]) for k in np.flatnonzero(by_cat[i])},
        ))
    return out, busy, sets


def exclusive_categories(c: _Clipped, by_cat: np.ndarray, busy: np.ndarray) -> np.ndarray:
    """Per stream and category, time that is the category's alone on its stream, so a stream's
    category times sum to its busy time: where activities of two categories overlap on one
    stream (an Ascend collective beside its own tasks), the instant counts for the category
    first in ``labels`` order (communication, attention, matrix, vector, memory, other, ...).

    ``by_cat[s, k]`` is the union of category ``k`` on stream ``s``; only streams whose row
    sums exceed their busy time are recomputed: ``excl[s, k] = |∪_{j<=k} C_j| - |∪_{j<k} C_j|``.
    """
    over = np.flatnonzero(by_cat.sum(axis=1) > busy)
    if not len(over):
        return by_cat
    out = by_cat.copy()
    rows = np.isin(c.stream_code, over)
    code, cat, start, end = c.stream_code[rows], c.cat[rows], c.start[rows], c.end[rows]
    previous = np.zeros(len(busy), dtype=np.int64)
    for k in range(by_cat.shape[1]):
        upto = cat <= k
        cumulative = grouped_union_lengths(code[upto], start[upto], end[upto], len(busy)).astype(np.int64)
        out[over, k] = (cumulative - previous)[over]
        previous = cumulative
    return out


def _device(c: _Clipped, busy: np.ndarray, sets: list[tuple[np.ndarray, np.ndarray]]) -> DeviceStats:
    """Device figures; ``sets`` holds each stream's merged busy intervals (by stream code)."""
    w = c.window.length_ns
    hist = metrics.streams_at_once(sets, c.window.start_ns, c.window.end_ns, merged=True)
    union = metrics.busy_ns(hist, w)
    return DeviceStats(
        window_ns=w,
        busy_ns=union,
        idle_ns=metrics.idle_ns(union, w),
        summed_busy_ns=int(busy.sum()),
        mean_concurrency=metrics.mean_concurrency(busy.tolist(), w),
        streams_at_once_ns=tuple(int(v) for v in hist),
    )


def _categories(c: _Clipped, cats: Categorization, device_busy: int) -> list[CategoryStats]:
    n_cats = len(cats.labels)
    time = grouped_union_lengths(c.cat, c.start, c.end, n_cats)
    summed = np.bincount(c.cat, weights=c.end - c.start, minlength=n_cats)
    counts = np.bincount(c.cat, minlength=n_cats)
    out = []
    for k, label in enumerate(cats.labels):
        if counts[k] == 0 and label != UNMATCHED:
            continue
        out.append(CategoryStats(
            category=label,
            time_ns=int(time[k]),
            summed_ns=int(summed[k]),
            kernels=int(counts[k]),
            share_of_busy=time[k] / device_busy if device_busy else 0.0,
        ))
    return sorted(out, key=lambda x: -x.time_ns)


def _overlaps(c: _Clipped, busy: np.ndarray, sets: list[tuple[np.ndarray, np.ndarray]],
              streams_at_once_ns: tuple[int, ...]) -> list[StreamOverlap]:
    """Pairwise overlap of the busiest streams (at most :data:`MAX_OVERLAP_STREAMS`), from
    :func:`metrics.pairwise_overlap_ns`; of two busy streams, from the device's histogram of
    streams at once (``h[2]``), which is the same figure without another sweep."""
    top = np.argsort(-busy, kind="stable")[:MAX_OVERLAP_STREAMS]
    top = [int(i) for i in top if busy[i] > 0]
    ids = [int(c.stream_ids[i]) for i in top]
    if len(top) == 2:  # the only two busy streams: both run exactly when two streams run
        overlap = int(streams_at_once_ns[2])
        return [StreamOverlap(stream_a=ids[0], stream_b=ids[1], overlap_ns=overlap)]
    both = metrics.pairwise_overlap_ns([sets[i] for i in top])
    return [StreamOverlap(stream_a=ids[x], stream_b=ids[y], overlap_ns=int(both[x, y]))
            for x in range(len(top)) for y in range(x + 1, len(top))]


def _comm(c: _Clipped, cats: Categorization, sets: tuple[np.ndarray, np.ndarray] | None = None,
          waits: np.ndarray | None = None) -> CommOverlap:
    """Compute against communication in the window. ``sets`` (two masks over the table's rows:
    compute, communication) replaces "device rows neither communication nor memory" and
    "communication rows": on Ascend they are the profiler's Computing (operator tasks) and
    Communication (HCCL operators), so that exposed communication is the step table's
    Communication(Not Overlapped). ``waits`` (a mask over the table's rows,
    :func:`parity.trace.peer_waits.peer_wait_mask`) gives the time spent waiting for a peer."""
    compute_rows, comm_rows = compute_comm_rows(cats, sets)
    compute_mask, comm_mask = compute_rows[c.rows], comm_rows[c.rows]
    peer = waits[c.rows] if waits is not None else None
    peer_wait = None if peer is None else union_length(c.start[peer], c.end[peer]) if peer.any() else 0
    if not comm_mask.any():  # no communication (one device, most traces): nothing to overlap
        compute = union_length(c.start[compute_mask], c.end[compute_mask])
        return CommOverlap(compute_ns=compute, communication_ns=0, overlap_ns=0,
                           exposed_communication_ns=metrics.exposed_ns(0, 0), peer_wait_ns=peer_wait)  # fmt: skip
    keep = comm_mask | compute_mask
    # both sets from one grouped merge: compute rows are group 0, communication rows group 1
    (compute, comm), _ = grouped_sets(comm_mask[keep].astype(np.int64), c.start[keep], c.end[keep], 2)
    both = metrics.pairwise_overlap_ns([compute, comm])  # [[|K|, |K ∩ C|], [.., |C|]] in one sweep
    overlap = int(both[0, 1])
    return CommOverlap(
        compute_ns=int(both[0, 0]),
        communication_ns=int(both[1, 1]),
        overlap_ns=overlap,
        exposed_communication_ns=metrics.exposed_ns(int(both[1, 1]), overlap),
        peer_wait_ns=peer_wait,
    )


def compute_comm_rows(cats: Categorization, sets: tuple[np.ndarray, np.ndarray] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(compute, communication)`` masks over every row of the table: the rows of compute
    categories and of the communication category, or with ``sets`` (:func:`_ascend_sets`) the
    profiler's Computing rows that are not Communication, and its Communication rows."""
    if sets is None:
        return cats.compute_codes()[cats.codes], cats.codes == cats.code(COMMUNICATION)
    return sets[0] & ~sets[1], sets[1]


def _ascend_sets(table: ActivityTable, cats: Categorization) -> tuple[np.ndarray, np.ndarray]:
    """The profiler's Computing and Communication rows (:mod:`parity.trace.ascend_steps`)."""
    return operator_task_mask(table, cats), communication_op_mask(table, cats)


def _kernels(table: ActivityTable, c: _Clipped, cats: Categorization) -> list[KernelStats]:
    ids = table.name_id[c.rows]
    total = np.bincount(ids, weights=c.end - c.start, minlength=len(table.names))
    count = np.bincount(ids, minlength=len(table.names))
    first_row = np.full(len(table.names), -1)
    first_row[ids[::-1]] = c.rows[::-1]
    grand = float(total.sum())
    out = []
    for i in np.argsort(-total, kind="stable"):
        if count[i] == 0:
            break
        out.append(KernelStats(
            name=table.names[i],
            category=cats.labels[cats.codes[first_row[i]]],
            count=int(count[i]),
            total_ns=int(total[i]),
            share_of_summed=float(total[i]) / grand if grand else 0.0,
        ))
    return out


def analyze_rank(table: ActivityTable, cats: Categorization, rank: int, *, window=None, steps=None) -> RankAnalysis:
    """One rank's analysis; ``table`` holds that rank's rows and ``cats`` their categories."""
    row_steps = device_steps(table)
    chosen = choose_window(table, window=window, steps=steps, row_steps=row_steps)
    device_rows = np.flatnonzero(table.device_mask())
    c = _Clipped(table, device_rows, chosen, cats)
    streams, busy, sets = _streams(table, c, cats, rank)  # sets: merged once, used twice
    device = _device(c, busy, sets)
    kernel_rows = c.rows[table.kind[c.rows] == KindCode.KERNEL]
    blocks = None
    if len(streams):
        busiest = max(streams, key=lambda s: s.busy_ns)
        blocks = find_blocks(table, kernel_rows, busiest.stream, row_steps)
    profiler_sets = _ascend_sets(table, cats) if is_ascend(table) else None  # Computing, Communication
    return RankAnalysis(
        rank=rank,
        window=chosen,
        device_span_ns=(int(table.start_ns[device_rows].min()), int(table.end_ns[device_rows].max()))
        if len(device_rows) else (0, 0),
        streams=tuple(streams),
        device=device,
        categories=tuple(_categories(c, cats, device.busy_ns)),
        overlaps=tuple(_overlaps(c, busy, sets, device.streams_at_once_ns)),
        comm=_comm(c, cats, profiler_sets, peer_wait_mask(table) if profiler_sets is not None else None),
        kernels=tuple(_kernels(table, c, cats)),
        blocks=blocks,
        ascend_steps=tuple(ascend_steps(table, cats, profiler_sets)) if profiler_sets is not None else (),
        trace_start_ns=int(table.start_ns.min()) if len(table) else 0,
    )


def _split_ranks(table: ActivityTable, cats: Categorization, progress: Callable | None):
    ranks = distinct_sorted(table.rank)
    if len(ranks) == 1:
        yield int(ranks[0]), table, cats
        return
    for i, r in enumerate(ranks.tolist()):
        mask = table.rank == r
        sub = table.take(mask)
        parts = [p for p in table.meta.get("parts", []) if r in (p.get("ranks") or [])]
        if len(parts) == 1:
            sub = ActivityTable(**{k: getattr(sub, k) for k in ActivityTable.COLUMNS}, names=sub.names,
                                extra=sub.extra, meta={**parts[0], "parts": []})
        if progress:
            progress(i, len(ranks))
        yield int(r), sub, Categorization(codes=cats.codes[mask], labels=cats.labels, source=cats.source)


HOST_KINDS = {Kind.RUNTIME: "runtime call", Kind.CPU_OP: "CPU op", Kind.SYNC: "sync", Kind.STEP: "step span",
              Kind.OTHER: "other host event"}  # fmt: skip


def no_device_activity(table: ActivityTable) -> str:
    """The refusal of a trace without kernels, copies or sets: what it holds instead (rows by
    kind) and what its reader noticed (a CUPTI range-profiler trace says so)."""
    source = table.meta.get("source", "the trace")
    counts = np.bincount(table.kind.astype(np.int64), minlength=len(Kind)) if len(table) else np.zeros(len(Kind))
    held = ", ".join(f"{int(counts[k]):,} {what}{'s' if counts[k] > 1 else ''}"
                     for k, what in HOST_KINDS.items() if counts[k])  # fmt: skip
    notes = "".join(f"; {w}" for w in table.meta.get("warnings", []) or [])
    return (f"{source} has no device activity (kernels, copies or sets) to analyse"
            f"{f' (it holds {held})' if held else ''}; profile with the device activities enabled{notes}")


def analyze(
    table: ActivityTable,
    *,
    window: tuple[int, int] | None = None,
    steps: tuple[int, int] | None = None,
    rules: Rules | str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    cats: Categorization | None = None,
) -> TraceAnalysis:
    """Analyse a loaded trace: per rank, the window, streams, device, categories and the rest.

    ``window`` is ``(start_ns, end_ns)`` on the trace clock; ``steps`` is ``(first, last)``;
    ``rules`` is a :class:`Rules` or a rules file path. ``progress(done, total)`` is called per
    rank; ``cats``: the table's categories when the caller has them already (from ``rules``).
    Raises ParityError when the table has no device activity at all.
    """
    if not isinstance(rules, Rules):
        rules = load_rules(rules)
    if len(table) == 0 or not table.device_mask().any():
        raise ParityError(no_device_activity(table))
    cats = categorize(table, rules) if cats is None else cats
    results, guessed = [], []
    for r, sub, sub_cats in _split_ranks(table, cats, progress):
        results.append(analyze_rank(sub, sub_cats, r, window=window, steps=steps))
        guessed.extend(unknown_core_findings(sub, r))
    matrix, left_out = communication_matrix(table) if is_ascend(table) else ([], 0)
    warnings = [str(w) for w in table.meta.get("warnings", []) or []]
    if left_out:
        warnings.append(f"{left_out} HCCL data tasks name ranks of their group beyond the {len(results)} loaded "
                        "ranks; they are left out of the communication matrix")
    return TraceAnalysis(
        source=str(table.meta.get("source", "")),
        format=str(table.meta.get("format", "")),
        rules=rules.source,
        ranks=tuple(results),
        spread=rank_spread(results),
        findings=tuple(rank_findings(results) + guessed),
        warnings=tuple(warnings),
        comm_matrix=tuple(matrix),
    )
