"""Suite-level bandwidth figures: one curve per operation, its fit, and two utilizations.

The measured ceiling follows docs/definitions.md: one dedicated large device-to-device copy, bytes read
plus written, whatever the sweep's range; a point over it is an ``over-ceiling`` finding. The datasheet peak comes from the device spec tables when the device
has an entry; otherwise the summary says so instead of inventing one.
"""

from __future__ import annotations

import logging
from typing import Any

from parity.harness.recheck import settle_rechecks
from parity.metrics.bandwidth import STREAM_CONVENTION, fit_fixed_cost, utilization
from parity.model.errors import ParityError
from parity.model.result import CaseResult
from parity.stats.trend import off_trend

log = logging.getLogger(__name__)

NO_DATASHEET = "no datasheet entry"
REGIME_LABELS = {"warm": "warm: repeated, no cache flush (launch and fixed cost)",
                 "cold": "cold: cache flushed before every call"}
# A fit whose points miss the model by more than this (relative RMS) gets a note.
POOR_FIT_RESIDUAL = 0.25


def measured_ceiling(results: list[CaseResult]) -> dict[str, Any] | None:
    """The bandwidth ceiling ``B`` in STREAM GB/s: the dedicated ceiling copy (``kind`` ceiling,
    ``parity.ceilings.bandwidth``), whatever the sweep's range. A run stored before that
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


def regime_of(result: CaseResult) -> str:
    """``warm`` (timed without a cache flush) or ``cold`` (flushed before every call)."""
    regime = result.params.get("regime")
    if regime in ("warm", "cold"):
        return str(regime)
    return "cold" if result.params.get("flush", True) else "warm"


def _curve(op: str, rows: list[CaseResult], ceiling: float | None, peak: float | None,
           regime: str = "cold") -> dict[str, Any]:
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
    curve: dict[str, Any] = {"op": op, "regime": regime, "label": REGIME_LABELS[regime],
                             "convention": STREAM_CONVENTION, "points": points}
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


def _copy_headline(curves: list[dict[str, Any]]) -> dict[str, Any]:
    """The copy's asymptotic rate from its cold (full-range) curve; its fixed cost and n½ from
    the warm curve (the fixed cost of a transfer, not of refilling the cache), named so, with the
    cold ones beside them."""
    out: dict[str, Any] = {}
    for curve in curves:
        if curve["op"] != "copy" or curve.get("asymptotic_gbps") is None:
            continue
        if curve["regime"] == "cold":
            out.update({"copy_asymptotic_gbps": curve["asymptotic_gbps"],
                        "copy_cold_fixed_cost_s": curve["fixed_cost_s"],
                        "copy_cold_n_half_bytes": curve["n_half_bytes"]})
        else:
            out.update({"copy_warm_fixed_cost_s": curve["fixed_cost_s"],
                        "copy_warm_n_half_bytes": curve["n_half_bytes"]})
    first = ("copy_warm_fixed_cost_s", "copy_warm_n_half_bytes", "copy_asymptotic_gbps")
    return {**{k: out[k] for k in first if k in out}, **{k: v for k, v in out.items() if k not in first}}


def _curve_rows(results: list[CaseResult]) -> dict[tuple[str, str], list[CaseResult]]:
    """First measurements of the sweep's points (no ceiling, no ``again`` rows), by (op, regime),
    sorted by size."""
    by_op: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        if r.ok and "gbps" in r.metrics and r.params.get("kind") != "ceiling" and not r.params.get("again_of"):
            by_op.setdefault((r.params["op"], regime_of(r)), []).append(r)
    return {k: sorted(v, key=lambda r: r.metrics["operand_bytes"]) for k, v in by_op.items()}


def off_trend_points(results: list[CaseResult]) -> list[CaseResult]:
    """The points whose GB/s is off the trend of their neighbours in size (``off_trend``)."""
    out = []
    for rows in _curve_rows(results).values():
        out += [rows[i] for i in off_trend([r.metrics["gbps"] for r in rows])]
    return out


def summarize_membw(results: list[CaseResult]) -> dict[str, Any]:
    """Curves per operation (points, fit, utilizations), the ceiling and the datasheet peak."""
    ceiling = measured_ceiling(results)
    settled, trend_findings = settle_rechecks(results, find=off_trend_points,
                                              describe=lambda r: f"{r.metrics['gbps']:.3g} GB/s")
    ok = [r for r in settled if r.ok and "gbps" in r.metrics and r.params.get("kind") != "ceiling"]
    device_name = next((r.params.get("device_name") for r in results), None)
    sheet = datasheet_peak(device_name)
    ceiling_gbps = ceiling["gbps"] if ceiling else None
    by_op: dict[tuple[str, str], list[CaseResult]] = {}
    for r in ok:
        by_op.setdefault((r.params["op"], regime_of(r)), []).append(r)
    order = ["copy", "read", "write", "triad", "h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"]
    keys = sorted(by_op, key=lambda k: (order.index(k[0]), k[1] != "cold"))
    curves = [_curve(op, by_op[(op, regime)], ceiling_gbps, sheet.get("gbps"), regime) for op, regime in keys]
    threads = sorted({r.metrics.get("threads") for r in ok if r.metrics.get("threads")})
    headline: dict[str, Any] = {"ceiling_gbps": ceiling_gbps} if ceiling_gbps else {}
    headline.update(_copy_headline(curves))
    llc = next((r.params.get("llc_bytes") for r in results if r.params.get("llc_bytes")), None)
    findings = [f for f in (over_ceiling_finding(curves, llc),) if f] + trend_findings
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
