"""PyTorch profiler (Kineto) Chrome-trace JSON, and any other Chrome trace with device lanes.

Its rows are defined in ``docs/definitions.md`` (Trace formats). Bad input is a ParityError
naming the file and the event index; non-object entries and unpaired ``B``/``E`` events are
skipped and counted in ``meta["warnings"]``.

The text streams through :class:`.jsonstream.EventStream`, in one process or in shares
(:mod:`.parallel`). msgspec decodes each block into the structs below, which hold only what the
reader uses: ``ph`` picks the struct (a tagged union); a phase without rows (flow, instant,
counter: 40% of a Kineto trace) decodes into an empty one, its keys skipped unbuilt; ``ts``
stays JSON text (``msgspec.Raw``) for :mod:`.times`. A block whose values do not fit (a generic
or damaged trace) decodes into :class:`Loose` events, which :func:`_strict` turns into the same
structs. The scan works a column at a time (C-level ``map`` calls, one numpy conversion per
column, fix-ups only where needed): this is what makes large traces quick.
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import compress, repeat
from operator import is_
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers import parallel
from parity.trace.readers.columns import Columns, Progress, int_or
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.times import times_to_ns
from parity.trace.steps import step_numbers_by_name
from parity.trace.table import NO_ID, ActivityTable, Kind, KindCode

UNKNOWN = 99  # kind code of an event whose cat is not known; resolved by its lane at the end
GPU_ANNOTATION = 98  # a user annotation drawn on a device lane; Kind.OTHER once steps are marked
SKIP = -1  # the profiler's own span
CAT_KIND: dict = {
    "kernel": Kind.KERNEL, "Kernel": Kind.KERNEL, "mtia_ccp_events": Kind.KERNEL,
    "gpu_memcpy": Kind.MEMCPY, "Memcpy": Kind.MEMCPY, "gpu_memset": Kind.MEMSET, "Memset": Kind.MEMSET,
    "cuda_runtime": Kind.RUNTIME, "Runtime": Kind.RUNTIME, "cuda_driver": Kind.RUNTIME,
    "Driver": Kind.RUNTIME, "mtia_runtime": Kind.RUNTIME, "privateuse1_runtime": Kind.RUNTIME,
    "privateuse1_driver": Kind.RUNTIME, "cpu_op": Kind.CPU_OP, "Operator": Kind.CPU_OP,
    "operator": Kind.CPU_OP, "cuda_sync": Kind.SYNC, "user_annotation": Kind.OTHER,
    "gpu_user_annotation": GPU_ANNOTATION, "python_function": Kind.OTHER,
    "cuda_profiler_range": Kind.OTHER, "cpu_instant_event": Kind.OTHER, "Trace": SKIP,
}  # fmt: skip
CAT_CODE = {k: int(v) for k, v in CAT_KIND.items()}
DEVICE_CODES = (KindCode.KERNEL, KindCode.MEMCPY, KindCode.MEMSET, KindCode.SYNC)  # on a stream
# ON_STREAM[kind]: rows drawn on a device stream (device kinds, syncs, GPU annotations), a
# look-up of the kind codes 0 .. UNKNOWN: one pass where np.isin costs a dozen
ON_STREAM = np.zeros(UNKNOWN + 1, dtype=bool)
ON_STREAM[list(DEVICE_CODES) + [GPU_ANNOTATION]] = True
EXTRA = dict(pid=np.int64, tid=np.int64, external_id=np.int64, sync_type=object, wait_on_stream=np.int64,
             wait_on_event_corr=np.int64)  # fmt: skip
LANE_METADATA = frozenset({"process_name", "process_labels", "thread_name"})
ABSENT = -(2**63)  # decoded value of an absent ``External id``: tells it from an explicit -1
_KINETO_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds")
FLOAT_EXACT_US = 2**42  # below this a float64 of microseconds still resolves 1 ns
_RANK_IN_NAME = re.compile(r"rank[-_ ]?(\d+)", re.IGNORECASE)
_DEVICE = re.compile(r"\b(gpu|npu|mtia|xpu|tpu|hpu|ipu|device|accelerator|cuda|rocm|hip)\b", re.IGNORECASE)
_HOST = re.compile(r"\b(cpu|host|python)\b", re.IGNORECASE)
_STREAM = re.compile(r"\bstream\s*#?\s*(\d+)", re.IGNORECASE)
_LAST_NUMBER = re.compile(r"(\d+)\s*$")
# Chrome-trace phases without rows (the current ones and the deprecated async S/T/p/F)
OTHER_PHASES = ("s", "t", "f", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "P", "N", "O", "D",
                "R", "c", "v", "V", "(", ")")  # fmt: skip


def read_kineto(path: Path, *, progress: Progress | None = None, workers: int | None = None) -> ActivityTable:
    """Read one Kineto/Chrome JSON trace file (plain or gzip) in ``workers`` processes: this one
    and children forked for this read, one share of the text each (:mod:`.parallel`; None: by the
    file's size alone). The table is the same for every value."""
    inflated = parallel.inflated_bytes_estimate(path)  # one look at the file decides the reader
    workers = parallel.default_workers(inflated) if workers is None else workers
    if workers < 1:
        raise ParityError(f"workers={workers} for {path}; give 1 or more processes")
    if workers >= 2 and inflated:
        done = parallel.read_shares(path, size=inflated, workers=workers, parse=_parse)
        if done is not None:
            if progress is not None:
                progress(1, 1, str(path))
            return _finish(path, *done)
    cols, state, stream = _parse(path, progress=progress)
    return _finish(path, cols, state, stream.header)


def _parse(path: Path, source=None, *, progress: Progress | None = None) -> tuple[Columns, ScanState, EventStream]:
    """Columns, scan state and finished stream of the file, or of ``source`` (a share of it)."""
    stream = EventStream(path, decode=decode_events, source=source)
    cols, state = Columns(EXTRA), ScanState(path=path)
    for first, events in stream:
        scan_block(events, first, cols, state)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(path))
    return cols, state, stream


def _finish(path: Path, cols: Columns, state: ScanState, header: dict) -> ActivityTable:
    pairs_warning = _add_duration_pairs(cols, state)
    if cols.rows == 0:
        raise ParityError(f"{path}: empty trace (no complete 'X' or paired 'B'/'E' events); profile with "
                          "activities enabled or pick another file")  # fmt: skip
    warnings = [f"{state.non_objects} entries of the event array are not objects; skipped"] if state.non_objects else []
    warnings += [pairs_warning] if pairs_warning else []
    rank, rank_source = _rank(path, header)
    fmt = "kineto" if state.known_cat or any(k in header for k in _KINETO_KEYS) else "chrome"
    meta = {
        "source": str(path), "format": fmt, "clock_unit": "us", "ranks": [rank],
        "rank_source": rank_source, "warnings": warnings,
        "base_time_ns": int_or(header.get("baseTimeNanoseconds"), 0) or None,
        "display_time_unit": header.get("displayTimeUnit"),
        "device_properties": header.get("deviceProperties") or [],
    }  # fmt: skip
    table = cols.table(meta=meta)
    late = table.start_ns[table.start_ns >= FLOAT_EXACT_US * 1000]  # Kineto's ns-resolution traces
    meta["exact_timestamps"] = bool((late % 1000 != 0).any())  # where a float64 of us loses the ns
    kind, device, stream = _resolve_lanes(table, state)
    return replace(table, device=device, stream=stream, kind=_mark_steps(table, kind).astype(np.int8))


def _rank(path: Path, header: dict) -> tuple[int, str]:
    info = header.get("distributedInfo")
    if isinstance(info, dict) and type(info.get("rank")) is int:
        return info["rank"], "distributedInfo"
    match = _RANK_IN_NAME.search(path.name)
    if match:
        return int(match.group(1)), "file name"
    return 0, "assumed"


def _resolve_lanes(table: ActivityTable, state: ScanState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kind, device and stream columns, each row of unknown category made a kernel on a lane
    that looks like a device (device: the last number of the process label or name, else the
    pid; stream: the thread's ``stream N``, else the tid), else ``Kind.OTHER``."""
    kind, device, stream = table.kind.astype(np.int16), table.device.astype(np.int32), table.stream.copy()
    rows = np.flatnonzero(kind == UNKNOWN)
    if len(rows) == 0:
        return kind, device, stream
    pairs, inverse = np.unique(np.stack([table.extra["pid"][rows], table.extra["tid"][rows]], axis=1), axis=0,
                               return_inverse=True)  # fmt: skip
    lanes = [_lane(state, pid, tid) for pid, tid in pairs.tolist()]
    on_device = np.array([lane is not None for lane in lanes])[inverse.ravel()]
    kind[rows] = np.where(on_device, int(Kind.KERNEL), int(Kind.OTHER))
    kernels, of_lane = rows[on_device], inverse.ravel()[on_device]
    if len(kernels):
        device[kernels] = np.array([lane[0] if lane else 0 for lane in lanes], dtype=np.int32)[of_lane]
        stream[kernels] = np.array([lane[1] if lane else 0 for lane in lanes], dtype=np.int64)[of_lane]
    return kind, device, stream


def _lane(state: ScanState, pid: int, tid: int) -> tuple[int, int] | None:
    """``(device, stream)`` of a lane named like a device, else None."""
    process = f"{state.process.get(pid, '')} {state.labels.get(pid, '')}"
    thread = state.thread.get((pid, tid), "")
    stream = _STREAM.search(thread)
    if not stream and not (_DEVICE.search(process) and not _HOST.search(process)):
        return None
    device = _LAST_NUMBER.search(state.labels.get(pid) or state.process.get(pid, ""))
    device = int(device.group(1)) if device else (pid if pid != NO_ID else 0)
    return device, int(stream.group(1)) if stream else tid


def _mark_steps(table: ActivityTable, kind: np.ndarray) -> np.ndarray:
    """Host rows named ``ProfilerStep#N`` become STEP rows (not the copies AMD traces draw on
    GPU lanes as ``gpu_user_annotation``, which stay ``Kind.OTHER`` on their device)."""
    numbers = step_numbers_by_name(table.names)
    kind = kind.copy()
    kind[~ON_STREAM[kind] & (numbers[table.name_id] >= 0)] = Kind.STEP
    kind[kind == GPU_ANNOTATION] = Kind.OTHER
    return kind


def _add_duration_pairs(cols: Columns, state: ScanState) -> str | None:
    """Rows for the paired ``B``/``E`` events (see the module docstring); the warning counting
    those without a partner, which cannot be given a duration and are skipped."""
    marks = state.marks  # (ph, name, cat, pid, tid, ts text, event index) in file order
    if not marks:
        return None
    ts = times_to_ns([m[5] for m in marks], path=state.path, first=0, what="ts", index=[m[6] for m in marks])
    open_by_lane: dict[tuple, list[int]] = {}
    pairs, unmatched = [], 0
    for j, (ph, _name, _cat, pid, tid, _ts, index) in enumerate(marks):
        lane = (pid if isinstance(pid, (int, str)) else None, tid if isinstance(tid, (int, str)) else None)
        stack = open_by_lane.setdefault(lane, [])
        if ph == "B":
            stack.append(j)
        elif not stack:
            unmatched += 1
        else:
            b = stack.pop()
            if ts[j] < ts[b]:
                raise ParityError(f"{state.path}: event {index} ends (ph E) before its begin event {marks[b][6]}; "
                                  "the trace is corrupt")  # fmt: skip
            if CAT_CODE.get(marks[b][2], UNKNOWN) != SKIP:
                pairs.append((b, j))
    unmatched += sum(len(stack) for stack in open_by_lane.values())
    if pairs:
        begun = [marks[b] for b, _ in pairs]
        kind = np.array([CAT_CODE.get(m[2], UNKNOWN) for m in begun], dtype=np.int16)
        pid, tid = (np.array([int_or(m[k]) for m in begun], dtype=np.int64) for k in (3, 4))
        cols.add(
            device=np.where(np.isin(kind, DEVICE_CODES), pid, NO_ID), stream=tid, kind=kind,
            name_id=cols.name_ids([m[1] for m in begun]),
            start_ns=ts[[b for b, _ in pairs]], end_ns=ts[[e for _, e in pairs]], pid=pid, tid=tid,
        )  # fmt: skip
        state.known_cat = state.known_cat or bool((kind != UNKNOWN).any())
    return f"{unmatched} 'B'/'E' duration events have no partner; skipped" if unmatched else None


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses; absent ids decode as NO_ID (``External id`` as
    :data:`ABSENT`: the older key may stand in for it). Text ids (ROCm writes each runtime call's
    stream as ``"0x0"``) read as no id; a ``null`` or float id fails the decoder."""

    device: int | str = NO_ID
    stream: int | str = NO_ID
    correlation: int | str = NO_ID
    external_id: int = msgspec.field(default=ABSENT, name="External id")
    external_id_old: int | None = msgspec.field(default=None, name="external id")
    cuda_sync_kind: str | None = None
    sync_type: str | None = None
    wait_on_stream: int | None = None
    wait_on_cuda_event_record_corr_id: int | None = None


NO_ARGS = Args()


class Complete(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete (``ph: X``) event: one row."""

    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: msgspec.Raw = msgspec.Raw()
    dur: float | str | None = None
    args: Args | None = None


Begin = msgspec.defstruct("Begin", [], bases=(Complete,), tag="B")  # a duration event's start
End = msgspec.defstruct("End", [], bases=(Complete,), tag="E")  # and its end


class LaneArgs(msgspec.Struct, gc=False):
    name: str | None = None  # process or thread name
    labels: str | None = None  # process labels


class Metadata(msgspec.Struct, gc=False, tag_field="ph", tag="M"):
    """A metadata event: only what names a lane."""

    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    args: LaneArgs | None = None


class LooseArgs(msgspec.Struct, gc=False):
    """The ``args`` keys a :class:`Loose` event is read by, values as decoded; the other keys are
    skipped unread, as in a strict event, so what they hold never decides whether a block reads."""

    device: Any = None
    stream: Any = None
    correlation: Any = None
    external_id: Any = msgspec.field(default=msgspec.UNSET, name="External id")
    external_id_old: Any = msgspec.field(default=NO_ID, name="external id")
    cuda_sync_kind: Any = None
    sync_type: Any = None
    wait_on_stream: Any = None
    wait_on_cuda_event_record_corr_id: Any = None
    name: Any = None  # a metadata event's lane name and labels
    labels: Any = None


class Loose(msgspec.Struct, gc=False):
    """An event of a block that does not fit the types above, every value as decoded."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = msgspec.Raw()
    dur: Any = None
    args: LooseArgs | None | bool | int | float | str | list = None


_SKIPPED = tuple(msgspec.defstruct(f"Phase{ord(p)}", [], gc=False, tag_field="ph", tag=p) for p in OTHER_PHASES)
STRUCT_TYPES = frozenset((Complete, Begin, End, Metadata, *_SKIPPED))
BEGIN_END = {Begin: "B", End: "E"}
DECODER = msgspec.json.Decoder(list[Union[(Complete, Metadata, Begin, End, *_SKIPPED)]])
LOOSE_DECODER = msgspec.json.Decoder(list[Union[Loose, None, bool, int, float, str, list]])


def decode_events(text) -> list | None:
    """A block's events as structs, else as :class:`Loose` events (and entries that are not
    objects); None when the text is not JSON."""
    for decoder in (DECODER, LOOSE_DECODER):
        try:
            return decoder.decode(text)
        except msgspec.ValidationError:
            continue  # valid JSON of other types, or invalid JSON noticed late
        except msgspec.DecodeError:
            return None
    return None


class ScanState:
    """What the scan learns besides rows: lane names, ``B``/``E`` events to pair, counts."""

    def __init__(self, *, path: Path) -> None:
        self.path = path
        self.process: dict[object, str] = {}  # pid -> process_name
        self.labels: dict[object, str] = {}  # pid -> process_labels
        self.thread: dict[tuple[object, object], str] = {}  # (pid, tid) -> thread_name
        self.marks: list[tuple] = []  # (ph, name, cat, pid, tid, ts text, event index)
        self.non_objects = 0
        self.known_cat = False

    def add_lane(self, kind, pid, tid, name, labels) -> None:
        """Record ``process_name``, ``process_labels`` or ``thread_name`` metadata."""
        if not isinstance(pid, (int, str)):
            return
        if kind == "process_name" and isinstance(name, str):
            self.process[pid] = name
        elif kind == "process_labels" and isinstance(labels, str):
            self.labels[pid] = labels
        elif kind == "thread_name" and isinstance(name, str) and isinstance(tid, (int, str)):
            self.thread[(pid, tid)] = name

    def absorb(self, other: ScanState, first: int) -> None:
        """Add what the scan of the events that follow learnt (they start at index ``first``)."""
        self.process.update(other.process)
        self.labels.update(other.labels)
        self.thread.update(other.thread)
        self.marks.extend((*mark[:6], mark[6] + first) for mark in other.marks)
        self.non_objects += other.non_objects
        self.known_cat = self.known_cat or other.known_cat


def scan_block(events: list, first: int, cols: Columns, state: ScanState) -> None:
    """Append the rows of one decoded block (events ``first`` on) to ``cols``, the rest to ``state``."""
    if type(events[0]) not in STRUCT_TYPES:
        events = [_strict(e, first + i, state) for i, e in enumerate(events)]
    types = list(map(type, events))
    present = set(types)  # one hashing pass; each list.count would be a pass of comparisons
    if present == {Complete}:
        where: list[int] | range = range(len(types))  # every event is a complete one
        xs = events
    else:
        _note_lanes_and_marks(events, types, present, first, state)
        is_complete = list(map(is_, types, repeat(Complete)))
        where = list(compress(range(len(types)), is_complete))
        xs = list(compress(events, is_complete))
    kinds = list(map(CAT_CODE.get, [e.cat for e in xs], repeat(UNKNOWN, len(xs))))
    if SKIP in kinds:
        keep = [kind != SKIP for kind in kinds]
        where, xs, kinds = list(compress(where, keep)), list(compress(xs, keep)), list(compress(kinds, keep))
    if kinds:
        _add_rows(xs, kinds, where, first, cols, state)


def _add_rows(xs: list[Complete], kinds: list, where, first: int, cols: Columns, state: ScanState) -> None:
    """Columns of the complete events ``xs`` (event ``first + where[i]`` each): exact times, ids
    (a device row's device and stream from ``args``, else its ``pid`` and ``tid``), syncs."""
    path, index = state.path, None if type(where) is range else where
    name_id = cols.name_ids([e.name for e in xs])
    start = times_to_ns([e.ts for e in xs], path=path, first=first, what="ts", index=index)
    dur = times_to_ns([e.dur for e in xs], path=path, first=first, what="dur", index=index)
    if (dur < 0).any():
        row = int(np.flatnonzero(dur < 0)[0])
        raise ParityError(f"{path}: event {first + where[row]} has a negative dur ({int(dur[row])} ns); "
                          "the trace is corrupt")  # fmt: skip
    args = [e.args for e in xs]
    if None in args:
        args = [NO_ARGS if a is None else a for a in args]

    pid, tid, dev, stream, corr, ext = (
        _id_column(values, what=what, where=where, first=first, path=path) for values, what in (
            ([e.pid for e in xs], "pid"), ([e.tid for e in xs], "tid"), ([a.device for a in args], "args.device"),
            ([a.stream for a in args], "args.stream"), ([a.correlation for a in args], "args.correlation"),
            (_external_ids(args), "args['External id']")))  # fmt: skip
    ext[ext == ABSENT] = NO_ID
    n, kind = len(kinds), np.asarray(kinds, dtype=np.int16)
    on_device = ON_STREAM[kind]
    sync_type = np.full(n, None, dtype=object)
    wait_stream, wait_corr = np.full((2, n), NO_ID, dtype=np.int64)
    if KindCode.SYNC in kinds:
        for row in [i for i, k in enumerate(kinds) if k == KindCode.SYNC]:
            a = args[row]
            sync_type[row] = a.cuda_sync_kind or a.sync_type
            wait_stream[row] = int_or(a.wait_on_stream)
            wait_corr[row] = int_or(a.wait_on_cuda_event_record_corr_id)
    state.known_cat = state.known_cat or kinds.count(UNKNOWN) != n
    cols.add(
        device=np.where(on_device, np.where(dev != NO_ID, dev, pid), NO_ID),
        stream=np.where(on_device & (stream != NO_ID), stream, tid), kind=kind, name_id=name_id,
        start_ns=start, end_ns=start + dur, correlation=corr, pid=pid, tid=tid, external_id=ext,
        sync_type=sync_type, wait_on_stream=wait_stream, wait_on_event_corr=wait_corr,
    )  # fmt: skip


def _note_lanes_and_marks(events: list, types: list, present: set, first: int, state: ScanState) -> None:
    """Metadata (``M``) events name lanes, each distinct one once, in the order of its last
    occurrence (MTIA repeats 22 of them 300,000 times); ``B``/``E`` events are kept for pairing."""
    if Metadata in present:
        meta = [(e.name, e.pid, e.tid, e.args.name, e.args.labels)
                for e in compress(events, map(is_, types, repeat(Metadata)))
                if e.args is not None and e.name in LANE_METADATA]  # fmt: skip
        for key in reversed(dict.fromkeys(reversed(meta))):
            state.add_lane(*key)
    if not present.isdisjoint(BEGIN_END):
        for i in [i for i, t in enumerate(types) if t in BEGIN_END]:
            e = events[i]
            state.marks.append((BEGIN_END[types[i]], e.name, e.cat, e.pid, e.tid, bytes(e.ts), first + i))


def _strict(e, index: int, state: ScanState):
    """A :class:`Loose` event as the struct a well-formed one decodes into, or None (an entry that
    is not an object, counted, or a phase without rows). Ids that are not integers read as no id,
    other names as their text; a category or name that is no key, or ``args`` no object, is
    malformed."""
    if type(e) is not Loose:
        state.non_objects += 1
        return None
    lane = {"pid": e.pid if isinstance(e.pid, (int, str)) else None,
            "tid": e.tid if isinstance(e.tid, (int, str)) else None}  # fmt: skip
    if e.ph == "M":
        if not isinstance(e.args, LooseArgs):
            return None
        return Metadata(name=_text(e.name), **lane, args=LaneArgs(name=_text(e.args.name), labels=_text(e.args.labels)))
    if e.ph in ("B", "E"):
        return (Begin if e.ph == "B" else End)(name=_text(e.name), cat=_text(e.cat), **lane, ts=e.ts)
    if e.ph != "X":
        return None
    try:
        if CAT_CODE.get(e.cat) == SKIP:
            return None
        hash(e.name)  # a name must be a dictionary key
        name = e.name if e.name is None or type(e.name) is str else str(e.name)
        a = e.args or LooseArgs()  # absent, null, 0, "" or []: no args
        if not isinstance(a, LooseArgs):
            raise TypeError(f"args is {type(a).__name__}, not an object")
        args = Args(
            device=_int(a.device), stream=_int(a.stream), correlation=_int(a.correlation),
            external_id=_int(a.external_id_old if a.external_id is msgspec.UNSET else a.external_id),
            cuda_sync_kind=_text(a.cuda_sync_kind), sync_type=_text(a.sync_type), wait_on_stream=a.wait_on_stream,
            wait_on_cuda_event_record_corr_id=a.wait_on_cuda_event_record_corr_id,
        )  # fmt: skip
    except (TypeError, AttributeError) as exc:
        raise ParityError(f"{state.path}: event {index} is malformed ({type(exc).__name__}: {one_line(exc)}); "
                          "the trace is corrupt") from None  # fmt: skip
    return Complete(cat=_text(e.cat), name=name, pid=_int(e.pid), tid=_int(e.tid), ts=e.ts, dur=e.dur, args=args)


def _text(value) -> str | None:
    return value if type(value) is str else None


def _int(value) -> int:
    return value if type(value) is int else NO_ID


def _id_column(values: list, *, what: str, where, first: int, path: Path) -> np.ndarray:
    """Int64 ids: integers kept, text and None NO_ID (``sum``, a C-level pass, fails on them); a
    ParityError naming the event of an id beyond 64 bits. A column of one value (one pid, no
    stream on a CPU-only trace) is filled: ``list.count`` costs a few ns a value, numpy 20."""
    try:
        sum(values)
    except TypeError:
        values = [v if type(v) is int else NO_ID for v in values]
    one = values[0]
    if type(one) is int and -(2**63) <= one < 2**63 and values.count(one) == len(values):
        return np.full(len(values), one, dtype=np.int64)
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        bad = next(i for i, v in enumerate(values) if not -(2**63) <= v < 2**63)
        raise ParityError(f"{path}: event {first + where[bad]} has {what} {values[bad]} beyond 64 bits; "
                          "the trace is corrupt") from None  # fmt: skip


def _external_ids(args: list[Args]) -> list:
    """``External id``, else the older ``external id``, else :data:`ABSENT`."""
    exts = [a.external_id for a in args]
    olds = [a.external_id_old for a in args]
    if olds.count(None) == len(olds):
        return exts
    return [e if e != ABSENT else (NO_ID if o is None else o) for e, o in zip(exts, olds)]
