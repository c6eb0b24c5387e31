"""Shared pieces of every reader: column accumulation, exact time conversion, step assignment.

Times: trace formats give microseconds as JSON numbers (Kineto), strings (Ascend) or integer
nanoseconds (SQLite exports). Everything becomes ``int64`` nanoseconds. Timestamps are read
from their decimal text, exactly (Kineto's ``ts`` by :mod:`.rawtimes`, strings by
:func:`parse_us_text`); durations and other float microseconds are split into their integer
part (exact in a float64 below 2**53) and their fraction, rounded to the nanosecond.
"""

from __future__ import annotations

import re
from array import array as typed_array
from collections import defaultdict
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.table import NO_ID, ActivityTable, KindCode

INT64_DTYPES = dict(
    rank=np.int32, device=np.int32, stream=np.int64, kind=np.int8, name_id=np.int32,
    start_ns=np.int64, end_ns=np.int64, correlation=np.int64, step=np.int32,
)  # fmt: skip
ASCEND_CONCURRENT_TASKS = frozenset({
    "HCCL", "Notify Wait", "Notify Record", "Notify_Wait", "Notify_Record", "SDMA", "Write Value",
    "Reduce Inline", "Reduce_Inline", "RDMA", "Memcpy",
})  # fmt: skip
MAX_US = 9.0e15  # |t| above this (in us) overflows int64 nanoseconds


_CORE_FILL = dict(rank=(0, np.int32), device=(NO_ID, np.int32), correlation=(NO_ID, np.int64),
                  step=(-1, np.int32))  # fmt: skip


class Columns:
    """Numpy column blocks appended by a reader, plus the name dictionary.

    ``names`` maps a string to its id; readers look names up with ``names.get`` and add new
    ones with :meth:`intern` (a dict lookup per event, the cheapest dictionary encoding).
    ``extra`` maps the reader's extra columns to their dtypes; a block that lacks one of them,
    or ``rank``, ``device``, ``correlation`` or ``step``, gets it filled (None for an object
    column, ``NO_ID`` else; rank 0, step -1).
    """

    def __init__(self, extra: dict[str, object] | None = None) -> None:
        self.extra = extra or {}
        self.fill = {**_CORE_FILL, **{k: (None if d is object else NO_ID, d) for k, d in self.extra.items()}}
        self.names: dict[str, int] = {}
        self.blocks: dict[str, list[np.ndarray]] = defaultdict(list)
        self.rows = 0

    def intern(self, name: str) -> int:
        ident = self.names.get(name)
        if ident is None:
            ident = self.names[name] = len(self.names)
        return ident

    def add(self, **columns: np.ndarray) -> None:
        """Append one block; every column must have the same length (absent ones are filled)."""
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"ragged block: {lengths}")
        n = lengths.pop() if lengths else 0
        for key, (value, dtype) in self.fill.items():
            if key not in columns:
                columns[key] = np.full(n, value, dtype=dtype)
        for key, values in columns.items():
            self.blocks[key].append(values)
        self.rows += n

    def payload(self) -> dict:
        """The blocks, names and row count, to send from a worker process to
        :func:`~.parallel.merge`."""
        return {"blocks": dict(self.blocks), "names": list(self.names), "rows": self.rows}

    def column(self, key: str, dtype, fill=None) -> np.ndarray:
        """The concatenated column; ``fill`` for a column no block added."""
        parts = self.blocks.get(key)
        if not parts:
            return np.full(self.rows, NO_ID if fill is None else fill, dtype=dtype)
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts)  # one block: no copy
        return whole.astype(dtype, copy=False)

    def table(self, *, meta: dict) -> ActivityTable:
        """Build the table, with the extra columns some block added."""
        core = {c: self.column(c, d) for c, d in INT64_DTYPES.items()}
        extra = {k: self.column(k, d) for k, d in self.extra.items() if k in self.blocks}
        return ActivityTable(**core, names=tuple(self.names), extra=extra, meta=meta)


def int_or(value, default: int = NO_ID) -> int:
    """``value`` when it is an int that fits int64, else ``default``."""
    return value if type(value) is int and -(2**63) <= value < 2**63 else default


def us_to_ns(values: np.ndarray) -> np.ndarray:
    """Float microseconds to int64 nanoseconds, integer part and fraction converted apart:
    ``ns = floor(us) * 1000 + rint((us - floor(us)) * 1000)``, the second term skipped when
    every fraction is zero."""
    whole = np.floor(values)
    frac = values - whole
    ns = whole.astype(np.int64)
    ns *= 1000
    if frac.any():  # whole microseconds need no rounding pass
        frac *= 1000.0
        np.rint(frac, out=frac)
        ns += frac.astype(np.int64)
    return ns


def parse_us_text(text: str) -> int:
    """A decimal microsecond string (``"1736408883688177.930"``, maybe padded) to int ns.

    Digits past the nanosecond are rounded half up. Raises ``ValueError`` on anything else.
    """
    text = text.strip()
    negative = text.startswith("-")
    whole, dot, frac = text.lstrip("+-").partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or (dot and not (whole or frac)):
        if "e" in text.lower():
            value = float(text)
            return int(round(value * 1000.0))
        raise ValueError(f"not a number: {text!r}")
    ns = int(whole) * 1000 + int((frac + "000")[:3])
    if len(frac) > 3 and frac[3] >= "5":
        ns += 1
    return -ns if negative else ns


def times_to_ns(
    values: list, *, path: Path, first: int, what: str, index: np.ndarray | None = None
) -> np.ndarray:
    """A list of microsecond values (numbers or strings) to int64 ns, naming bad events.

    Raises :class:`ParityError` with the event index (``first + index[i]``, or ``first + i``
    without ``index``) for a missing, non-numeric, non-finite or out-of-range value. Lists of
    plain numbers in range take the short way (:func:`plain_us`); anything else is checked
    value by value where needed.
    """
    plain = plain_us(values)
    if plain is not None:
        return us_to_ns(plain)
    position = (lambda i: first + int(index[i])) if index is not None else (lambda i: first + i)
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is not None and not _NOT_NUMBERS.isdisjoint(set(map(type, values))):
        array = None  # numpy would read "12.5" or True as numbers: check them one by one
    if array is not None:
        bad = ~np.isfinite(array) | (np.abs(array) > MAX_US)
        if bad.any():
            bad_at = int(np.flatnonzero(bad)[0])
            _one_time(values[bad_at], path=path, index=position(bad_at), what=what)
            raise ParityError(
                f"{path}: event {position(bad_at)} has {what} {values[bad_at]!r} out of range; "
                "the trace is corrupt"
            )
        return us_to_ns(array)
    out = np.empty(len(values), dtype=np.int64)
    for i, value in enumerate(values):
        out[i] = _one_time(value, path=path, index=position(i), what=what)
    return out


_NOT_NUMBERS = frozenset({str, bool})  # numpy would read "12.5" or True as numbers


def plain_us(values: list, *, lowest: float = -MAX_US) -> np.ndarray | None:
    """``values`` as float64 when every one is a number (not a bool) within ``lowest ..
    MAX_US``, else None. ``array("d")`` takes numbers only (strings, ``None`` and lists fail
    it) but reads a bool as 0 or 1, so types are checked at the values 0 and 1 alone; one
    ``min`` and one ``max`` replace the finiteness and range tests (NaN fails both)."""
    try:
        us = np.frombuffer(typed_array("d", values), dtype=np.float64)
    except (TypeError, OverflowError):
        return None
    if len(us) == 0 or not (us.min() >= lowest and us.max() <= MAX_US):
        return None
    zero_one = np.flatnonzero((us == 0) | (us == 1)).tolist()
    if zero_one and not _NOT_NUMBERS.isdisjoint(map(type, map(values.__getitem__, zero_one))):
        return None
    return us


def _one_time(value, *, path: Path, index: int, what: str) -> int:
    if value is None:
        raise ParityError(f"{path}: event {index} has no {what}; the trace is corrupt")
    try:
        if isinstance(value, str):
            ns = parse_us_text(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if not np.isfinite(value) or abs(value) > MAX_US:
                raise ValueError("out of range")
            ns = int(us_to_ns(np.array([float(value)]))[0]) if isinstance(value, float) else (
                int(value) * 1000
            )
        else:
            raise ValueError("wrong type")
    except (ValueError, OverflowError):
        raise ParityError(
            f"{path}: event {index} has {what} {value!r}, not a time in microseconds; "
            "the trace is corrupt"
        ) from None
    if abs(ns) > MAX_US * 1000:
        raise ParityError(f"{path}: event {index} has {what} {value!r} out of range")
    return ns


def assign_steps(
    *, kind: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray, correlation: np.ndarray,
    step: np.ndarray,
) -> np.ndarray:
    """Give every row the number of the step span (``Kind.STEP`` rows) it belongs to.

    A device or sync row belongs to the step in which the host call that launched it started
    (matched by ``correlation`` to a ``Kind.RUNTIME`` row), since a kernel launched at the end
    of step 5 but running into step 6 is step 5's work. Rows without a launching call use
    their own start time. Rows outside every step get -1. ``step`` holds the step numbers of
    the STEP rows on input (other rows ignored); the result is a new array.
    """
    out = np.full(len(kind), -1, dtype=np.int32)
    is_step = kind == KindCode.STEP
    if not is_step.any():
        return out
    order = np.argsort(start_ns[is_step], kind="stable")
    step_start = start_ns[is_step][order]
    step_end = end_ns[is_step][order]
    step_num = step[is_step][order]
    when = start_ns.copy()
    # device work (the three lowest kind codes) and syncs, launched by a runtime call
    launched = ((kind <= KindCode.MEMSET) & (kind >= KindCode.KERNEL) | (kind == KindCode.SYNC)) & (correlation != NO_ID)
    runtime = (kind == KindCode.RUNTIME) & (correlation != NO_ID)
    if launched.any() and runtime.any():
        corr, first = np.unique(correlation[runtime], return_index=True)
        launch_time = start_ns[runtime][first]
        pos = np.searchsorted(corr, correlation[launched])
        pos = np.minimum(pos, len(corr) - 1)
        found = corr[pos] == correlation[launched]
        rows = np.flatnonzero(launched)[found]
        when[rows] = launch_time[pos[found]]
    index = np.searchsorted(step_start, when, side="right") - 1
    inside = (index >= 0) & (when < step_end[np.maximum(index, 0)])
    out[inside] = step_num[index[inside]]
    out[is_step] = step[is_step]
    return out


def stream_overlap_warning(table: ActivityTable) -> str | None:
    """A warning when device rows on one (rank, device, stream) overlap, else None.

    A stream runs its work in order, so overlap there means clock skew or a profiler merging
    lanes. Rows are kept as they are (busy time is a union, so overlap never double-counts);
    the warning says how many and by how much at most. Ascend HCCL rows are left out: an
    operation (``task_type == "HCCL"``) spans its own tasks on its stream by construction, and
    its tasks (Notify Wait, SDMA, Write Value...) run on several engines of one stream at once.
    """
    mask = table.device_mask()
    task_type = table.extra.get("task_type")
    if task_type is not None:
        mask &= ~np.isin(task_type, list(ASCEND_CONCURRENT_TASKS))
    if mask.sum() < 2:
        return None
    columns = table.rank[mask], table.device[mask], table.stream[mask], table.start_ns[mask], table.end_ns[mask]
    count, largest = _lane_overlaps(*columns)
    if not count:
        return None
    return (
        f"{count} device activities start before the previous one on the same stream "
        f"ends (largest overlap {largest} ns); kept as recorded"
    )


def _lane_overlaps(rank, device, stream, start, end) -> tuple[int, int]:
    """How many rows start before an earlier row of their lane (rank, device, stream) ends,
    in order of start (ties in row order), and the largest such overlap, ns."""
    order = np.lexsort((start, stream, device, rank))
    rank, device, stream = rank[order], device[order], stream[order]
    start, end = start[order], end[order]
    same = (rank[1:] == rank[:-1]) & (device[1:] == device[:-1]) & (stream[1:] == stream[:-1])
    lane_id = np.cumsum(np.concatenate(([True], ~same))) - 1
    prev_end = _lane_running_max(end, lane_id)
    overlap = np.zeros(len(start), dtype=np.int64)
    overlap[1:] = np.where(same, prev_end[:-1] - start[1:], 0)
    bad = overlap > 0
    return int(bad.sum()), int(overlap.max())


def _lane_running_max(values: np.ndarray, lane_id: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` that restarts at each new lane (rows sorted by lane).

    The lanes are laid end to end (values shifted to start at 0, lane ``k`` raised by
    ``k · (span + 1)``), so one ``np.maximum.accumulate`` serves every lane: no lane's values
    reach the next lane's. A loop over lanes where that line would overflow int64.
    """
    if len(values) == 0:
        return values.copy()
    base = int(values.min())
    span = int(values.max()) - base + 1
    if span * (int(lane_id[-1]) + 1) < 2**62:
        shift = lane_id.astype(np.int64) * span - base
        return np.maximum.accumulate(values + shift) - shift
    out = values.copy()
    boundaries = np.flatnonzero(np.diff(lane_id)) + 1
    for lo, hi in zip(np.concatenate(([0], boundaries)), np.concatenate((boundaries, [len(values)]))):
        out[lo:hi] = np.maximum.accumulate(values[lo:hi])
    return out


PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)$")


def step_numbers_by_name(names: tuple[str, ...]) -> np.ndarray:
    """Per name id: N of a ``ProfilerStep#N`` name (clipped to int32), else -1; a prefix test
    first, as traces hold thousands of names and a handful of steps."""
    numbers = np.full(max(len(names), 1), -1, dtype=np.int64)
    for i in [i for i, n in enumerate(names) if n.startswith("ProfilerStep#")]:
        match = PROFILER_STEP.match(names[i])
        if match:
            numbers[i] = min(int(match.group(1)), 2**31 - 1)
    return numbers


def place_steps(table: ActivityTable, kind: np.ndarray | None = None) -> np.ndarray:
    """The step of every row (``kind``: the table's unless given): ``N`` for a ``Kind.STEP`` row
    named ``ProfilerStep#N``; a step the reader already set (``kernel_details.csv``'s ``Step
    Id``) kept; every other row the step its launch fell in (:func:`assign_steps`)."""
    kind = table.kind if kind is None else kind
    step = table.step.copy()
    is_step = kind == KindCode.STEP
    step[is_step] = step_numbers_by_name(table.names)[table.name_id[is_step]]
    placed = assign_steps(kind=kind, start_ns=table.start_ns, end_ns=table.end_ns,
                          correlation=table.correlation, step=step)  # fmt: skip
    return np.where(step >= 0, step, placed).astype(np.int32)


def with_columns(table: ActivityTable, **columns: np.ndarray) -> ActivityTable:
    """``table`` with some core columns replaced."""
    core = {c: getattr(table, c) for c in ActivityTable.COLUMNS}
    core.update(columns)
    return ActivityTable(**core, names=table.names, extra=table.extra, meta=table.meta)


def finish_ascend_rank(table: ActivityTable, rank: int) -> ActivityTable:
    """The rank column and every row's step (:func:`place_steps`)."""
    return with_columns(table, rank=np.full(len(table), rank, np.int32), step=place_steps(table))
