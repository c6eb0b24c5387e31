"""Which processes and threads of a Chrome trace are device lanes (for events of unknown kind).

A generic Chrome trace (a JAX/XLA or vendor profiler export, a hand-made one) has no Kineto
categories, but its metadata events name the lanes: a process labelled ``GPU 0`` or named
``/device:TPU:0``, a thread named ``stream 7``. An event of unknown category on such a lane is
read as a kernel on that device and stream; anywhere else it is kept as ``Kind.OTHER``.

:class:`ScanState` is what a scan of Kineto events learns besides rows (these lanes among
it); it lives here, beside :class:`Lanes`, so the event scan and the row builders share it
without importing each other.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from parity.trace.table import NO_ID, ActivityTable, Kind, KindCode

_DEVICE = re.compile(r"\b(gpu|npu|mtia|xpu|tpu|hpu|ipu|device|accelerator|cuda|rocm|hip)\b", re.IGNORECASE)
_HOST = re.compile(r"\b(cpu|host|python)\b", re.IGNORECASE)
_STREAM = re.compile(r"\bstream\s*#?\s*(\d+)", re.IGNORECASE)
_NUMBER = re.compile(r"(\d+)\s*$")
LANE_METADATA = frozenset({"process_name", "process_labels", "thread_name"})  # what add() records


class Lanes:
    """Process and thread names seen in ``ph: M`` metadata events."""

    def __init__(self) -> None:
        self.process: dict[object, str] = {}  # process_name
        self.labels: dict[object, str] = {}  # process_labels
        self.thread: dict[tuple[object, object], str] = {}

    def note(self, event) -> None:
        """Record one metadata event given as a :class:`~.kineto_structs.Loose` (see :meth:`add`)."""
        if isinstance(event.args, dict):
            self.add(event.name, event.pid, event.tid, event.args.get("name"), event.args.get("labels"))

    def add(self, kind, pid, tid, name, labels) -> None:
        """Record ``process_name``, ``process_labels`` or ``thread_name`` metadata."""
        if not isinstance(pid, (int, str)):
            return
        if kind == "process_name":
            if isinstance(name, str):
                self.process[pid] = name
        elif kind == "process_labels":
            if isinstance(labels, str):
                self.labels[pid] = labels
        elif kind == "thread_name" and isinstance(name, str) and isinstance(tid, (int, str)):
            self.thread[(pid, tid)] = name

    def is_device(self, pid: int, tid: int) -> bool:
        process = f"{self.process.get(pid, '')} {self.labels.get(pid, '')}"
        thread = self.thread.get((pid, tid), "")
        if _STREAM.search(thread):
            return True
        return bool(_DEVICE.search(process)) and not _HOST.search(process)

    def resolve(self, table: ActivityTable, unknown: int) -> np.ndarray:
        """Kinds with each unknown-category row made KERNEL on a device lane, else OTHER."""
        kind = table.kind.astype(np.int16)
        rows = np.flatnonzero(kind == unknown)
        if len(rows) == 0:
            return kind
        pid, tid = table.extra["pid"][rows], table.extra["tid"][rows]
        pairs, inverse = np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)
        device = np.array([self.is_device(int(p), int(t)) for p, t in pairs])
        kind[rows] = np.where(device[inverse.ravel()], int(Kind.KERNEL), int(Kind.OTHER))
        return kind

    def device_and_stream(self, table: ActivityTable, kind: np.ndarray, unknown: int):
        """Device and stream columns, with lanes' numbers for rows that had an unknown cat."""
        device, stream = table.device.astype(np.int32), table.stream.copy()
        rows = np.flatnonzero((table.kind == unknown) & (kind == KindCode.KERNEL))
        if len(rows) == 0:
            return device, stream
        pid, tid = table.extra["pid"][rows], table.extra["tid"][rows]
        pairs, inverse = np.unique(np.stack([pid, tid], axis=1), axis=0, return_inverse=True)
        lane_device = np.empty(len(pairs), dtype=np.int32)
        lane_stream = np.empty(len(pairs), dtype=np.int64)
        for j, (p, t) in enumerate(pairs.tolist()):
            lane_device[j] = _number(self.labels.get(p) or self.process.get(p, ""), p)
            match = _STREAM.search(self.thread.get((p, t), ""))
            lane_stream[j] = int(match.group(1)) if match else t
        device[rows] = lane_device[inverse.ravel()]
        stream[rows] = lane_stream[inverse.ravel()]
        return device, stream


def _number(label: str, default: int) -> int:
    match = _NUMBER.search(label)
    return int(match.group(1)) if match else (default if default != NO_ID else 0)


class ScanState:
    """What the scan learns besides rows: lane metadata, counts for warnings."""

    def __init__(self, *, path: Path) -> None:
        self.path = path
        self.lanes = Lanes()
        self.non_objects = 0
        self.marks: list[tuple] = []  # B/E duration events, paired at the end
        self.events = 0
        self.known_cat = False

    def payload(self) -> dict:
        """What a worker learnt, for :meth:`absorb` in the reading process."""
        return {"process": self.lanes.process, "labels": self.lanes.labels,
                "thread": self.lanes.thread, "non_objects": self.non_objects,
                "marks": self.marks, "events": self.events,
                "known_cat": self.known_cat}  # fmt: skip

    def absorb(self, payload: dict) -> None:
        self.lanes.process.update(payload["process"])
        self.lanes.labels.update(payload["labels"])
        self.lanes.thread.update(payload["thread"])
        self.non_objects += payload["non_objects"]
        self.marks.extend(payload["marks"])
        self.events += payload["events"]
        self.known_cat = self.known_cat or payload["known_cat"]
