"""Ascend's per-step Computing / Communication / Overlapped / Free, rebuilt from raw tasks.

The torch_npu profiler writes these figures to ``step_trace_time.csv`` (and ``analysis.db``'s
``StepTraceTime``). Studying its output on real traces (msinsight level0/level1 text and db
exports) shows exactly what it counts:

- *Computing* is the union of the step's operator tasks: the tasks ``kernel_details.csv`` lists
  (AI Core, AI Vector Core, MIX, AI CPU and DSA tasks), not the runtime tasks that share their
  streams (``EVENT_RECORD``/``EVENT_WAIT``, ``MEMCPY_ASYNC`` DMA, ``PROFILING_*`` place holders)
  and not the tasks on the HCCL stream (``Notify Wait``, ``Write Value``, ``SDMA``).
- *Communication* is the union of the HCCL operators (``hcom_allReduce_...``, the ``Group N
  Communication`` row), not their per-plane tasks.
- the step's span runs from the first start to the last end among those two sets (not the host
  ``ProfilerStep`` span), and ``Free = span - |Computing ∪ Communication|``.
- ``Overlapped = |Computing ∩ Communication|`` and
  ``Communication(Not Overlapped) = Communication - Overlapped``.

A reader's ``accelerator_core`` column marks operator tasks (kernel_details rows; level-0
exports write ``N/A`` there, still a value); without it, a ``task_type`` column or the runtime
task names above tell them apart. Tasks on the streams that carry HCCL operators are the
collectives' own (the db export lists AI-core tasks there that kernel_details does not) and
are never Computing.
"""

from __future__ import annotations

import math

import msgspec
import numpy as np

from parity.trace.categories import COMMUNICATION, Categorization
from parity.trace.intervals import merge_intervals
from parity.trace.metrics import free_ns, overlap_ns
from parity.trace.readers.columns import step_number
from parity.trace.table import ActivityTable, KindCode, distinct_sorted
from parity.trace.tokens import name_tokens
from parity.trace.window import device_steps, step_markers

RUNTIME_TASK_NAMES = frozenset({
    "EVENT_RECORD", "EVENT_WAIT", "MEMCPY_ASYNC", "PROFILING_ENABLE", "PROFILING_DISABLE",
    "Notify Wait", "Notify Record", "Notify_Wait", "Notify_Record", "Write Value", "SDMA",
    "Reduce_Inline", "Reduce Inline", "Memcpy", "STARS_COMMON_EVENT", "PLACE_HOLDER",
})  # fmt: skip
COMPUTE_TASK_TYPES = frozenset({
    "AI_CORE", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "AI_CPU", "DSA_SQE", "KERNEL_AICORE",
    "KERNEL_AIVEC", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "KERNEL_AICPU", "STARS_COMMON",
})  # fmt: skip
VAGUE_TASK_TYPES = frozenset({None, "", "Other", "OTHER"})  # task types that name no unit
TOLERANCE_US = 2.0  # how close the rebuild must be to the profiler's own figures


class AscendStep(msgspec.Struct, frozen=True, kw_only=True):
    """One step's figures in µs, and the profiler's own figures when the trace carries them."""

    step: int
    span_us: float
    computing_us: float
    communication_us: float
    overlapped_us: float
    communication_not_overlapped_us: float
    free_us: float
    stage_us: float = 0.0
    bubble_us: float = 0.0
    communication_not_overlapped_exclude_receive_us: float = 0.0
    preparing_us: float | None = None  # None without a step marker
    reference: dict[str, float] | None = None  # step_trace_time.csv's figures, same keys
    lanes: dict[str, float] | None = None  # the timeline's Overlap Analysis lanes in the step span

    @property
    def max_deviation_us(self) -> float | None:
        """Largest |ours - profiler's| over the compared figures, µs (None without reference)."""
        if not self.reference:
            return None
        return max(abs(getattr(self, k) - v) for k, v in self.reference.items() if getattr(self, k) is not None)

    @property
    def lanes_deviation_us(self) -> float | None:
        """Largest |ours - Overlap Analysis lane| over the lanes, µs (None without lanes)."""
        if not self.lanes:
            return None
        return max(abs(getattr(self, k) - v) for k, v in self.lanes.items())

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "step", "span_us", "computing_us", "communication_us", "overlapped_us",
            "communication_not_overlapped_us", "free_us", "stage_us", "bubble_us",
            "communication_not_overlapped_exclude_receive_us", "preparing_us")}  # fmt: skip
        out["reference"] = self.reference
        out["max_deviation_us"] = self.max_deviation_us
        out["overlap_analysis"] = self.lanes
        out["overlap_analysis_deviation_us"] = self.lanes_deviation_us
        return out


def _is_hccl(table: ActivityTable) -> np.ndarray:
    """Rows a reader marked as HCCL operators: ``task_type`` "HCCL" where the reader records
    task types (a task carrying a collective has core "HCCL" but is not the operator), else
    ``accelerator_core`` "HCCL"."""
    for column in ("task_type", "accelerator_core"):
        values = table.extra.get(column)
        if values is not None:
            return np.asarray(values, dtype=object) == "HCCL"
    return np.zeros(len(table), dtype=bool)


def communication_op_mask(table: ActivityTable, cats: Categorization) -> np.ndarray:
    """Rows that Ascend counts as Communication: the HCCL operators when the reader marks them,
    else every device row categorised communication."""
    comm = table.device_mask() & cats.mask(COMMUNICATION)
    ops = comm & _is_hccl(table)
    return ops if ops.any() else comm


def operator_task_mask(table: ActivityTable, cats: Categorization) -> np.ndarray:
    """Rows that Ascend counts as Computing: operator tasks that are not communication.

    Operator tasks are, when the reader records ``task_type``: rows with an ``accelerator_core``
    or a compute task type, or with a task type that names no unit (``Other`` in older
    releases) and a name that is no runtime task's, except rows named after their own task type (the profiler has no
    operator for them: kernel_details.csv / COMPUTE_TASK_INFO do not list them); else rows with
    an ``accelerator_core``; else kernels not named like runtime tasks. Tasks on a stream that
    carries HCCL operators belong to the collective (its own AI-core tasks included) and are
    never Computing.
    """
    mask = (table.kind == KindCode.KERNEL) & ~cats.mask(COMMUNICATION)
    hccl_streams = distinct_sorted(table.stream[communication_op_mask(table, cats)])
    if len(hccl_streams):
        mask &= ~np.isin(table.stream, hccl_streams)
    types = table.extra.get("task_type")
    cores = table.extra.get("accelerator_core")
    has_core = (_tested(*_encoded(cores), lambda c: isinstance(c, str) and c != "")
                if cores is not None else np.zeros(len(table), dtype=bool))  # fmt: skip
    runtime = np.fromiter((name in RUNTIME_TASK_NAMES for name in table.names), bool, len(table.names))[table.name_id]
    if types is not None:
        types = np.asarray(types, dtype=object)
        # a task the profiler has no operator for is named after its task type (db exports)
        named = np.array(table.names, dtype=object)[table.name_id] != types
        # older releases type every AI-core task "Other": such a task is an operator unless it
        # is named like a runtime task
        distinct = _encoded(types)
        vague = _tested(*distinct, lambda t: t in VAGUE_TASK_TYPES) & ~runtime
        return mask & named & (has_core | _tested(*distinct, lambda t: t in COMPUTE_TASK_TYPES) | vague)
    if has_core[mask].any():
        return mask & has_core
    return mask & ~runtime


def _encoded(column: np.ndarray) -> tuple[list, np.ndarray]:
    """An object column of strings and None as ``(distinct values, per-row index into them)``."""
    values = column.tolist()
    distinct = list(dict.fromkeys(values))  # in order of first appearance
    index = {v: i for i, v in enumerate(distinct)}
    return distinct, np.fromiter(map(index.__getitem__, values), np.intp, len(values))


def _tested(values: list, codes: np.ndarray, test) -> np.ndarray:
    """Per row, ``test`` of its value, called once per distinct value."""
    return np.fromiter((bool(test(v)) for v in values), bool, len(values))[codes]


_REFERENCE_KEYS = {
    "computing": "computing_us",
    "communication(not overlapped)": "communication_not_overlapped_us",
    "communication_not_overlapped": "communication_not_overlapped_us",
    "overlapped": "overlapped_us",
    "communication": "communication_us",
    "free": "free_us",
    "stage": "stage_us",
    "bubble": "bubble_us",
    "communication(not overlapped and exclude receive)": "communication_not_overlapped_exclude_receive_us",
    "communication_not_overlapped_and_exclude_receive": "communication_not_overlapped_exclude_receive_us",
    "preparing": "preparing_us",
}


def reference_steps(meta: dict) -> dict[int, dict[str, float]]:
    """The profiler's own per-step figures from ``meta["step_trace"]`` (rows of
    step_trace_time.csv or analysis.db StepTraceTime, µs), keyed by step number."""
    out: dict[int, dict[str, float]] = {}
    for row in meta.get("step_trace") or []:
        lowered = {str(k).strip().lower(): v for k, v in dict(row).items()}
        step = lowered.get("step", lowered.get("step id", lowered.get("id")))
        try:
            number = step_number(step)
        except (TypeError, ValueError):
            continue  # no step number: nothing to line the figures up with
        figures = {}
        for key, ours in _REFERENCE_KEYS.items():
            value = _finite(lowered.get(key))
            if value is not None:
                figures[ours] = value
        if figures:
            out[number] = figures
    return out


def _finite(value) -> float | None:
    """A reference cell as a finite float; None for an absent, empty or non-number cell (``N/A``:
    that figure of the step is not compared)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


_LANE_KEYS = {
    "Computing": "computing_us",
    "Communication": "communication_us",
    "Communication(Not Overlapped)": "communication_not_overlapped_us",
    "Free": "free_us",
}


def lane_figures(lanes: dict | None, start_ns: int, end_ns: int) -> dict[str, float] | None:
    """The profiler's Overlap Analysis lanes (``meta["overlap_analysis"]``: lane -> ``[start_ns,
    end_ns]`` pairs) over one step's span: per lane, the length of its union inside
    ``[start_ns, end_ns)`` in µs, keyed like :class:`AscendStep`'s figures; None without lanes."""
    if not lanes:
        return None
    out = {}
    for lane, key in _LANE_KEYS.items():
        pairs = np.asarray(lanes.get(lane) or [], dtype=np.int64).reshape(-1, 2)
        s, e = merge_intervals(np.clip(pairs[:, 0], start_ns, end_ns), np.clip(pairs[:, 1], start_ns, end_ns))
        out[key] = int(np.sum(e - s)) / 1e3
    return out


def pipeline_figures(comp: tuple, comm_send: tuple, receive: tuple, span_ns: int, first_ns: int,
                     step_start_ns: int | None) -> dict[str, float | None]:
    """The pipeline-parallel figures of one step (msprof-analyze's definitions), µs:

    - ``bubble = |R|``, the union of the step's receive operators (HCCL ``receive``/``recv``);
    - ``stage = span - bubble``: the step's span (first start to last end of Computing and
      Communication) without the time spent receiving;
    - ``communication_not_overlapped_exclude_receive = |C' - K|``, ``C'`` the union of the
      communication operators other than receives, ``K`` Computing;
    - ``preparing = first - step_start``: from the step's start (its host ``ProfilerStep``
      marker) to its first compute or communication operator; None without a marker.

    ``comp``, ``comm_send`` and ``receive`` are merged ``(starts, ends)`` pairs.
    """
    bubble = int(np.sum(receive[1] - receive[0]))
    sent = int(np.sum(comm_send[1] - comm_send[0]))
    return {
        "stage_us": (span_ns - bubble) / 1e3,
        "bubble_us": bubble / 1e3,
        "communication_not_overlapped_exclude_receive_us": (sent - overlap_ns(comp, comm_send)) / 1e3,
        "preparing_us": (first_ns - step_start_ns) / 1e3 if step_start_ns is not None else None,
    }


def _step_figures(step: int, comp: tuple, comm: tuple, reference: dict | None, lanes: dict | None = None,
                  pipeline: dict | None = None) -> AscendStep:
    both_s, both_e = merge_intervals(np.concatenate([comp[0], comm[0]]), np.concatenate([comp[1], comm[1]]))
    span = int(both_e.max() - both_s.min()) if len(both_s) else 0
    in_lanes = lane_figures(lanes, int(both_s.min()), int(both_e.max())) if len(both_s) else None
    computing = int(np.sum(comp[1] - comp[0]))
    communication = int(np.sum(comm[1] - comm[0]))
    overlapped = overlap_ns(comp, comm)
    free = free_ns(span, int(np.sum(both_e - both_s)))
    return AscendStep(
        step=step,
        span_us=span / 1e3,
        computing_us=computing / 1e3,
        communication_us=communication / 1e3,
        overlapped_us=overlapped / 1e3,
        communication_not_overlapped_us=(communication - overlapped) / 1e3,
        free_us=free / 1e3,
        reference=reference,
        lanes=in_lanes,
        **(pipeline or {}),
    )


def ascend_steps(table: ActivityTable, cats: Categorization,
                 sets: tuple[np.ndarray, np.ndarray] | None = None) -> list[AscendStep]:
    """Per-step Computing/Communication/Overlapped/Free of one rank's table, per the module's rule.

    Only steps with device activity are reported; rows outside every step are ignored.
    ``sets``: ``(operator_task_mask, communication_op_mask)`` when the caller has them.
    """
    row_steps = device_steps(table)
    compute, comm = sets if sets is not None else (operator_task_mask(table, cats), communication_op_mask(table, cats))
    receive = receive_mask(table, comm)
    references = reference_steps(table.meta)
    markers = dict(zip(*[a.tolist() for a in step_markers(table)[:2]]))
    out = []

    def merged(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return merge_intervals(table.start_ns[mask], table.end_ns[mask])

    for step in distinct_sorted(row_steps[(compute | comm) & (row_steps >= 0)]).tolist():
        here = row_steps == step
        comp_pair, comm_pair = merged(compute & here), merged(comm & here)
        ours = (compute | comm) & here
        first, last = int(table.start_ns[ours].min()), int(table.end_ns[ours].max())
        pipeline = pipeline_figures(comp_pair, merged(comm & ~receive & here), merged(receive & here),
                                    last - first, first, markers.get(int(step)))
        out.append(_step_figures(int(step), comp_pair, comm_pair, references.get(int(step)),
                                 table.meta.get("overlap_analysis"), pipeline))
    return out


def receive_mask(table: ActivityTable, among: np.ndarray | None = None) -> np.ndarray:
    """Rows named as receive operators (a ``receive`` or ``recv`` token: ``hcom_receive_..``),
    of the rows ``among`` (a mask; every row when None): only their names are tokenised."""
    rows = table.name_id if among is None else table.name_id[among]
    names = table.names
    ids = [i for i in distinct_sorted(rows).tolist() if {"receive", "recv"} & set(name_tokens(names[i]))]
    found = np.isin(table.name_id, ids)
    return found if among is None else found & among


def is_ascend(table: ActivityTable) -> bool:
    """Whether the table comes from an Ascend profiler (text or db export)."""
    fmt = str(table.meta.get("format", ""))
    parts = table.meta.get("parts") or []
    return fmt.startswith("ascend") or any(str(p.get("format", "")).startswith("ascend") for p in parts)
