"""Suite-level bandwidth figures: one curve per operation, its fit, and two utilizations.

The measured ceiling follows DESIGN.md: one dedicated large device-to-device copy, bytes read
plus written, whatever the sweep's range; a point over it is an ``over-ceiling`` finding. The datasheet peak comes from the device spec tables when the device
has an entry; otherwise the summary says so instead of inventing one.
"""

from __future__ import annotations

import logging
from typing import Any

from parity.metrics.bandwidth import STREAM_CONVENTION, fit_fixed_cost, utilization
from parity.model.errors import ParityError
from parity.model.result import CaseResult

log = logging.getLogger(__name__)

NO_DATASHEET = "no datasheet entry"
# A fit whose points miss the model by more than this (relative RMS) gets a note.
POOR_FIT_RESIDUAL = 0.25


def measured_ceiling(results: list[CaseResult]) -> dict[str, Any] | None:
    """The bandwidth ceiling ``B`` in STREAM GB/s: the dedicated ceiling copy (``kind`` ceiling,
    ``parity.bench.bandwidth_ceiling``), whatever the sweep's range. A run stored before that
    case existed falls back to its largest copy, and the method says so."""
    dedicated = [r for r in results if r.ok and r.params.get("kind") == "ceiling" and r.metrics.get("gbps")]
    if dedicated:
        chosen, method = dedicated[0], "dedicated device-to-device copy"
    else:
        copies = [r for r in results if r.ok and r.params.get("op") == "copy" and "gbps" in r.metrics]
        if not copies:
            return None
        chosen = max(copies, key=lambda r: r.metrics["operand_bytes"])
        method = "largest device-to-device copy measured (this run has no dedicated ceiling copy)"
    return {
        "gbps": chosen.metrics["gbps"],
        "op": "copy",
        "operand_bytes": chosen.metrics["operand_bytes"],
        "median_s": chosen.metrics.get("median_s"),
        "convention": STREAM_CONVENTION,
        "method": method,
    }


def over_ceiling_finding(curves: list[dict[str, Any]], llc_bytes: int | None) -> dict[str, Any] | None:
    """An ``over-ceiling`` warning (a dict, as summaries hold) naming every point whose GB/s
    exceeds the measured ceiling (``utilization_ceiling > 1``); None when there is none."""
    over = [(c["op"], p) for c in curves for p in c["points"] if (p.get("utilization_ceiling") or 0) > 1.0]
    if not over:
        return None
    shown = ", ".join(f"{op} {p['operand_bytes']} B at {p['utilization_ceiling']:.0%}" for op, p in over[:8])
    cached = llc_bytes and all(p["operand_bytes"] <= llc_bytes for _, p in over)
    why = ("every one fits in the last-level cache, so it measures the cache, not memory" if cached
           else "a point beats the memory ceiling: the ceiling copy was disturbed, or the point was")
    return {"code": "over-ceiling", "severity": "warning",
            "message": f"{len(over)} point(s) exceed the measured ceiling ({shown}{', ...' if len(over) > 8 else ''}); {why}",
            "hint": "read those points as cache bandwidth, or measure again on an idle machine"}


def datasheet_peak(device_name: str | None) -> dict[str, Any]:
    """The datasheet memory bandwidth of ``device_name`` with its source, or a note saying none."""
    if not device_name:
        return {"gbps": None, "note": NO_DATASHEET}
    try:
        from parity.metrics import specs  # written with the GEMM suite's spec tables
    except ImportError:
        return {"gbps": None, "note": NO_DATASHEET}
    lookup = getattr(specs, "memory_bandwidth", None)
    if lookup is None:
        return {"gbps": None, "note": NO_DATASHEET}
    try:
        found = lookup(device_name)
    except ParityError:
        found = None
    if not found:
        return {"gbps": None, "note": f"{NO_DATASHEET} for {device_name!r}"}
    return dict(found)


def _curve(op: str, rows: list[CaseResult], ceiling: float | None, peak: float | None) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: r.metrics["operand_bytes"])
    points = []
    for r in rows:
        m = r.metrics
        points.append({
            "operand_bytes": m["operand_bytes"],
            "bytes_moved": m["bytes_moved"],
            "median_s": m["median_s"],
            "iqr_s": m["iqr_s"],
            "gbps": m["gbps"],
            "operand_gbps": m["operand_gbps"],
            "utilization_ceiling": utilization(m["gbps"], ceiling),
            "utilization_datasheet": utilization(m["gbps"], peak),
        })
    curve: dict[str, Any] = {"op": op, "convention": STREAM_CONVENTION, "points": points}
    volumes = [p["bytes_moved"] for p in points]
    fit = None
    try:
        fit = fit_fixed_cost(volumes, [p["median_s"] for p in points])
    except ParityError as exc:
        curve.update({"fixed_cost_s": None, "asymptotic_gbps": None, "n_half_bytes": None,
                      "note": f"no fit: {exc}"})
    if fit is not None:
        curve.update(fit.to_dict())
        if fit.relative_rms_residual > POOR_FIT_RESIDUAL:
            curve["note"] = (
                f"t = a + V/b misses the points by {fit.relative_rms_residual:.0%} RMS: the curve "
                "has more than one regime (caches, page faults); read b with care"
            )
    return curve


def summarize_membw(results: list[CaseResult]) -> dict[str, Any]:
    """Curves per operation (points, fit, utilizations), the ceiling and the datasheet peak."""
    ceiling = measured_ceiling(results)
    ok = [r for r in results if r.ok and "gbps" in r.metrics and r.params.get("kind") != "ceiling"]
    device_name = next((r.params.get("device_name") for r in results), None)
    sheet = datasheet_peak(device_name)
    ceiling_gbps = ceiling["gbps"] if ceiling else None
    by_op: dict[str, list[CaseResult]] = {}
    for r in ok:
        by_op.setdefault(r.params["op"], []).append(r)
    order = ["copy", "read", "write", "triad", "h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"]
    curves = [_curve(op, by_op[op], ceiling_gbps, sheet.get("gbps")) for op in sorted(by_op, key=order.index)]
    threads = sorted({r.metrics.get("threads") for r in ok if r.metrics.get("threads")})
    copy = next((c for c in curves if c["op"] == "copy"), None)
    headline: dict[str, Any] = {"ceiling_gbps": ceiling_gbps} if ceiling_gbps else {}
    if copy and copy.get("asymptotic_gbps") is not None:
        headline.update({"copy_asymptotic_gbps": copy["asymptotic_gbps"],
                         "copy_fixed_cost_s": copy["fixed_cost_s"], "copy_n_half_bytes": copy["n_half_bytes"]})
    llc = next((r.params.get("llc_bytes") for r in results if r.params.get("llc_bytes")), None)
    findings = [f for f in (over_ceiling_finding(curves, llc),) if f]
    return {
        "headline": headline,
        "findings": findings,
        "device": device_name,
        "ceiling": ceiling,
        "datasheet": sheet,
        "curves": curves,
        "threads": threads[0] if len(threads) == 1 else threads or None,
        "flush": next((r.params.get("flush") for r in results), None),
        "pages": next((r.params.get("pages") for r in results), None),
        "failed_cases": [r.key for r in results if not r.ok],
    }
