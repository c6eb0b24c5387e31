"""Suite-level bandwidth figures: one curve per operation, its fit, and two utilizations.

The measured ceiling follows DESIGN.md: the largest device-to-device copy measured in the run,
bytes read plus written. The datasheet peak comes from the device spec tables when the device
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
    """The bandwidth ceiling ``B`` in STREAM GB/s: the copy at the ceiling size
    (``params["ceiling_bytes"]``, the size the GEMM roofline's ceiling uses) when it was
    measured, else the largest copy measured, and the summary says which."""
    copies = [r for r in results if r.ok and r.params.get("op") == "copy" and "gbps" in r.metrics]
    if not copies:
        return None
    wanted = copies[0].params.get("ceiling_bytes")
    exact = [r for r in copies if wanted and r.params.get("bytes") == wanted]
    chosen = exact[0] if exact else max(copies, key=lambda r: r.metrics["operand_bytes"])
    method = ("device-to-device copy at the ceiling size" if exact else
              "largest device-to-device copy measured (the ceiling size was not measured)")
    return {
        "gbps": chosen.metrics["gbps"],
        "op": "copy",
        "operand_bytes": chosen.metrics["operand_bytes"],
        "convention": STREAM_CONVENTION,
        "method": method,
    }


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
    ok = [r for r in results if r.ok and "gbps" in r.metrics]
    ceiling = measured_ceiling(ok)
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
    return {
        "headline": headline,
        "device": device_name,
        "ceiling": ceiling,
        "datasheet": sheet,
        "curves": curves,
        "threads": threads[0] if len(threads) == 1 else threads or None,
        "flush": next((r.params.get("flush") for r in results), None),
        "pages": next((r.params.get("pages") for r in results), None),
        "failed_cases": [r.key for r in results if not r.ok],
    }
