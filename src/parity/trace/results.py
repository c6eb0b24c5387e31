"""Result records of a trace analysis: frozen, plain data, ``to_dict()`` for JSON.

Times are integer ns inside (``*_ns``); ``to_dict`` gives µs (``*_us``) because that is the
unit trace viewers and profiler CSVs show. The records are frozen msgspec structs (keyword
arguments, compared and hashed by value, as frozen dataclasses): every trace command defines
them, and a struct class is made in C where a dataclass compiles its methods at import.
"""

from __future__ import annotations

from typing import Any

import msgspec

from parity.model.findings import Finding
from parity.trace.ascend_steps import AscendStep
from parity.trace.comm_matrix import LinkFigure
from parity.trace.window import Window

TOP_KERNELS = 50  # kernels listed in the JSON (every kernel goes to kernels.csv)


def _us(ns: int) -> float:
    return ns / 1e3


class StreamStats(msgspec.Struct, frozen=True, kw_only=True):
    """One device stream in the window."""

    rank: int
    device: int
    stream: int
    kernels: int  # device activities starting or running in the window (kernels, copies, sets)
    busy_ns: int
    busy_fraction: float
    share_of_summed: float
    categories: dict[str, int]  # category -> union ns on this stream

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "device": self.device,
            "stream": self.stream,
            "kernels": self.kernels,
            "busy_us": _us(self.busy_ns),
            "busy_fraction": self.busy_fraction,
            "share_of_summed": self.share_of_summed,
            "categories_us": {k: _us(v) for k, v in self.categories.items()},
        }


class DeviceStats(msgspec.Struct, frozen=True, kw_only=True):
    """All streams of one rank together in the window."""

    window_ns: int
    busy_ns: int  # |∪ all device intervals ∩ W|
    idle_ns: int
    summed_busy_ns: int  # Σ per-stream busy
    mean_concurrency: float
    streams_at_once_ns: tuple[int, ...]  # [c] = ns with exactly c streams busy

    def to_dict(self) -> dict[str, Any]:
        return {
            "window_us": _us(self.window_ns),
            "busy_us": _us(self.busy_ns),
            "idle_us": _us(self.idle_ns),
            "busy_fraction": self.busy_ns / self.window_ns if self.window_ns else 0.0,
            "summed_busy_us": _us(self.summed_busy_ns),
            "mean_concurrency": self.mean_concurrency,
            "streams_at_once_us": [_us(v) for v in self.streams_at_once_ns],
        }


class CategoryStats(msgspec.Struct, frozen=True, kw_only=True):
    """One category: its union time over all streams, its summed kernel time, its count."""

    category: str
    time_ns: int  # |∪ of the category's intervals ∩ W| over all streams
    summed_ns: int  # Σ durations clipped to W (counts concurrent kernels twice)
    kernels: int
    share_of_busy: float  # time / device busy

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "time_us": _us(self.time_ns),
            "summed_us": _us(self.summed_ns),
            "kernels": self.kernels,
            "share_of_busy": self.share_of_busy,
        }


class StreamOverlap(msgspec.Struct, frozen=True, kw_only=True):
    """Time two streams of one rank are busy together in the window."""

    stream_a: int
    stream_b: int
    overlap_ns: int

    def to_dict(self) -> dict[str, Any]:
        return {"stream_a": self.stream_a, "stream_b": self.stream_b, "overlap_us": _us(self.overlap_ns)}


class CommOverlap(msgspec.Struct, frozen=True, kw_only=True):
    """Compute (not communication, not memory) against communication in the window."""

    compute_ns: int
    communication_ns: int
    overlap_ns: int
    exposed_communication_ns: int  # communication minus compute
    # of the communication, tasks that wait for a peer (HCCL's Notify Wait); None where the trace
    # records no such task (an NCCL kernel's time holds its waits)
    peer_wait_ns: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "compute_us": _us(self.compute_ns),
            "communication_us": _us(self.communication_ns),
            "overlap_us": _us(self.overlap_ns),
            "exposed_communication_us": _us(self.exposed_communication_ns),
            "hidden_fraction": self.overlap_ns / self.communication_ns if self.communication_ns else 0.0,
            "peer_wait_us": None if self.peer_wait_ns is None else _us(self.peer_wait_ns),
        }


class KernelStats(msgspec.Struct, frozen=True, kw_only=True):
    """One kernel name: how often it ran in the window and its summed time there."""

    name: str
    category: str
    count: int
    total_ns: int
    share_of_summed: float  # total / Σ all device durations in W

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "category": self.category,
            "count": self.count,
            "total_us": _us(self.total_ns),
            "mean_us": _us(self.total_ns) / self.count if self.count else 0.0,
            "share_of_summed": self.share_of_summed,
        }


class BlockStats(msgspec.Struct, frozen=True, kw_only=True):
    """A repeated block of kernels (a layer) on one stream: how long each repetition took."""

    stream: int
    kernels_per_block: int
    repeats: int
    first_kernel: str
    block_ns: tuple[int, ...]  # start of repetition i to the start of the kernel after it
    busy_ns: tuple[int, ...]  # Σ kernel time inside each repetition

    def to_dict(self) -> dict[str, Any]:
        times = sorted(self.block_ns)
        return {
            "stream": self.stream,
            "kernels_per_block": self.kernels_per_block,
            "repeats": self.repeats,
            "first_kernel": self.first_kernel,
            "median_block_us": _us(times[len(times) // 2]) if times else 0.0,
            "block_us": [_us(v) for v in self.block_ns],
            "busy_us": [_us(v) for v in self.busy_ns],
        }


class RankAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """Everything measured for one rank inside its window."""

    rank: int
    window: Window
    device_span_ns: tuple[int, int]  # first device start, last device end of the rank
    streams: tuple[StreamStats, ...]
    device: DeviceStats
    categories: tuple[CategoryStats, ...]
    overlaps: tuple[StreamOverlap, ...]
    comm: CommOverlap
    kernels: tuple[KernelStats, ...]  # every kernel name in the window, most time first
    blocks: BlockStats | None
    ascend_steps: tuple[AscendStep, ...]
    trace_start_ns: int = 0  # the rank's earliest timestamp, for offsets from the trace start

    @property
    def top_kernels(self) -> tuple[KernelStats, ...]:
        """The :data:`TOP_KERNELS` kernels with the most time (the JSON lists these)."""
        return self.kernels[:TOP_KERNELS]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "window": {**self.window.to_dict(),
                       "offset_from_trace_start_us": (self.window.start_ns - self.trace_start_ns) / 1e3},
            "device_span_us": [self.device_span_ns[0] / 1e3, self.device_span_ns[1] / 1e3],
            "streams": [s.to_dict() for s in self.streams],
            "device": self.device.to_dict(),
            "categories": [c.to_dict() for c in self.categories],
            "stream_overlap": [o.to_dict() for o in self.overlaps],
            "compute_communication": self.comm.to_dict(),
            "top_kernels": [k.to_dict() for k in self.top_kernels],
            "kernel_names": len(self.kernels),  # top_kernels lists the first TOP_KERNELS of these
            "blocks": self.blocks.to_dict() if self.blocks else None,
            "ascend_steps": [s.to_dict() for s in self.ascend_steps],
        }


class RankSpread(msgspec.Struct, frozen=True, kw_only=True):
    """How ranks differ: the slowest rank is the one with the most compute time in its window
    (the others wait for it in collectives), a straggler when it exceeds the median by more
    than ``threshold``."""

    compute_ns: dict[int, int]
    window_ns: dict[int, int]
    slowest_rank: int
    median_compute_ns: float
    excess_fraction: float  # (slowest - median) / median
    straggler: bool
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "compute_us": {str(k): _us(v) for k, v in self.compute_ns.items()},
            "window_us": {str(k): _us(v) for k, v in self.window_ns.items()},
            "slowest_rank": self.slowest_rank,
            "median_compute_us": self.median_compute_ns / 1e3,
            "excess_fraction": self.excess_fraction,
            "straggler": self.straggler,
            "threshold": self.threshold,
        }


class TraceAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """The result of :func:`parity.trace.analyze`: one :class:`RankAnalysis` per rank."""

    source: str
    format: str
    rules: str
    ranks: tuple[RankAnalysis, ...]
    spread: RankSpread | None
    findings: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    comm_matrix: tuple[LinkFigure, ...] = ()  # Ascend HCCL links

    @property
    def first(self) -> RankAnalysis:
        return self.ranks[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON form. Top-level ``window``/``device``/``categories`` are the first rank's (the only
        one for a single-rank trace); ``streams`` and ``ascend_steps`` list every rank's rows,
        each carrying ``rank``; ``ranks`` has everything per rank."""
        first = self.first
        return {
            "source": self.source,
            "format": self.format,
            "rules": self.rules,
            "window": first.window.to_dict(),
            "streams": [s.to_dict() for r in self.ranks for s in r.streams],
            "device": first.device.to_dict(),
            "categories": [c.to_dict() for c in first.categories],
            "compute_communication": first.comm.to_dict(),
            "ascend_steps": [dict(s.to_dict(), rank=r.rank) for r in self.ranks for s in r.ascend_steps],
            "ranks": [r.to_dict() for r in self.ranks],
            "rank_spread": self.spread.to_dict() if self.spread else None,
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "communication_matrix": [f.to_dict() for f in self.comm_matrix],
        }
