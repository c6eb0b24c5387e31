"""torch_npu's Ascend profiler text output (``*_ascend_pt/ASCEND_PROFILER_OUTPUT``, or a standalone
timeline under any name): ``trace_view.json`` and the CSVs beside it, rows as defined in
``docs/definitions.md`` (Trace formats). Bad input is refused as for Kineto JSON; partial CSVs
are counted warnings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Union

import msgspec
import numpy as np
import orjson

from parity.model.errors import ParityError, one_line
from parity.trace.readers.ascend_csv import join_kernel_details, read_step_trace, step_figures_text
from parity.trace.readers.ascend_layout import COMMUNICATION, KERNEL_DETAILS, OUTPUT, STEP_TRACE, TRACE_VIEW, output_dir
from parity.trace.readers.columns import Columns, Progress, int_or
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.times import times_to_ns
from parity.trace.steps import PROFILER_STEP
from parity.trace.table import NO_ID, ActivityTable, KindCode

_NUMBER = re.compile(r"(\d+)\s*$")
_RANK_DIR = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
ASCEND_CONCURRENT_TASKS = frozenset({  # HCCL ops and their tasks, which run on several engines at once
    "HCCL", "Notify Wait", "Notify Record", "Notify_Wait", "Notify_Record", "SDMA", "Write Value",
    "Reduce Inline", "Reduce_Inline", "RDMA", "Memcpy",
})  # fmt: skip
COMM_TASK_TYPES = ASCEND_CONCURRENT_TASKS - {"HCCL"}  # hardware tasks of collectives
TASK_KIND = {"MEMCPY_ASYNC": KindCode.MEMCPY, "EVENT_RECORD": KindCode.SYNC, "EVENT_WAIT": KindCode.SYNC}  # else a kernel
EXTRA = dict(task_type=object, accelerator_core=object, sync_type=object, pid=np.int64,
             tid=np.int64, link=object)  # fmt: skip
# what an HCCL operation records (its ``data_type`` and element ``count``; its group from
# communication.json): sparse columns named as Kineto's collective arguments
COLLECTIVE = dict(dtype=object, hccl_count=np.int64, process_group_name=object)


class TaskArgs(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses, values as decoded; the other keys are skipped unbuilt."""

    name: Any = None  # a metadata event's process or thread name
    task_type: Any = msgspec.field(default=None, name="Task Type")  # a hardware task's
    connection_id: Any = None
    plane_stream: Any = msgspec.field(default=None, name="stream id")  # an HCCL plane task's
    plane_task: Any = msgspec.field(default=None, name="task type")
    src_rank: Any = msgspec.field(default=None, name="src rank")
    dst_rank: Any = msgspec.field(default=None, name="dst rank")
    size: Any = msgspec.field(default=None, name="size(Byte)")
    link_type: Any = msgspec.field(default=None, name="link type")
    data_type: Any = None  # an HCCL operation's
    count: Any = None


NO_ARGS = TaskArgs()


class Event(msgspec.Struct, gc=False):
    """One entry of the event array, the keys the reader uses as decoded (a ``name`` that is
    absent is :data:`msgspec.UNSET`, told from a ``null`` one)."""

    ph: Any = None
    cat: Any = None
    name: Any = msgspec.UNSET
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Union[TaskArgs, None, bool, int, float, str, list] = None  # noqa: UP007 - msgspec reads the union


# an entry that is not an object decodes as itself (it is counted and skipped)
DECODER = msgspec.json.Decoder(list[Union[Event, None, bool, int, float, str, list]])  # noqa: UP007


def decode_events(text) -> list | None:
    """A block's entries (:class:`Event` for each object), or None when the text is not JSON."""
    try:
        return DECODER.decode(text)
    except msgspec.DecodeError:  # its ValidationError too: a number beyond a float's range
        return None


def read_ascend_text(path: Path, *, progress: Progress | None = None) -> ActivityTable:
    """Read one rank's Ascend text output (folder, its ``trace_view.json``, or a standalone
    Ascend timeline under any name)."""
    folder = output_dir(path)
    trace = path if path.is_file() else folder / TRACE_VIEW
    if not trace.is_file():
        raise ParityError(missing_timeline(path, folder))
    beside = trace.name == TRACE_VIEW or folder.name == OUTPUT  # the CSVs belong to this timeline
    stream = EventStream(trace, decode=decode_events)
    events: list = []
    for _first, block in stream:
        events.extend(block)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(trace))
    cols, warnings = Columns(EXTRA, COLLECTIVE), []
    overlap = _rows(trace, events, cols, warnings)
    if beside:
        add_groups(cols, communication_groups(folder / COMMUNICATION))
    if cols.rows == 0:
        raise ParityError(f"{trace}: empty trace (no complete 'X' events)")
    rank, rank_source = _rank(folder)
    meta = {
        "source": str(path), "format": "ascend-text", "clock_unit": "us", "ranks": [rank],
        "rank_source": rank_source, "warnings": warnings,
        "step_trace": read_step_trace(folder / STEP_TRACE, warnings) if beside else [],
        "overlap_analysis": overlap,
    }  # fmt: skip
    return join_kernel_details(cols.table(meta=meta), folder / KERNEL_DETAILS if beside else None, warnings)


def missing_timeline(path: Path, folder: Path) -> str:
    """The refusal of an Ascend output without ``trace_view.json``: what is missing, what is
    there, and the profiler's own step figures when ``step_trace_time.csv`` is."""
    present = [n for n in (KERNEL_DETAILS, STEP_TRACE) if (folder / n).is_file()]
    have = f" (it has {', '.join(present)})" if present else ""
    figures = step_figures_text(folder / STEP_TRACE)
    return (f"{path}: no {OUTPUT}/{TRACE_VIEW}{have}; the kernel table alone cannot rebuild the steps, "
            f"so export the profile with its timeline (trace_view.json)" + (f"; {figures}" if figures else ""))


def _rows(trace: Path, events: list, cols: Columns, warnings: list) -> dict[str, list[list[int]]]:
    """Add the timeline's rows to ``cols``; return the Overlap Analysis lanes."""
    process, thread = {}, {}  # pid -> process name, (pid, tid) -> thread name
    complete, metadata, skipped = [], [], 0  # (index, event) of the X and M events; entries not objects
    for i, e in enumerate(events):
        if type(e) is not Event:
            skipped += 1  # counted, skipped
        elif e.ph == "X":
            complete.append((i, e))
        elif e.ph == "M":
            metadata.append(e)
    for e in metadata:
        if type(e.args) is TaskArgs:
            if isinstance(e.pid, (list, dict)) or isinstance(e.tid, (list, dict)):
                continue  # a malformed lane id names no lane (its rows are refused)
            name = e.args.name
            if e.name == "process_name" and isinstance(name, str):
                process[e.pid] = name
            elif e.name == "thread_name" and isinstance(name, str):
                thread[(e.pid, e.tid)] = name
    rows, plane_streams = [], []  # plane_streams: (row, stream id) of HCCL plane tasks
    hccl: dict[int, TaskArgs] = {}  # row -> args of an HCCL operation
    overlap: dict[str, list] = {}  # Overlap Analysis lane -> (index, ts, dur) as written
    lanes: dict[tuple, _Lane] = {}  # (pid, tid) -> what the lane's rows share, read once
    append = rows.append
    for i, e in complete:
        name = "" if e.name is msgspec.UNSET else e.name
        try:
            key = (type(e.pid), e.pid, type(e.tid), e.tid)  # 1, 1.0 and True are one key otherwise
            try:
                lane = lanes.get(key)
            except TypeError:  # a list or object as an id: read as the lane it names, if any
                lane = _lane(e.pid, e.tid, process, thread)
            else:
                if lane is None:
                    lane = lanes[key] = _lane(e.pid, e.tid, process, thread)
            if lane.process == "Overlap Analysis":
                label = lane.thread if lane.thread is not None else str(name)
                overlap.setdefault(label, []).append((i, e.ts, e.dur))
                continue
            args = e.args if type(e.args) is TaskArgs else NO_ARGS
            kind, stream, task_type, plane_stream = _classify(e, name, args, lane)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ParityError(f"{trace}: event {i} is malformed ({one_line(exc)}); the trace is corrupt") from None
        corr = args.connection_id  # an int, or its text
        if type(corr) is not int:
            corr = int(corr) if isinstance(corr, str) and corr.strip().isdigit() else NO_ID
        if plane_stream is not None:
            plane_streams.append((len(rows), plane_stream))
        if task_type == "HCCL":
            hccl[len(rows)] = args
        append((
            kind, name if type(name) is str else str(name), e.ts, e.dur, 0 if kind in _DEVICE_ID_KINDS else NO_ID,
            stream, int_or(corr), task_type, (None if e.name is msgspec.UNSET else e.name) if kind == KindCode.SYNC else None,
            lane.pid, lane.tid, i, _link(args) if kind == KindCode.OTHER and lane.process == "HCCL" else None,
        ))  # fmt: skip
    if skipped:
        warnings.append(f"{skipped} entries of the event array are not objects; skipped")
    lanes_ns = {lane: np.column_stack(_spans(trace, *zip(*spans))).tolist() for lane, spans in overlap.items()}
    if rows:
        kinds, names, ts, durs, devs, streams, corrs, types, syncs, pids, tids, where, links = zip(*rows)
        start, end = _spans(trace, where, ts, durs)
        kind, stream, task_type = np.asarray(kinds, np.int8), np.asarray(streams, np.int64), np.fromiter(types, object)
        _place_hccl_ops(kind, task_type, stream, start, end, plane_streams)
        cols.add(
            device=np.asarray(devs, np.int32), stream=stream, kind=kind, name_id=cols.name_ids(names),
            start_ns=start, end_ns=end, correlation=np.asarray(corrs, np.int64), task_type=task_type,
            sync_type=np.fromiter(syncs, object), pid=np.asarray(pids, np.int64), tid=np.asarray(tids, np.int64),
            link=np.fromiter(links, object),  # one object a row: a link tuple or None
        )  # fmt: skip
        if hccl:
            add_operation_args(cols, hccl)
    return lanes_ns


def add_operation_args(cols: Columns, hccl: dict[int, TaskArgs]) -> None:
    """The ``dtype`` and ``hccl_count`` columns of the HCCL operations (rows of the one block
    added): their ``data_type`` and element ``count``."""
    dtype = np.full(cols.rows, None, dtype=object)
    count = np.full(cols.rows, NO_ID, dtype=np.int64)
    for row, args in hccl.items():
        dtype[row] = args.data_type if isinstance(args.data_type, str) else None
        count[row] = int_or(args.count)
    cols.add_sparse(0, dtype=dtype, hccl_count=count)


def communication_groups(path: Path) -> dict[str, str]:
    """Operation name -> communication group, from ``communication.json``'s keys
    (``hcom_allReduce__586_0_1@17522688603477080586``: the group follows the ``@``); {} when
    the file is absent or unreadable (the group then comes from the name)."""
    try:
        document = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    groups = {}
    for step in document.values() if isinstance(document, dict) else ():
        for kind in step.values() if isinstance(step, dict) else ():
            for key in kind if isinstance(kind, dict) else ():
                name, at, group = key.partition("@")
                if at and group:
                    groups[name] = group
    return groups


def add_groups(cols: Columns, groups: dict[str, str]) -> None:
    """The ``process_group_name`` column of the rows named in ``groups``."""
    if not groups:
        return
    names = np.array(list(cols.names), dtype=object)
    of_name = np.array([groups.get(n) for n in names], dtype=object)
    ids = cols.column("name_id", np.int32)
    column = of_name[ids] if len(names) else np.full(cols.rows, None, dtype=object)
    if any(v is not None for v in column):
        cols.add_sparse(0, process_group_name=column)


_DEVICE_ID_KINDS = frozenset({KindCode.KERNEL, KindCode.MEMCPY, KindCode.SYNC})  # rows with a device id (0)


class _Lane(msgspec.Struct, gc=False):
    """What every row of one ``(pid, tid)`` lane shares: its process, and the stream of a
    hardware lane (its thread name, ``Stream N``)."""

    process: str
    pid: int
    tid: int
    stream: int = NO_ID  # a hardware lane's
    thread: str | None = None  # an Overlap Analysis lane's thread name (else each row's name names it)
    communication: bool = False  # an HCCL lane's "... Communication" thread: the HCCL operations


def _lane(pid, tid, process: dict, thread: dict) -> _Lane:
    """The :class:`_Lane` of ``(pid, tid)``; a TypeError where an id that is not hashable (a
    list or an object) must name a process or thread (the event is refused as malformed)."""
    name = process.get(pid, "")
    lane = _Lane(process=name, pid=int_or(pid), tid=int_or(tid))
    if name == "Overlap Analysis":
        lane.thread = thread.get((pid, tid))
    elif name == "Ascend Hardware":
        number = _NUMBER.search(thread.get((pid, tid), ""))  # "Stream N"
        lane.stream = int_or(int(number.group(1))) if number else int_or(tid)
    elif name == "HCCL":
        lane.communication = thread.get((pid, tid), "").endswith("Communication")
    return lane


def _classify(e: Event, name, args: TaskArgs, lane: _Lane):
    """``(kind code, stream, task_type, plane_stream)`` of one complete event of ``lane``."""
    process = lane.process
    if process == "Ascend Hardware":
        task_type = args.task_type if isinstance(args.task_type, str) else None
        return TASK_KIND.get(name, KindCode.KERNEL), lane.stream, task_type, None
    if process == "HCCL":
        if lane.communication:
            return KindCode.KERNEL, NO_ID, "HCCL", None
        plane, task = args.plane_stream, args.plane_task
        plane = int_or(plane) if type(plane) is int else None
        return KindCode.OTHER, lane.tid, task if isinstance(task, str) else None, plane
    if process == "CANN":
        return KindCode.RUNTIME, lane.tid, None, None
    if isinstance(name, str) and PROFILER_STEP.match(name):
        return KindCode.STEP, lane.tid, None, None
    return KindCode.CPU_OP if e.cat == "cpu_op" else KindCode.OTHER, lane.tid, None, None


def _spans(trace: Path, where, ts, durs) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (ns) of events ``where`` from their ``ts`` and ``dur``; a ParityError for a
    negative duration."""
    index = np.asarray(where)
    start = times_to_ns(list(ts), path=trace, first=0, what="ts", index=index)
    dur = times_to_ns(list(durs), path=trace, first=0, what="dur", index=index)
    if (dur < 0).any():
        raise ParityError(f"{trace}: event {int(index[np.flatnonzero(dur < 0)[0]])} has a negative dur; "
                          "the trace is corrupt")  # fmt: skip
    return start, start + dur


def _link(args: TaskArgs) -> tuple[int, int, int, str] | None:
    """``(src rank, dst rank, size in bytes, link type)`` of an HCCL plane task, or None."""
    src, dst, size = args.src_rank, args.dst_rank, args.size
    if type(src) is not int or type(dst) is not int or type(size) is not int:
        return None
    link = args.link_type
    return src, dst, size, link if isinstance(link, str) else ""


def _place_hccl_ops(kind, types, stream, start, end, plane_streams) -> None:
    """Give each HCCL operation the stream its tasks ran on (in place): that of the first HCCL
    plane task inside it (``stream id``), or without plane rows (profiler level 0) of the first
    hardware task of a communication type (Notify Wait, SDMA, ...) inside it; else 0."""
    ops = np.flatnonzero((types == "HCCL") & (kind == KindCode.KERNEL))
    if len(ops) == 0:
        return
    if plane_streams:
        rows, lanes = (np.array(side) for side in zip(*plane_streams))
    else:
        rows = np.flatnonzero(np.isin(types, list(COMM_TASK_TYPES)) & (kind == KindCode.KERNEL))
        lanes = stream[rows]
    for op in ops:
        inside = (start[rows] >= start[op]) & (start[rows] <= end[op])
        stream[op] = int(lanes[inside][0]) if inside.any() else 0


def _rank(folder: Path) -> tuple[int, str]:
    for info in sorted(folder.parent.glob("profiler_info_*.json")):
        try:
            rank = orjson.loads(info.read_bytes()).get("rank_id")
        except (OSError, ValueError, AttributeError):
            continue
        if type(rank) is int and rank >= 0:
            return rank, "profiler_info"
    match = _RANK_DIR.search(folder.parent.name) or _RANK_DIR.search(folder.name)
    return (int(match.group(1)), "folder name") if match else (0, "assumed")
