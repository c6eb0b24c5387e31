"""The MoE exchange's summary as a typed, versioned record: times over ranks, and the rate in
each labelled byte convention (SI units: s, B, B/s; the views format them).

``from_dict`` reads a summary stored by any version: version 1 held the rates in GB/s
(``gbps``, ``*_gbps``), converted here; keys it does not know are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from parity.families.collectives.summary import GIGA, rank_times, wrong_elements
from parity.families.moe.deepep import CONVENTION as DEEPEP_CONVENTION
from parity.metrics.collectives import algbw
from parity.metrics.moe import moe_busbw
from parity.model.result import CaseResult

# Convention key -> its label (bytes per rank, mean over ranks; t the max over ranks).
CONVENTIONS = {
    "algorithm": "DeepEP algorithm bytes: every top-k copy, own rank included",
    "logical": "logical bytes: one row per destination rank, own rank included",
    "cross_rank": "cross-rank bytes: rows to other ranks only (one host: all scale-up)",
    "bus": "nccl-tests-style bus: logical/t * (n-1)/n",
}
# Where the topology is known (parity.ranks.topology), the cross-rank bytes split by destination.
SCALE_CONVENTIONS = {
    "scale_up": "scale-up bytes: cross-rank rows to ranks of the same node",
    "scale_out": "scale-out bytes: rows to ranks of other nodes",
}
SHAPE = ("direction", "dispatch_dtype", "tokens", "hidden", "top_k", "experts", "world_size", "backend", "row_bytes")


@dataclass(frozen=True, kw_only=True)
class ConventionRate:
    """One exchange's rate in one convention: its key ``name``, its label, the bytes it counts
    per rank (mean over ranks) and ``bps`` = bytes / t, B/s (None when t is not positive)."""

    name: str
    convention: str
    bytes: float
    bps: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "convention": self.convention, "bytes": self.bytes, "bps": self.bps}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConventionRate:
        bps = data.get("bps")
        if bps is None and data.get("gbps") is not None:
            bps = data["gbps"] * GIGA
        return cls(name=data["name"], convention=data.get("convention", ""), bytes=data.get("bytes", 0.0), bps=bps)


@dataclass(frozen=True, kw_only=True)
class MoeRow:
    """One exchange case: its shape (``direction`` dispatch or combine, ``dispatch_dtype``,
    ``tokens`` per rank, ``hidden``, ``top_k``, ``experts``, ranks, ``row_bytes``), its check,
    and when timed its times over ranks (s), its rates per convention, ``algbw_bps`` (logical
    bytes / t) and ``busbw_bps`` (the bus convention), B/s."""

    key: str
    ok: bool = False
    error: str | None = None
    wrong: int | None = None
    check_method: str = ""
    direction: str | None = None
    dispatch_dtype: str | None = None
    tokens: int | None = None
    hidden: int | None = None
    top_k: int | None = None
    experts: int | None = None
    world_size: int | None = None
    backend: str | None = None
    row_bytes: int | None = None
    time_s: float | None = None
    time_p99_s: float | None = None
    fastest_rank_s: float | None = None
    rank_median_s: tuple[float, ...] = ()
    iterations: int | None = None
    timing: str | None = None
    conventions: tuple[ConventionRate, ...] = ()
    algbw_bps: float | None = None
    busbw_bps: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["rank_median_s"] = list(self.rank_median_s)
        out["conventions"] = [c.to_dict() for c in self.conventions]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MoeRow:
        values = {k: v for k, v in data.items() if k in {f.name for f in fields(cls)}}
        for name in ("algbw", "busbw"):
            if values.get(f"{name}_bps") is None and data.get(f"{name}_gbps") is not None:
                values[f"{name}_bps"] = data[f"{name}_gbps"] * GIGA
        values["rank_median_s"] = tuple(values.get("rank_median_s") or ())
        values["conventions"] = tuple(ConventionRate.from_dict(c) for c in values.get("conventions") or ())
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class MoeSummary:
    """Rows in case order; the routing's source, digest and imbalance (max/mean tokens per
    expert); wrong rows; ``ok``; the convention labels; why each MoE library was not measured."""

    VERSION: ClassVar[int] = 2

    rows: tuple[MoeRow, ...] = ()
    ok: bool = True
    wrong: int = 0
    world_size: int | None = None
    backend: str | None = None
    routing: str | None = None
    routing_digest: str | None = None
    imbalance_ratio: float | None = None
    conventions: dict[str, str] = field(default_factory=lambda: dict(CONVENTIONS))
    library_backends: dict[str, str] = field(default_factory=dict)
    topology: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["rows"] = [r.to_dict() for r in self.rows]
        return {**out, "conventions": dict(self.conventions), "library_backends": dict(self.library_backends),
                "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MoeSummary:
        values = {k: v for k, v in data.items() if k in {f.name for f in fields(cls)}}
        values["rows"] = tuple(MoeRow.from_dict(r) for r in data.get("rows", []))
        values["wrong"] = int(values.get("wrong") or 0)
        values["conventions"] = dict(values.get("conventions") or CONVENTIONS)
        values["library_backends"] = dict(values.get("library_backends") or {})
        return cls(**values)


def moe_row(result: CaseResult) -> MoeRow:
    """One MoE case as a row: times, the rate in each convention, ``algbw_bps`` (the
    nccl-tests algbw of the exchange: logical bytes / t) and ``busbw_bps``."""
    m = result.metrics
    base = {"key": result.key, "ok": result.ok, "error": result.error, "wrong": wrong_elements(result),
            "check_method": result.check.get("method", ""), **{k: m.get(k) for k in SHAPE}}
    if result.error is not None or "main" not in result.samples:
        return MoeRow.from_dict(base)
    times = rank_times(result)
    t, world = times["time_s"], int(m.get("world_size") or 1)
    rates = {"algorithm": algbw(m["algorithm_bytes"], t), "logical": algbw(m["logical_bytes"], t),
             "cross_rank": algbw(m["cross_rank_bytes"], t),
             "bus": moe_busbw(m["logical_bytes"], t, world_size=world)}
    amounts = {"algorithm": m["algorithm_bytes"], "logical": m["logical_bytes"],
               "cross_rank": m["cross_rank_bytes"], "bus": m["logical_bytes"]}
    labels = dict(CONVENTIONS)
    if m.get("deepep_recv_bytes") is not None:  # DeepEP's own kernels (parity.families.moe.deepep)
        amounts["deepep"], rates["deepep"] = m["deepep_recv_bytes"], algbw(m["deepep_recv_bytes"], t)
        labels["deepep"] = DEEPEP_CONVENTION
    if m.get("scale_up_bytes") is not None:
        for key in SCALE_CONVENTIONS:
            amounts[key] = m[f"{key}_bytes"]
            rates[key] = algbw(m[f"{key}_bytes"], t)
        labels.update(SCALE_CONVENTIONS)
    conventions = tuple(ConventionRate(name=key, convention=label, bytes=amounts[key], bps=rates[key] or None)
                        for key, label in labels.items())
    return replace(MoeRow.from_dict({**base, **times}), conventions=conventions,
                   algbw_bps=rates["logical"] or None, busbw_bps=rates["bus"] or None)


def summarize_moe(results: list[CaseResult]) -> MoeSummary:
    """Rows in case order, the routing's source, digest and imbalance, wrong rows, and ok."""
    rows = tuple(moe_row(r) for r in results)
    first = next((r.metrics for r in results if r.metrics), {})
    return MoeSummary(rows=rows, ok=all(r.ok for r in rows), wrong=sum(r.wrong or 0 for r in rows),
                      world_size=first.get("world_size"), backend=first.get("backend"),
                      routing=first.get("routing"), routing_digest=first.get("routing_digest"),
                      imbalance_ratio=first.get("imbalance_ratio"),
                      conventions={**CONVENTIONS, **(SCALE_CONVENTIONS if first.get("scale_up_bytes") is not None
                                                     else {})},
                      library_backends=dict(first.get("library_backends", {})), topology=first.get("topology"))
