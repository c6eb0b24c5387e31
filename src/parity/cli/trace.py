"""``parity trace``: study profiler traces (no torch needed)."""

from __future__ import annotations

import click

from parity.cli.lazy import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "analyze": ("parity.cli.trace_analyze:analyze",
                    "Per-stream busy time, overlap and idle in the steady-state window of profiler traces."),
        "whatif": ("parity.cli.trace_whatif:whatif",
                   "Predict a step's speedup when some work runs K times faster, from a profiler trace."),
        "fleet": ("parity.cli.trace_fleet:fleet",
                  "Analyse every rank of a job: collectives matched across ranks, arrival skew and stragglers."),
        "compare": ("parity.cli.trace_compare:compare", "Compare traces side by side: categories, streams matched by role"),
    },
)
def trace() -> None:
    """Analyse real profiler traces: streams, overlap, idle and what-if predictions.

    \b
    Example:
      parity trace analyze ASCEND_PROFILER_OUTPUT/ --json out.json
      parity trace whatif rank0.json.gz --scale matrix=2
      parity trace fleet traces/ --out fleet/ --ranks-per-node 8
      parity trace compare h100_rank0.json.gz ASCEND_PROFILER_OUTPUT/ --window span
    """
