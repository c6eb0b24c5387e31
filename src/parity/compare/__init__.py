"""Comparisons: runs, trace analyses or fleet analyses side by side, ratios with CIs, and the fairness audit.

Reads the store's records and figures only; never measures (no device, timing or bench).
The names below load with their module on first use: a trace comparison
(``from parity.compare.traces import compare_traces``) then imports neither the run side (its
bootstrap and numpy) nor the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.model.lazy import lazy_names

if TYPE_CHECKING:
    from parity.compare.audit_values import AuditEntry
    from parity.compare.fleets import FleetComparison, FleetInput, compare_fleets
    from parity.compare.runs import Comparison, compare_runs, resolve_run_ids
    from parity.compare.traces import TraceComparison, TraceInput, compare_traces

_HOME = {
    "AuditEntry": "audit_values", "Comparison": "runs", "FleetComparison": "fleets", "FleetInput": "fleets",
    "TraceComparison": "traces", "TraceInput": "traces", "compare_fleets": "fleets", "compare_runs": "runs",
    "compare_traces": "traces", "resolve_run_ids": "runs",
}  # fmt: skip

__all__ = sorted(_HOME)


__getattr__ = lazy_names(__name__, _HOME)
