"""The kernels suite's figures (``parity.model.figure.Figure``): what compare and the report quote.
An efficiency above 1 (no CI: one median over one attainable) or a rate that is not positive
carries an ``invalid`` finding (``parity.metrics.validity``)."""

from __future__ import annotations

from typing import Any

from parity.ceilings.bandwidth import bandwidth_source_note
from parity.families.kernels.summary import KernelsSummary
from parity.metrics.validity import fraction_above_one, non_positive_rate
from parity.model.figure import Figure


def kernels_figures(summary: KernelsSummary | dict[str, Any]) -> list[Figure]:
    """Per operation case: its achieved rate and its roofline efficiency, with what they are over."""
    if isinstance(summary, dict):
        summary = KernelsSummary.from_dict(summary)
    figures = [Figure(name="kernels.bandwidth_ceiling", value=summary.bandwidth_bps, unit="B/s",
                      method="large device-to-device copy, bytes read plus bytes written (STREAM)",
                      scope={"device": summary.device_name,
                             "measured_in": (summary.bandwidth_source or {}).get("measured_in")},
                      note=(bandwidth_source_note(summary.bandwidth_source) if summary.bandwidth_bps
                            else summary.ceiling_errors.get("bandwidth", "no bandwidth measured")))]
    for row in summary.rows:
        scope = {"op": row.op, "impl": row.impl, "shape": row.shape, "device": summary.device_name}
        rate = non_positive_rate(row.flop_per_s, what=f"{row.op} ({row.impl}, {row.shape})", unit="FLOP/s")
        figures.append(Figure(name=f"kernels.{row.op}.flop_per_s", value=row.flop_per_s, unit="FLOP/s",
                              method="declared FLOP over the median call", scope=scope, note=row.error or "",
                              findings=(rate,) if rate else ()))
        over = fraction_above_one(row.efficiency, what=f"{row.op} ({row.impl}, {row.shape}) efficiency",
                                  ceiling="min(P, AI*B)")
        figures.append(Figure(name=f"kernels.{row.op}.efficiency", value=row.efficiency, unit="1",
                              method=f"achieved/min(P, AI*B), P of {row.ceiling_dtype}",
                              scope=scope, note="" if row.efficiency is not None else "no ceiling to divide by",
                              findings=(over,) if over else ()))
    return figures
