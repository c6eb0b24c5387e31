"""Kineto kind codes, and one block of scanned events turned into numpy column blocks.

The scan (:mod:`.kineto_events`) collects each block's values in the plain lists of a
:class:`Block`; :func:`add_block` converts and checks them (times to exact nanoseconds, ids
to int64, device and stream by kind) and appends them to the reader's
:class:`~parity.trace.readers.columns.Columns`. Each numpy call costs microseconds, as much
as converting a hundred values or more, so columns of one kind are converted together (start
and duration in one array, the six ids in another) and the column-by-column path, which names the
event of a bad value, runs only when the joint one refuses a block.
"""

from __future__ import annotations

from itertools import compress
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import Columns, int_or, times_to_ns
from parity.trace.readers.kineto_structs import ABSENT
from parity.trace.readers.lanes import ScanState
from parity.trace.readers.rawtimes import raw_times_to_ns
from parity.trace.table import NO_ID, Kind, KindCode

UNKNOWN = 99  # kind code of an event whose cat is not known; resolved by lanes at the end
GPU_ANNOTATION = 98  # a user annotation drawn on a device lane; Kind.OTHER once steps are marked
SKIP = -1
CAT_KIND: dict = {
    "kernel": Kind.KERNEL, "Kernel": Kind.KERNEL, "mtia_ccp_events": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY, "Memcpy": Kind.MEMCPY,
    "gpu_memset": Kind.MEMSET, "Memset": Kind.MEMSET,
    "cuda_runtime": Kind.RUNTIME, "Runtime": Kind.RUNTIME, "cuda_driver": Kind.RUNTIME,
    "Driver": Kind.RUNTIME, "mtia_runtime": Kind.RUNTIME, "privateuse1_runtime": Kind.RUNTIME,
    "privateuse1_driver": Kind.RUNTIME,
    "cpu_op": Kind.CPU_OP, "Operator": Kind.CPU_OP, "operator": Kind.CPU_OP,
    "cuda_sync": Kind.SYNC,
    "user_annotation": Kind.OTHER, "gpu_user_annotation": GPU_ANNOTATION,
    "python_function": Kind.OTHER, "cuda_profiler_range": Kind.OTHER,
    "cpu_instant_event": Kind.OTHER, "Trace": SKIP,
}  # fmt: skip
CAT_CODE = {k: int(v) for k, v in CAT_KIND.items()}
DEVICE_CODES = (KindCode.KERNEL, KindCode.MEMCPY, KindCode.MEMSET, KindCode.SYNC)  # on a stream
_ON_STREAM = np.zeros(UNKNOWN + 1, dtype=bool)
_ON_STREAM[list(DEVICE_CODES) + [GPU_ANNOTATION]] = True
EXTRA = {
    "pid": np.int64, "tid": np.int64, "external_id": np.int64, "sync_type": object,
    "wait_on_stream": np.int64, "wait_on_event_corr": np.int64,
}  # fmt: skip


class Block:
    """Plain lists the hot loop appends to; one block of events at a time."""

    __slots__ = ("corrs", "devs", "durs", "exts", "kinds", "name_ids", "pids", "streams", "sync_rows",
                 "tids", "ts", "where")  # fmt: skip

    def __init__(self) -> None:
        for slot in self.__slots__:
            setattr(self, slot, [])  # ts: the JSON texts (msgspec.Raw) of the timestamps


def on_stream(kind: np.ndarray) -> np.ndarray:
    """Rows drawn on a device stream (device kinds, syncs, GPU annotations), by a table look-up
    of the kind code (the codes of read rows are ``0 .. UNKNOWN``; skipped events never become
    rows), which costs one indexing pass where ``np.isin`` costs a dozen."""
    return _ON_STREAM[kind]


def add_block(cols: Columns, state: ScanState, first: int, b: Block) -> None:
    start, dur = _times(cols, state, first, b)
    kind = np.asarray(b.kinds, dtype=np.int16)
    pid, tid, dev, stream, corr, ext = _ids(b, first, state.path)
    ext[ext == ABSENT] = NO_ID
    on_device = on_stream(kind)
    device = np.where(on_device, np.where(dev != NO_ID, dev, pid), NO_ID)
    stream = np.where(on_device & (stream != NO_ID), stream, tid)
    n = len(kind)
    sync_type = np.full(n, None, dtype=object)
    wait_stream, wait_corr = np.full((2, n), NO_ID, dtype=np.int64)
    for row, kind_name, waited_stream, on_corr in b.sync_rows:
        sync_type[row] = kind_name if isinstance(kind_name, str) else None
        wait_stream[row] = int_or(waited_stream)
        wait_corr[row] = int_or(on_corr)
    state.events += n
    state.known_cat = state.known_cat or b.kinds.count(UNKNOWN) != n
    cols.add(
        device=device, stream=stream, kind=kind, name_id=np.asarray(b.name_ids, dtype=np.int32),
        start_ns=start, end_ns=start + dur, correlation=corr, pid=pid, tid=tid, external_id=ext,
        sync_type=sync_type, wait_on_stream=wait_stream, wait_on_event_corr=wait_corr,
    )  # fmt: skip


def _where(b: Block) -> np.ndarray:
    """Each row's position in its block of events, for naming a bad event in an error."""
    if type(b.where) is range:
        return np.arange(b.where.start, b.where.stop, dtype=np.int64)
    return np.asarray(b.where, dtype=np.int64)


def _times(cols: Columns, state: ScanState, first: int, b: Block) -> tuple[np.ndarray, np.ndarray]:
    """Start and duration (int64 ns) of the block's rows: ``ts`` from its JSON text
    (:func:`~.rawtimes.raw_times_to_ns`), ``dur`` by :func:`~.columns.times_to_ns`, both naming
    the event of a bad value, and a check that no duration is negative."""
    where = None if type(b.where) is range else b.where  # None: the rows are the events
    start = raw_times_to_ns(b.ts, path=state.path, first=first, index=where)
    dur = times_to_ns(b.durs, path=state.path, first=first, what="dur", index=where)
    negative = dur < 0
    if negative.any():
        index = first + int(_where(b)[np.flatnonzero(negative)[0]])
        raise ParityError(
            f"{state.path}: event {index} has a negative dur ({int(dur[negative][0])} ns); "
            "the trace is corrupt"
        )
    return start, dur


_ID_KEYS = ("pids", "tids", "devs", "streams", "corrs", "exts")


def _ids(b: Block, first: int, path: Path) -> np.ndarray:
    """The six id columns (``_ID_KEYS``) as rows of one int64 array; when that fails, column
    by column, which names the event of an id beyond 64 bits.

    Numpy converts a list at some 40 ns a value, while ``list.count`` passes over the same
    object in a few: a column holding one value (no device or stream on a CPU-only trace, one
    pid) is filled instead, and the other columns are converted in one call.
    """
    columns = [getattr(b, key) for key in _ID_KEYS]
    n = len(columns[0])
    try:
        constant = [_one_value(values, n) for values in columns]
        if True not in constant:
            ids = np.array(columns, dtype=np.int64)
            if ids.ndim == 2:
                return ids
        else:
            ids = np.empty((len(columns), n), dtype=np.int64)
            varied = [row for row, same in enumerate(constant) if not same]
            for row in compress(range(len(columns)), constant):
                ids[row] = columns[row][0]
            if varied:
                ids[varied] = np.array([columns[row] for row in varied], dtype=np.int64)
            return ids
    except (OverflowError, TypeError, ValueError):
        pass
    where = _where(b)
    return np.array([_int64(getattr(b, key), where, first, path, key) for key in _ID_KEYS])


def _one_value(values: list, n: int) -> bool:
    """Whether every value equals the first, an int that fits 64 bits (so filling the column
    with it gives what converting the list gives); 16 values spread over the list are
    compared before a full count."""
    first = values[0] if n else None
    return (
        type(first) is int and -(2**63) <= first < 2**63
        and values[::n // 16 + 1].count(first) == len(values[::n // 16 + 1])
        and values.count(first) == n
    )  # fmt: skip


_WHAT = {"pids": "pid", "tids": "tid", "devs": "args.device", "streams": "args.stream",
         "corrs": "args.correlation", "exts": "args['External id']"}  # fmt: skip


def _int64(values: list, where: np.ndarray, first: int, path: Path, key: str) -> np.ndarray:
    """An int64 column; a ParityError naming the event whose id does not fit 64 bits."""
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        bad = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
        raise ParityError(
            f"{path}: event {first + int(where[bad])} has {_WHAT[key]} {values[bad]} beyond 64 bits; "
            "the trace is corrupt"
        ) from None
