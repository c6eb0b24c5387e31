"""The membw summary as typed figures (``parity.model.figure.Figure``): the measured ceiling,
and per operation and regime the fit's asymptote, fixed cost and n½.

Compare and the report read these and nothing else, so every figure names its method and its
scope here, once. A figure whose value the summary could not derive is still listed, with
``value=None`` and a note saying why.
"""

from __future__ import annotations

from typing import Any

from parity.ceilings.bandwidth import bandwidth_source_note
from parity.families.membw.summary import MembwSummary
from parity.metrics.bandwidth import STREAM_CONVENTION
from parity.model.figure import Figure


def membw_figures(summary: MembwSummary) -> list[Figure]:
    """Bandwidth: the measured ceiling, and per operation the fit's asymptote, fixed cost, n½."""
    device = summary.device
    ceiling = summary.ceiling
    figures = [Figure(
        name="membw.ceiling", value=ceiling["bps"] if ceiling else None, unit="B/s",
        method=f"{ceiling['method']}, {STREAM_CONVENTION}" if ceiling else STREAM_CONVENTION,
        scope={"device": device, "op": "copy",
               "operand_bytes": ceiling["operand_bytes"] if ceiling else None,
               "raised_at_bytes": ceiling.get("raised_at_bytes") if ceiling else None,
               "measured_in": (ceiling.get("source") or {}).get("measured_in") if ceiling else None},
        note=bandwidth_source_note(ceiling.get("source")) if ceiling else "no copy measured")]
    for curve in summary.curves:
        figures += _curve_figures(curve, device=device, flush=summary.flush)
    return figures


def _curve_figures(curve: dict[str, Any], *, device: Any, flush: Any) -> list[Figure]:
    """One curve's fit. The warm curve gives the quoted fixed cost and n½
    (``membw.<op>.fixed_cost``, ``membw.<op>.n_half``) and its in-cache rate
    (``membw.<op>.asymptotic.warm``); the cold (flushed, full-range) curve gives the asymptotic
    bandwidth (``membw.<op>.asymptotic``) and the cold fixed cost and n½ (``...cold``)."""
    regime = curve.get("regime", "cold")
    scope = {"device": device, "op": curve["op"], "points": len(curve.get("points", [])), "flush": flush,
             "regime": regime}
    note = curve.get("note", "")
    label = curve.get("label", regime)
    suffix = {"warm": ("", "", ".warm"), "cold": (".cold", ".cold", "")}[regime]
    return [
        Figure(name=f"membw.{curve['op']}.asymptotic{suffix[2]}", value=curve.get("asymptotic_bps"),
               unit="B/s", method=f"b of the fit t = a + V/b, {curve['convention']}; {label}", scope=scope, note=note),
        Figure(name=f"membw.{curve['op']}.fixed_cost{suffix[0]}", value=curve.get("fixed_cost_s"), unit="s",
               method=f"a of the fit t = a + V/b; {label}", scope=scope, note=note),
        Figure(name=f"membw.{curve['op']}.n_half{suffix[1]}", value=curve.get("n_half_bytes"), unit="B",
               method=f"half-bandwidth size n½ = a·b; {label}", scope=scope, note=note),
    ]
