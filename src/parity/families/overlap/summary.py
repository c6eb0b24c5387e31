"""The overlap suite's summary as a typed, versioned record: per kernel, the times alone and
together (s, medians of the max over ranks per iteration), the slowdowns and the overlap
achieved (fractions: 1 is no slowdown, and the shorter work fully hidden)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class OverlapRow:
    """One case (the exchange beside one ``kernel``): the five medians, s (``both_s`` the pair's
    wall time), ``exchange_slowdown`` and ``kernel_slowdown`` (together / alone) and
    ``overlap_fraction`` ((a + b - both) / min(a, b)); None where the case was not timed."""

    key: str
    ok: bool = False
    error: str | None = None
    kernel: str | None = None
    exchange_alone_s: float | None = None
    kernel_alone_s: float | None = None
    exchange_together_s: float | None = None
    kernel_together_s: float | None = None
    both_s: float | None = None
    exchange_slowdown: float | None = None
    kernel_slowdown: float | None = None
    overlap_fraction: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OverlapRow:
        return cls(**{k: v for k, v in data.items() if k in {f.name for f in fields(cls)}})


# The case metrics a row takes (the harness stores them from the together-and-alone strategy).
ROW_METRICS = tuple(f.name for f in fields(OverlapRow) if f.name not in ("key", "ok", "error"))


@dataclass(frozen=True, kw_only=True)
class OverlapSummary:
    """Rows in case order, ``ok``, and the ranks and backend they ran on."""

    VERSION: ClassVar[int] = 1

    rows: tuple[OverlapRow, ...] = ()
    ok: bool = True
    world_size: int | None = None
    backend: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows], "ok": self.ok, "world_size": self.world_size,
                "backend": self.backend, "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OverlapSummary:
        return cls(rows=tuple(OverlapRow.from_dict(r) for r in data.get("rows", [])), ok=bool(data.get("ok", True)),
                   world_size=data.get("world_size"), backend=data.get("backend"))


def summarize_overlap(results: list[CaseResult]) -> OverlapSummary:
    """One row per case, in case order; ok when every case is."""
    rows = tuple(OverlapRow(key=r.key, ok=r.ok, error=r.error, **{k: r.metrics.get(k) for k in ROW_METRICS})
                 for r in results)
    first = next((r.metrics for r in results if r.metrics), {})
    return OverlapSummary(rows=rows, ok=all(r.ok for r in rows), world_size=first.get("world_size"),
                          backend=first.get("backend"))
