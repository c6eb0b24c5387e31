"""The CSVs an Ascend text export writes beside its timeline: ``step_trace_time.csv`` (the
profiler's own step figures, compared with parity's) and ``kernel_details.csv`` (each kernel's
core and step, joined to the timeline's tasks by name and start), with what a cut file loses.
"""

from __future__ import annotations

import csv
from bisect import bisect_left
from dataclasses import replace
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.columns import STEP_MAX, step_number
from parity.trace.readers.times import parse_us_text
from parity.trace.table import UNKNOWN_CORE, ActivityTable, Kind, KindCode

STEP_FIGURES = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free")
UNIT_NAMING_TYPES = {"AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "HCCL", "DSA_SQE"}  # not AI_CORE
JOIN_TOLERANCE_NS = 1000  # kernel_details.csv vs trace_view.json start rounding


def csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    """Header and rows of a CSV (``utf-8-sig``); a ParityError when it cannot be read."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            return [str(f).strip() for f in reader.fieldnames or []], rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ParityError(f"{path}: unreadable CSV ({one_line(exc)}); export the profile again") from None


def read_step_trace(path: Path, warnings: list[str] | None = None) -> list[dict]:
    """Rows of ``step_trace_time.csv`` (:func:`step_rows`); [] without the file."""
    if not path.is_file():
        return []
    header, records = csv_rows(path)
    return step_rows(path.name, header, records, warnings if warnings is not None else [])


def step_rows(name: str, header: list[str], records: list[dict], warnings: list[str]) -> list[dict]:
    """A step table's rows as dicts (µs as floats, ``Step`` an int); missing step-figure columns and
    skipped rows (cut short, or figures that are not numbers) are counted in ``warnings``."""
    missing = [c for c in STEP_FIGURES if c not in header]
    if missing:
        warnings.append(f"{name} has no {', '.join(missing)} column; those profiler figures are not compared")
    rows = [row for row in map(_step_row, records) if row is not None]
    if len(rows) < len(records):
        warnings.append(f"{len(records) - len(rows)} of {len(records)} rows of {name} are cut short or "
                        "not numbers; skipped")  # fmt: skip
    return rows


def _step_row(record: dict) -> dict | None:
    if None in record.values():  # cut short: fewer fields than the header (DictReader fills None)
        return None
    row: dict = {}
    for key, value in record.items():
        if key is None:
            return None  # more fields than the header
        name, value = key.strip(), value.strip() if isinstance(value, str) else value
        try:
            row[name] = step_number(value) if name == "Step" else float(value)
        except (TypeError, ValueError):
            if name == "Step" or name in STEP_FIGURES:
                return None
            row[name] = value
    return row


def join_kernel_details(table: ActivityTable, path: Path | None, warnings: list[str]) -> ActivityTable:
    """Set ``accelerator_core`` and steps from ``kernel_details.csv`` (module docstring);
    without the file (``path`` None or absent) cores come from the Task Types alone."""
    types = np.array(table.extra["task_type"], dtype=object)
    cores = np.where(np.isin(types, list(UNIT_NAMING_TYPES)), types, None)
    cores[types == "AI_CORE"] = UNKNOWN_CORE  # Cube or Vector: only the CSV can tell
    step = table.step.copy()
    if path is not None and path.is_file():
        _, records = csv_rows(path)
        if records and None not in records[-1].values() and ends_mid_row(path):  # looks whole, holds a cut value
            records = records[:-1]
            warnings.append(f"{path.name} ends mid-row (no final line break): the file is cut short; its last "
                            "row is skipped, so that task's core and step are unknown")
        lookup = _TaskLookup(table)
        unmatched = cut = no_step = 0
        for record in records:
            if None in record.values():  # cut short
                cut += 1
                continue
            try:
                row = lookup.find(record["Name"], parse_us_text(record["Start Time(us)"].strip(" \t\"")))
            except (KeyError, ValueError, AttributeError):
                row = None
            if row is None:
                unmatched += 1
                continue
            core = (record.get("Accelerator Core") or "").strip()
            if core and core != UNKNOWN_CORE:
                cores[row] = core
            elif types[row] not in UNIT_NAMING_TYPES:
                cores[row] = UNKNOWN_CORE  # an operator whose unit the profiler did not record
            step_id = (record.get("Step Id") or "").strip()
            if step_id.isascii() and step_id.isdigit() and int(step_id) <= STEP_MAX:
                step[row] = int(step_id)
            elif step_id not in ("", "N/A"):
                no_step += 1
        if cut:
            warnings.append(f"{cut} of {len(records)} rows of {path.name} are cut short (fewer fields than "
                            "its header); skipped, so their cores and steps are unknown")
        if unmatched:
            warnings.append(f"{unmatched} rows of {path.name} match no task in the timeline")
        if no_step:
            warnings.append(f"{no_step} rows of {path.name} have a Step Id that is no step number (0 to {STEP_MAX}); "
                            "their steps come from the timeline's markers")
        after = tasks_after_the_table(table, types, lookup.used)
        if after:
            warnings.append(f"{path.name} stops before the timeline does: {after} kernel tasks after its last row "
                            "have no row; the file looks cut short, so their cores and steps are unknown")
    return replace(table, step=step, extra=dict(table.extra, accelerator_core=cores))


CSV_TASK_TYPES = ("AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU")  # tasks the kernel table lists


def ends_mid_row(path: Path) -> bool:
    """Whether the file's last byte is not a line break: a CSV the profiler wrote ends each row
    with one, so a file that does not was cut while being written or copied."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            if handle.tell() == 0:
                return False
            handle.seek(-1, 2)
            return handle.read(1) not in (b"\n", b"\r")
    except OSError:
        return False


def tasks_after_the_table(table: ActivityTable, types: np.ndarray, matched: set[int]) -> int:
    """Kernel tasks of the timeline (of the types the kernel table lists) that start after the
    last task the table matched and that no row matched: rows a cut table lost."""
    if not matched:
        return 0
    last = int(table.start_ns[list(matched)].max())
    listed = np.isin(types, CSV_TASK_TYPES) & (table.kind == KindCode.KERNEL) & (table.start_ns > last)
    return int(listed.sum())


class _TaskLookup:
    """Device rows by name and start, a CSV row matched to the nearest unused one within
    :data:`JOIN_TOLERANCE_NS` (the files round one start differently: ``...175.672``, ``...175.673``)."""

    def __init__(self, table: ActivityTable) -> None:
        rows = np.flatnonzero(np.isin(table.kind, (Kind.KERNEL, Kind.MEMCPY, Kind.SYNC)))
        ordered = rows[np.argsort(table.start_ns[rows], kind="stable")]
        groups: dict[str, tuple[list[int], list[int]]] = {}  # name -> (starts, rows), by start
        names, name_ids = table.names, table.name_id[ordered].tolist()
        for row, name_id, start in zip(ordered.tolist(), name_ids, table.start_ns[ordered].tolist()):
            starts, members = groups.setdefault(names[name_id], ([], []))
            starts.append(start)
            members.append(row)
        self.by_name = groups
        self.used: set[int] = set()

    def find(self, name: str, start_ns: int) -> int | None:
        if name not in self.by_name:
            return None
        starts, rows = self.by_name[name]
        pos = bisect_left(starts, start_ns)
        near = [(abs(starts[j] - start_ns), rows[j]) for j in (pos - 1, pos, pos + 1)
                if 0 <= j < len(starts) and rows[j] not in self.used]  # fmt: skip
        best = min([c for c in near if c[0] <= JOIN_TOLERANCE_NS], key=lambda c: c[0], default=None)
        if best is None:
            return None
        self.used.add(best[1])
        return best[1]


def step_figures_text(path: Path, limit: int = 3) -> str:
    """The profiler's own step figures from ``step_trace_time.csv``, one clause per step (at
    most ``limit``), labelled as the profiler's; "" without the file."""
    rows = read_step_trace(path)
    parts = [f"step {row.get('Step')}: " + ", ".join(f"{k} {row[k]:,.3f}" for k in STEP_FIGURES
                                                       if isinstance(row.get(k), float)) for row in rows[:limit]]
    more = f"; and {len(rows) - limit} more steps" if len(rows) > limit else ""
    return f"the profiler's own {path.name} figures (us): " + "; ".join(parts) + more if parts else ""
