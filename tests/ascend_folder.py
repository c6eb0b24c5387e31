"""Small Ascend text outputs written by tests: one rank, one step, a few tasks.

The default rank: step 1 spans [0, 1000 us] on the host; on stream 2 ``MatMulV2`` runs at
[100, 300] and ``LayerNorm`` at [300, 400]; ``hcom_allReduce__1_0_1`` (HCCL) and its ``Notify
Wait`` task run on stream 4 at [450, 600]. So Computing = 300, Communication = 150, Overlapped
= 0, Not Overlapped = 150, span [100, 600], Free = 50 (all µs), which ``STEP_TRACE`` states.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

BASE_US = 1_700_000_000_000  # an epoch-like origin, as real traces have
TASKS = [  # name, stream, start, end (µs from BASE_US), Task Type
    ("MatMulV2", 2, 100, 300, "AI_CORE"),
    ("LayerNorm", 2, 300, 400, "AI_CORE"),
    ("Notify Wait", 4, 450, 600, "Notify Wait"),
]
OPS = [("hcom_allReduce__1_0_1", 450, 600)]
KERNEL_DETAILS = [  # name, core, start, duration
    ("MatMulV2", "AI_CORE", 100, 200),
    ("LayerNorm", "AI_VECTOR_CORE", 300, 100),
]
STEP_TRACE = {"Step": "1", "Computing": "300", "Communication(Not Overlapped)": "150", "Overlapped": "0",
              "Communication": "150", "Free": "50"}
OVERLAP = [("Computing", 100, 400), ("Communication", 450, 600), ("Communication(Not Overlapped)", 450, 600),
           ("Free", 400, 450)]


def _us(value: float) -> str:
    return f"{BASE_US + value:.3f}"


def trace_view(*, tasks=TASKS, ops=OPS, overlap=None, planes=()) -> list[dict]:
    """The ``trace_view.json`` events: metadata, the step marker, tasks, HCCL ops, HCCL plane
    tasks (``(task type, start, end, src rank, dst rank, bytes, link type)``), and the
    profiler's Overlap Analysis lanes when ``overlap`` lists ``(lane, start, end)``."""
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "HCCL"}},
        {"ph": "M", "name": "thread_name", "pid": 3, "tid": 10, "args": {"name": "Group 1 Communication"}},
        {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": _us(0), "dur": 1000.0, "cat": "cpu_op"},
    ]
    for stream in sorted({t[1] for t in tasks}):
        events.append({"ph": "M", "name": "thread_name", "pid": 2, "tid": stream, "args": {"name": f"Stream {stream}"}})
    for task, stream, start, end, task_type in tasks:
        events.append({"ph": "X", "name": task, "pid": 2, "tid": stream, "ts": _us(start), "dur": float(end - start),
                       "args": {"Task Type": task_type}})
    for op, start, end in ops:
        events.append({"ph": "X", "name": op, "pid": 3, "tid": 10, "ts": _us(start), "dur": float(end - start)})
    for task, start, end, src, dst, size, link in planes:
        events.append({"ph": "X", "name": task, "pid": 3, "tid": 11, "ts": _us(start), "dur": float(end - start),
                       "args": {"stream id": 4, "task type": task, "src rank": src, "dst rank": dst,
                                "size(Byte)": size, "link type": link}})
    if overlap is not None:
        events.append({"ph": "M", "name": "process_name", "pid": 5, "tid": 0, "args": {"name": "Overlap Analysis"}})
        lanes = ["Computing", "Communication", "Communication(Not Overlapped)", "Free"]
        for tid, lane in enumerate(lanes):
            events.append({"ph": "M", "name": "thread_name", "pid": 5, "tid": tid, "args": {"name": lane}})
        for lane, start, end in overlap:
            events.append({"ph": "X", "name": lane, "pid": 5, "tid": lanes.index(lane), "ts": _us(start),
                           "dur": float(end - start)})
    return events


def write_rank(folder: Path, *, tasks=TASKS, ops=OPS, kernel_details=KERNEL_DETAILS, step_trace=STEP_TRACE,
               overlap=None, planes=(), timeline: bool = True, name: str = "rank0_ascend_pt") -> Path:
    """Write ``folder/<name>/ASCEND_PROFILER_OUTPUT`` and return the rank folder (the rank
    number comes from ``name``).
    ``kernel_details`` / ``step_trace`` set to ``None`` leave that file out; ``timeline=False``
    leaves out ``trace_view.json``."""
    rank = folder / name
    out = rank / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    if timeline:
        (out / "trace_view.json").write_text(json.dumps(trace_view(tasks=tasks, ops=ops, overlap=overlap, planes=planes)))
    if kernel_details is not None:
        with open(out / "kernel_details.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)"])
            for kernel, core, start, duration in kernel_details:
                writer.writerow(["1", kernel, kernel, core, _us(start) + "\t", duration])
    if step_trace is not None:
        with open(out / "step_trace_time.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(step_trace))
            writer.writeheader()
            writer.writerow(step_trace)
    return rank
