"""What every reader shares: numpy column blocks with a name dictionary, and step numbers."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from parity.trace.table import NO_ID, ActivityTable, KindCode

CORE_DTYPES = dict(
    rank=np.int32, device=np.int32, stream=np.int64, kind=np.int8, name_id=np.int32,
    start_ns=np.int64, end_ns=np.int64, correlation=np.int64, step=np.int32,
)  # fmt: skip
_CORE_FILL = dict(rank=(0, np.int32), device=(NO_ID, np.int32), correlation=(NO_ID, np.int64),
                  step=(-1, np.int32))  # fmt: skip
PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)$")


class Columns:
    """Numpy column blocks appended by a reader, plus the name dictionary.

    ``names`` maps a string to its id (readers look names up with ``names.get`` and add new ones
    with :meth:`intern`). ``extra`` maps the reader's extra columns to their dtypes; a block that
    lacks one of them, or ``rank``, ``device``, ``correlation`` or ``step``, gets it filled
    (None in an object column, else ``NO_ID``; rank 0, step -1).
    """

    def __init__(self, extra: dict[str, object] | None = None) -> None:
        self.extra = extra or {}
        self.fill = {**_CORE_FILL, **{k: (None if d is object else NO_ID, d) for k, d in self.extra.items()}}
        self.names: dict[str, int] = {}
        self.blocks: dict[str, list[np.ndarray]] = defaultdict(list)
        self.rows = 0

    def intern(self, name: str) -> int:
        ident = self.names.get(name)
        if ident is None:
            ident = self.names[name] = len(self.names)
        return ident

    def add(self, **columns: np.ndarray) -> None:
        """Append one block; every column must have the same length (absent ones are filled)."""
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"ragged block: {lengths}")
        n = lengths.pop() if lengths else 0
        for key, (value, dtype) in self.fill.items():
            if key not in columns:
                columns[key] = np.full(n, value, dtype=dtype)
        for key, values in columns.items():
            self.blocks[key].append(values)
        self.rows += n

    def append(self, other: Columns) -> None:
        """Append the blocks of ``other`` (the rows that follow, read elsewhere), its name ids
        re-encoded into this dictionary."""
        mapping = np.array([self.intern(n) for n in other.names] or [0], dtype=np.int32)
        for key, parts in other.blocks.items():
            self.blocks[key].extend([mapping[p] for p in parts] if key == "name_id" else parts)
        self.rows += other.rows

    def column(self, key: str, dtype) -> np.ndarray:
        """The concatenated column (``NO_ID`` for one no block added)."""
        parts = self.blocks.get(key)
        if not parts:
            return np.full(self.rows, NO_ID, dtype=dtype)
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts)  # one block: no copy
        return whole.astype(dtype, copy=False)

    def table(self, *, meta: dict) -> ActivityTable:
        """The table, with the extra columns some block added."""
        core = {c: self.column(c, d) for c, d in CORE_DTYPES.items()}
        extra = {k: self.column(k, d) for k, d in self.extra.items() if k in self.blocks}
        return ActivityTable(**core, names=tuple(self.names), extra=extra, meta=meta)


def int_or(value, default: int = NO_ID) -> int:
    """``value`` when it is an int that fits int64, else ``default``."""
    return value if type(value) is int and -(2**63) <= value < 2**63 else default


def with_columns(table: ActivityTable, **columns: np.ndarray) -> ActivityTable:
    """``table`` with some core columns replaced."""
    core = {c: getattr(table, c) for c in ActivityTable.COLUMNS}
    core.update(columns)
    return ActivityTable(**core, names=table.names, extra=table.extra, meta=table.meta)


def finish_ascend_rank(table: ActivityTable, rank: int) -> ActivityTable:
    """The rank column and every row's step (:func:`place_steps`)."""
    return with_columns(table, rank=np.full(len(table), rank, np.int32), step=place_steps(table))


def step_numbers_by_name(names: tuple[str, ...]) -> np.ndarray:
    """Per name id: N of a ``ProfilerStep#N`` name (clipped to int32), else -1; a prefix test
    first, as traces hold thousands of names and a handful of steps."""
    numbers = np.full(max(len(names), 1), -1, dtype=np.int64)
    for i in [i for i, n in enumerate(names) if n.startswith("ProfilerStep#")]:
        match = PROFILER_STEP.match(names[i])
        if match:
            numbers[i] = min(int(match.group(1)), 2**31 - 1)
    return numbers


def place_steps(table: ActivityTable, kind: np.ndarray | None = None) -> np.ndarray:
    """The step of every row (``kind``: the table's unless given).

    A ``Kind.STEP`` row named ``ProfilerStep#N`` is step N; a step the reader already set
    (``kernel_details.csv``'s ``Step Id``) is kept. Every other row gets the step span it
    belongs to, -1 outside all: a device or sync row the step in which the host call that
    launched it started (matched by ``correlation`` to a ``Kind.RUNTIME`` row), since a kernel
    launched at the end of step 5 but running into step 6 is step 5's work; a row without a
    launching call the step its own start falls in.
    """
    kind = table.kind if kind is None else kind
    start, correlation = table.start_ns, table.correlation
    step = table.step.copy()
    is_step = kind == KindCode.STEP
    step[is_step] = step_numbers_by_name(table.names)[table.name_id[is_step]]
    placed = np.full(len(kind), -1, dtype=np.int32)
    if is_step.any():
        order = np.argsort(start[is_step], kind="stable")
        step_start, step_end = start[is_step][order], table.end_ns[is_step][order]
        when = start.copy()
        # device work (the three lowest kind codes) and syncs, launched by a runtime call
        launched = ((kind >= KindCode.KERNEL) & (kind <= KindCode.MEMSET)) | (kind == KindCode.SYNC)
        launched &= correlation != NO_ID
        runtime = (kind == KindCode.RUNTIME) & (correlation != NO_ID)
        if launched.any() and runtime.any():
            corr, first = np.unique(correlation[runtime], return_index=True)
            pos = np.minimum(np.searchsorted(corr, correlation[launched]), len(corr) - 1)
            found = corr[pos] == correlation[launched]
            when[np.flatnonzero(launched)[found]] = start[runtime][first][pos[found]]
        index = np.searchsorted(step_start, when, side="right") - 1
        inside = (index >= 0) & (when < step_end[np.maximum(index, 0)])
        placed[inside] = step[is_step][order][index[inside]]
        placed[is_step] = step[is_step]
    return np.where(step >= 0, step, placed).astype(np.int32)
