"""torch_npu's Ascend profiler SQLite export (``ascend_pytorch_profiler_N.db``).

The same run as the text output (:mod:`.ascend_text`), in tables with integer nanosecond times
and strings in ``STRING_IDS``. Rows, matching the text reader's choices:

- ``TASK`` (device tasks): name from ``COMPUTE_TASK_INFO.name`` for operator tasks, else the
  task type (``Notify Wait``, ``SDMA``, ``EVENT_RECORD``, ``MEMCPY_ASYNC``...), as the text
  output names them; kinds as in the text reader.
  ``task_type`` holds ``TASK.taskType``; ``accelerator_core`` is ``COMPUTE_TASK_INFO.taskType``
  when it names a core, else the core implied by the task type (``KERNEL_AIVEC`` ->
  ``AI_VECTOR_CORE``, ``KERNEL_AICORE`` -> ``AI_CORE``, ...).
- ``COMMUNICATION_OP`` (collectives): ``Kind.KERNEL``, ``task_type = "HCCL"``, on the stream of
  their tasks. ``COMMUNICATION_TASK_INFO`` gives each of their tasks ``(src rank, dst rank,
  size in bytes, link type)`` in the ``link`` column, as the text output's plane tasks do, for
  the communication matrix; the column is there only when some task names its ranks (profiler
  level 0 records none: every rank is ``4294967295`` and every size -1).
- A task with no operator (no ``COMPUTE_TASK_INFO`` row, so named after its task type, e.g.
  ``AI_CORE``) that holds a collective on its stream is the collective's carrier: its
  ``accelerator_core`` is ``HCCL``, so it counts as communication, never as compute (the
  profiler's step table counts it so: a 75 ms ``AI_CORE`` task around ``hcom_allReduce`` is
  not matrix work).
- ``CANN_API``: ``Kind.RUNTIME`` (``connectionId`` is the correlation with ``TASK``).
- ``PYTORCH_API``: ``ProfilerStep#N`` is ``Kind.STEP``, other ops ``Kind.CPU_OP``; without
  them, ``STEP_TIME`` gives the steps.
- ``analysis.db``'s ``StepTraceTime`` rows, when present, go to ``meta["step_trace"]`` with
  the CSV's column names.

Bad input: not SQLite, or missing the ``TASK``/``STRING_IDS`` tables: :class:`ParityError`.
A task with ``endNs < startNs``: ParityError naming the task's row.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.columns import (
    PROFILER_STEP,
    Columns,
    finish_ascend_rank,
)
from parity.trace.table import NO_ID, ActivityTable, Kind

_CORE_OF_TASK = {
    "KERNEL_AIVEC": "AI_VECTOR_CORE", "KERNEL_AICORE": "AI_CORE", "KERNEL_MIX_AIC": "MIX_AIC",
    "KERNEL_MIX_AIV": "MIX_AIV", "KERNEL_AICPU": "AI_CPU", "AI_CORE": "AI_CORE",
    "AI_VECTOR_CORE": "AI_VECTOR_CORE", "MIX_AIC": "MIX_AIC", "MIX_AIV": "MIX_AIV",
    "AI_CPU": "AI_CPU",
}  # fmt: skip
_RANK = re.compile(r"_(\d+)\.db$")
INVALID_RANK = 4294967295  # a rank the profiler did not record (or a local task's dst)
_STEP_TRACE_NAMES = {
    "step": "Step", "computing": "Computing",
    "communication_not_overlapped": "Communication(Not Overlapped)", "overlapped": "Overlapped",
    "communication": "Communication", "free": "Free", "stage": "Stage", "bubble": "Bubble",
    "communication_not_overlapped_and_exclude_receive":
        "Communication(Not Overlapped and Exclude Receive)",
    "preparing": "Preparing",
}  # fmt: skip
EXTRA = dict(task_type=object, accelerator_core=object, sync_type=object)
TABLES = ("TASK", "STRING_IDS")


def connect(path: Path) -> sqlite3.Connection:
    """Open read-only; a ParityError when the file is not a readable SQLite database."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        db.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise ParityError(f"{path}: not a readable SQLite database ({one_line(exc)}); export it again from the profiler") from None
    return db


SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError, ValueError, TypeError, OverflowError)


def table_names(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def tables_or_raise(db: sqlite3.Connection, path: Path) -> set[str]:
    try:
        return table_names(db)
    except SQLITE_ERRORS as exc:
        raise ParityError(f"{path}: corrupt SQLite file ({one_line(exc)}); export it again") from None


def read_ascend_db(path: Path, *, progress=None) -> ActivityTable:
    """Read one rank's ``ascend_pytorch_profiler_N.db``."""
    db = connect(path)
    try:
        tables = tables_or_raise(db, path)
        missing = [t for t in TABLES if t not in tables]
        if missing:
            raise ParityError(f"{path}: no {', '.join(missing)} table; not an Ascend profiler export")
        cols = Columns(EXTRA)
        try:
            task_ids = _tasks(db, tables, cols, path)
            links = task_links(db, tables, task_ids)
            _comm_ops(db, tables, cols)
            _host(db, tables, cols)
            rank = _rank(db, tables, path)
        except SQLITE_ERRORS as exc:
            raise ParityError(f"{path}: unreadable Ascend tables ({one_line(exc)}); export it again") from None
        step_trace = _step_trace(path.parent / "analysis.db")
    finally:
        db.close()
    if progress is not None:
        progress(1, 1, str(path))
    if cols.rows == 0:
        raise ParityError(f"{path}: empty trace (no tasks)")
    meta = {"source": str(path), "format": "ascend-db", "clock_unit": "ns", "ranks": [rank],
            "rank_source": "RANK_DEVICE_MAP/file name", "warnings": [], "step_trace": step_trace}
    table = cols.table(meta=meta)
    if links is not None:  # the tasks are the first rows
        table.extra["link"] = np.concatenate([links, np.full(len(table) - len(links), None, dtype=object)])
    mark_collective_carriers(table)
    return finish_ascend_rank(table, rank)


def mark_collective_carriers(table: ActivityTable) -> int:
    """Set ``accelerator_core = "HCCL"`` on every operator-less kernel task that contains a
    collective (a ``task_type == "HCCL"`` row) on its own stream; returns how many were marked.

    Operator-less: the task is named after its task type (no COMPUTE_TASK_INFO row). Contains:
    ``task.start <= op.start`` and ``op.end <= task.end``.
    """
    types = table.extra["task_type"]
    cores = table.extra["accelerator_core"]
    names = np.array(table.names, dtype=object)[table.name_id]
    ops = np.flatnonzero(types == "HCCL")
    candidates = np.flatnonzero((table.kind == Kind.KERNEL) & (names == types) & (types != "HCCL"))
    if not len(ops) or not len(candidates):
        return 0
    ops = ops[np.argsort(table.start_ns[ops], kind="stable")]
    op_start = table.start_ns[ops]
    marked = 0
    for row in candidates.tolist():
        lo, hi = np.searchsorted(op_start, [table.start_ns[row], table.end_ns[row]], side="left")
        inside = ops[lo:hi]
        if ((table.stream[inside] == table.stream[row]) & (table.end_ns[inside] <= table.end_ns[row])).any():
            cores[row] = "HCCL"
            marked += 1
    return marked


def _strings(db: sqlite3.Connection) -> dict[int, str]:
    return dict(db.execute("SELECT id, value FROM STRING_IDS"))


def _tasks(db, tables: set[str], cols: Columns, path: Path) -> tuple:
    """Add the TASK rows to ``cols``; their globalTaskId values, in row order."""
    compute = "COMPUTE_TASK_INFO" in tables
    sql = (
        "SELECT t.startNs, t.endNs, t.deviceId, t.connectionId, t.streamId, t.taskType, t.globalTaskId, "
        + ("c.name, c.taskType " if compute else "NULL, NULL ")
        + "FROM TASK t "
        + ("LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId " if compute else "")
        + "ORDER BY t.startNs"
    )  # fmt: skip
    rows = db.execute(sql).fetchall()
    if not rows:
        return ()
    strings = _strings(db)
    start, end, device, conn, stream, ttype, task_ids, cname, ccore = zip(*rows)
    start = _ints(start, path, "startNs")
    end = _ints(end, path, "endNs")
    if (end < start).any():
        bad = int(np.flatnonzero(end < start)[0])
        raise ParityError(f"{path}: TASK row {bad} ends before it starts; the export is corrupt")
    task_type = [strings.get(t) for t in ttype]
    names, kinds, cores, syncs = [], [], [], []
    for tt, cn, cc in zip(task_type, cname, ccore):
        name = (strings.get(cn) if cn is not None else tt) or ""
        kind = Kind.MEMCPY if name == "MEMCPY_ASYNC" else (
            Kind.SYNC if name in ("EVENT_RECORD", "EVENT_WAIT") else Kind.KERNEL
        )
        core = strings.get(cc) if cc is not None else None
        core = core if core in _CORE_OF_TASK.values() else _CORE_OF_TASK.get(tt)
        names.append(cols.intern(name))
        kinds.append(int(kind))
        cores.append(core)
        syncs.append(name if kind == Kind.SYNC else None)
    cols.add(
        device=np.asarray(device, np.int32), stream=np.asarray(stream, np.int64),
        kind=np.asarray(kinds, np.int8), name_id=np.asarray(names, np.int32), start_ns=start,
        end_ns=end, correlation=np.asarray([c if c is not None else NO_ID for c in conn], np.int64),
        task_type=np.asarray(task_type, dtype=object),
        accelerator_core=np.asarray(cores, dtype=object), sync_type=np.asarray(syncs, object),
    )  # fmt: skip
    return task_ids


def task_links(db, tables: set[str], task_ids) -> np.ndarray | None:
    """``(src rank, dst rank, size in bytes, link type)`` of each task in ``task_ids`` (its
    ``COMMUNICATION_TASK_INFO`` row), None for the others; None when no task names a rank."""
    if "COMMUNICATION_TASK_INFO" not in tables:
        return None
    present = {r[1] for r in db.execute("PRAGMA table_info(COMMUNICATION_TASK_INFO)")}
    if not {"globalTaskId", "srcRank", "dstRank", "size", "linkType"} <= present:
        return None
    names = dict(db.execute("SELECT id, name FROM ENUM_HCCL_LINK_TYPE")) if "ENUM_HCCL_LINK_TYPE" in tables else {}
    by_task = {
        task: (src, dst, size, names.get(link, ""))
        for task, src, dst, size, link in db.execute(
            "SELECT globalTaskId, srcRank, dstRank, size, linkType FROM COMMUNICATION_TASK_INFO")
        if type(src) is int and type(dst) is int and type(size) is int and src != INVALID_RANK and size >= 0
    }  # fmt: skip
    if not by_task:
        return None
    links = np.empty(len(task_ids), dtype=object)
    links[:] = [by_task.get(task) for task in task_ids]
    return links


def _comm_ops(db, tables: set[str], cols: Columns) -> None:
    if "COMMUNICATION_OP" not in tables:
        return
    stream_of = "NULL"
    if "COMMUNICATION_TASK_INFO" in tables:
        stream_of = ("(SELECT t.streamId FROM COMMUNICATION_TASK_INFO m JOIN TASK t "
                     "ON t.globalTaskId = m.globalTaskId WHERE m.opId = o.opId "
                     "ORDER BY t.startNs LIMIT 1)")  # fmt: skip
    rows = db.execute(
        f"SELECT o.startNs, o.endNs, o.connectionId, s.value, {stream_of}, "
        "(SELECT deviceId FROM TASK LIMIT 1) FROM COMMUNICATION_OP o "
        "LEFT JOIN STRING_IDS s ON s.id = o.opName ORDER BY o.startNs"
    ).fetchall()
    if not rows:
        return
    start, end, conn, name, stream, device = zip(*rows)
    n = len(rows)
    cols.add(
        device=np.asarray([d or 0 for d in device], np.int32),
        stream=np.asarray([s if s is not None else 0 for s in stream], np.int64),
        kind=np.full(n, int(Kind.KERNEL), np.int8),
        name_id=np.asarray([cols.intern(x or "") for x in name], np.int32),
        start_ns=np.asarray(start, np.int64), end_ns=np.asarray(end, np.int64),
        correlation=np.asarray([c if c is not None else NO_ID for c in conn], np.int64),
        task_type=np.full(n, "HCCL", dtype=object), accelerator_core=np.full(n, "HCCL", dtype=object),
    )  # fmt: skip


def _host(db, tables: set[str], cols: Columns) -> None:
    """CANN API calls (runtime), PyTorch ops and step markers."""
    parts = []
    if "CANN_API" in tables:
        parts.append("SELECT startNs, endNs, globalTid, connectionId, name, 1 FROM CANN_API")
    if "PYTORCH_API" in tables:
        parts.append("SELECT startNs, endNs, globalTid, connectionId, name, 0 FROM PYTORCH_API")
    strings = _strings(db)
    rows = [r for sql in parts for r in db.execute(sql)]
    has_step = any(PROFILER_STEP.match(strings.get(r[4]) or "") for r in rows if r[5] == 0)
    if not has_step and "STEP_TIME" in tables:
        for ident, start, end in db.execute("SELECT id, startNs, endNs FROM STEP_TIME"):
            rows.append((start, end, 0, None, f"ProfilerStep#{ident}", 0))
    if not rows:
        return
    kinds, names, tids = [], [], []
    for _start, _end, tid, _conn, name_id, runtime in rows:
        name = name_id if isinstance(name_id, str) else (strings.get(name_id) or "")
        step_marker = PROFILER_STEP.match(name)
        kind = Kind.RUNTIME if runtime else (Kind.STEP if step_marker else Kind.CPU_OP)
        kinds.append(int(kind))
        names.append(cols.intern(name))
        tids.append((tid or 0) & 0xFFFFFFFF)
    start = np.asarray([int(r[0]) for r in rows], np.int64)
    end = np.asarray([int(r[1]) for r in rows], np.int64)
    conn = [r[3] if (r[5] and r[3] is not None) else NO_ID for r in rows]
    cols.add(
        stream=np.asarray(tids, np.int64), kind=np.asarray(kinds, np.int8),
        name_id=np.asarray(names, np.int32), start_ns=start, end_ns=np.maximum(end, start),
        correlation=np.asarray(conn, np.int64),
    )  # fmt: skip


def _ints(values, path: Path, column: str) -> np.ndarray:
    try:
        return np.asarray([int(v) for v in values], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise ParityError(f"{path}: TASK.{column} has a non-integer value; export it again") from None


def _rank(db, tables: set[str], path: Path) -> int:
    if "RANK_DEVICE_MAP" in tables:
        row = db.execute("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1").fetchone()
        if row and type(row[0]) is int and row[0] >= 0:
            return row[0]
    match = _RANK.search(path.name)
    return int(match.group(1)) if match else 0


def _step_trace(path: Path) -> list[dict]:
    """``analysis.db`` StepTraceTime rows, with step_trace_time.csv's column names."""
    if not path.is_file():
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            cursor = db.execute("SELECT * FROM StepTraceTime")
            keys = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        finally:
            db.close()
    except SQLITE_ERRORS:
        return []
    out = []
    for row in rows:
        record = {}
        for key, value in zip(keys, row):
            label = _STEP_TRACE_NAMES.get(key, key)
            try:
                record[label] = int(float(value)) if label == "Step" else float(value)
            except (TypeError, ValueError):
                record[label] = value
        out.append(record)
    return out
