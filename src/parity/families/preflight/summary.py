"""The preflight's summary as a typed, versioned record (SI units; the view formats them).

One row per pair of ranks (its nodes, its link, one-way latency and bandwidth), one per link
(pair of nodes: the median over its rank pairs), the slow links (``parity.metrics.links``) and
the slowest link named; within each link, the rank pairs slow against that link's median
(the same rule, so a slow pair inside one node is named too).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from parity.metrics.links import SLOW_FRACTION, one_way_bandwidth, slow_links
from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class PairRow:
    """One pair of ranks: ``ranks``, ``nodes``, ``link``, ``scope`` (intra-node | inter-node),
    one-way ``latency_s`` and ``bandwidth_bps`` (None when not measured), ``ok``, ``error``."""

    ranks: tuple[int, int]
    nodes: tuple[str, str]
    link: str
    scope: str
    latency_s: float | None = None
    bandwidth_bps: float | None = None
    ok: bool = True
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "ranks": list(self.ranks),
                "nodes": list(self.nodes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairRow:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["ranks"] = tuple(values.get("ranks") or (0, 0))
        values["nodes"] = tuple(values.get("nodes") or ("", ""))
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class LinkRow:
    """One link (pair of nodes): its ``scope``, rank ``pairs``, median one-way bandwidth (B/s)
    and latency (s) over them, and whether it is ``slow``."""

    link: str
    scope: str
    pairs: int
    bandwidth_bps: float | None
    latency_s: float | None
    slow: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LinkRow:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True, kw_only=True)
class PreflightSummary:
    """Pairs, links, the slow links (slowest first), the slowest link, the fraction used, the
    nodes and ranks, and ``ok`` (every pair's data came back intact)."""

    VERSION: ClassVar[int] = 1

    pairs: tuple[PairRow, ...] = ()
    links: tuple[LinkRow, ...] = ()
    slow: tuple[str, ...] = ()
    slow_pairs: tuple[str, ...] = ()
    slowest: str | None = None
    slow_fraction: float = SLOW_FRACTION
    nodes: tuple[str, ...] = ()
    world_size: int | None = None
    backend: str | None = None
    ok: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": [p.to_dict() for p in self.pairs], "links": [k.to_dict() for k in self.links],
                "slow": list(self.slow), "slow_pairs": list(self.slow_pairs), "slowest": self.slowest,
                "slow_fraction": self.slow_fraction,
                "nodes": list(self.nodes), "world_size": self.world_size, "backend": self.backend,
                "ok": self.ok, "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PreflightSummary:
        return cls(pairs=tuple(PairRow.from_dict(p) for p in data.get("pairs", [])),
                   links=tuple(LinkRow.from_dict(k) for k in data.get("links", [])),
                   slow=tuple(data.get("slow") or ()), slow_pairs=tuple(data.get("slow_pairs") or ()),
                   slowest=data.get("slowest"),
                   slow_fraction=float(data.get("slow_fraction") or SLOW_FRACTION),
                   nodes=tuple(data.get("nodes") or ()), world_size=data.get("world_size"),
                   backend=data.get("backend"), ok=bool(data.get("ok", True)))


def _median_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def pair_rows(results: list[CaseResult]) -> list[PairRow]:
    """The latency and bandwidth cases of each pair joined into one row, in pair order."""
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for result in results:
        p, m = result.params, result.metrics
        pair = (int(p["a"]), int(p["b"]))
        row = rows.setdefault(pair, {"ranks": pair, "nodes": tuple(m.get("nodes") or ("?", "?")),
                                     "link": m.get("link", "?"), "scope": m.get("scope", "?"), "ok": True})
        row["ok"] = row["ok"] and result.ok
        row["error"] = row.get("error") or result.error
        if result.error is None and "main" in result.samples:
            round_trip = statistics.median(result.samples["main"].values_s)
            if p["kind"] == "latency":
                row["latency_s"] = round_trip / 2.0
            else:
                row["bandwidth_bps"] = one_way_bandwidth(float(p["size_bytes"]), round_trip)
    return [PairRow.from_dict(row) for _, row in sorted(rows.items())]


def summarize_preflight(results: list[CaseResult], *, slow_fraction: float = SLOW_FRACTION) -> PreflightSummary:
    """Pairs, links (median over their pairs), slow links by ``slow_links``, the slowest link."""
    pairs = pair_rows(results)
    grouped: dict[str, list[PairRow]] = {}
    for row in pairs:
        grouped.setdefault(row.link, []).append(row)
    bandwidths = {name: bw for name, rows in grouped.items()
                  if (bw := _median_or_none([r.bandwidth_bps for r in rows])) is not None}
    slow = slow_links(bandwidths, fraction=slow_fraction)
    links = [LinkRow(link=name, scope=rows[0].scope, pairs=len(rows), bandwidth_bps=bandwidths.get(name),
                     latency_s=_median_or_none([r.latency_s for r in rows]), slow=name in slow)
             for name, rows in sorted(grouped.items())]
    slow_pairs = [name for rows in grouped.values()
                  for name in slow_links({f"{r.ranks[0]}-{r.ranks[1]}": r.bandwidth_bps for r in rows
                                          if r.bandwidth_bps is not None}, fraction=slow_fraction)]
    first = next((r for r in results if r.metrics.get("world_size")), None)
    nodes = sorted({n for row in pairs for n in row.nodes})
    return PreflightSummary(pairs=tuple(pairs), links=tuple(links), slow=tuple(slow),
                            slow_pairs=tuple(slow_pairs),
                            slowest=min(bandwidths, key=lambda k: bandwidths[k]) if bandwidths else None,
                            slow_fraction=slow_fraction, nodes=tuple(nodes),
                            world_size=first.metrics.get("world_size") if first else None,
                            backend=first.metrics.get("backend") if first else None,
                            ok=all(r.ok for r in pairs))
