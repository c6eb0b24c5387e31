"""PyTorch profiler (Kineto) Chrome-trace JSON, and any other Chrome trace with device lanes.

Its rows are defined in ``docs/definitions.md`` (Trace formats). Bad input is a ParityError
naming the file and the event index; non-object entries and unpaired ``B``/``E`` events are
skipped and counted in ``meta["warnings"]``. The text streams through
:class:`.jsonstream.EventStream`, in one process or in shares (:mod:`.parallel`), each block
decoded and scanned into columns by :mod:`.kineto_events`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers import parallel
from parity.trace.readers.columns import Columns, Progress, int_or
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.kineto_events import CAT_CODE, COLLECTIVE, DEVICE_CODES, EXTRA, GPU_ANNOTATION, ON_STREAM, SKIP
from parity.trace.readers.kineto_events import PROFILER_RANGE, UNKNOWN, ScanState, decode_events, scan_block
from parity.trace.readers.times import times_to_ns
from parity.trace.steps import step_numbers_by_name
from parity.trace.table import NO_ID, ActivityTable, Kind

_KINETO_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds")
FLOAT_EXACT_US = 2**42  # below this a float64 of microseconds still resolves 1 ns
_RANK_IN_NAME = re.compile(r"rank[-_ ]?(\d+)", re.IGNORECASE)
_DEVICE = re.compile(r"\b(gpu|npu|mtia|xpu|tpu|hpu|ipu|device|accelerator|cuda|rocm|hip)\b", re.IGNORECASE)
_HOST = re.compile(r"\b(cpu|host|python)\b", re.IGNORECASE)
_STREAM = re.compile(r"\bstream\s*#?\s*(\d+)", re.IGNORECASE)
_LAST_NUMBER = re.compile(r"(\d+)\s*$")


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
    cols, state = Columns(EXTRA, COLLECTIVE), ScanState(path=path)
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
    if state.profiler_ranges:
        warnings.append(f"{state.profiler_ranges:,} kernels appear only as CUPTI range-profiler ranges "
                        f"({PROFILER_RANGE}): replayed one by one to read counters, they are not timed "
                        "as they ran and are not device activity; profile without the range profiler "
                        "for kernel times")
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
    kind, device, stream = _resolve_lanes(table, state)  # kind: a copy, marked here in place
    # host rows named ProfilerStep#N are steps (not the copies AMD traces draw on GPU lanes as
    # gpu_user_annotation, which stay Kind.OTHER on their device)
    kind[~ON_STREAM[kind] & (step_numbers_by_name(table.names)[table.name_id] >= 0)] = Kind.STEP
    kind[kind == GPU_ANNOTATION] = Kind.OTHER
    return replace(table, device=device, stream=stream, kind=kind.astype(np.int8))


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
