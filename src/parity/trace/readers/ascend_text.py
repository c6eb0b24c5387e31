"""torch_npu's Ascend profiler text output: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT``.

``trace_view.json`` is a Chrome trace (a top-level array, string microsecond timestamps) whose
processes are told apart by their ``process_name``: ``Ascend Hardware`` holds device tasks, a
thread per stream (``MEMCPY_ASYNC`` is ``Kind.MEMCPY``, ``EVENT_RECORD``/``EVENT_WAIT``
``Kind.SYNC``, the rest ``Kind.KERNEL``; ``args["Task Type"]`` goes to ``task_type``,
``connection_id`` to ``correlation``). ``HCCL``'s ``Group N Communication`` thread holds the
collectives (``hcom_*``: ``Kind.KERNEL``, ``task_type = "HCCL"``, on the stream their plane
tasks name); its ``Plane N`` tasks repeat hardware tasks and are ``Kind.OTHER``, with ``(src
rank, dst rank, size(Byte), link type)`` in ``link`` for the communication matrix. ``CANN``
API calls are ``Kind.RUNTIME``; in the Python process ``cpu_op`` is ``Kind.CPU_OP`` and
``ProfilerStep#N`` ``Kind.STEP``. The ``Overlap Analysis`` lanes (the profiler's own Computing,
Communication, ... spans) go to ``meta["overlap_analysis"]`` as ``[start_ns, end_ns]`` pairs.

A timeline inside ``ASCEND_PROFILER_OUTPUT`` is read with the CSVs beside it (:mod:`.ascend_csv`);
a standalone one under any name, without them. Bad input is refused as for Kineto JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson

from parity.model.errors import ParityError, one_line
from parity.trace.readers.ascend_csv import (
    KERNEL_DETAILS,
    STEP_TRACE,
    join_kernel_details,
    read_step_trace,
    step_figures_text,
)
from parity.trace.readers.columns import PROFILER_STEP, Columns, finish_ascend_rank, int_or
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.times import times_to_ns
from parity.trace.table import NO_ID, ActivityTable, Kind, KindCode

OUTPUT = "ASCEND_PROFILER_OUTPUT"
TRACE_VIEW = "trace_view.json"
_NUMBER = re.compile(r"(\d+)\s*$")
_RANK_DIR = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
ASCEND_CONCURRENT_TASKS = frozenset({  # HCCL ops and their tasks, which run on several engines at once
    "HCCL", "Notify Wait", "Notify Record", "Notify_Wait", "Notify_Record", "SDMA", "Write Value",
    "Reduce Inline", "Reduce_Inline", "RDMA", "Memcpy",
})  # fmt: skip
COMM_TASK_TYPES = ASCEND_CONCURRENT_TASKS - {"HCCL"}  # hardware tasks of collectives
EXTRA = dict(task_type=object, accelerator_core=object, sync_type=object, pid=np.int64,
             tid=np.int64, link=object)  # fmt: skip
Progress = Callable[[int, int, str], None]


def output_dir(path: Path) -> Path:
    """The ``ASCEND_PROFILER_OUTPUT`` folder for a ``*_ascend_pt`` folder, itself, or a file in it."""
    if path.is_file():
        return path.parent
    return path / OUTPUT if (path / OUTPUT).is_dir() else path


def read_ascend_text(path: Path, *, progress: Progress | None = None) -> ActivityTable:
    """Read one rank's Ascend text output (folder, its ``trace_view.json``, or a standalone
    Ascend timeline under any name)."""
    folder = output_dir(path)
    trace = path if path.is_file() else folder / TRACE_VIEW
    if not trace.is_file():
        raise ParityError(missing_timeline(path, folder))
    beside = trace.name == TRACE_VIEW or folder.name == OUTPUT  # the CSVs belong to this timeline
    stream = EventStream(trace)
    events: list = []
    for _first, block in stream:
        events.extend(block)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(trace))
    cols, warnings = Columns(EXTRA), []
    overlap = _rows(trace, events, cols, warnings)
    if cols.rows == 0:
        raise ParityError(f"{trace}: empty trace (no complete 'X' events)")
    rank, rank_source = _rank(folder)
    meta = {
        "source": str(path), "format": "ascend-text", "clock_unit": "us", "ranks": [rank],
        "rank_source": rank_source, "warnings": warnings,
        "step_trace": read_step_trace(folder / STEP_TRACE, warnings) if beside else [],
        "overlap_analysis": overlap,
    }  # fmt: skip
    table = join_kernel_details(cols.table(meta=meta), folder / KERNEL_DETAILS if beside else None, warnings)
    return finish_ascend_rank(table, rank)


def missing_timeline(path: Path, folder: Path) -> str:
    """The refusal of an Ascend output without ``trace_view.json``: what is missing, what is
    there, and the profiler's own step figures when ``step_trace_time.csv`` is."""
    present = [n for n in (KERNEL_DETAILS, STEP_TRACE) if (folder / n).is_file()]
    have = f" (it has {', '.join(present)})" if present else ""
    figures = step_figures_text(folder / STEP_TRACE)
    return (f"{path}: no {OUTPUT}/{TRACE_VIEW}{have}; the kernel table alone cannot rebuild the steps, "
            f"so export the profile with its timeline (trace_view.json)" + (f"; {figures}" if figures else ""))


def _lane_names(events: list) -> tuple[dict, dict]:
    """pid -> process name and (pid, tid) -> thread name from the metadata events."""
    process, thread = {}, {}
    for e in events:
        if type(e) is dict and e.get("ph") == "M" and isinstance(e.get("args"), dict):
            if isinstance(e.get("pid"), (list, dict)) or isinstance(e.get("tid"), (list, dict)):
                continue  # a malformed lane id names no lane (its rows are refused)
            name = e["args"].get("name")
            if e.get("name") == "process_name" and isinstance(name, str):
                process[e.get("pid")] = name
            elif e.get("name") == "thread_name" and isinstance(name, str):
                thread[(e.get("pid"), e.get("tid"))] = name
    return process, thread


def _rows(trace: Path, events: list, cols: Columns, warnings: list) -> dict[str, list[list[int]]]:
    """Add the timeline's rows to ``cols``; return the Overlap Analysis lanes."""
    process, thread = _lane_names(events)
    rows, plane_streams = [], []  # plane_streams: (row, stream id) of HCCL plane tasks
    overlap: dict[str, list] = {}  # Overlap Analysis lane -> (index, ts, dur) as written
    skipped = 0
    for i, e in enumerate(events):
        if type(e) is not dict:
            skipped += 1
            continue
        if e.get("ph") != "X":
            continue
        try:
            lane_process = process.get(e.get("pid"), "")
            if lane_process == "Overlap Analysis":
                lane = thread.get((e.get("pid"), e.get("tid")), str(e.get("name", "")))
                overlap.setdefault(lane, []).append((i, e.get("ts"), e.get("dur")))
                continue
            kind, stream, task_type, plane_stream = _classify(e, lane_process, thread)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ParityError(f"{trace}: event {i} is malformed ({one_line(exc)}); the trace is corrupt") from None
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        corr = args.get("connection_id")
        if plane_stream is not None:
            plane_streams.append((len(rows), plane_stream))
        rows.append((
            int(kind), cols.intern(str(e.get("name", ""))), e.get("ts"), e.get("dur"),
            0 if kind in (Kind.KERNEL, Kind.MEMCPY, Kind.SYNC) else NO_ID, stream,
            int_or(corr) if type(corr) is int else _int_text(corr), task_type,
            e.get("name") if kind == Kind.SYNC else None, int_or(e.get("pid")), int_or(e.get("tid")), i,
            _link(args) if kind == Kind.OTHER and lane_process == "HCCL" else None,
        ))  # fmt: skip
    if skipped:
        warnings.append(f"{skipped} entries of the event array are not objects; skipped")
    lanes_ns = {lane: _spans(trace, *zip(*spans)) for lane, spans in overlap.items()}
    if rows:
        kinds, names, ts, durs, devs, streams, corrs, types, syncs, pids, tids, where, links = zip(*rows)
        start, end = _spans(trace, where, ts, durs, negative=True)
        kind, stream, task_type = np.asarray(kinds, np.int8), np.asarray(streams, np.int64), _objects(types)
        _place_hccl_ops(kind, task_type, stream, start, end, plane_streams)
        cols.add(
            device=np.asarray(devs, np.int32), stream=stream, kind=kind, name_id=np.asarray(names, np.int32),
            start_ns=start, end_ns=end, correlation=np.asarray(corrs, np.int64), task_type=task_type,
            sync_type=_objects(syncs), pid=np.asarray(pids, np.int64), tid=np.asarray(tids, np.int64),
            link=_objects(links),
        )  # fmt: skip
    return lanes_ns


def _spans(trace: Path, where, ts, durs, *, negative: bool = False):
    """Start and end (ns) of events ``where`` from their ``ts`` and ``dur``: two arrays, with a
    ParityError for a ``negative`` duration; else ``[start_ns, end_ns]`` pairs (an Overlap
    Analysis lane)."""
    index = np.asarray(where)
    start = times_to_ns(list(ts), path=trace, first=0, what="ts", index=index)
    dur = times_to_ns(list(durs), path=trace, first=0, what="dur", index=index)
    if not negative:
        return [[int(a), int(a + b)] for a, b in zip(start.tolist(), dur.tolist())]
    if (dur < 0).any():
        raise ParityError(f"{trace}: event {int(index[np.flatnonzero(dur < 0)[0]])} has a negative dur; "
                          "the trace is corrupt")  # fmt: skip
    return start, start + dur


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _link(args: dict) -> tuple[int, int, int, str] | None:
    """``(src rank, dst rank, size in bytes, link type)`` of an HCCL plane task, or None when its
    args do not say."""
    src, dst, size = args.get("src rank"), args.get("dst rank"), args.get("size(Byte)")
    if type(src) is not int or type(dst) is not int or type(size) is not int:
        return None
    link = args.get("link type")
    return src, dst, size, link if isinstance(link, str) else ""


def _classify(e: dict, process: str, thread: dict):
    """``(kind, stream, task_type, plane_stream)`` of one complete event."""
    pid, tid, name = e.get("pid"), e.get("tid"), e.get("name")
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    if process == "Ascend Hardware":
        task_type = args.get("Task Type") if isinstance(args.get("Task Type"), str) else None
        stream = _number(thread.get((pid, tid), ""), int_or(tid))
        if name == "MEMCPY_ASYNC":
            return Kind.MEMCPY, stream, task_type, None
        return Kind.SYNC if name in {"EVENT_RECORD", "EVENT_WAIT"} else Kind.KERNEL, stream, task_type, None
    if process == "HCCL":
        if thread.get((pid, tid), "").endswith("Communication"):
            return Kind.KERNEL, NO_ID, "HCCL", None
        plane, task = args.get("stream id"), args.get("task type")
        plane = int_or(plane) if type(plane) is int else None
        return Kind.OTHER, int_or(tid), task if isinstance(task, str) else None, plane
    if process == "CANN":
        return Kind.RUNTIME, int_or(tid), None, None
    if isinstance(name, str) and PROFILER_STEP.match(name):
        return Kind.STEP, int_or(tid), None, None
    return Kind.CPU_OP if e.get("cat") == "cpu_op" else Kind.OTHER, int_or(tid), None, None


def _place_hccl_ops(kind, types, stream, start, end, plane_streams) -> None:
    """Give each HCCL operation the stream its tasks ran on (in place).

    The stream comes from the first HCCL plane task inside the operation (``stream id``), or,
    without plane rows (profiler level 0), from the first hardware task of a communication
    type (Notify Wait, SDMA, ...) inside it; 0 when neither exists.
    """
    ops = np.flatnonzero((types == "HCCL") & (kind == KindCode.KERNEL))
    if len(ops) == 0:
        return
    if plane_streams:
        rows = np.array([r for r, _ in plane_streams])
        lanes = np.array([s for _, s in plane_streams])
    else:
        rows = np.flatnonzero(np.isin(types, list(COMM_TASK_TYPES)) & (kind == KindCode.KERNEL))
        lanes = stream[rows]
    for op in ops:
        inside = (start[rows] >= start[op]) & (start[rows] <= end[op])
        stream[op] = int(lanes[inside][0]) if inside.any() else 0


def _number(label: str, default: int) -> int:
    match = _NUMBER.search(label)
    return int_or(int(match.group(1))) if match else default


def _int_text(value) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        return int_or(int(value))
    return NO_ID


def _rank(folder: Path) -> tuple[int, str]:
    for info in sorted(folder.parent.glob("profiler_info_*.json")):
        try:
            rank = orjson.loads(info.read_bytes()).get("rank_id")
        except (OSError, ValueError, AttributeError):
            continue
        if type(rank) is int and rank >= 0:
            return rank, "profiler_info"
    match = _RANK_DIR.search(folder.parent.name) or _RANK_DIR.search(folder.name)
    if match:
        return int(match.group(1)), "folder name"
    return 0, "assumed"
