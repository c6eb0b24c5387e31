"""``compare_traces``: two or more trace analyses side by side, per category and per stream.

Each trace's figures are taken as its own analysis states them (``parity trace analyze``'s
JSON document, stored or fresh), never recomputed: per category the union time and its share
of device busy time, per stream the busy time, busy fraction and share of summed device time,
compute against communication (union of compute, of communication, their overlap and the
exposed communication, with the hidden fraction as the share), and the device totals, all of the analysed rank (the first rank, or the one asked for) inside
that trace's own window, which is stated. ``ratio`` is the time in a trace over the time in
the first (lower is less time spent there). The audit lists what differs in how the analyses
were made: trace format, category rules, how the window was chosen and its length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from parity.compare.audit import AuditEntry
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.schema import SCHEMA_VERSION


@dataclass(frozen=True, kw_only=True)
class TraceInput:
    """One analysis to compare: a label, where it came from, and its analysis document."""

    label: str
    analysis: dict[str, Any]
    analysis_id: str | None = None
    paths: tuple[str, ...] = ()
    sha256: str | None = None
    rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class SideBySide:
    """Analyses side by side (traces, fleets); :meth:`to_dict` follows the runs comparison's
    schema, with the subclass's ``KIND`` and ``RATIO_METHOD``."""

    KIND: ClassVar[str]
    RATIO_METHOD: ClassVar[str]
    runs: tuple[dict[str, Any], ...]
    cases: tuple[dict[str, Any], ...]
    audit: tuple[AuditEntry, ...]
    claims: tuple[str, ...]
    summary: tuple[Figure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "kind": self.KIND, "runs": [dict(r) for r in self.runs],
                "cases": [dict(c) for c in self.cases], "summary": [f.to_dict() for f in self.summary],
                "audit": [a.to_dict() for a in self.audit],
                "claims": list(self.claims), "forced": False, "ratio_method": self.RATIO_METHOD}


@dataclass(frozen=True, kw_only=True)
class TraceComparison(SideBySide):
    """Traces side by side."""

    KIND: ClassVar[str] = "traces"
    RATIO_METHOD: ClassVar[str] = "time in the trace / time in the first trace, inside each trace's own window"


def _rank_of(item: TraceInput) -> dict[str, Any]:
    ranks = item.analysis.get("ranks") or []
    if not ranks:
        raise ParityError(f"trace analysis {item.label!r} has no ranks; analyse the trace again")
    if item.rank is None:
        return ranks[0]
    for rank in ranks:
        if rank.get("rank") == item.rank:
            return rank
    raise ParityError(f"trace {item.label!r} has no rank {item.rank}; it has {[r.get('rank') for r in ranks]}")


def _describe(item: TraceInput, rank: dict[str, Any]) -> dict[str, Any]:
    return {"id": item.analysis_id, "label": item.label, "source": item.analysis.get("source"),
            "format": item.analysis.get("format"), "rules": item.analysis.get("rules"), "paths": list(item.paths),
            "sha256": item.sha256, "rank": rank.get("rank"), "window": rank.get("window"),
            "device": None, "device_type": None, "mode": "trace"}


def _ratio(values: list[float | None]) -> float | None:
    first, last = values[0], values[-1]
    return last / first if first and last is not None else None


def _row(suite: str, key: str, entries: Sequence[dict[str, Any] | None], busy: str, share: str,
         extra: tuple[str, ...] = ()) -> dict[str, Any]:
    values = [e.get(busy) if e else None for e in entries]
    row: dict[str, Any] = {"suite": suite, "key": key, "params": {}, "values": values, "unit": "us",
           "shares": [e.get(share) if e else None for e in entries], "share_name": share,
           "ratio": _ratio(values), "ratio_ci95": None, "marked": False}
    for name in extra:
        row[name] = [e.get(name) if e else None for e in entries]
    return row


def compare_traces(analyses: list[TraceInput]) -> TraceComparison:
    """Per category, per stream and for the device: busy and share side by side."""
    if len(analyses) < 2:
        raise ParityError("compare needs at least two traces or stored trace analyses")
    ranks = [_rank_of(a) for a in analyses]
    rows: list[dict[str, Any]] = []
    categories = [{c["category"]: c for c in r.get("categories") or []} for r in ranks]
    for name in dict.fromkeys(k for table in categories for k in table):
        rows.append(_row("category", name, [t.get(name) for t in categories], "time_us", "share_of_busy",
                         ("kernels", "summed_us")))
    streams = [{f"device {s['device']} stream {s['stream']}": s for s in r.get("streams") or []} for r in ranks]
    for name in dict.fromkeys(k for table in streams for k in table):
        rows.append(_row("stream", name, [t.get(name) for t in streams], "busy_us", "share_of_summed",
                         ("busy_fraction", "kernels")))
    comm = [dict(r.get("compute_communication") or {}) for r in ranks]
    for name, field_name in (("compute", "compute_us"), ("communication", "communication_us"),
                             ("overlap", "overlap_us"), ("exposed communication", "exposed_communication_us")):
        rows.append(_row("compute-communication", name, comm, field_name, "hidden_fraction"))
    devices = [dict(r.get("device") or {}) for r in ranks]
    rows.append(_row("device", "all streams", devices, "busy_us", "busy_fraction",
                     ("window_us", "idle_us", "summed_busy_us", "mean_concurrency")))
    runs = tuple(_describe(a, r) for a, r in zip(analyses, ranks))
    audit = _audit(runs)
    claims = [_claim(runs, devices)]
    return TraceComparison(runs=runs, cases=tuple(rows), audit=tuple(audit), claims=tuple(claims),
                           summary=tuple(_figures(runs, devices, comm)))


def _figures(runs: tuple[dict[str, Any], ...], devices: list[dict[str, Any]],
             comm: list[dict[str, Any]]) -> list[Figure]:
    """Each trace's device busy fraction and exposed communication, as its analysis states them."""
    out = []
    for run, device, overlap in zip(runs, devices, comm):
        window = run["window"] or {}
        scope = {"trace": run["label"], "rank": run["rank"], "window": window.get("source"),
                 "window_us": window.get("length_us")}
        out.append(Figure(name="trace.device.busy_fraction", value=device.get("busy_fraction", 0.0), unit="1",
                          method="|union of all device activity inside W| / |W|", scope=scope))
        out.append(Figure(name="trace.exposed_communication", value=overlap.get("exposed_communication_us", 0.0) / 1e6,
                          unit="s", method="communication minus compute inside W", scope=scope))
    return out


def _audit(runs: tuple[dict[str, Any], ...]) -> list[AuditEntry]:
    entries = []
    for condition, read, matters in (
        ("trace format", lambda r: r["format"], "profilers attribute device time differently (tasks, kernels, ops)"),
        ("category rules", lambda r: r["rules"], "categories made by other rules hold other kernels"),
        ("window choice", lambda r: (r["window"] or {}).get("source"),
         "a steady-state window and a whole span include different warm-up and idle time"),
        ("window length", lambda r: (r["window"] or {}).get("length_us"),
         "busy fractions are over each trace's own window; times are not per step unless the windows are steps"),
    ):
        values = tuple(read(r) for r in runs)
        if len({repr(v) for v in values}) > 1:
            entries.append(AuditEntry(condition=condition, values=values, matters=matters))
    return entries


def _claim(runs: tuple[dict[str, Any], ...], devices: list[dict[str, Any]]) -> str:
    parts = []
    for run, device in zip(runs, devices):
        window = run["window"] or {}
        parts.append(f"{run['label']}: device busy {device.get('busy_fraction', 0.0):.1%} of a "
                     f"{window.get('length_us', 0.0) / 1e3:.3g} ms {window.get('source')} window")
    return "in each trace's own window (rank shown), " + "; ".join(parts)
