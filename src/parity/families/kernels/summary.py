"""From stored ``kernels`` cases to per-operation rows, roofline figures and library reasons
(no torch, no device).

Each operation case is placed on the roofline of its dtype's measured ceiling ``P`` (fp8 GEMM
on the fp8 ceiling where one was measured, else bf16's, and the row says which) and the
measured bandwidth ``B``: intensity ``AI = F/Q`` from the declared work, attainable
``min(P, AI·B)``, efficiency ``achieved/attainable`` (``parity.metrics.roofline.place``). A
library kernel's row carries its speedup over the torch reference of the same inputs, the ratio
of medians with a bootstrap CI (``parity.stats.summary.ratio_ci``).
"""

from __future__ import annotations

from typing import Any

from parity.metrics.roofline import place
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.stats.summary import ratio_ci

CEILING_OF = {"fp8_gemm": ("fp8", "bf16")}
DEFAULT_CEILINGS = ("bf16",)
STATISTIC = "median call; P the median confirmation round of the ceiling search"


def _ceilings(results: list[CaseResult]) -> tuple[dict[str, float], float | None, dict[str, Any]]:
    peaks: dict[str, float] = {}
    bandwidth, errors = None, {}
    for r in results:
        kind = r.params.get("kind")
        if kind == "ceiling":
            if r.error is None and r.metrics.get("ceiling_flops"):
                peaks[r.params["dtype"]] = float(r.metrics["ceiling_flops"])
            else:
                errors[f"ceiling/{r.params['dtype']}"] = r.error or "no ceiling measured"
        elif kind == "bandwidth":
            if r.error is None and r.metrics.get("bandwidth_bps"):
                bandwidth = float(r.metrics["bandwidth_bps"])
            else:
                errors["bandwidth"] = r.error or "no bandwidth measured"
    return peaks, bandwidth, errors


def op_row(result: CaseResult, *, peaks: dict[str, float], bandwidth: float | None) -> dict[str, Any]:
    """One operation case's figures (SI units)."""
    p, m = result.params, result.metrics
    measure = next((k for k in ("relative_error", "similarity_diff") if k in result.check), None)
    row: dict[str, Any] = {
        "key": result.key, "op": p["op"], "impl": p["impl"], "shape": result.key.split("/", 2)[2],
        "ok": result.ok, "error": result.error, "findings": [f.code for f in result.findings],
        "check": {"passed": result.check.get("passed"), "measure": measure,
                  "value": result.check.get(measure) if measure else None,
                  "tolerance": result.check.get("tolerance"), "tolerance_from": result.check.get("tolerance_from")},
    }
    if result.error is not None or "median_s" not in m:
        return row
    row.update({key: m.get(key) for key in ("median_s", "iqr_s", "ci95_s", "flop", "flop_per_s", "bytes",
                                            "bytes_per_s", "arithmetic_intensity")})
    for key in ("flop_without_causal_mask", "reference_computed_flop", "group_m", "seqlens"):
        if key in m:
            row[key] = m[key]
    ceiling_dtype = next((d for d in CEILING_OF.get(p["op"], DEFAULT_CEILINGS) if d in peaks), None)
    row["ceiling_dtype"] = ceiling_dtype
    if ceiling_dtype and bandwidth and m.get("flop_per_s"):
        point = place(intensity=float(m["arithmetic_intensity"]), achieved_flops=float(m["flop_per_s"]),
                      peak_flops=peaks[ceiling_dtype], bandwidth_bps=bandwidth)
        row.update(point.to_dict())
    return row


def _speedups(rows: list[dict[str, Any]], results: list[CaseResult]) -> None:
    """Library rows get ``speedup_vs_torch`` = torch median / library median with a CI."""
    samples = {r.key: r.samples["main"].values_s for r in results if "main" in r.samples}
    for row in rows:
        if row["impl"] == "torch" or row["key"] not in samples:
            continue
        torch_key = f"{row['op']}/torch/{row['shape']}"
        if torch_key in samples:
            ratio, low, high = ratio_ci(samples[torch_key], samples[row["key"]])
            row["speedup_vs_torch"] = {"ratio": ratio, "ci95": [low, high], "method": "ratio of medians, torch/library"}


def library_status(results: list[CaseResult]) -> list[dict[str, Any]]:
    """Per (operation, library): ``measured`` under a key, or ``not-run`` with the reason."""
    out, seen = [], set()
    for r in results:
        if r.params.get("impl") != "torch":
            continue
        for library, reason in r.params.get("libraries", {}).items():
            if (r.params["op"], library) in seen:
                continue
            seen.add((r.params["op"], library))
            measured = reason.startswith("measured as ")
            out.append({"op": r.params["op"], "library": library, "status": "measured" if measured else "not-run",
                        "reason": "" if measured else reason})
    return out


def summarize_kernels(results: list[CaseResult]) -> dict[str, Any]:
    """The suite summary: ceilings, one row per operation case, library statuses, failures."""
    peaks, bandwidth, errors = _ceilings(results)
    rows = [op_row(r, peaks=peaks, bandwidth=bandwidth) for r in results if r.params.get("kind") == "op"]
    _speedups(rows, results)
    device = next((r.metrics.get("device_name") for r in results if r.params.get("kind") == "ceiling"), None)
    return {
        "ceilings_flops": peaks, "bandwidth_bps": bandwidth, "ceiling_errors": errors, "device_name": device,
        "statistic": STATISTIC, "operations": len(rows),
        "checked": sum(1 for r in rows if r["check"]["passed"]),
        "failed": [r["key"] for r in rows if not r["ok"]],
        "libraries": library_status(results), "rows": rows,
    }


def kernels_figures(summary: dict[str, Any]) -> list[Figure]:
    """Per operation case: its achieved rate and its roofline efficiency, with what they are over."""
    figures = []
    for row in summary.get("rows", []):
        scope = {"op": row["op"], "impl": row["impl"], "shape": row["shape"], "device": summary.get("device_name")}
        figures.append(Figure(name=f"kernels.{row['op']}.flop_per_s", value=row.get("flop_per_s"), unit="FLOP/s",
                              method="declared FLOP over the median call", scope=scope,
                              note=row.get("error") or ""))
        figures.append(Figure(name=f"kernels.{row['op']}.efficiency", value=row.get("efficiency"), unit="1",
                              method=f"achieved/min(P, AI*B), P of {row.get('ceiling_dtype')}",
                              scope=scope, note="" if row.get("efficiency") is not None else "no ceiling to divide by"))
    return figures
