"""The one columnar table every trace reader produces and every analysis consumes.

All columns are numpy arrays of equal length, one row per activity. Times are integer
nanoseconds (``int64``) on the trace's own clock, so microsecond traces with fractional parts
(Kineto, Ascend string timestamps) keep their precision and interval algebra is exact.
Strings are dictionary-encoded: ``name_id`` indexes ``names``. The table is immutable by
convention: analyses never modify its arrays in place (they derive new ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Kind(IntEnum):
    """What a row is. Device rows are what busy/overlap/idle are computed from."""

    KERNEL = 0  # a compute kernel or Ascend task on a device stream
    MEMCPY = 1  # device memory copy (any direction)
    MEMSET = 2  # device memory set
    RUNTIME = 3  # host-side runtime/driver call (cudaLaunchKernel, aclnn launch, ...)
    CPU_OP = 4  # host-side framework op (aten::mm, ...)
    SYNC = 5  # synchronisation (cuda_sync: stream wait event, device/stream/event synchronize)
    STEP = 6  # a step marker span (ProfilerStep#N, Ascend step)
    OTHER = 7  # anything else kept for completeness (python functions, user annotations)

    @property
    def on_device(self) -> bool:
        return self in (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)


class KindCode:
    """:class:`Kind` codes as plain ints, for comparisons with a kind column: numpy reads a
    plain int at the column's own dtype, but an enum member as an int64, and widens the whole
    column first (several times slower on a large table)."""

    KERNEL, MEMCPY, MEMSET, RUNTIME, CPU_OP, SYNC, STEP, OTHER = (int(k) for k in Kind)


assert KindCode.KERNEL == 0 and KindCode.MEMCPY == 1 and KindCode.MEMSET == 2, "device_mask needs device kinds first"
assert KindCode.OTHER == Kind.OTHER and len(Kind) == 8, "KindCode lists every Kind in order"
NO_ID = -1  # the value of an integer column where a row has no such id
UNKNOWN_CORE = "N/A"  # accelerator_core where the profiler did not record the unit (Ascend level 0)


@dataclass(frozen=True, kw_only=True)
class ActivityTable:
    """Activities of one or more ranks.

    Columns (length ``n``):
        rank         int32   rank of the process (0 when the trace names none)
        device       int32   device index; -1 for host rows
        stream       int64   stream id for device rows; thread id for host rows
        kind         int8    a :class:`Kind`
        name_id      int32   index into ``names``
        start_ns     int64   start, ns
        end_ns       int64   end, ns (>= start_ns)
        correlation  int64   runtime-call <-> device-op link (Kineto ``correlation``,
                             Ascend connection id, nsys ``correlationId``); ``NO_ID`` if none
        step         int32   step number the row falls in when markers exist, else -1

    ``extra`` holds optional reader-specific columns of length ``n`` with documented names:
        ``accelerator_core`` (object: Ascend AI_CORE / AI_VECTOR_CORE / MIX_AIC ...),
        ``sync_type`` (object: Kineto cuda_sync ``sync_type``, e.g. "Stream Wait Event"),
        ``wait_on_stream`` (int64), ``wait_on_event_corr`` (int64: correlation of the
        cudaEventRecord a stream-wait waits on), ``flow_id`` (int64), ``pid`` (int64),
        ``tid`` (int64), ``external_id`` (int64).
    Collective arguments, present only when the trace records them (None, or ``NO_ID`` in an
    int64 column, on the other rows): Kineto's NCCL arguments on collective kernels and
    ``record_param_comms`` ops, ``collective_name`` (object: ``Collective name``, e.g.
    "allreduce"), ``in_msg_nelems`` and ``out_msg_nelems`` (int64: ``In``/``Out msg nelems``,
    elements), ``dtype`` (object: ``dtype``, e.g. "Float"), ``process_group_name`` (object:
    ``Process Group Name``), ``process_group_ranks`` (object: ``Process Group Ranks`` as text,
    "[0, 1]"), ``group_size`` (int64: ``Group size``), ``in_split_size`` and ``out_split_size``
    (object: ``In``/``Out split size`` as text, "[]" for even ops); Ascend HCCL operations
    (``task_type`` "HCCL"): ``dtype`` (object: ``data_type``, e.g. "FP32"), ``hccl_count``
    (int64: the operation's ``count``, elements per rank as HCCL's API takes it: the buffer of
    all-reduce, broadcast and reduce, the send count of all-gather, the receive count of
    reduce-scatter) and ``process_group_name`` (object: the group communication.json or the db's
    ``COMMUNICATION_OP.groupName`` names).
    ``meta`` records where the table came from: ``source`` (path), ``format``
    (``kineto``/``ascend-text``/``ascend-db``/``nsys``/``chrome``), ``clock_unit``, ``ranks``,
    ``warnings`` (counted, skipped-event messages) and anything else a reader knows
    (``step_trace`` rows of an Ascend ``step_trace_time.csv``, device properties...).
    """

    rank: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    name_id: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    correlation: np.ndarray
    step: np.ndarray
    names: tuple[str, ...]
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    COLUMNS = (
        "rank", "device", "stream", "kind", "name_id", "start_ns", "end_ns", "correlation", "step",
    )  # fmt: skip

    def __post_init__(self) -> None:
        n = len(self.start_ns)
        for column in self.COLUMNS:
            if len(getattr(self, column)) != n:
                raise ValueError(f"column {column} has {len(getattr(self, column))} rows, not {n}")
        for column, values in self.extra.items():
            if len(values) != n:
                raise ValueError(f"extra column {column} has {len(values)} rows, not {n}")

    def __len__(self) -> int:
        return len(self.start_ns)

    @property
    def duration_ns(self) -> np.ndarray:
        return self.end_ns - self.start_ns

    def name_of(self, row: int) -> str:
        return self.names[int(self.name_id[row])]

    def device_mask(self) -> np.ndarray:
        """Rows that run on a device (kernels, copies, sets): the three lowest kind codes, so
        two comparisons where ``np.isin`` would sort (this runs several times per analysis)."""
        return (self.kind >= KindCode.KERNEL) & (self.kind <= KindCode.MEMSET)

    def take(self, mask_or_index: np.ndarray) -> ActivityTable:
        """A new table with the selected rows (boolean mask or integer index)."""
        return ActivityTable(
            **{c: getattr(self, c)[mask_or_index] for c in self.COLUMNS},
            names=self.names,
            extra={k: v[mask_or_index] for k, v in self.extra.items()},
            meta=dict(self.meta),
        )

    @staticmethod
    def concat(tables: list[ActivityTable]) -> ActivityTable:
        """Stack tables (e.g. one per rank), re-encoding names into one dictionary."""
        if not tables:
            raise ValueError("no tables to concatenate")
        names: dict[str, int] = {}
        name_ids = []
        for table in tables:
            mapping = np.array(
                [names.setdefault(n, len(names)) for n in table.names] or [0], dtype=np.int32
            )
            name_ids.append(mapping[table.name_id] if len(table) else table.name_id)
        extra_keys = set().union(*(t.extra.keys() for t in tables))
        extra = {}
        for key in extra_keys:
            parts = []
            for t in tables:
                if key in t.extra:
                    parts.append(t.extra[key])
                else:
                    parts.append(np.full(len(t), None, dtype=object))
            extra[key] = np.concatenate(parts)
        columns = {
            c: np.concatenate([getattr(t, c) for t in tables]) for c in ActivityTable.COLUMNS
        }
        columns["name_id"] = np.concatenate(name_ids).astype(np.int32)
        meta = dict(tables[0].meta)
        meta["parts"] = [t.meta for t in tables]
        return ActivityTable(**columns, names=tuple(names), extra=extra, meta=meta)


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer column, as ``np.unique(values)`` gives them:
    sort, then keep each value that differs from the one before. ``np.unique`` itself checks
    for a masked array, which imports ``numpy.ma`` (about 10 ms of a whole command) on first use."""
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered
