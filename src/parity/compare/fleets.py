"""``compare_fleets``: two or more fleet analyses side by side: arrival skew, wait and bus
bandwidth per op, and the stragglers.

Each fleet's figures are taken as its stored headline states them
(:func:`parity.trace.fleet.folder.fleet_headline`: median and p99 of the collectives' skew,
the sum of the ranks' waits, the median busbw per op) and its straggler table, never
recomputed (the wait per collective, :func:`wait_per_collective`, is the one figure derived
from them). ``ratio`` is the value in the last fleet over the first (for skew and wait, lower
is better; for busbw, higher). The audit lists what differs in how the fleets were made or what
they hold: the rank count, the collectives matched, ranks per node, the ops matched, the
straggler step-cost method; and, whenever a fleet has any, the ops a clock offset shows in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from parity.compare.audit import AuditEntry
from parity.compare.traces import SideBySide
from parity.model.errors import ParityError
from parity.model.figure import Figure, format_value


@dataclass(frozen=True, kw_only=True)
class FleetInput:
    """One fleet to compare: a label, its id or folder, its headline and straggler table."""

    label: str
    headline: dict[str, Any]
    stragglers: tuple[dict[str, Any], ...] = ()
    analysis_id: str | None = None
    out_dir: str = ""
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class FleetComparison(SideBySide):
    """Fleets side by side."""

    KIND: ClassVar[str] = "fleets"
    RATIO_METHOD: ClassVar[str] = "value in the last fleet / value in the first, from each fleet's own tables"


def _s(ns: Any) -> float | None:
    return None if ns is None else float(ns) / 1e9


def _row(suite: str, key: str, values: list[Any], unit: str) -> dict[str, Any]:
    first, last = values[0], values[-1]
    ratio = last / first if first and last is not None else None
    return {"suite": suite, "key": key, "params": {}, "values": values, "unit": unit, "ratio": ratio,
            "ratio_ci95": None, "marked": False}


def wait_per_collective(wait_total_ns: Any, collectives: Any) -> float | None:
    """The ranks' summed wait per matched collective, ``wait_total / collectives`` (ns): a total
    grows with the collectives a fleet's traces hold (more steps traced, more of them), this
    does not; None without a wait or a collective."""
    if wait_total_ns is None or not collectives:
        return None
    return float(wait_total_ns) / float(collectives)


def _ops(item: FleetInput) -> dict[str, dict[str, Any]]:
    return {o["op"]: o for o in item.headline.get("ops") or []}


def fleet_rows(fleets: list[FleetInput]) -> list[dict[str, Any]]:
    """The compared lines: the fleet's headline, then per op, then per straggler rank."""
    heads = [f.headline for f in fleets]
    rows = [_row("fleet", "ranks", [h.get("ranks") for h in heads], "count"),
            _row("fleet", "matched collectives", [h.get("collectives") for h in heads], "count"),
            _row("fleet", "arrival skew, median", [_s(h.get("skew_median_ns")) for h in heads], "s"),
            _row("fleet", "arrival skew, p99", [_s(h.get("skew_p99_ns")) for h in heads], "s"),
            _row("fleet", "wait, all ranks", [_s(h.get("wait_total_ns")) for h in heads], "s"),
            _row("fleet", "wait per collective", [_s(wait_per_collective(h.get("wait_total_ns"), h.get("collectives")))
                                                  for h in heads], "s"),
            _row("fleet", "stragglers", [len(h.get("straggler_ranks") or []) for h in heads], "count")]
    ops = [_ops(f) for f in fleets]
    for op in sorted({name for table in ops for name in table}):
        entries = [table.get(op) or {} for table in ops]
        for key, field_name, unit, scale in (
            ("collectives", "collectives", "count", None), ("skew, median", "skew_median_ns", "s", _s),
            ("skew, p99", "skew_p99_ns", "s", _s), ("wait", "wait_total_ns", "s", _s),
            ("comm, median", "comm_median_ns", "s", _s), ("busbw, median", "busbw_median_bps", "B/s", None),
        ):
            values = [e.get(field_name) for e in entries]
            rows.append(_row(f"op {op}", key, [scale(v) if scale else v for v in values], unit))
            if field_name == "wait_total_ns":
                rows.append(_row(f"op {op}", "wait per collective", [
                    _s(wait_per_collective(e.get("wait_total_ns"), e.get("collectives"))) for e in entries], "s"))
    tables = [{int(s["rank"]): s for s in f.stragglers} for f in fleets]
    flagged = sorted({int(r) for h in heads for r in h.get("straggler_ranks") or []})
    for rank in flagged:
        entries = [t.get(rank) or {} for t in tables]
        rows.append(_row("straggler", f"rank {rank}: times last", [e.get("times_last") for e in entries], "count"))
        rows.append(_row("straggler", f"rank {rank}: step cost", [_s(e.get("step_cost_ns")) for e in entries], "s"))
        if any("held_ns" in e for e in entries):  # a folder reduced before the time test has no such column
            rows.append(_row("straggler", f"rank {rank}: time held", [_s(e.get("held_ns")) for e in entries], "s"))
    return rows


def compare_fleets(fleets: list[FleetInput]) -> FleetComparison:
    """Skew, wait, busbw per op and the stragglers of each fleet side by side."""
    if len(fleets) < 2:
        raise ParityError("compare needs at least two fleet analyses (fleet-... ids, fleet:latest or fleet folders)")
    runs = tuple({"id": f.analysis_id, "label": f.label, "source": f.out_dir, "out_dir": f.out_dir,
                  "ranks": f.headline.get("ranks"), "ranks_per_node": f.headline.get("ranks_per_node"),
                  "mode": "fleet", "straggler_ranks": list(f.headline.get("straggler_ranks") or [])} for f in fleets)
    return FleetComparison(runs=runs, cases=tuple(fleet_rows(fleets)), audit=tuple(_audit(fleets)),
                           claims=(_claim(fleets),), summary=tuple(_figures(fleets)))


def _methods(item: FleetInput) -> str:
    return ", ".join(sorted({str(s.get("method")) for s in item.stragglers if s.get("method")})) or "none"


def _audit(fleets: list[FleetInput]) -> list[AuditEntry]:
    entries = []
    for condition, read, matters in (
        ("ranks", lambda f: f.headline.get("ranks"), "skew and wait grow with the members of a collective"),
        ("matched collectives", lambda f: f.headline.get("collectives"),
         "a total (the wait of all ranks, per op too) grows with the collectives the traces hold, so with the "
         "steps traced: compare the wait per collective"),
        ("ranks per node", lambda f: f.headline.get("ranks_per_node"),
         "which collectives are intra- or inter-node, and so their busbw"),
        ("ops matched", lambda f: ", ".join(sorted(_ops(f))), "an op in one fleet only has nothing to compare to"),
        ("step cost method", _methods, "first-order and replay costs are different estimates"),
    ):
        values = tuple(read(f) for f in fleets)
        if len({repr(v) for v in values}) > 1:
            entries.append(AuditEntry(condition=condition, values=values, matters=matters))
    clocks = tuple(_clock_ops(f) for f in fleets)
    if any(clocks):  # listed even when the counts are equal: an offset matters on its own, as contention does
        entries.append(AuditEntry(condition="clock-suspect ops", values=clocks, matters=(
            "ops that ended before their collective's last member arrived (impossible on one clock): that fleet's "
            "arrival figures (skew, wait, times last) carry a clock offset between ranks, and a straggler named "
            "only with such collectives is in doubt")))
    return entries


def _clock_ops(item: FleetInput) -> int:
    """The ops ``fleet.json`` counts under ``clock_offset_suspected`` (0 when it names none)."""
    found = item.summary.get("findings") or {}
    if isinstance(found, list):  # findings already as finding dicts: their count is not kept apart
        return sum(1 for f in found if isinstance(f, dict) and f.get("code") == "clock_offset_suspected")
    entry = found.get("clock_offset_suspected") if isinstance(found, dict) else None
    count = entry.get("count") if isinstance(entry, dict) else entry
    return int(count) if isinstance(count, int) and not isinstance(count, bool) else 0


def _figures(fleets: list[FleetInput]) -> list[Figure]:
    out = []
    for f in fleets:
        scope = {"fleet": f.label, "ranks": f.headline.get("ranks")}
        method = f.headline.get("method", "")
        for name, key in (("fleet.skew.median", "skew_median_ns"), ("fleet.skew.p99", "skew_p99_ns"),
                          ("fleet.wait.total", "wait_total_ns")):
            out.append(Figure(name=name, value=_s(f.headline.get(key)), unit="s", method=method, scope=scope))
    return out


def _claim(fleets: list[FleetInput]) -> str:
    parts = []
    for f in fleets:
        skew = _s(f.headline.get("skew_median_ns"))
        doubted = set(f.headline.get("straggler_ranks_in_doubt") or [])
        ranks = ", ".join(f"{r} (in doubt: clock offset)" if r in doubted else str(r)
                          for r in f.headline.get("straggler_ranks") or []) or "none"
        parts.append(f"{f.label}: {f.headline.get('ranks')} ranks, median skew {format_value(skew, 's')}, "
                     f"stragglers {ranks}")
    return ("over each fleet's matched collectives; " + "; ".join(parts)
            + f"; each ratio is the figure of {fleets[-1].label} over that of {fleets[0].label}, not a speed "
              "(for skew and wait < 1 is less, for busbw > 1 is more)")
