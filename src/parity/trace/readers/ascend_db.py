"""torch_npu's Ascend profiler SQLite export (``ascend_pytorch_profiler_N.db``): rows as
:mod:`.ascend_text` makes them, from integer ns and ``STRING_IDS`` (``docs/definitions.md``, Trace
formats); an operator-less task holding a collective on its stream carries it (core ``HCCL``).
"""

from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.ascend_csv import step_rows
from parity.trace.readers.ascend_text import TASK_KIND
from parity.trace.readers.columns import Columns
from parity.trace.steps import PROFILER_STEP
from parity.trace.table import NO_ID, ActivityTable, Kind, KindCode

_CORE_OF_TASK = {"KERNEL_AIVEC": "AI_VECTOR_CORE", "KERNEL_AICORE": "AI_CORE", "KERNEL_MIX_AIC": "MIX_AIC",
                 "KERNEL_MIX_AIV": "MIX_AIV", "KERNEL_AICPU": "AI_CPU"}  # fmt: skip
_CORE_OF_TASK.update({core: core for core in _CORE_OF_TASK.values()})  # a task type that is a core
_RANK = re.compile(r"_(\d+)\.db$")
INVALID_RANK = 4294967295  # a rank the profiler did not record (or a local task's dst)
_STEP_TRACE_NAMES = {
    "step": "Step", "computing": "Computing", "communication_not_overlapped": "Communication(Not Overlapped)",
    "overlapped": "Overlapped", "communication": "Communication", "free": "Free", "stage": "Stage",
    "bubble": "Bubble", "preparing": "Preparing",
    "communication_not_overlapped_and_exclude_receive": "Communication(Not Overlapped and Exclude Receive)",
}  # fmt: skip
EXTRA = dict(task_type=object, accelerator_core=object, sync_type=object)
COLLECTIVE = dict(dtype=object, hccl_count=np.int64, process_group_name=object)  # of COMMUNICATION_OP
SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError, ValueError, TypeError, OverflowError)


def open_sqlite(path: Path) -> tuple[sqlite3.Connection, set[str]]:
    """The database opened read-only and the names of its tables; a ParityError when the file
    is not a readable SQLite database."""
    db = None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        return db, {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except SQLITE_ERRORS as exc:
        if db is not None:
            db.close()
        raise ParityError(f"{path}: not a readable SQLite database ({one_line(exc)}); "
                          "export it again from the profiler") from None  # fmt: skip


def read_ascend_db(path: Path, *, progress=None) -> ActivityTable:
    """Read one rank's ``ascend_pytorch_profiler_N.db``."""
    db, tables = open_sqlite(path)
    try:
        missing = [t for t in ("TASK", "STRING_IDS") if t not in tables]
        if missing:
            raise ParityError(f"{path}: no {', '.join(missing)} table; not an Ascend profiler export")
        cols = Columns(EXTRA, COLLECTIVE)
        try:
            strings = dict(db.execute("SELECT id, CAST(value AS TEXT) FROM STRING_IDS"))
            task_ids = _tasks(db, tables, strings, cols, path)
            links = task_links(db, tables, task_ids)
            _comm_ops(db, tables, cols, path)
            _host(db, tables, strings, cols, path)
            rank = _rank(db, tables, path)
        except SQLITE_ERRORS as exc:
            raise ParityError(f"{path}: unreadable Ascend tables ({one_line(exc)}); export it again") from None
        warnings: list[str] = []
        step_trace = _step_trace(path.parent / "analysis.db", warnings)
    finally:
        db.close()
    if progress is not None:
        progress(1, 1, str(path))
    if cols.rows == 0:
        raise ParityError(f"{path}: empty trace (no tasks)")
    meta = {"source": str(path), "format": "ascend-db", "clock_unit": "ns", "ranks": [rank],
            "rank_source": "RANK_DEVICE_MAP/file name", "warnings": warnings, "step_trace": step_trace}
    table = cols.table(meta=meta)
    if links is not None:  # the tasks are the first rows
        table.extra["link"] = np.concatenate([links, np.full(len(table) - len(links), None, dtype=object)])
    mark_collective_carriers(table)
    return table


def mark_collective_carriers(table: ActivityTable) -> int:
    """Set ``accelerator_core = "HCCL"`` on every operator-less kernel task (named after its task
    type: no COMPUTE_TASK_INFO row) that contains a collective (a ``task_type == "HCCL"`` row,
    ``task.start <= op.start`` and ``op.end <= task.end``) on its own stream; how many were."""
    types, cores = table.extra["task_type"], table.extra["accelerator_core"]
    names = np.array(table.names, dtype=object)[table.name_id]
    ops = np.flatnonzero(types == "HCCL")
    candidates = np.flatnonzero((table.kind == Kind.KERNEL) & (names == types) & (types != "HCCL"))
    if not len(ops) or not len(candidates):
        return 0
    ops = ops[np.argsort(table.start_ns[ops], kind="stable")]
    op_start, marked = table.start_ns[ops], 0
    # the operations starting inside each candidate, found for all candidates at once; only
    # candidates with any are looked at one by one
    lo = np.searchsorted(op_start, table.start_ns[candidates], side="left")
    hi = np.searchsorted(op_start, table.end_ns[candidates], side="left")
    some = hi > lo
    for row, first, last in zip(candidates[some].tolist(), lo[some].tolist(), hi[some].tolist()):
        inside = ops[first:last]
        if ((table.stream[inside] == table.stream[row]) & (table.end_ns[inside] <= table.end_ns[row])).any():
            cores[row] = "HCCL"
            marked += 1
    return marked


def _tasks(db, tables: set[str], strings: dict[int, str], cols: Columns, path: Path) -> tuple:
    """Add the TASK rows to ``cols``; their globalTaskId values, in row order."""
    compute = "COMPUTE_TASK_INFO" in tables
    rows = db.execute(
        "SELECT t.startNs, t.endNs, t.deviceId, t.connectionId, t.streamId, t.taskType, t.globalTaskId, "
        + ("c.name, c.taskType FROM TASK t LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
           if compute else "NULL, NULL FROM TASK t ")
        + "ORDER BY t.startNs"
    ).fetchall()  # fmt: skip
    if not rows:
        return ()
    start, end, device, conn, stream, ttype, task_ids, op_name, op_core = zip(*rows)
    start, end = ns_span(start, end, path, "TASK")
    task_type = [strings.get(t) for t in ttype]
    names = [(strings.get(n) if n is not None else t) or "" for t, n in zip(task_type, op_name)]
    kinds = [TASK_KIND.get(n, KindCode.KERNEL) for n in names]
    cores = [strings.get(c) if c is not None else None for c in op_core]
    cores = [c if c in _CORE_OF_TASK.values() else _CORE_OF_TASK.get(t) for c, t in zip(cores, task_type)]
    cols.add(
        device=np.asarray(device, np.int32), stream=np.asarray(stream, np.int64),
        kind=np.asarray(kinds, np.int8), name_id=cols.name_ids(names),
        start_ns=start, end_ns=end, correlation=np.asarray([NO_ID if c is None else c for c in conn], np.int64),
        task_type=np.asarray(task_type, dtype=object), accelerator_core=np.asarray(cores, dtype=object),
        sync_type=np.asarray([n if k == Kind.SYNC else None for n, k in zip(names, kinds)], object),
    )  # fmt: skip
    return task_ids


def ns_span(start: tuple, end: tuple, path: Path, table: str) -> tuple[np.ndarray, np.ndarray]:
    """A table's ``startNs`` and ``endNs`` columns (:func:`ns_column`); a ParityError naming the
    first row that ends before it starts."""
    start_ns, end_ns = ns_column(start, path, f"{table}.startNs"), ns_column(end, path, f"{table}.endNs")
    if (end_ns < start_ns).any():
        raise ParityError(f"{path}: {table} row {int(np.flatnonzero(end_ns < start_ns)[0])} ends before it starts; "
                          "the export is corrupt")  # fmt: skip
    return start_ns, end_ns


def ns_column(values: tuple, path: Path, column: str) -> np.ndarray:
    """A column of nanosecond times as int64: integers, their decimal text (torch_npu writes
    ``PYTORCH_API`` times as text) or integral reals; a ParityError naming ``column`` for any
    other value (NULL, other text, a fraction, beyond int64: SQLite keeps any value in any column)."""
    array = np.array(values)
    if array.dtype == np.int64 or not len(values):
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "U":  # decimal text (ints among it read as text too): numpy parses it
        try:
            return array.astype(np.int64)
        except (ValueError, OverflowError):
            pass  # a cell that is no integer's text: found and named below
    out = np.empty(len(values), np.int64)
    for row, value in enumerate(values):
        try:
            out[row] = _ns_value(value)
        except (TypeError, ValueError, OverflowError):
            raise ParityError(f"{path}: {column} holds {value!r}, not a time in integer ns; the export is corrupt, "
                              "export it again") from None
    return out


def _ns_value(value) -> int:
    """One time cell as int (:func:`ns_column`); TypeError, ValueError or OverflowError otherwise."""
    if type(value) is str and not (value.isascii() and value.strip().lstrip("-").isdigit()):
        raise ValueError(value)
    if type(value) is float and not (math.isfinite(value) and value == int(value)):
        raise ValueError(value)
    if type(value) not in (int, str, float):
        raise TypeError(value)
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise OverflowError(value)
    return number


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
    return np.fromiter(map(by_task.get, task_ids), object, len(task_ids))  # one object a task: a tuple or None


def _comm_ops(db, tables: set[str], cols: Columns, path: Path) -> None:
    """Collectives, on the stream of their first task."""
    if "COMMUNICATION_OP" not in tables:
        return
    stream_of = "NULL"
    if "COMMUNICATION_TASK_INFO" in tables:
        stream_of = ("(SELECT t.streamId FROM COMMUNICATION_TASK_INFO m JOIN TASK t ON t.globalTaskId = "
                     "m.globalTaskId WHERE m.opId = o.opId ORDER BY t.startNs LIMIT 1)")  # fmt: skip
    present = {r[1] for r in db.execute("PRAGMA table_info(COMMUNICATION_OP)")}
    types = "ENUM_HCCL_DATA_TYPE" in tables and "dataType" in present
    described = {"groupName", "count"} <= present
    rows = db.execute(
        f"SELECT o.startNs, o.endNs, o.connectionId, CAST(s.value AS TEXT), {stream_of}, "
        + "(SELECT deviceId FROM TASK LIMIT 1), "
        + ("CAST(g.value AS TEXT), o.count, " if described else "NULL, NULL, ")
        + ("(SELECT name FROM ENUM_HCCL_DATA_TYPE WHERE id = o.dataType) " if types else "NULL ")
        + "FROM COMMUNICATION_OP o LEFT JOIN STRING_IDS s ON s.id = o.opName "
        + ("LEFT JOIN STRING_IDS g ON g.id = o.groupName " if described else "")
        + "ORDER BY o.startNs"
    ).fetchall()  # fmt: skip
    if not rows:
        return
    start, end, conn, name, stream, device, group, count, dtype = zip(*rows)
    n, first_row = len(rows), cols.rows
    start_ns, end_ns = ns_span(start, end, path, "COMMUNICATION_OP")
    cols.add(
        device=np.asarray([d or 0 for d in device], np.int32),
        stream=np.asarray([s if s is not None else 0 for s in stream], np.int64),
        kind=np.full(n, int(Kind.KERNEL), np.int8), name_id=cols.name_ids([x or "" for x in name]),
        start_ns=start_ns, end_ns=end_ns,
        correlation=np.asarray([c if c is not None else NO_ID for c in conn], np.int64),
        task_type=np.full(n, "HCCL", dtype=object), accelerator_core=np.full(n, "HCCL", dtype=object),
    )  # fmt: skip
    cols.add_sparse(
        first_row, process_group_name=np.array([g if isinstance(g, str) else None for g in group], dtype=object),
        hccl_count=np.array([int(c) if isinstance(c, (int, float)) and c == c and c >= 0 else NO_ID
                                for c in count], dtype=np.int64),
        dtype=np.array([d if isinstance(d, str) and d not in ("N/A", "INVALID_TYPE") else None for d in dtype],
                       dtype=object),
    )  # fmt: skip


def _host(db, tables: set[str], strings: dict[int, str], cols: Columns, path: Path) -> None:
    """CANN API calls (runtime), PyTorch ops and step markers (from ``STEP_TIME`` without them).

    Column by column: a name (a ``STRING_IDS`` id, or text) and its kind are worked out once
    per distinct value, not once per row."""
    names, kinds, start, end, stream, correlation = [], [], [], [], [], []

    def add(b_start, b_end, tid, conn, name, runtime: bool, table: str) -> bool:
        """Append one table's columns; whether a row of it is a step marker."""
        n = len(name)
        text_of = {v: v if isinstance(v, str) else (strings.get(v) or "") for v in set(name)}
        text = list(map(text_of.__getitem__, name))
        names.extend(text)
        marked = False
        if runtime:
            kinds.append(np.full(n, int(Kind.RUNTIME), np.int8))
            correlation.append(np.fromiter((NO_ID if c is None else c for c in conn), np.int64, n))
        else:
            kind_of = {t: int(Kind.STEP if PROFILER_STEP.match(t) else Kind.CPU_OP) for t in text_of.values()}
            marked = int(Kind.STEP) in kind_of.values()
            kinds.append(np.fromiter(map(kind_of.__getitem__, text), np.int8, n))
            correlation.append(np.full(n, NO_ID, np.int64))
        first = ns_column(b_start, path, f"{table}.startNs")
        start.append(first)
        end.append(np.maximum(ns_column(b_end, path, f"{table}.endNs"), first))
        stream.append(np.fromiter(((t or 0) & 0xFFFFFFFF for t in tid), np.int64, n))
        return marked

    marked = False
    for table, runtime in (("CANN_API", True), ("PYTORCH_API", False)):
        if table in tables:
            rows = db.execute(f"SELECT startNs, endNs, globalTid, connectionId, name FROM {table}").fetchall()
            if rows:
                marked = add(*zip(*rows), runtime, table) or marked
    if "STEP_TIME" in tables and not marked:
        steps = db.execute("SELECT id, startNs, endNs FROM STEP_TIME").fetchall()
        if steps:
            ids, step_start, step_end = zip(*steps)
            add(step_start, step_end, (0,) * len(ids), (None,) * len(ids),
                tuple(f"ProfilerStep#{step}" for step in ids), False, "STEP_TIME")
    if not names:
        return
    cols.add(
        stream=np.concatenate(stream), kind=np.concatenate(kinds), name_id=cols.name_ids(names),
        start_ns=np.concatenate(start), end_ns=np.concatenate(end), correlation=np.concatenate(correlation),
    )  # fmt: skip


def _rank(db, tables: set[str], path: Path) -> int:
    if "RANK_DEVICE_MAP" in tables:
        row = db.execute("SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1").fetchone()
        if row and type(row[0]) is int and row[0] >= 0:
            return row[0]
    match = _RANK.search(path.name)
    return int(match.group(1)) if match else 0


def _step_trace(path: Path, warnings: list[str]) -> list[dict]:
    """``analysis.db``'s StepTraceTime rows with step_trace_time.csv's column names
    (:func:`.ascend_csv.step_rows`); [] when there is no such file or table."""
    if not path.is_file():
        return []
    try:
        db, _ = open_sqlite(path)
        try:
            cursor = db.execute("SELECT * FROM StepTraceTime")
            keys = [_STEP_TRACE_NAMES.get(d[0], d[0]) for d in cursor.description]
            records = [dict(zip(keys, row)) for row in cursor.fetchall()]
        finally:
            db.close()
    except (ParityError, *SQLITE_ERRORS):
        return []
    return step_rows(path.name, keys, records, warnings)
