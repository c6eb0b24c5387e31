"""PyTorch profiler (Kineto) Chrome-trace JSON, and any other Chrome trace with device lanes.

What becomes a row: every complete event (``ph: X``) except the profiler's own ``Trace``
spans. ``cat`` gives the :class:`Kind` (current and older spellings: ``kernel``/``Kernel``,
``gpu_memcpy``/``Memcpy``, ``cuda_runtime``/``Runtime``, ``cpu_op``/``Operator``, MTIA's
``mtia_ccp_events``/``mtia_runtime``, ...); ``ProfilerStep#N`` spans on the host become
``Kind.STEP`` rows with ``step = N`` and every other row gets the step its launch fell in.
Device rows take ``args.device`` (else ``pid``) and ``args.stream`` (else ``tid``). An event
whose ``cat`` is unknown is a kernel when its process or thread looks like a device lane
(:mod:`.lanes`), which is how a generic Chrome trace with device rows is read.

Time: ``ts``/``dur`` are microseconds whatever ``displayTimeUnit`` says (the Trace Event Format
defines them so; ``displayTimeUnit`` is a viewer hint and Kineto writes ``"ns"`` there for
traces whose values are still microseconds, with three decimals). ``start_ns`` is on the
file's clock (``ts * 1000``), so windows match what a viewer shows; ``baseTimeNanoseconds``
is kept in ``meta["base_time_ns"]``.

Bad input, and the choice for each:
    - not JSON, truncated, gzip cut short: :class:`ParityError` naming the file and the
      event index reached (an analysis of part of a trace would be silently wrong);
    - a complete event without ``ts`` or ``dur``, with a non-numeric one, or a negative
      ``dur``: ParityError naming the event index (no safe place to put it);
    - an event of the wrong shape (``args`` not an object, unhashable ``name``): ParityError
      with the event index;
    - array entries that are not objects, and ``B``/``E`` duration events (not read):
      skipped, counted in ``meta["warnings"]``;
    - no complete events at all: ParityError ("empty trace").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import Columns, assign_steps, times_to_ns
from parity.trace.readers import parallel
from parity.trace.readers.jsonstream import EventStream, decode_block
from parity.trace.readers.lanes import Lanes
from parity.trace.table import NO_ID, ActivityTable, Kind

UNKNOWN = 99  # kind code of an event whose cat is not known; resolved by lanes at the end
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
    "user_annotation": Kind.OTHER, "gpu_user_annotation": Kind.OTHER,
    "python_function": Kind.OTHER, "cuda_profiler_range": Kind.OTHER,
    "cpu_instant_event": Kind.OTHER, "Trace": SKIP,
}  # fmt: skip
_CAT_CODE = {k: int(v) for k, v in CAT_KIND.items()}
_DEVICE_CODES = (int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET), int(Kind.SYNC))
_KINETO_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds")
_STEP = re.compile(r"ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[-_ ]?(\d+)", re.IGNORECASE)
EXTRA = dict(
    pid=np.int64, tid=np.int64, external_id=np.int64, sync_type=object, wait_on_stream=np.int64,
    wait_on_event_corr=np.int64,
)  # fmt: skip
Progress = Callable[[int, int, str], None]
_Int = int | None
_IntStr = int | str | None


class _Args(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses; all others are skipped while decoding."""

    device: _Int = None
    stream: _Int = None
    correlation: _Int = None
    external_id: _Int = msgspec.field(default=None, name="External id")
    external_id_old: _Int = msgspec.field(default=None, name="external id")
    name: str | None = None  # metadata events: process/thread name
    labels: str | None = None  # metadata events: process labels
    cuda_sync_kind: str | None = None
    sync_type: str | None = None
    wait_on_stream: _Int = None
    wait_on_cuda_event_record_corr_id: _Int = None


class _Event(msgspec.Struct, gc=False):
    """One trace event as the reader needs it."""

    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: _IntStr = None
    tid: _IntStr = None
    ts: float | str | None = None
    dur: float | str | None = None
    ts_frac: float = 0.0
    args: _Args | None = None


DECODER = msgspec.json.Decoder(list[_Event])


def read_kineto(path: Path, *, progress: Progress | None = None) -> ActivityTable:
    """Read one Kineto/Chrome JSON trace file (plain or gzip) into an ActivityTable.

    Large files are parsed on several cores (:mod:`.parallel`); whatever goes wrong there is
    read again here in one process, which names the bad event.
    """
    if parallel.worth_it(path):
        state = _State(path=path, exact=False)
        done = parallel.read_parallel(path, _scan_text, _scan_any, state, progress)
        if done is not None:
            cols, header = done
            return _finish(path, cols, state, header)
    stream = EventStream(path, decoder=DECODER)
    cols = Columns()
    state = _State(path=path, exact=False)
    for first, events in stream:
        state.exact = stream.exact_ts
        state.exact_seen = state.exact_seen or state.exact
        _scan_any(events, cols, state, first)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(path))
    return _finish(path, cols, state, stream.header)


def _scan_any(events: list, cols: Columns, state: _State, first: int = 0) -> None:
    if events and type(events[0]) is _Event:
        _scan_structs(events, first, cols, state)
    else:
        _scan(events, first, cols, state)


def _scan_text(path: str, text: bytes) -> dict | None:
    """Worker side of the parallel read: parse and scan one block; None if it fails."""
    events, exact = decode_block(text, DECODER)
    if events is None:
        return None
    state = _State(path=Path(path), exact=exact)
    cols = Columns()
    try:
        _scan_any(events, cols, state)
    except ParityError:
        return None
    return {"blocks": dict(cols.blocks), "names": list(cols.names), "rows": cols.rows,
            **state.payload()}  # fmt: skip


class _State:
    """What the scan learns besides rows: lane metadata, counts for warnings."""

    def __init__(self, *, path: Path, exact: bool) -> None:
        self.path = path
        self.exact = exact
        self.exact_seen = exact
        self.lanes = Lanes()
        self.non_objects = 0
        self.begin_end = 0
        self.events = 0
        self.known_cat = False

    def payload(self) -> dict:
        """What a worker learnt, for :meth:`absorb` in the reading process."""
        return {"process": self.lanes.process, "labels": self.lanes.labels,
                "thread": self.lanes.thread, "non_objects": self.non_objects,
                "begin_end": self.begin_end, "events": self.events,
                "known_cat": self.known_cat, "exact": self.exact_seen}  # fmt: skip

    def absorb(self, payload: dict) -> None:
        self.lanes.process.update(payload["process"])
        self.lanes.labels.update(payload["labels"])
        self.lanes.thread.update(payload["thread"])
        self.non_objects += payload["non_objects"]
        self.begin_end += payload["begin_end"]
        self.events += payload["events"]
        self.known_cat = self.known_cat or payload["known_cat"]
        self.exact_seen = self.exact_seen or payload["exact"]


class _Block:
    """Plain lists the hot loop appends to; one block of events at a time."""

    __slots__ = ("kinds", "name_ids", "ts", "tsf", "durs", "pids", "tids", "devs", "streams",
                 "corrs", "exts", "where", "sync_rows")  # fmt: skip

    def __init__(self) -> None:
        for slot in self.__slots__:
            setattr(self, slot, [])


def _scan_structs(events: list[_Event], first: int, cols: Columns, state: _State) -> None:
    """The fast path of :func:`_scan` for blocks decoded into structs (types already checked)."""
    b = _Block()
    kinds, name_ids, ts, tsf, durs = b.kinds, b.name_ids, b.ts, b.tsf, b.durs
    pids, tids, devs, streams, corrs, exts, where = (
        b.pids, b.tids, b.devs, b.streams, b.corrs, b.exts, b.where
    )
    names_get, intern, cat_code = cols.names.get, cols.intern, _CAT_CODE.get
    exact, lanes = state.exact, state.lanes
    for i, e in enumerate(events):
        ph = e.ph
        if ph != "X":
            if ph == "M" and e.args is not None:
                lanes.add(e.name, e.pid, e.tid, e.args.name, e.args.labels)
            elif ph == "B" or ph == "E":
                state.begin_end += 1
            continue
        kind = cat_code(e.cat, UNKNOWN)
        if kind == SKIP:
            continue
        name = e.name
        nid = names_get(name)
        if nid is None:
            nid = intern(name if name is not None else "")
        pid, tid, a = e.pid, e.tid, e.args
        kinds.append(kind)
        name_ids.append(nid)
        ts.append(e.ts)
        durs.append(e.dur)
        pids.append(pid if type(pid) is int else NO_ID)
        tids.append(tid if type(tid) is int else NO_ID)
        where.append(i)
        if exact:
            tsf.append(e.ts_frac)
        if a is None:
            devs.append(NO_ID)
            streams.append(NO_ID)
            corrs.append(NO_ID)
            exts.append(NO_ID)
            continue
        dev, st, corr, ext = a.device, a.stream, a.correlation, a.external_id
        if ext is None:
            ext = a.external_id_old
        devs.append(NO_ID if dev is None else dev)
        streams.append(NO_ID if st is None else st)
        corrs.append(NO_ID if corr is None else corr)
        exts.append(NO_ID if ext is None else ext)
        if kind == 5:  # Kind.SYNC
            b.sync_rows.append((
                len(kinds) - 1, a.cuda_sync_kind or a.sync_type, a.wait_on_stream,
                a.wait_on_cuda_event_record_corr_id,
            ))  # fmt: skip
    if kinds:
        _add_block(cols, state, first, b)


def _scan(events: list, first: int, cols: Columns, state: _State) -> None:
    """Turn one block of event dicts into column blocks (the hot loop: one pass, no objects)."""
    b = _Block()
    kinds, name_ids, ts, tsf, durs = b.kinds, b.name_ids, b.ts, b.tsf, b.durs
    pids, tids, devs, streams, corrs, exts, where = (
        b.pids, b.tids, b.devs, b.streams, b.corrs, b.exts, b.where
    )
    names_get, intern, cat_code = cols.names.get, cols.intern, _CAT_CODE.get
    exact, empty, note = state.exact, {}, state.lanes.note
    i = -1
    try:
        for i, e in enumerate(events):
            if type(e) is not dict:
                state.non_objects += 1
                continue
            ph = e.get("ph")
            if ph != "X":
                if ph == "M":
                    note(e)
                elif ph == "B" or ph == "E":
                    state.begin_end += 1
                continue
            kind = cat_code(e.get("cat"), UNKNOWN)
            if kind == SKIP:
                continue
            args = e.get("args") or empty
            name = e.get("name")
            nid = names_get(name)
            if nid is None:
                nid = intern(name if type(name) is str else str(name))
            pid, tid = e.get("pid"), e.get("tid")
            dev, st, corr = args.get("device"), args.get("stream"), args.get("correlation")
            ext = args.get("External id", args.get("external id", NO_ID))
            kinds.append(kind)
            name_ids.append(nid)
            ts.append(e.get("ts"))
            durs.append(e.get("dur"))
            pids.append(pid if type(pid) is int else NO_ID)
            tids.append(tid if type(tid) is int else NO_ID)
            devs.append(dev if type(dev) is int else NO_ID)
            streams.append(st if type(st) is int else NO_ID)
            corrs.append(corr if type(corr) is int else NO_ID)
            exts.append(ext if type(ext) is int else NO_ID)
            where.append(i)
            if exact:
                tsf.append(e.get("ts_frac", 0.0))
            if kind == 5:  # Kind.SYNC
                b.sync_rows.append((
                    len(kinds) - 1, args.get("cuda_sync_kind", args.get("sync_type")),
                    args.get("wait_on_stream"), args.get("wait_on_cuda_event_record_corr_id"),
                ))  # fmt: skip
    except (TypeError, AttributeError, ValueError, OverflowError) as exc:
        raise ParityError(
            f"{state.path}: event {first + i} is malformed ({type(exc).__name__}: {exc}); "
            "the trace is corrupt"
        ) from None
    if kinds:
        _add_block(cols, state, first, b)


def _add_block(cols: Columns, state: _State, first: int, b: _Block) -> None:
    where = np.asarray(b.where, dtype=np.int64)
    start = times_to_ns(b.ts, path=state.path, first=first, what="ts", index=where)
    if state.exact:
        start = start + np.rint(np.asarray(b.tsf, dtype=np.float64) * 1000).astype(np.int64)
    dur = times_to_ns(b.durs, path=state.path, first=first, what="dur", index=where)
    negative = dur < 0
    if negative.any():
        index = first + int(where[np.flatnonzero(negative)[0]])
        raise ParityError(
            f"{state.path}: event {index} has a negative dur ({int(dur[negative][0])} ns); "
            "the trace is corrupt"
        )
    kind = np.asarray(b.kinds, dtype=np.int16)
    ints = {key: _int64(getattr(b, key), where, first, state.path, key)
            for key in ("pids", "tids", "devs", "streams", "corrs", "exts")}  # fmt: skip
    pid, tid, dev, stream = ints["pids"], ints["tids"], ints["devs"], ints["streams"]
    on_device = np.isin(kind, _DEVICE_CODES)
    device = np.where(on_device, np.where(dev != NO_ID, dev, pid), NO_ID)
    stream = np.where(on_device & (stream != NO_ID), stream, tid)
    n = len(kind)
    sync_type = np.full(n, None, dtype=object)
    wait_stream = np.full(n, NO_ID, dtype=np.int64)
    wait_corr = np.full(n, NO_ID, dtype=np.int64)
    for row, kind_name, on_stream, on_corr in b.sync_rows:
        sync_type[row] = kind_name if isinstance(kind_name, str) else None
        wait_stream[row] = _int_or(on_stream)
        wait_corr[row] = _int_or(on_corr)
    state.events += n
    state.known_cat = state.known_cat or bool((kind != UNKNOWN).any())
    cols.add(
        rank=np.zeros(n, dtype=np.int32), device=device, stream=stream, kind=kind,
        name_id=np.asarray(b.name_ids, dtype=np.int32), start_ns=start, end_ns=start + dur,
        correlation=ints["corrs"], step=np.full(n, -1, np.int32),
        pid=pid, tid=tid, external_id=ints["exts"],
        sync_type=sync_type, wait_on_stream=wait_stream, wait_on_event_corr=wait_corr,
    )  # fmt: skip


def _int_or(value, default: int = NO_ID) -> int:
    return value if type(value) is int and -(2**63) <= value < 2**63 else default


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


def _finish(path: Path, cols: Columns, state: _State, header: dict) -> ActivityTable:
    if cols.rows == 0:
        raise ParityError(
            f"{path}: empty trace (no complete 'X' events); profile with activities enabled "
            "or pick another file"
        )
    warnings = []
    if state.non_objects:
        warnings.append(f"{state.non_objects} entries of the event array are not objects; skipped")
    if state.begin_end:
        warnings.append(
            f"{state.begin_end} 'B'/'E' duration events ignored (only complete 'X' events are read)"
        )
    rank, rank_source = _rank(path, header)
    fmt = "kineto" if state.known_cat or any(k in header for k in _KINETO_KEYS) else "chrome"
    meta = {
        "source": str(path), "format": fmt, "clock_unit": "us", "ranks": [rank],
        "rank_source": rank_source, "warnings": warnings,
        "base_time_ns": _int_or(header.get("baseTimeNanoseconds"), 0) or None,
        "display_time_unit": header.get("displayTimeUnit"),
        "device_properties": header.get("deviceProperties") or [],
        "exact_timestamps": state.exact_seen,
    }  # fmt: skip
    table = cols.table(extra_keys=EXTRA, meta=meta)
    kind = state.lanes.resolve(table, UNKNOWN)
    kind = _mark_steps(table, kind)
    step = _step_numbers(table, kind)
    step = assign_steps(
        kind=kind, start_ns=table.start_ns, end_ns=table.end_ns,
        correlation=table.correlation, step=step,
    )  # fmt: skip
    device, stream = state.lanes.device_and_stream(table, kind, UNKNOWN)
    return ActivityTable(
        rank=np.full(len(table), rank, dtype=np.int32), device=device, stream=stream,
        kind=kind.astype(np.int8), name_id=table.name_id, start_ns=table.start_ns,
        end_ns=table.end_ns, correlation=table.correlation, step=step, names=table.names,
        extra=table.extra, meta=meta,
    )  # fmt: skip


def _rank(path: Path, header: dict) -> tuple[int, str]:
    info = header.get("distributedInfo")
    if isinstance(info, dict) and type(info.get("rank")) is int:
        return info["rank"], "distributedInfo"
    match = _RANK_IN_NAME.search(path.name)
    if match:
        return int(match.group(1)), "file name"
    return 0, "assumed"


def _mark_steps(table: ActivityTable, kind: np.ndarray) -> np.ndarray:
    """Host rows named ``ProfilerStep#N`` become STEP rows."""
    is_step_name = np.array([bool(_STEP.match(n)) for n in table.names] or [False])
    host = ~np.isin(kind, _DEVICE_CODES)
    kind = kind.copy()
    kind[host & is_step_name[table.name_id]] = Kind.STEP
    return kind


def _step_numbers(table: ActivityTable, kind: np.ndarray) -> np.ndarray:
    numbers = np.array(
        [int(m.group(1)) if (m := _STEP.match(n)) else -1 for n in table.names] or [-1],
        dtype=np.int64,
    )
    step = np.full(len(table), -1, dtype=np.int32)
    is_step = kind == Kind.STEP
    step[is_step] = np.clip(numbers[table.name_id[is_step]], -1, 2**31 - 1)
    return step
