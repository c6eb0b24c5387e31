"""Kineto/Chrome-trace events to numpy column blocks, one decoded block at a time.

msgspec decodes a block into the structs below, which hold only what the reader uses: ``ph``
picks the struct (a tagged union); a phase without rows (flow, instant, counter: 40% of a
Kineto trace) decodes into an empty one, its keys skipped unbuilt; ``ts`` stays JSON text
(``msgspec.Raw``) for :mod:`.times`. A block whose values do not fit (a generic or damaged
trace) decodes into :class:`Loose` events, which :func:`_strict` turns into the same structs.
The scan works a column at a time (C-level ``map`` calls, one numpy conversion per column,
fix-ups only where needed): this is what makes large traces quick.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import is_
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.columns import Columns, int_or
from parity.trace.readers.times import times_to_ns
from parity.trace.readers.kineto_collectives import (COLLECTIVE, CollectiveMark, collective_columns, marked,  # noqa: F401
                                                      with_collectives)
from parity.trace.table import NO_ID, Kind, KindCode

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
# the CUPTI range profiler's kernel ranges: each kernel replayed (serialised) to read its counters,
# on no stream, so its time is not the kernel's time as it ran; kept as other host rows
PROFILER_RANGE = "cuda_profiler_range"
DEVICE_CODES = (KindCode.KERNEL, KindCode.MEMCPY, KindCode.MEMSET, KindCode.SYNC)  # on a stream
# ON_STREAM[kind]: rows drawn on a device stream (device kinds, syncs, GPU annotations), a
# look-up of the kind codes 0 .. UNKNOWN: one pass where np.isin costs a dozen
ON_STREAM = np.zeros(UNKNOWN + 1, dtype=bool)
ON_STREAM[list(DEVICE_CODES) + [GPU_ANNOTATION]] = True
EXTRA = dict(pid=np.int64, tid=np.int64, external_id=np.int64, sync_type=object, wait_on_stream=np.int64,
             wait_on_event_corr=np.int64)  # fmt: skip
LANE_METADATA = frozenset({"process_name", "process_labels", "thread_name"})
ABSENT = -(2**63)  # decoded value of an absent ``External id``: tells it from an explicit -1
# Chrome-trace phases without rows (the current ones and the deprecated async S/T/p/F)
OTHER_PHASES = ("s", "t", "f", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "P", "N", "O", "D",
                "R", "c", "v", "V", "(", ")")  # fmt: skip


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
    collective: CollectiveMark | None = msgspec.field(default=None, name="Collective name")


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
    collective_name: Any = msgspec.field(default=None, name="Collective name")
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
DECODER = msgspec.json.Decoder(list[Union[(Complete, Metadata, Begin, End, *_SKIPPED)]], dec_hook=marked.hook)
LOOSE_DECODER = msgspec.json.Decoder(list[Union[Loose, None, bool, int, float, str, list]])


def decode_events(text) -> list | None:
    """A block's events as structs, else as :class:`Loose` events (and entries that are not
    objects); None when the text is not JSON. A block where some event has a ``Collective
    name`` comes as a :class:`Block` with each event's NCCL arguments."""
    for decoder in (DECODER, LOOSE_DECODER):
        marked.clear()
        try:
            events = decoder.decode(text)
        except msgspec.ValidationError:
            continue  # valid JSON of other types, or invalid JSON noticed late
        except msgspec.DecodeError:
            return None
        if marked or (decoder is LOOSE_DECODER and _loose_collectives(events)):
            return with_collectives(events, text)
        return events
    return None


def _loose_collectives(events: list) -> bool:
    return any(type(e) is Loose and type(e.args) is LooseArgs and e.args.collective_name is not None
               for e in events)  # fmt: skip


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
        self.profiler_ranges = 0  # CUPTI range profiler's kernel ranges (cat cuda_profiler_range)

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
        self.profiler_ranges += other.profiler_ranges


def scan_block(events: list, first: int, cols: Columns, state: ScanState) -> None:
    """Append the rows of one decoded block (events ``first`` on) to ``cols``, the rest to ``state``."""
    collective = getattr(events, "collective", None)
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
    cats = [e.cat for e in xs]
    kinds = list(map(CAT_CODE.get, cats, repeat(UNKNOWN, len(xs))))
    state.profiler_ranges += cats.count(PROFILER_RANGE)
    if SKIP in kinds:
        keep = [kind != SKIP for kind in kinds]
        where, xs, kinds = list(compress(where, keep)), list(compress(xs, keep)), list(compress(kinds, keep))
    if kinds:
        first_row = cols.rows
        _add_rows(xs, kinds, where, first, cols, state)
        if collective is not None:
            cols.add_sparse(first_row, **collective_columns([collective[i] for i in where]))


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
