"""Comparisons: runs, trace analyses or fleet analyses side by side, ratios with CIs, and the fairness audit.

Reads the store's records and figures only; never measures (no device, timing or bench).
"""

from parity.compare.audit import AuditEntry
from parity.compare.fleets import FleetComparison, FleetInput, compare_fleets
from parity.compare.runs import Comparison, compare_runs, resolve_run_ids
from parity.compare.traces import TraceComparison, TraceInput, compare_traces

__all__ = ["AuditEntry", "Comparison", "FleetComparison", "FleetInput", "TraceComparison", "TraceInput",
           "compare_fleets", "compare_runs", "compare_traces", "resolve_run_ids"]
