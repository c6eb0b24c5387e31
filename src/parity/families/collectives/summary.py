"""The collectives sweep's summary as a typed, versioned record (SI units; the views format them).

Every timed case holds the per-iteration maximum over ranks (its samples), the minimum beside
it and each rank's own median (``meta``); a row gives the max-over-ranks median (``time_s``,
the time nccl-tests prints) and p99, the fastest rank's median, every rank's median, and the
rates the suite names (``algbw_bps``, ``busbw_bps``, B/s), computed here from the stored median
so one formula serves the table, the JSON and the figures. ``rank_times`` and
``wrong_elements`` serve the MoE summary too.

Rows of the ``intra`` and ``inter`` dimensions (``parity.families.collectives.dimensions``)
carry their dimension and group count; the averages over them are kept apart
(``avg_busbw_by_dimension``), so the headline average stays the world's.

``from_dict`` reads a summary stored by any version: version 1 held the rates in GB/s
(``*_gbps``), converted here; version 2 had no dimensions (every row is the world's); keys it
does not know are dropped.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from parity.metrics.collectives import algbw, busbw
from parity.model.result import CaseResult


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between order statistics.
    Example: p99 of 1..100 is 99.01."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def rank_times(result: CaseResult) -> dict[str, Any]:
    """The times of one case, s: ``time_s`` (median of the per-iteration max over ranks),
    ``time_p99_s``, ``fastest_rank_s`` (median of the per-iteration min over ranks) and
    ``rank_median_s`` (each rank's own median; one entry on one process)."""
    samples = result.samples["main"]
    values = list(samples.values_s)
    low = list(samples.meta.get("min_over_ranks_s") or values)
    return {"time_s": statistics.median(values), "time_p99_s": percentile(values, 99.0),
            "fastest_rank_s": statistics.median(low),
            "rank_median_s": list(samples.meta.get("rank_median_s") or [statistics.median(values)]),
            "iterations": len(values), "timing": samples.method}


def wrong_elements(result: CaseResult) -> int | None:
    """nccl-tests' ``#wrong``: wrong elements summed over every rank's check (None: unchecked)."""
    checks = result.check.get("ranks") or [result.check]
    counts = [c.get("wrong") for c in checks]
    return None if any(c is None for c in counts) else int(sum(counts))


CONVENTION = "nccl-tests: algbw = S/t, busbw = algbw*f(op, n), t = max over ranks"
GIGA = 1e9  # B/s per GB/s, for summaries stored in GB/s (version 1)


@dataclass(frozen=True, kw_only=True)
class CollectiveRow:
    """One case: what ran (``op``, ``dtype``, ``placement``, ``size_bytes`` = S, ``count``
    elements), on which ``dimension`` (``world``, ``intra``, ``inter``; ``groups`` of
    ``world_size`` ranks each at once), on how many ranks, its check (``ok``, ``wrong`` elements over every rank,
    ``error``), and when timed its times over ranks, s, and rates, B/s."""

    key: str = ""
    op: str
    dtype: str
    placement: str
    size_bytes: int
    dimension: str = "world"
    groups: int | None = None
    count: int | None = None
    world_size: int | None = None
    backend: str | None = None
    ok: bool = False
    error: str | None = None
    wrong: int | None = None
    time_s: float | None = None
    time_p99_s: float | None = None
    fastest_rank_s: float | None = None
    rank_median_s: tuple[float, ...] = ()
    iterations: int | None = None
    timing: str | None = None
    algbw_bps: float | None = None
    busbw_bps: float | None = None
    convention: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "rank_median_s": list(self.rank_median_s)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectiveRow:
        data = _si_rates(data, ("algbw", "busbw"))
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["rank_median_s"] = tuple(values.get("rank_median_s") or ())
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class CollectivesSummary:
    """Rows in case order; the mean busbw per collective (``avg_busbw_bps``) and over all
    (``avg_busbw_all_bps``): nccl-tests' "Avg bus bandwidth", over every size and placement
    measured, B/s (the world's rows); the same per collective for each other dimension
    (``avg_busbw_by_dimension``); wrong elements in all; ``ok``; the ranks and backend."""

    VERSION: ClassVar[int] = 3  # 3: dimensions; 2: rates in B/s; 1: rates in GB/s

    rows: tuple[CollectiveRow, ...] = ()
    avg_busbw_bps: dict[str, float] = field(default_factory=dict)
    avg_busbw_all_bps: float | None = None
    wrong: int = 0
    ok: bool = True
    world_size: int | None = None
    backend: str | None = None
    avg_busbw_by_dimension: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows], "avg_busbw_bps": dict(self.avg_busbw_bps),
                "avg_busbw_all_bps": self.avg_busbw_all_bps, "wrong": self.wrong, "ok": self.ok,
                "world_size": self.world_size, "backend": self.backend,
                "avg_busbw_by_dimension": {d: dict(v) for d, v in self.avg_busbw_by_dimension.items()},
                "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectivesSummary:
        data = _si_rates(data, ("avg_busbw_all",))
        averages = data.get("avg_busbw_bps")
        if averages is None:
            averages = {op: v * GIGA for op, v in (data.get("avg_busbw_gbps") or {}).items()}
        return cls(rows=tuple(CollectiveRow.from_dict(r) for r in data.get("rows", [])),
                   avg_busbw_bps=dict(averages), avg_busbw_all_bps=data.get("avg_busbw_all_bps"),
                   wrong=int(data.get("wrong") or 0), ok=bool(data.get("ok", True)),
                   world_size=data.get("world_size"), backend=data.get("backend"),
                   avg_busbw_by_dimension={d: dict(v) for d, v in (data.get("avg_busbw_by_dimension") or {}).items()})


def _si_rates(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with each ``<name>_gbps`` of version 1 as ``<name>_bps`` (B/s)."""
    out = dict(data)
    for name in names:
        old = out.pop(f"{name}_gbps", None)
        if f"{name}_bps" not in out and old is not None:
            out[f"{name}_bps"] = old * GIGA
    return out


def collective_row(result: CaseResult) -> CollectiveRow:
    """One collectives case as a row (rates in B/s)."""
    p, m = result.params, result.metrics
    base = CollectiveRow(key=result.key, op=p["op"], dtype=p["dtype"], placement=p["placement"],
                         size_bytes=m.get("size_bytes", p["size_bytes"]), dimension=p.get("dimension", "world"),
                         groups=m.get("groups"), count=m.get("count"),
                         world_size=m.get("world_size"), backend=m.get("backend"), ok=result.ok,
                         error=result.error, wrong=wrong_elements(result))
    if result.error is not None or "main" not in result.samples:
        return base
    times = rank_times(result)
    size, world = float(base.size_bytes), int(base.world_size or 1)
    return CollectiveRow.from_dict({**base.to_dict(), **times,
                                    "algbw_bps": algbw(size, times["time_s"]) or None,
                                    "busbw_bps": busbw(size, times["time_s"], op=p["op"], world_size=world) or None,
                                    "convention": CONVENTION})


def summarize_collectives(results: list[CaseResult]) -> CollectivesSummary:
    """Rows in case order, the mean busbw per collective and over all (nccl-tests' "Avg bus
    bandwidth", over every size and placement measured), wrong elements in all, and ok."""
    rows = [collective_row(r) for r in results]
    by_dimension: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        if row.busbw_bps is not None:
            by_dimension.setdefault(row.dimension, {}).setdefault(row.op, []).append(row.busbw_bps)
    by_op = by_dimension.pop("world", {})
    every = [v for values in by_op.values() for v in values]
    first = next((r for r in rows if r.world_size and r.dimension == "world"), None)
    return CollectivesSummary(rows=tuple(rows), avg_busbw_bps={op: statistics.fmean(v) for op, v in by_op.items()},
                              avg_busbw_all_bps=statistics.fmean(every) if every else None,
                              wrong=sum(r.wrong or 0 for r in rows), ok=all(r.ok for r in rows),
                              world_size=first.world_size if first else None,
                              backend=first.backend if first else None,
                              avg_busbw_by_dimension={d: {op: statistics.fmean(v) for op, v in ops.items()}
                                                      for d, ops in by_dimension.items()})
