"""The speedups of tuned backends over the baseline, per shape and per size bucket (no torch).

Reads the shape cases that carry a ``baseline`` (see ``parity.families.gemm.speedup``): per
candidate backend, one row per shape (speedup with its CI, tuning time, the winner and its
re-check), the distribution of speedups in each size bucket (``parity.metrics.speedup``), the
subset of shapes it ran on, and every shape where it failed with the reason.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.speedup import BUCKETS, size_bucket, speedup_distribution
from parity.model.result import CaseResult


def _row(result: CaseResult) -> dict[str, Any]:
    p, m = result.params, result.metrics
    flop = 2 * int(p["m"]) * int(p["n"]) * int(p["k"])
    row: dict[str, Any] = {"key": result.key, "name": p.get("name", ""), "m": int(p["m"]), "n": int(p["n"]),
                           "k": int(p["k"]), "flop": flop, "bucket": size_bucket(flop), "ok": result.ok,
                           "error": result.error}
    if result.error is None:
        row.update({"speedup": m.get("speedup"), "speedup_ci95": m.get("speedup_ci95"), "tuning_s": m.get("tuning_s"),
                    "baseline_median_s": m.get("baseline_median_s"), "median_s": m.get("median_s"),
                    "winner": m.get("winner"), "winner_check": m.get("winner_check"),
                    "check_passed": result.check.get("passed")})
    return row


def speedup_summary(results: list[CaseResult]) -> dict[str, Any]:
    """``{candidate: {baseline, subset, method, rows, buckets, failed}}``; empty without one."""
    out: dict[str, Any] = {}
    for result in results:
        p = result.params
        if p.get("kind") != "shape" or not p.get("baseline") or p.get("again_of"):
            continue
        entry = out.setdefault(p["backend"], {"baseline": p["baseline"], "subset": p.get("subset", ""),
                                              "method": result.metrics.get("speedup_method", ""), "rows": []})
        entry["method"] = entry["method"] or result.metrics.get("speedup_method", "")
        entry["rows"].append(_row(result))
    for entry in out.values():
        rows = entry["rows"]
        good = [r for r in rows if r.get("speedup") is not None and r["ok"]]
        entry["buckets"] = {name: (speedup_distribution([r["speedup"] for r in good if r["bucket"] == name])
                                   if any(r["bucket"] == name for r in good) else {"n": 0})
                            for name, _ in BUCKETS}
        entry["overall"] = speedup_distribution([r["speedup"] for r in good]) if good else {"n": 0}
        entry["tuning_s_total"] = sum(r.get("tuning_s") or 0.0 for r in rows)
        entry["failed"] = [{"key": r["key"], "error": r["error"] or "check failed"} for r in rows if not r["ok"]]
    return out
