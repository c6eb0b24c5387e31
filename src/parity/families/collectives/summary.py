"""The stored cases of the communication suites as table rows: times over ranks and rates.

Every timed case holds the per-iteration maximum over ranks (its samples), the minimum beside
it and each rank's own median (``meta``); a row gives the max-over-ranks median (``time_s``,
the time nccl-tests prints) and p99, the fastest rank's median, every rank's median, and the
rates the suite names, computed here from the stored median so one formula serves the table,
the JSON and the figures.
"""

from __future__ import annotations

import statistics
from typing import Any

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


def collective_row(result: CaseResult) -> dict[str, Any]:
    """One collectives case as a row (``algbw_gbps``, ``busbw_gbps`` in GB/s, 1e9 B/s)."""
    p, m = result.params, result.metrics
    row: dict[str, Any] = {"key": result.key, "op": p["op"], "dtype": p["dtype"], "placement": p["placement"],
                           "size_bytes": m.get("size_bytes", p["size_bytes"]), "count": m.get("count"),
                           "world_size": m.get("world_size"), "backend": m.get("backend"),
                           "ok": result.ok, "error": result.error, "wrong": wrong_elements(result)}
    if result.error is not None or "main" not in result.samples:
        return row
    times = rank_times(result)
    size, world = float(row["size_bytes"]), int(row["world_size"] or 1)
    rate = algbw(size, times["time_s"])
    bus = busbw(size, times["time_s"], op=p["op"], world_size=world)
    row.update(times)
    row.update({"algbw_gbps": rate / 1e9 if rate else None, "busbw_gbps": bus / 1e9 if bus else None,
                "convention": "nccl-tests: algbw = S/t, busbw = algbw*f(op, n), t = max over ranks"})
    return row


def summarize_collectives(results: list[CaseResult]) -> dict[str, Any]:
    """Rows in case order, the mean busbw per collective and over all (nccl-tests' "Avg bus
    bandwidth", over every size and placement measured), wrong elements in all, and ok."""
    rows = [collective_row(r) for r in results]
    by_op: dict[str, list[float]] = {}
    for row in rows:
        if row.get("busbw_gbps") is not None:
            by_op.setdefault(row["op"], []).append(row["busbw_gbps"])
    every = [v for values in by_op.values() for v in values]
    first = next((r for r in rows if r.get("world_size")), {})
    return {"rows": rows, "avg_busbw_gbps": {op: statistics.fmean(v) for op, v in by_op.items()},
            "avg_busbw_all_gbps": statistics.fmean(every) if every else None,
            "wrong": sum(r["wrong"] or 0 for r in rows), "ok": all(r["ok"] for r in rows),
            "world_size": first.get("world_size"), "backend": first.get("backend")}
