"""Timing strategies that return raw samples: device events, host clock, graph replay.

``measure(fn, device=...)`` is the one entry point; see ``protocol.py`` for the order of
operations and the biases of each method.
"""

from parity.timing.checks import clock_drop, telemetry_findings
from parity.timing.graph import calls_per_replay
from parity.timing.measurement import Measurement
from parity.timing.protocol import measure
from parity.timing.rotation import InputRotation, sets_to_exceed_cache
from parity.timing.sampling import samples_for_budget

__all__ = [
    "InputRotation",
    "Measurement",
    "calls_per_replay",
    "clock_drop",
    "measure",
    "samples_for_budget",
    "sets_to_exceed_cache",
    "telemetry_findings",
]
