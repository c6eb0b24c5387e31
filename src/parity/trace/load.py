"""Load profiler traces of any supported format into one :class:`ActivityTable`.

``load_trace`` takes a file, a folder or a list of them. Each file (or Ascend ``*_ascend_pt``
folder) is one rank; its format is detected from its content (:mod:`.readers.detect`). A folder
that is not itself an Ascend output is a folder of ranks: its trace files (``*.json``,
``*.json.gz``, ``*.sqlite``, ``*.db``) and Ascend output folders are read. Several ranks are
stacked into one table with the ``rank`` column set from each file (Kineto
``distributedInfo.rank``, Ascend ``rank_id``, else a ``rank`` number in the file name).

Choices on bad input (each documented again in the reader that makes it):
    - unreadable, truncated or corrupt file, empty trace: :class:`ParityError` naming the file;
    - two files claiming the same rank: ParityError naming both (a mixed folder, e.g. two runs);
    - files of different profilers (Kineto with Nsight, ...): ParityError naming them;
    - device activities overlapping on one stream: kept, and a counted warning in
      ``meta["warnings"]`` (busy time is a union, so overlap never counts twice).

Progress: ``progress(done, total, label)`` is called as reading advances, ``done`` and
``total`` in bytes of input over all files.

    table = load_trace("rank0.json.gz")                      # one Kineto rank
    table = load_trace("run/")                                # every rank in a folder
    table = load_trace(["rank0_ascend_pt", "rank1_ascend_pt"])  # Ascend, two ranks
    table.meta["format"], table.meta["ranks"], table.meta["warnings"]
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.intervals import lane_overlaps
from parity.trace.readers.ascend_layout import OUTPUT, output_dir
from parity.trace.readers.columns import Progress
from parity.trace.readers.detect import ascend_db_in, detect
from parity.trace.steps import place_steps
from parity.trace.table import ActivityTable

log = logging.getLogger(__name__)
_TRACE_FILE = re.compile(r"\.(json|json\.gz|gz|sqlite|sqlite3|db)$", re.IGNORECASE)
_NOT_RANKS = {"analysis.db"}


def load_trace(paths: str | Path | list, *, progress: Progress | None = None,
               workers: int | None = None) -> ActivityTable:
    """Read every trace in ``paths`` (see the module docstring) into one table.

    ``workers``: processes that parse one Kineto JSON file (1: this process only; None: by
    the file's size, see :func:`parity.trace.readers.parallel.default_workers`); the table is
    the same for every value, and no process outlives the call."""
    items = [Path(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    if not items:
        raise ParityError("no trace paths given; pass a trace file or folder")
    units = [unit for item in items for unit in _expand(item)]
    sizes = [_size(u) for u in units]
    total, done = sum(sizes), 0
    tables = []
    for unit, size in zip(units, sizes):
        offset = done

        def report(now: int, _of: int, label: str, offset=offset, size=size) -> None:
            if progress is not None:
                progress(offset + min(now, size), total, label)

        table = read_one(unit, progress=report, workers=workers)
        warning = stream_overlap_warning(table)
        if warning:
            table.meta["warnings"].append(warning)
        for message in table.meta["warnings"]:
            log.info("%s: %s", unit, message)
        tables.append(table)
        done += size
        if progress is not None:
            progress(done, total, str(unit))
    _check_ranks(tables)
    if len(tables) == 1:
        return tables[0]
    return _stack(tables)


def read_one(path: Path, *, progress: Progress | None = None, workers: int | None = None) -> ActivityTable:
    """One rank's trace, in whichever format :func:`detect` finds, every row given its step
    (:func:`parity.trace.steps.place_steps`). Only the reader of that format is imported: a
    Kineto file loads neither CSV nor SQLite."""
    fmt = detect(path)
    if fmt == "ascend-text":
        from parity.trace.readers.ascend_text import read_ascend_text

        table = read_ascend_text(path, progress=progress)
    elif fmt == "ascend-db":
        from parity.trace.readers.ascend_db import read_ascend_db

        table = read_ascend_db(ascend_db_in(output_dir(path)) if path.is_dir() else path, progress=progress)
    elif fmt == "nsys":
        from parity.trace.readers.nsys import read_nsys

        table = read_nsys(path, progress=progress)
    else:
        from parity.trace.readers.kineto import read_kineto

        table = read_kineto(path, progress=progress, workers=workers)
    return replace(table, step=place_steps(table))


def stream_overlap_warning(table: ActivityTable) -> str | None:
    """A warning when device rows on one (rank, device, stream) overlap, else None.

    A stream runs its work in order, so overlap there means clock skew or a profiler merging
    lanes. Rows are kept as they are (busy time is a union, so overlap never double-counts);
    the warning says how many and by how much at most. Ascend HCCL rows are left out: an
    operation (``task_type == "HCCL"``) spans its own tasks on its stream by construction, and
    its tasks (Notify Wait, SDMA, Write Value...) run on several engines of one stream at once.
    """
    mask = table.device_mask()
    task_type = table.extra.get("task_type")
    if task_type is not None:  # an Ascend table: its reader is loaded already
        from parity.trace.readers.ascend_text import ASCEND_CONCURRENT_TASKS

        mask &= ~np.isin(task_type, list(ASCEND_CONCURRENT_TASKS))
    if mask.sum() < 2:
        return None
    columns = table.rank, table.device, table.stream, table.start_ns, table.end_ns
    count, largest = lane_overlaps(*(column[mask] for column in columns))
    if not count:
        return None
    return (f"{count} device activities start before the previous one on the same stream ends "
            f"(largest overlap {largest} ns); kept as recorded")


def _expand(path: Path) -> list[Path]:
    """A file, an Ascend folder, or the traces inside a folder of ranks."""
    if not path.exists():
        raise ParityError(f"{path}: no such file or folder")
    if not path.is_dir() or _is_ascend_folder(path):
        return [path]
    units = [
        child
        for child in sorted(path.iterdir())
        if (child.is_dir() and _is_ascend_folder(child))
        or (child.is_file() and _TRACE_FILE.search(child.name) and child.name not in _NOT_RANKS)
    ]
    if not units:
        raise ParityError(
            f"{path}: folder holds no trace files (*.json, *.json.gz, *.sqlite, *.db) or "
            f"Ascend output folders; pass the trace files themselves"
        )
    return units


def _is_ascend_folder(path: Path) -> bool:
    return (path / OUTPUT).is_dir() or path.name == OUTPUT


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) or 1


_FAMILY = {"kineto": "PyTorch (Kineto)", "chrome": "PyTorch (Kineto)", "ascend-text": "Ascend",
           "ascend-db": "Ascend", "nsys": "Nsight Systems"}


def _check_ranks(tables: list[ActivityTable]) -> None:
    """Files of different profilers cannot be ranks of one job, and two inputs claiming one
    rank mean mixed runs or a copied file: refuse to merge them."""
    if len(tables) < 2:
        return
    families = {}
    for table in tables:
        fmt = str(table.meta.get("format"))
        families.setdefault(_FAMILY.get(fmt, fmt), table.meta.get("source"))
    if len(families) > 1:
        named = ", ".join(f"{family} ({source})" for family, source in families.items())
        raise ParityError(f"traces of different profilers cannot be ranks of one job: {named}; "
                          "pass the files of one run, one per rank")
    seen: dict[int, ActivityTable] = {}
    for table in tables:
        for rank in table.meta.get("ranks", [0]):
            if rank in seen:
                first = seen[rank].meta
                raise ParityError(
                    f"{first['source']} and {table.meta['source']} both claim rank {rank} "
                    f"(from {first.get('rank_source')} and {table.meta.get('rank_source')}); "
                    "pass the files of one run, one per rank"
                )
            seen[rank] = table


def _stack(tables: list[ActivityTable]) -> ActivityTable:
    stacked = ActivityTable.concat(tables)
    formats = sorted({t.meta.get("format") for t in tables})
    meta = dict(stacked.meta)
    meta.update(
        source=[t.meta.get("source") for t in tables],
        format=formats[0] if len(formats) == 1 else "mixed",
        ranks=sorted(r for t in tables for r in t.meta.get("ranks", [])),
        warnings=[f"{t.meta.get('source')}: {w}" for t in tables for w in t.meta["warnings"]],
        step_trace=[dict(row, rank=t.meta["ranks"][0]) for t in tables
                    for row in t.meta.get("step_trace") or []],
    )  # fmt: skip
    return ActivityTable(
        **{c: getattr(stacked, c) for c in ActivityTable.COLUMNS},
        names=stacked.names, extra=stacked.extra, meta=meta,
    )
