"""NVIDIA Nsight Systems SQLite exports (``nsys export --type sqlite``): CUPTI activity, runtime
calls and NVTX ranges as rows (``docs/definitions.md``, Trace formats). Columns renamed between
versions are tried by each known name (:func:`select`). Bad input (not SQLite, no CUPTI table,
no device activity, a row ending before it starts) is a ParityError.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.ascend_db import SQLITE_ERRORS, open_sqlite
from parity.trace.readers.columns import Columns
from parity.trace.steps import PROFILER_STEP
from parity.trace.table import NO_ID, ActivityTable, Kind

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
_COPY_KIND = {1: "Memcpy HtoD", 2: "Memcpy DtoH", 3: "Memcpy HtoA", 4: "Memcpy AtoH", 5: "Memcpy AtoA",
              6: "Memcpy AtoD", 7: "Memcpy DtoA", 8: "Memcpy DtoD", 9: "Memcpy HtoH", 10: "Memcpy PtoP"}  # fmt: skip
_SYNC_TYPE = {0: "Unknown", 1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
EXTRA = dict(sync_type=object, wait_on_event_corr=np.int64)
_TIMES = (("start",), ("end",))
_IDS = (("deviceId",), ("streamId",), ("correlationId",))


def read_nsys(path: Path, *, progress=None) -> ActivityTable:
    """Read one Nsight Systems SQLite export."""
    db, tables = open_sqlite(path)
    warnings: list[str] = []
    cols = Columns(EXTRA)
    try:
        if not any(t.startswith("CUPTI_ACTIVITY") for t in tables):
            raise ParityError(f"{path}: no CUPTI_ACTIVITY_KIND_* table; not an Nsight Systems export")
        strings = dict(db.execute("SELECT id, CAST(value AS TEXT) FROM StringIds")) if "StringIds" in tables else {}
        _device(db, tables, strings, cols, path, warnings)
        device_rows = cols.rows
        _host(db, tables, strings, cols, path, warnings)
        meta = _meta(db, tables, path, warnings)
    except SQLITE_ERRORS as exc:
        raise ParityError(f"{path}: unreadable Nsight tables ({one_line(exc)}); export it again") from None
    finally:
        db.close()
    if progress is not None:
        progress(1, 1, str(path))
    if device_rows == 0:
        raise ParityError(f"{path}: no device activity (no kernel, memcpy or memset rows); profile with "
                          "CUDA tracing on (nsys profile --trace=cuda)")
    if KERNEL not in tables:
        warnings.append(f"no {KERNEL} table: the export holds no kernels, so only copies and sets are analysed")
    return cols.table(meta=meta)


def select(db, table: str, columns: tuple[tuple[str, ...], ...], *, required: int, warnings: list[str],
           tail: str = "") -> list[tuple]:
    """Rows of ``table``, a value per entry of ``columns`` (each the names the column has had, tried
    in order); without one of the first ``required`` the table is skipped (``[]``), without another
    it reads as NULL, each with a warning. ``tail``: SQL after ``FROM table`` (ORDER BY, WHERE)."""
    present = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    chosen, absent = [], []
    for i, names in enumerate(columns):
        found = next((n for n in names if n in present), None)
        if found is None:
            absent.append(names[0])
            if i < required:
                warnings.append(f"{table} has no {names[0]} column; the table is skipped")
                return []
        chosen.append(found or "NULL")
    if absent:
        warnings.append(f"{table} has no {', '.join(absent)} column; read as empty")
    order = tail.replace("{start}", chosen[0])
    return db.execute(f"SELECT {', '.join(chosen)} FROM {table} {order}").fetchall()


_DEVICE_TABLES = (  # table, kind, the columns a row is named by, SQL after FROM
    (KERNEL, Kind.KERNEL, (("demangledName",), ("shortName",)), "ORDER BY {start}"),
    (MEMCPY, Kind.MEMCPY, (("copyKind",),), ""), (MEMSET, Kind.MEMSET, (), ""),
    (SYNC, Kind.SYNC, (("syncType",),), ""),
)


def _device(db, tables, strings, cols, path, warnings) -> None:
    """Kernels, copies, sets and syncs, their ids (device, stream, correlation) from one layout."""
    for table, kind, naming, tail in _DEVICE_TABLES:
        if table not in tables:
            continue
        rows = select(db, table, (*_TIMES, *_IDS, *naming), required=2, warnings=warnings, tail=tail)
        if not rows:
            continue
        if kind == Kind.KERNEL:
            names = [strings.get(r[5]) or strings.get(r[6]) or f"kernel {r[5]}" for r in rows]
        elif kind == Kind.MEMCPY:
            names = [_COPY_KIND.get(r[5], f"Memcpy kind {r[5]}") for r in rows]
        elif kind == Kind.SYNC:
            names = [_SYNC_TYPE.get(r[5], f"sync type {r[5]}") for r in rows]
        else:
            names = ["Memset"] * len(rows)
        _add(cols, path, table, rows, [int(kind)] * len(rows), names, [r[2] for r in rows], [r[3] for r in rows],
             [r[4] for r in rows], names if kind == Kind.SYNC else None)  # fmt: skip


def _host(db, tables, strings, cols, path, warnings) -> None:
    """Runtime calls, and NVTX ranges (a ``ProfilerStep#N`` range is a step)."""
    if RUNTIME in tables:
        rows = select(db, RUNTIME, (*_TIMES, ("globalTid",), ("correlationId",), ("nameId",)), required=2,
                      warnings=warnings, tail="ORDER BY {start}")  # fmt: skip
        if rows:
            names = [strings.get(r[4]) or f"api {r[4]}" for r in rows]
            _add(cols, path, RUNTIME, rows, [int(Kind.RUNTIME)] * len(rows), names, [NO_ID] * len(rows),
                 [(r[2] or 0) & 0xFFFFFF for r in rows], [r[3] for r in rows])  # fmt: skip
    if "NVTX_EVENTS" in tables:
        rows = [r for r in select(db, "NVTX_EVENTS", (*_TIMES, ("globalTid",), ("text",), ("textId",)), required=2,
                                  warnings=warnings, tail="ORDER BY {start}") if r[1] is not None]  # fmt: skip
        if rows:
            names = [r[3] or strings.get(r[4]) or "" for r in rows]
            kinds = [int(Kind.STEP if PROFILER_STEP.match(n) else Kind.OTHER) for n in names]
            _add(cols, path, "NVTX_EVENTS", rows, kinds, names, [NO_ID] * len(rows),
                 [(r[2] or 0) & 0xFFFFFF for r in rows], [None] * len(rows))  # fmt: skip


def _add(cols: Columns, path: Path, table: str, rows: list, kind, names: list[str], device, stream, corr,
         sync=None) -> None:  # fmt: skip
    start = np.asarray([r[0] for r in rows], np.int64)
    end = np.asarray([r[1] if r[1] is not None else r[0] for r in rows], np.int64)
    if (end < start).any():
        bad = int(np.flatnonzero(end < start)[0])
        raise ParityError(f"{path}: {table} row {bad} ends before it starts; the export is corrupt")
    cols.add(
        device=np.asarray([NO_ID if d is None else d for d in device], np.int32),
        stream=np.asarray([NO_ID if x is None else x for x in stream], np.int64), kind=np.asarray(kind, np.int8),
        name_id=cols.name_ids(names), start_ns=start,
        end_ns=end, correlation=np.asarray([c if c is not None else NO_ID for c in corr], np.int64),
        **({} if sync is None else {"sync_type": np.asarray(sync, dtype=object)}),
    )  # fmt: skip


def _meta(db, tables, path: Path, warnings: list[str]) -> dict:
    meta = {"source": str(path), "format": "nsys", "clock_unit": "ns", "ranks": [0],
            "rank_source": "assumed", "warnings": warnings, "base_time_ns": None, "devices": []}
    if "TARGET_INFO_SESSION_START_TIME" in tables:
        rows = select(db, "TARGET_INFO_SESSION_START_TIME", (("utcEpochNs",),), required=1, warnings=warnings)
        meta["base_time_ns"] = rows[0][0] if rows else None
    if "TARGET_INFO_GPU" in tables:  # only the names are used; the key column has been renamed
        rows = select(db, "TARGET_INFO_GPU", (("name",), ("id", "deviceId")), required=1, warnings=warnings)
        meta["devices"] = [dict(id=i, name=n) for n, i in rows]
    return meta
