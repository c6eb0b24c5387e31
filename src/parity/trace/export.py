"""Exports of a trace analysis: CSV tables and an annotated Chrome trace for Perfetto.

The JSON document is ``TraceAnalysis.to_dict()`` written by the CLI's ``write_json``. The CSV
files are one table per concept (streams, categories, kernels, Ascend steps), every rank in one
file with a ``rank`` column. The Chrome trace holds the device activities with their category
as ``cat`` (Perfetto can filter and colour by it), one slice per rank marking the analysis
window and how it was chosen, and per-category lanes showing when each category ran; times are
µs relative to the trace's first activity (the origin is in the metadata, as doubles cannot
hold epoch nanoseconds).
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson

from parity.model.errors import ParityError
from parity.trace.categories import NOT_DEVICE, Categorization
from parity.trace.intervals import merge_intervals
from parity.trace.results import TraceAnalysis
from parity.trace.table import ActivityTable

CHUNK = 100_000  # device rows serialised at a time, so memory stays flat on large traces
WINDOW_TID = -1
CATEGORY_TID_BASE = -100


def _writer(path: Path):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("w", newline="", encoding="utf-8")
    except OSError as exc:
        raise ParityError(f"cannot write {path}: {exc.strerror}; choose a writable folder") from None


def write_csv(result: TraceAnalysis, folder: str | Path) -> list[Path]:
    """Write ``streams.csv``, ``categories.csv``, ``kernels.csv`` (and ``ascend_steps.csv`` for
    Ascend traces) into ``folder``; returns the paths written. Times in µs."""
    folder = Path(folder)
    tables: dict[str, list[dict]] = {"streams": [], "categories": [], "kernels": [], "ascend_steps": []}
    for r in result.ranks:
        for s in r.streams:
            row = s.to_dict()
            cats = row.pop("categories_us")
            tables["streams"].append({**row, **{f"{k}_us": v for k, v in cats.items()}})
        tables["categories"] += [{"rank": r.rank, **c.to_dict()} for c in r.categories]
        tables["kernels"] += [{"rank": r.rank, **k.to_dict()} for k in r.kernels]  # every kernel
        tables["ascend_steps"] += [
            {"rank": r.rank, **{k: v for k, v in s.to_dict().items() if k != "reference"}} for s in r.ascend_steps
        ]
    written = []
    for name, rows in tables.items():
        if not rows:
            continue
        columns = list(dict.fromkeys(k for row in rows for k in row))
        path = folder / f"{name}.csv"
        with _writer(path) as handle:
            out = csv.DictWriter(handle, fieldnames=columns)
            out.writeheader()
            out.writerows(rows)
        written.append(path)
    return written


def _metadata(pid: int, tid: int | None, name: str) -> dict:
    if tid is None:
        return {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}


def _device_events(table: ActivityTable, cats: Categorization, rows: np.ndarray, origin: int) -> Iterator[bytes]:
    labels = np.array(cats.labels, dtype=object)
    names = np.array(table.names, dtype=object)
    for lo in range(0, len(rows), CHUNK):
        part = rows[lo : lo + CHUNK]
        ts = (table.start_ns[part] - origin) / 1e3
        dur = (table.end_ns[part] - table.start_ns[part]) / 1e3
        events = [
            {"ph": "X", "name": n, "cat": c, "pid": int(p), "tid": int(t), "ts": float(a), "dur": float(d),
             "args": {"category": c}}
            for n, c, p, t, a, d in zip(names[table.name_id[part]], labels[cats.codes[part]], table.rank[part],
                                        table.stream[part], ts, dur)
        ]
        yield orjson.dumps(events)[1:-1]


def _annotations(result: TraceAnalysis, table: ActivityTable, cats: Categorization, origin: int) -> list[dict]:
    events: list[dict] = []
    for r in result.ranks:
        w = r.window
        events.append(_metadata(r.rank, None, f"rank {r.rank}"))
        events.append(_metadata(r.rank, WINDOW_TID, "parity: analysis window"))
        events.append({"ph": "X", "name": f"window ({w.source})", "cat": "parity", "pid": r.rank, "tid": WINDOW_TID,
                       "ts": (w.start_ns - origin) / 1e3, "dur": w.length_ns / 1e3,
                       "args": {"detail": w.detail, "start_us": w.start_ns / 1e3, "end_us": w.end_ns / 1e3}})
        mine = (table.rank == r.rank) & table.device_mask()
        for k, label in enumerate(cats.labels):
            if label == NOT_DEVICE:
                continue
            sel = mine & (cats.codes == k)
            if not sel.any():
                continue
            tid = CATEGORY_TID_BASE - k
            events.append(_metadata(r.rank, tid, f"parity: {label}"))
            s, e = merge_intervals(table.start_ns[sel], table.end_ns[sel])
            events += [{"ph": "X", "name": label, "cat": "parity", "pid": r.rank, "tid": tid,
                        "ts": (a - origin) / 1e3, "dur": (b - a) / 1e3} for a, b in zip(s.tolist(), e.tolist())]
    return events


def write_chrome_trace(result: TraceAnalysis, table: ActivityTable, cats: Categorization, path: str | Path) -> Path:
    """Write the annotated Chrome trace (JSON object form, opens in Perfetto and chrome://tracing)."""
    path = Path(path)
    rows = np.flatnonzero(table.device_mask())
    origin = int(table.start_ns[rows].min()) if len(rows) else 0
    header = {"displayTimeUnit": "ns", "otherData": {"source": result.source, "time_origin_ns": origin,
                                                     "note": "ts are us after time_origin_ns"}}
    with _writer(path) as handle:
        handle.write(orjson.dumps(header).decode()[:-1] + ',"traceEvents":[')
        first = True
        annotations = orjson.dumps(_annotations(result, table, cats, origin))[1:-1]
        for chunk in itertools.chain([annotations], _device_events(table, cats, rows, origin)):
            if not chunk:
                continue
            handle.write(("" if first else ",") + chunk.decode())
            first = False
        handle.write("]}\n")
    return path
