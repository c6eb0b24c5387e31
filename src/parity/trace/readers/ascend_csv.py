"""The CSV files beside an Ascend timeline: ``kernel_details.csv`` and ``step_trace_time.csv``.

``kernel_details.csv`` is joined to the timeline's tasks by name and start time: its ``Accelerator
Core`` (AI_CORE, AI_VECTOR_CORE, MIX_AIV, ...) wins over the trace's ``Task Type`` in the
``accelerator_core`` column, and its ``Step Id`` sets the row's step. A task it does not
describe takes its core from a Task Type that names a unit (MIX_AIV, AI_CPU, ...); where neither
tells (``N/A`` at profiler level 0, no such column in older releases, ``AI_CORE``, which Cube and
Vector kernels share), the core is :data:`~parity.trace.table.UNKNOWN_CORE` and names decide.
``step_trace_time.csv`` rows are the profiler's own per-step figures (µs), as dicts.

Partial input is counted in a warning, never silent: rows cut short, rows that match no task,
step rows whose figures are not numbers, missing step-figure columns. An unreadable CSV is a
:class:`ParityError`.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError, one_line
from parity.trace.readers.times import parse_us_text
from parity.trace.table import UNKNOWN_CORE, ActivityTable, Kind

KERNEL_DETAILS = "kernel_details.csv"
STEP_TRACE = "step_trace_time.csv"
JOIN_TOLERANCE_NS = 1000  # kernel_details.csv vs trace_view.json start rounding
CORE_TYPES = {"AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "HCCL", "DSA_SQE"}
UNIT_NAMING_TYPES = CORE_TYPES - {"AI_CORE"}  # task types that tell which unit ran the task
STEP_FIGURES = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free")


def csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    """Header and rows of a CSV (``utf-8-sig``); a ParityError when it cannot be read."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            return [str(f).strip() for f in reader.fieldnames or []], rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ParityError(f"{path}: unreadable CSV ({one_line(exc)}); export the profile again") from None


def _cut_short(record: dict) -> bool:
    """A row with fewer fields than the header (DictReader fills the rest with None)."""
    return any(value is None for value in record.values())


def read_step_trace(path: Path, warnings: list[str] | None = None) -> list[dict]:
    """Rows of ``step_trace_time.csv`` as dicts (numbers as floats, µs; ``Step`` as int); missing
    step-figure columns, and rows cut short or whose figures are not numbers (skipped), are
    counted in ``warnings``."""
    if not path.is_file():
        return []
    header, records = csv_rows(path)
    warnings = warnings if warnings is not None else []
    missing = [c for c in STEP_FIGURES if c not in header]
    if missing:
        warnings.append(f"{path.name} has no {', '.join(missing)} column; "
                        "those profiler figures are not compared")
    rows = [row for row in map(_step_row, records) if row is not None]
    if len(rows) < len(records):
        warnings.append(f"{len(records) - len(rows)} of {len(records)} rows of {path.name} are cut short or "
                        "not numbers; skipped")  # fmt: skip
    return rows


def _step_row(record: dict) -> dict | None:
    if _cut_short(record):
        return None
    row: dict = {}
    for key, value in record.items():
        if key is None:
            return None  # more fields than the header
        name, text = key.strip(), (value or "").strip()
        try:
            row[name] = int(float(text)) if name == "Step" else float(text)
        except ValueError:
            if name == "Step" or name in STEP_FIGURES:
                return None
            row[name] = text
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
        lookup = _TaskLookup(table)
        unmatched = cut = 0
        for record in records:
            if _cut_short(record):
                cut += 1
                continue
            try:
                start = parse_us_text(record["Start Time(us)"].strip(" \t\""))
                row = lookup.find(record["Name"], start)
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
            if step_id.isdigit():
                step[row] = int(step_id)
        if cut:
            warnings.append(f"{cut} of {len(records)} rows of {path.name} are cut short (fewer fields than "
                            "its header); skipped, so their cores and steps are unknown")
        if unmatched:
            warnings.append(f"{unmatched} rows of {path.name} match no task in the timeline")
    extra = dict(table.extra, accelerator_core=cores)
    return ActivityTable(**{c: getattr(table, c) for c in ActivityTable.COLUMNS if c != "step"},
                         step=step, names=table.names, extra=extra, meta=table.meta)  # fmt: skip


class _TaskLookup:
    """Device rows by name and start time, matched to within :data:`JOIN_TOLERANCE_NS`.

    kernel_details.csv and trace_view.json round the same start differently in the last
    digit (``...175.672`` against ``...175.673``), so the join takes the nearest unused row of
    that name within the tolerance.
    """

    def __init__(self, table: ActivityTable) -> None:
        rows = np.flatnonzero(np.isin(table.kind, (Kind.KERNEL, Kind.MEMCPY, Kind.SYNC)))
        groups: dict[str, list[int]] = {}
        for row in rows[np.argsort(table.start_ns[rows], kind="stable")].tolist():
            groups.setdefault(table.names[table.name_id[row]], []).append(row)
        self.by_name = {name: (table.start_ns[members], np.array(members)) for name, members in groups.items()}
        self.used: set[int] = set()

    def find(self, name: str, start_ns: int) -> int | None:
        if name not in self.by_name:
            return None
        starts, rows = self.by_name[name]
        pos = int(np.searchsorted(starts, start_ns))
        best = None
        for j in (pos - 1, pos, pos + 1):
            if 0 <= j < len(starts) and int(rows[j]) not in self.used:
                gap = abs(int(starts[j]) - start_ns)
                if gap <= JOIN_TOLERANCE_NS and (best is None or gap < best[0]):
                    best = (gap, int(rows[j]))
        if best is None:
            return None
        self.used.add(best[1])
        return best[1]


def step_figures_text(path: Path, limit: int = 3) -> str:
    """The profiler's own step figures from ``step_trace_time.csv``, one clause per step (at
    most ``limit``), labelled as the profiler's; "" without the file."""
    if not path.is_file():
        return ""
    rows = read_step_trace(path)
    parts = []
    for row in rows[:limit]:
        figures = ", ".join(f"{k} {row[k]:,.3f}" for k in STEP_FIGURES if isinstance(row.get(k), float))
        parts.append(f"step {row.get('Step')}: {figures}")
    more = f"; and {len(rows) - limit} more steps" if len(rows) > limit else ""
    return f"the profiler's own {path.name} figures (us): " + "; ".join(parts) + more if parts else ""
