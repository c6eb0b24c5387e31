"""torch_npu's Ascend profiler text output: ``*_ascend_pt/ASCEND_PROFILER_OUTPUT``.

``trace_view.json`` is a Chrome trace (a top-level array) with string microsecond timestamps.
Its processes are told apart by their ``process_name`` metadata:

- ``Ascend Hardware``: device tasks, one thread per stream (``Stream N``). ``MEMCPY_ASYNC``
  tasks become ``Kind.MEMCPY``, ``EVENT_RECORD``/``EVENT_WAIT`` become ``Kind.SYNC``
  (``sync_type`` holds the name), all others ``Kind.KERNEL``. ``args["Task Type"]`` is kept
  in the ``task_type`` extra column, ``connection_id`` in ``correlation``.
- ``HCCL``: a ``Group N Communication`` thread holds the collective operations (``hcom_*``):
  they become ``Kind.KERNEL`` rows with ``task_type = "HCCL"`` on the stream their plane
  tasks name (``args["stream id"]``); the ``Plane N`` sub-tasks, which repeat the hardware
  tasks of that stream, are kept as ``Kind.OTHER``, with ``(src rank, dst rank, size(Byte),
  link type)`` in the ``link`` column for the communication matrix.
- ``CANN``: ``AscendCL@...`` API calls, ``Kind.RUNTIME`` (their ``connection_id`` links to
  the tasks they launched).
- the Python process: ``cpu_op`` rows are ``Kind.CPU_OP``, ``ProfilerStep#N`` is
  ``Kind.STEP``, the rest ``Kind.OTHER``.
- ``Overlap Analysis``: the profiler's own Computing, Communication, Communication(Not
  Overlapped) and Free lanes, kept in ``meta["overlap_analysis"]`` (lane -> ``[start_ns,
  end_ns]`` pairs) so the analysis can check its figures against them; counters are not read.

A ``trace_view.json`` inside ``ASCEND_PROFILER_OUTPUT`` is read with the CSVs beside it
(:mod:`.ascend_csv`: ``kernel_details.csv`` gives cores and steps, ``step_trace_time.csv`` the
profiler's step figures in ``meta["step_trace"]``); a standalone timeline is read under any
file name, without them. A folder with the CSVs but no timeline is refused, with the
profiler's step figures in the message.

Bad input: as for Kineto JSON (see :mod:`.kineto`); partial CSVs are counted warnings
(:mod:`.ascend_csv`); an unreadable CSV is a :class:`ParityError`.
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
_SYNC_TASKS = {"EVENT_RECORD", "EVENT_WAIT"}
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
    if (path / OUTPUT).is_dir():
        return path / OUTPUT
    return path


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
    lanes = _lanes(events)
    cols = Columns(EXTRA)
    warnings: list[str] = []
    overlap = _rows(trace, events, lanes, cols, warnings)
    del events
    if cols.rows == 0:
        raise ParityError(f"{trace}: empty trace (no complete 'X' events)")
    rank, rank_source = _rank(folder)
    meta = {
        "source": str(path), "format": "ascend-text", "clock_unit": "us", "ranks": [rank],
        "rank_source": rank_source, "warnings": warnings,
        "step_trace": read_step_trace(folder / STEP_TRACE, warnings) if beside else [],
        "overlap_analysis": overlap,
    }  # fmt: skip
    table = cols.table(meta=meta)
    table = join_kernel_details(table, folder / KERNEL_DETAILS if beside else None, warnings)
    return finish_ascend_rank(table, rank)


def missing_timeline(path: Path, folder: Path) -> str:
    """The refusal of an Ascend output without ``trace_view.json``: what is missing, what is
    there, and the profiler's own step figures when ``step_trace_time.csv`` is."""
    present = [n for n in (KERNEL_DETAILS, STEP_TRACE) if (folder / n).is_file()]
    have = f" (it has {', '.join(present)})" if present else ""
    figures = step_figures_text(folder / STEP_TRACE)
    return (f"{path}: no {OUTPUT}/{TRACE_VIEW}{have}; the kernel table alone cannot rebuild the steps, "
            f"so export the profile with its timeline (trace_view.json)" + (f"; {figures}" if figures else ""))


def _lanes(events: list) -> dict:
    """pid -> process name and (pid, tid) -> thread name from the metadata events."""
    process, thread = {}, {}
    for e in events:
        if type(e) is dict and e.get("ph") == "M" and isinstance(e.get("args"), dict):
            if isinstance(e.get("pid"), (list, dict)) or isinstance(e.get("tid"), (list, dict)):
                continue  # a malformed lane id names no lane (its rows are refused later)
            name = e["args"].get("name")
            if e.get("name") == "process_name" and isinstance(name, str):
                process[e.get("pid")] = name
            elif e.get("name") == "thread_name" and isinstance(name, str):
                thread[(e.get("pid"), e.get("tid"))] = name
    return {"process": process, "thread": thread}


def _rows(trace: Path, events: list, lanes: dict, cols: Columns, warnings: list) -> dict[str, list[list[int]]]:
    """Add the timeline's rows to ``cols``; return the Overlap Analysis lanes."""
    process, thread = lanes["process"], lanes["thread"]
    kinds, names, ts, durs, devs, streams, corrs, types, syncs, pids, tids, where, links = (
        [] for _ in range(13)
    )
    plane_streams: list[tuple[int, int]] = []  # (row, stream id) of HCCL plane tasks
    overlap: dict[str, list] = {}  # Overlap Analysis lane -> [ts, dur] as written
    skipped = 0
    for i, e in enumerate(events):
        if type(e) is not dict:
            skipped += 1
            continue
        if e.get("ph") != "X":
            continue
        lane_process = process.get(e.get("pid"), "")
        if lane_process == "Overlap Analysis":
            lane = thread.get((e.get("pid"), e.get("tid")), str(e.get("name", "")))
            overlap.setdefault(lane, []).append((i, e.get("ts"), e.get("dur")))
            continue
        try:
            row = _classify(e, lane_process, thread)
        except (TypeError, AttributeError, ValueError) as exc:
            raise ParityError(f"{trace}: event {i} is malformed ({one_line(exc)}); the trace is corrupt") from None
        if row is None:
            continue
        kind, stream, task_type, plane_stream = row
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        corr = args.get("connection_id")
        kinds.append(int(kind))
        names.append(cols.intern(str(e.get("name", ""))))
        ts.append(e.get("ts"))
        durs.append(e.get("dur"))
        devs.append(0 if kind in (Kind.KERNEL, Kind.MEMCPY, Kind.SYNC) else NO_ID)
        streams.append(stream)
        corrs.append(int_or(corr) if type(corr) is int else _int_text(corr))
        types.append(task_type)
        syncs.append(e.get("name") if kind == Kind.SYNC else None)
        pids.append(int_or(e.get("pid")))
        tids.append(int_or(e.get("tid")))
        where.append(i)
        links.append(_link(args) if kind == Kind.OTHER and lane_process == "HCCL" else None)
        if plane_stream is not None:
            plane_streams.append((len(kinds) - 1, plane_stream))
    if skipped:
        warnings.append(f"{skipped} entries of the event array are not objects; skipped")
    lanes_ns = {lane: _lane_spans(trace, spans) for lane, spans in overlap.items()}
    if not kinds:
        return lanes_ns
    index = np.asarray(where)
    start = times_to_ns(ts, path=trace, first=0, what="ts", index=index)
    dur = times_to_ns(durs, path=trace, first=0, what="dur", index=index)
    if (dur < 0).any():
        bad = int(index[np.flatnonzero(dur < 0)[0]])
        raise ParityError(f"{trace}: event {bad} has a negative dur; the trace is corrupt")
    stream_col = np.asarray(streams, dtype=np.int64)
    kind_col = np.asarray(kinds, dtype=np.int8)
    _place_hccl_ops(kind_col, np.asarray(types, dtype=object), stream_col, start, start + dur,
                    plane_streams)  # fmt: skip
    cols.add(
        device=np.asarray(devs, np.int32), stream=stream_col, kind=kind_col,
        name_id=np.asarray(names, np.int32), start_ns=start, end_ns=start + dur,
        correlation=np.asarray(corrs, np.int64), task_type=np.asarray(types, dtype=object),
        sync_type=np.asarray(syncs, dtype=object), pid=np.asarray(pids, np.int64),
        tid=np.asarray(tids, np.int64), link=_object_array(links),
    )  # fmt: skip
    return lanes_ns


def _object_array(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _link(args: dict) -> tuple[int, int, int, str] | None:
    """``(src rank, dst rank, size in bytes, link type)`` of an HCCL plane task, or None when its
    args do not say (the communication matrix is built from these)."""
    src, dst, size = args.get("src rank"), args.get("dst rank"), args.get("size(Byte)")
    if type(src) is not int or type(dst) is not int or type(size) is not int:
        return None
    link = args.get("link type")
    return src, dst, size, link if isinstance(link, str) else ""


def _lane_spans(trace: Path, spans: list) -> list[list[int]]:
    """``[start_ns, end_ns]`` pairs of one Overlap Analysis lane (its events' ts and dur)."""
    index = np.asarray([i for i, _, _ in spans])
    start = times_to_ns([t for _, t, _ in spans], path=trace, first=0, what="ts", index=index)
    dur = times_to_ns([d for _, _, d in spans], path=trace, first=0, what="dur", index=index)
    return [[int(a), int(a + b)] for a, b in zip(start.tolist(), dur.tolist())]


def _classify(e: dict, process: str, thread: dict):
    """(kind, stream, task_type, plane_stream) for one complete event, or None to skip it."""
    pid, tid, name = e.get("pid"), e.get("tid"), e.get("name")
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    tid_int = int_or(tid)
    if process == "Ascend Hardware":
        task_type = args.get("Task Type")
        task_type = task_type if isinstance(task_type, str) else None
        stream = _number(thread.get((pid, tid), ""), tid_int)
        if name == "MEMCPY_ASYNC":
            return Kind.MEMCPY, stream, task_type, None
        if name in _SYNC_TASKS:
            return Kind.SYNC, stream, task_type, None
        return Kind.KERNEL, stream, task_type, None
    if process == "HCCL":
        if thread.get((pid, tid), "").endswith("Communication"):
            return Kind.KERNEL, NO_ID, "HCCL", None
        plane = args.get("stream id")
        task = args.get("task type")
        return Kind.OTHER, tid_int, task if isinstance(task, str) else None, (
            int_or(plane) if type(plane) is int else None
        )
    if process == "CANN":
        return Kind.RUNTIME, tid_int, None, None
    if isinstance(name, str) and PROFILER_STEP.match(name):
        return Kind.STEP, tid_int, None, None
    if e.get("cat") == "cpu_op":
        return Kind.CPU_OP, tid_int, None, None
    return Kind.OTHER, tid_int, None, None


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
