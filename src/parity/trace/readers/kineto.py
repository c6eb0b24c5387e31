"""PyTorch profiler (Kineto) Chrome-trace JSON, and any other Chrome trace with device lanes.

Rows: every complete event (``ph: X``) but the profiler's own ``Trace`` spans, and every
matched ``B``/``E`` pair (:mod:`.durations`). ``cat`` gives the :class:`Kind` (current and older
spellings: ``kernel``/``Kernel``, ``gpu_memcpy``/``Memcpy``, ``cuda_runtime``/``Runtime``,
``cpu_op``/``Operator``, MTIA's ``mtia_ccp_events``/``mtia_runtime``, ...); ``ProfilerStep#N``
host spans are ``Kind.STEP`` rows with ``step = N``, every other row gets the step its launch
fell in. Device rows take ``args.device`` (else ``pid``) and ``args.stream`` (else ``tid``). An
event of unknown ``cat`` is a kernel on a lane that looks like a device (:mod:`.lanes`).

Flow events (``ph: s/f``) are not rows: ``args.correlation`` carries the same link.
``cuda_sync`` events keep ``sync_type``, ``wait_on_stream`` and ``wait_on_event_corr`` (the
correlation of the ``cudaEventRecord`` waited on); ``pid``, ``tid`` and ``external_id`` are kept
for every row.

Time: ``ts``/``dur`` are microseconds whatever ``displayTimeUnit`` says (a viewer hint; Kineto
writes ``"ns"`` there for microsecond values with three decimals). ``start_ns`` is on the file's
clock (``ts * 1000``); ``baseTimeNanoseconds`` goes to ``meta["base_time_ns"]``.

Bad input: not JSON, truncated, gzip cut short, a complete event without a numeric ``ts`` or
``dur``, a negative ``dur``, an event of the wrong shape, or no complete event at all: a
:class:`ParityError` naming the file and the event index (part of a trace would be silently
wrong). Array entries that are not objects and unpaired ``B``/``E`` events are skipped and
counted in ``meta["warnings"]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers import parallel
from parity.trace.readers.columns import Columns, int_or, place_steps, step_numbers_by_name, with_columns
from parity.trace.readers.durations import add_duration_pairs
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.kineto_events import scan_stream
from parity.trace.readers.kineto_structs import DECODER, LOOSE_DECODER
from parity.trace.readers.kineto_rows import (
    EXTRA,
    GPU_ANNOTATION,
    UNKNOWN,
    on_stream,
)
from parity.trace.readers.lanes import ScanState
from parity.trace.table import ActivityTable, Kind

_KINETO_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "baseTimeNanoseconds")
FLOAT_EXACT_US = 2**42  # below this a float64 of microseconds still resolves 1 ns
_RANK_IN_NAME = re.compile(r"rank[-_ ]?(\d+)", re.IGNORECASE)
Progress = Callable[[int, int, str], None]


def read_kineto(path: Path, *, progress: Progress | None = None, workers: int | None = None) -> ActivityTable:
    """Read one Kineto/Chrome JSON trace file (plain or gzip) into an ActivityTable.

    ``workers`` is how many processes parse it: 1 reads in this process, more in this process
    and ``workers - 1`` children forked for this read, one share of the text each
    (:mod:`.parallel`); None picks by the file's size alone (:func:`.parallel.default_workers`).
    The table is the same for every value; whatever goes wrong in a share is read again here
    in one process, which names the bad event.
    """
    inflated = parallel.inflated_bytes_estimate(path)  # one look at the file decides the reader
    workers = parallel.default_workers(inflated) if workers is None else workers
    if workers < 1:
        raise ParityError(f"workers={workers} for {path}; give 1 or more processes")
    if workers >= 2 and inflated and parallel.can_fork():
        done = parallel.read_shares(path, size=inflated, workers=workers, parse=_parse, progress=progress)
        if done is not None:
            return _finish(path, *done)
    cols, state, header, _count = _parse(path, size_hint=inflated, progress=progress)
    return _finish(path, cols, state, header)


def _parse(path: Path, source=None, *, size_hint: int | None = None, progress: Progress | None = None):
    """``(cols, state, header, number of events)`` of the file, or of ``source`` (a share of its
    text, :class:`.parallel.Share`)."""
    stream = EventStream(path, decoder=DECODER, fallback=LOOSE_DECODER, source=source, size_hint=size_hint)
    cols, state = Columns(EXTRA), ScanState(path=path)
    count = scan_stream(stream, cols, state, progress)
    return cols, state, stream.header, count


def _finish(path: Path, cols: Columns, state: ScanState, header: dict) -> ActivityTable:
    pairs_warning = add_duration_pairs(cols, state)
    if cols.rows == 0:
        raise ParityError(
            f"{path}: empty trace (no complete 'X' or paired 'B'/'E' events); profile with "
            "activities enabled or pick another file"
        )
    warnings = []
    if state.non_objects:
        warnings.append(f"{state.non_objects} entries of the event array are not objects; skipped")
    if pairs_warning:
        warnings.append(pairs_warning)
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
    meta["exact_timestamps"] = needs_nanoseconds(table.start_ns)
    kind = state.lanes.resolve(table, UNKNOWN)
    kind = _mark_steps(table, kind, step_numbers_by_name(table.names))
    step = place_steps(table, kind)
    device, stream = state.lanes.device_and_stream(table, kind, UNKNOWN)
    return with_columns(table, rank=np.full(len(table), rank, dtype=np.int32), device=device, stream=stream,
                        kind=kind.astype(np.int8), step=step)  # fmt: skip


def needs_nanoseconds(start_ns: np.ndarray) -> bool:
    """Whether some start is a fraction of a microsecond past :data:`FLOAT_EXACT_US`, where a
    float64 of microseconds no longer holds the nanosecond (``start_ns >= 2**42 * 1000`` and
    ``start_ns % 1000 != 0``): Kineto's nanosecond-resolution traces, read exactly."""
    late = start_ns[start_ns >= FLOAT_EXACT_US * 1000]
    return bool((late % 1000 != 0).any())


def _rank(path: Path, header: dict) -> tuple[int, str]:
    info = header.get("distributedInfo")
    if isinstance(info, dict) and type(info.get("rank")) is int:
        return info["rank"], "distributedInfo"
    match = _RANK_IN_NAME.search(path.name)
    if match:
        return int(match.group(1)), "file name"
    return 0, "assumed"


def _mark_steps(table: ActivityTable, kind: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """Host rows named ``ProfilerStep#N`` become STEP rows (not the copies AMD traces draw on
    GPU lanes as ``gpu_user_annotation``, which stay ``Kind.OTHER`` on their device)."""
    host = ~on_stream(kind)
    kind = kind.copy()
    kind[host & (numbers[table.name_id] >= 0)] = Kind.STEP
    kind[kind == GPU_ANNOTATION] = Kind.OTHER  # ProfilerStep drawn on a GPU lane is no step
    return kind
