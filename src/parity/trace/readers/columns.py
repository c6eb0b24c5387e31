"""What every reader shares: numpy column blocks with a name dictionary."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from itertools import repeat

import numpy as np

from parity.model.errors import ParityError
from parity.trace.table import NO_ID, ActivityTable

CORE_DTYPES = dict(
    device=np.int32, stream=np.int64, kind=np.int8, name_id=np.int32,
    start_ns=np.int64, end_ns=np.int64, correlation=np.int64, step=np.int32,
)  # fmt: skip
RANK_MAX = int(np.iinfo(np.int32).max)  # the rank column is int32
STEP_MAX = int(np.iinfo(CORE_DTYPES["step"]).max)
MAX_SPAN_NS = 2**62  # the widest span of row times a table holds: differences of two fit int64
Progress = Callable[[int, int, str], None]  # progress(done, total, label), bytes of input
_CORE_FILL = dict(device=(NO_ID, np.int32), correlation=(NO_ID, np.int64),
                  step=(-1, np.int32))  # fmt: skip


class Columns:
    """Numpy column blocks appended by a reader, and the name dictionary ``names`` (string ->
    id; :meth:`name_ids` adds new ones). ``extra`` maps the reader's extra columns to their dtypes; a
    block lacking one of them, or ``device``, ``correlation`` or ``step``, gets it filled (None
    in an object column, else ``NO_ID``; step -1)."""

    def __init__(self, extra: dict[str, object] | None = None, sparse: dict[str, object] | None = None) -> None:
        self.extra = extra or {}
        self.sparse = sparse or {}  # columns few blocks carry: (first row, values) parts, no fill per block
        self.sparse_parts: dict[str, list[tuple[int, np.ndarray]]] = defaultdict(list)
        self.fill = {**_CORE_FILL, **{k: (None if d is object else NO_ID, d) for k, d in self.extra.items()}}
        self.names: dict[str, int] = {}
        self.blocks: dict[str, list[np.ndarray]] = defaultdict(list)
        self.rows = 0

    def name_ids(self, names: list) -> np.ndarray:
        """Dictionary ids (int32) of ``names`` (``None`` as ""), new names added in order of
        appearance: every name is looked up (-1 where new) in one C-level pass, and only the rows
        with new names (a few dozen in thousands, but for a trace's first block) are looked at again."""
        ids = np.fromiter(map(self.names.get, names, repeat(-1)), dtype=np.int32, count=len(names))
        new = np.flatnonzero(ids < 0)
        if len(new):
            fresh = ["" if name is None else name for name in map(names.__getitem__, new.tolist())]
            for name in dict.fromkeys(fresh):
                self.names.setdefault(name, len(self.names))
            ids[new] = np.fromiter(map(self.names.__getitem__, fresh), dtype=np.int32, count=len(fresh))
        return ids

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

    def add_sparse(self, first_row: int, **columns: np.ndarray) -> None:
        """Values of sparse columns for the rows ``first_row`` on (rows already added): a column
        no block carries is left out of the table, one some blocks carry is filled elsewhere
        (None in an object column, else ``NO_ID``). For what a few rows of a large trace hold
        (collective arguments): no column of fill values per block."""
        for key, values in columns.items():
            self.sparse_parts[key].append((first_row, values))

    def append(self, other: Columns) -> None:
        """Append the blocks of ``other`` (the rows that follow, read elsewhere), its name ids
        re-encoded into this dictionary."""
        mapping = self.name_ids(list(other.names))
        for key, parts in other.blocks.items():
            self.blocks[key].extend([mapping[p] for p in parts] if key == "name_id" else parts)
        for key, parts in other.sparse_parts.items():
            self.sparse_parts[key].extend((self.rows + first, values) for first, values in parts)
        self.rows += other.rows

    def column(self, key: str, dtype) -> np.ndarray:
        """The concatenated column (``NO_ID`` for one no block added)."""
        parts = self.blocks.get(key)
        if not parts:
            return np.full(self.rows, NO_ID, dtype=dtype)
        whole = parts[0] if len(parts) == 1 else np.concatenate(parts)  # one block: no copy
        return whole.astype(dtype, copy=False)

    def sparse_column(self, key: str, dtype) -> np.ndarray:
        """A sparse column over every row: its parts placed, the rest filled."""
        whole = np.full(self.rows, None if dtype is object else NO_ID, dtype=dtype)
        for first, values in self.sparse_parts[key]:
            whole[first : first + len(values)] = values
        return whole

    def table(self, *, meta: dict) -> ActivityTable:
        """The table, every row of the rank ``meta["ranks"][0]``, with the extra columns some
        block added; steps are placed when it is loaded (:func:`parity.trace.steps.place_steps`)."""
        core = {c: self.column(c, d) for c, d in CORE_DTYPES.items()}
        source, rank = meta.get("source", "the trace"), meta["ranks"][0]
        refuse_span(core["start_ns"], core["end_ns"], source)
        if not 0 <= rank <= RANK_MAX:
            raise ParityError(f"{source}: rank {rank} (from {meta.get('rank_source', 'the trace')}) is no rank number "
                              f"(0 to {RANK_MAX}); the trace is corrupt")
        core["rank"] = np.full(self.rows, rank, dtype=np.int32)
        extra = {k: self.column(k, d) for k, d in self.extra.items() if k in self.blocks}
        extra.update({k: self.sparse_column(k, d) for k, d in self.sparse.items() if self.sparse_parts.get(k)})
        return ActivityTable(**core, names=tuple(self.names), extra=extra, meta=meta)


def refuse_span(start_ns: np.ndarray, end_ns: np.ndarray, source: str) -> None:
    """A ParityError when the rows' times span more than :data:`MAX_SPAN_NS` (about 146 years):
    a time out of place (an id read as a time, a value near the int64 limit) that would
    overflow every difference the analysis takes."""
    if len(start_ns) == 0:
        return
    first, last = int(start_ns.min()), int(max(end_ns.max(), start_ns.max()))
    if last - first > MAX_SPAN_NS:
        raise ParityError(f"{source}: its times run from {first} to {last} ns, a span of "
                          f"{(last - first) / 3.156e16:.0f} years; a time is out of place, the trace is corrupt")


def step_number(value) -> int:
    """A ``Step`` cell as the step number it writes (``"3"``, ``"3.0"``); ``ValueError`` for
    anything else, a fraction or a number beyond :data:`STEP_MAX` included."""
    number = float(value)
    if not (0 <= number <= STEP_MAX) or number != int(number):
        raise ValueError(f"not a step number: {value!r}")
    return int(number)


def int_or(value, default: int = NO_ID) -> int:
    """``value`` when it is an int that fits int64, else ``default``."""
    return value if type(value) is int and -(2**63) <= value < 2**63 else default
