"""The hot loop of the Kineto/Chrome JSON reader: event blocks to numpy column blocks.

Blocks arrive as msgspec structs (the fast path: only the keys used are decoded, their types
checked by the decoder) or, for blocks whose values do not fit those types, as
:class:`~.kineto_structs.Loose` events (every value checked here). Either way one pass appends plain Python values to lists, which become
numpy columns per block; no per-event objects are kept. A malformed event raises
:class:`ParityError` naming its index in the file's event array.
"""

from __future__ import annotations

from itertools import compress, count, repeat
from operator import eq, is_

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.columns import Columns
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.kineto_rows import (
    CAT_CODE,
    SKIP,
    UNKNOWN,
    Block,
    add_block,
)
from parity.trace.readers.kineto_structs import (
    ABSENT,
    BEGIN_END,
    NO_ARGS,
    STRUCT_TYPES,
    Args,
    Complete,
    Loose,
    Metadata,
)
from parity.trace.readers.lanes import LANE_METADATA, ScanState
from parity.trace.readers.rawtimes import ts_value
from parity.trace.table import NO_ID, KindCode


def scan_events(events: list, cols: Columns, state: ScanState, first: int = 0) -> None:
    if events and type(events[0]) in STRUCT_TYPES:
        _scan_structs(events, first, cols, state)
    else:
        _scan(events, first, cols, state)


def scan_stream(stream: EventStream, cols: Columns, state: ScanState, progress=None) -> int:
    """Scan every block of ``stream`` into ``cols``; the number of events it held.

    ``progress(bytes_read, total_bytes, path)`` is called after each block when given.
    """
    count = 0
    for first, events in stream:
        scan_events(events, cols, state, first)
        count = first + len(events)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(stream.path))
    return count


def _scan_structs(events: list, first: int, cols: Columns, state: ScanState) -> None:
    """The fast path of :func:`_scan` for blocks decoded into structs (types already checked).

    Column-at-a-time list comprehensions and C-level ``map``/``count`` calls instead of one
    loop of appends: each pass is a tight loop CPython runs several times faster, and the
    per-value fix-ups (``None`` ids, names not yet in the dictionary) run only on the blocks
    that need them. This is what makes large traces load quickly.
    """
    types = list(map(type, events))
    present = set(types)  # one hashing pass; each list.count would be a pass of comparisons
    complete = Complete
    if present == {complete}:
        where: list[int] | range = range(len(types))  # every event is a complete one
        xs = events
    else:
        _note_other_events(events, types, present, first, state)
        is_complete = list(map(is_, types, repeat(complete)))
        where = list(compress(range(len(types)), is_complete))
        xs = list(compress(events, is_complete))
    kinds = list(map(CAT_CODE.get, [e.cat for e in xs], repeat(UNKNOWN, len(xs))))
    if SKIP in kinds:
        where, xs, kinds = _drop_skipped(where, xs, kinds)
    if not kinds:
        return
    b = Block()
    b.where, b.kinds = where, kinds
    b.name_ids = _name_ids([e.name for e in xs], cols)
    b.ts = [e.ts for e in xs]
    b.durs = [e.dur for e in xs]
    b.pids = _ids_or_no_id([e.pid for e in xs])
    b.tids = _ids_or_no_id([e.tid for e in xs])
    args = [e.args for e in xs]
    if args.count(None) == len(args):
        nothing = [NO_ID] * len(xs)
        b.devs, b.streams, b.corrs, b.exts = nothing, nothing, nothing, nothing
        add_block(cols, state, first, b)
        return
    if None in args:
        args = [a if a is not None else NO_ARGS for a in args]
    b.devs = _ids_or_no_id([a.device for a in args])
    b.streams = _ids_or_no_id([a.stream for a in args])
    b.corrs = _ids_or_no_id([a.correlation for a in args])
    b.exts = _external_ids(args)
    if KindCode.SYNC in kinds:
        rows = list(compress(range(len(kinds)), map(eq, kinds, repeat(KindCode.SYNC))))
        b.sync_rows = [
            (row, a.cuda_sync_kind or a.sync_type, a.wait_on_stream,
             a.wait_on_cuda_event_record_corr_id)
            for row, a in zip(rows, map(args.__getitem__, rows))
        ]  # fmt: skip
    add_block(cols, state, first, b)


def _drop_skipped(where, xs: list, kinds: list) -> tuple[list, list, list]:
    """The rows without the events of a skipped category (a trace's own ``Trace`` span)."""
    keep = [kind != SKIP for kind in kinds]
    return list(compress(where, keep)), list(compress(xs, keep)), list(compress(kinds, keep))


def _note_other_events(events: list, types: list, present: set, first: int, state: ScanState) -> None:
    """Metadata (``M``) events name lanes; ``B``/``E`` events are kept for pairing.

    Some profilers repeat the same few metadata events for every span (MTIA traces: 300,000 of
    them, 22 distinct), so each distinct one is recorded once, in the order of its last
    occurrence: every lane ends with the name its last event gave it, as in file order.
    """
    if Metadata in present:
        meta = [(e.name, e.pid, e.tid, e.args.name, e.args.labels)
                for e in compress(events, map(is_, types, repeat(Metadata)))
                if e.args is not None and e.name in LANE_METADATA]  # fmt: skip
        add = state.lanes.add
        for key in reversed(dict.fromkeys(reversed(meta))):
            add(*key)
    if present.isdisjoint(BEGIN_END):
        return
    marks = state.marks
    for i in [i for i, t in enumerate(types) if t in BEGIN_END]:
        e = events[i]
        marks.append((BEGIN_END[types[i]], e.name, e.cat, e.pid, e.tid, ts_value(e.ts), first + i))


def _name_ids(names_in: list, cols: Columns) -> np.ndarray:
    """Dictionary ids (int32) of ``names_in`` (``None`` as ""), new names added in order of
    appearance.

    The first block (every name new) adds its distinct names in one C-level pass and looks
    every name up once. Later blocks look every name up (-1 where it is new) and look again
    only at the rows with new names, a few dozen in thousands."""
    names, n = cols.names, len(names_in)
    if not names:
        distinct = dict.fromkeys(names_in)
        if None not in distinct:
            names.update(zip(distinct, count()))
            return np.fromiter(map(names.__getitem__, names_in), dtype=np.int32, count=n)
    ids = np.fromiter(map(names.get, names_in, repeat(-1)), dtype=np.int32, count=n)
    new = np.flatnonzero(ids < 0)
    if len(new):
        fresh = list(map(names_in.__getitem__, new.tolist()))
        if None in fresh:
            fresh = ["" if name is None else name for name in fresh]
        for name in dict.fromkeys(fresh):
            names.setdefault(name, len(names))
        ids[new] = np.fromiter(map(names.__getitem__, fresh), dtype=np.int32, count=len(fresh))
    return ids


def _ids_or_no_id(values: list) -> list:
    """``pid``/``tid`` values and the ids of ``args``: integers kept, names or other text and
    ``None`` become NO_ID.

    ``sum`` is the cheap test: a C-level pass that fails on a string or ``None``, the only
    other values the decoder gives."""
    try:
        sum(values)
    except TypeError:
        return [v if type(v) is int else NO_ID for v in values]
    return values


def _external_ids(args: list[Args]) -> list:
    """``External id`` (else the older ``external id``, else NO_ID) of each event.

    Absent keys decode as :data:`ABSENT`, which :func:`~.kineto_rows.add_block` turns into NO_ID, so the
    common case is one attribute pass; the merge with the older key runs only where it occurs.
    """
    exts = [a.external_id for a in args]
    olds = [a.external_id_old for a in args]
    if olds.count(None) == len(olds):
        return exts
    return [e if e != ABSENT else (NO_ID if o is None else o) for e, o in zip(exts, olds)]


def _scan(events: list, first: int, cols: Columns, state: ScanState) -> None:
    """Turn one block of :class:`Loose` events into column blocks (one pass, no objects)."""
    b = Block()
    kinds, name_ids, ts, durs = b.kinds, b.name_ids, b.ts, b.durs
    pids, tids, devs, streams, corrs, exts, where = (
        b.pids, b.tids, b.devs, b.streams, b.corrs, b.exts, b.where
    )
    names_get, intern, cat_code = cols.names.get, cols.intern, CAT_CODE.get
    empty, note = {}, state.lanes.note
    i = -1
    try:
        for i, e in enumerate(events):
            if type(e) is not Loose:
                state.non_objects += 1
                continue
            ph = e.ph
            if ph != "X":
                if ph == "M":
                    note(e)
                elif ph == "B" or ph == "E":
                    name, cat = e.name, e.cat
                    state.marks.append((
                        ph, name if isinstance(name, str) else None,
                        cat if isinstance(cat, str) else None, e.pid, e.tid,
                        ts_value(e.ts), first + i,
                    ))  # fmt: skip
                continue
            kind = cat_code(e.cat, UNKNOWN)
            if kind == SKIP:
                continue
            args = e.args or empty
            name = e.name
            nid = names_get(name)
            if nid is None:
                nid = intern(name if type(name) is str else str(name))
            pid, tid = e.pid, e.tid
            dev, st, corr = args.get("device"), args.get("stream"), args.get("correlation")
            ext = args.get("External id", args.get("external id", NO_ID))
            kinds.append(kind)
            name_ids.append(nid)
            ts.append(e.ts)
            durs.append(e.dur)
            pids.append(pid if type(pid) is int else NO_ID)
            tids.append(tid if type(tid) is int else NO_ID)
            devs.append(dev if type(dev) is int else NO_ID)
            streams.append(st if type(st) is int else NO_ID)
            corrs.append(corr if type(corr) is int else NO_ID)
            exts.append(ext if type(ext) is int else NO_ID)
            where.append(i)
            if kind == KindCode.SYNC:
                b.sync_rows.append((
                    len(kinds) - 1, args.get("cuda_sync_kind", args.get("sync_type")),
                    args.get("wait_on_stream"), args.get("wait_on_cuda_event_record_corr_id"),
                ))  # fmt: skip
    except (TypeError, AttributeError, ValueError, OverflowError) as exc:
        raise ParityError(
            f"{state.path}: event {first + i} is malformed ({type(exc).__name__}: {one_line(exc)}); "
            "the trace is corrupt"
        ) from None
    if kinds:
        add_block(cols, state, first, b)
