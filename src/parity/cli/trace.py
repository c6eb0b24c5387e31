"""``parity trace``: study profiler traces (no torch needed)."""

from __future__ import annotations

import click

from parity.cli.lazy import LazyGroup


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "analyze": "parity.cli.trace_analyze:analyze",
        "whatif": "parity.cli.trace_whatif:whatif",
        "fleet": "parity.cli.trace_fleet:fleet",
        "compare": "parity.cli.trace_compare:compare",
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
