"""Graph replay: many calls captured into one CUDA graph, timed per replay, divided per call.

For kernels of a few microseconds, per-call events measure the host's launch rate rather than
the device. A graph replays ``k`` captured calls with one launch, so the per-call figure
``elapsed / k`` is the device's own time. Biases: calls inside one replay run back to back with
no flush between them (their inputs rotate through the captured sets, and the cache is flushed
before each replay), and the figure excludes launch overhead that eager code would pay.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from parity.device.base import Device
from parity.timing.sampling import samples_for_budget, time_calls

# Each replay should last about this long, so it is far above the event timer's resolution.
TARGET_REPLAY_S = 1e-3
MAX_CALLS_PER_REPLAY = 1000


def calls_per_replay(*, per_call_s: float, inputs: int) -> int:
    """``k = clamp(ceil(TARGET_REPLAY_S / per_call_s), 1, 1000)``, rounded up to whole input cycles.

    Example: 5 us per call -> 200 calls, so a replay lasts about 1 ms. Rounding to a multiple of
    the number of input sets keeps every replay identical.
    """
    k = MAX_CALLS_PER_REPLAY if per_call_s <= 0 else math.ceil(TARGET_REPLAY_S / per_call_s)
    k = max(1, min(MAX_CALLS_PER_REPLAY, k))
    if inputs > 1:
        k = min(MAX_CALLS_PER_REPLAY * inputs, math.ceil(k / inputs) * inputs)
    return k


def measure_graph_samples(
    device: Device,
    call: Callable[[int], Any],
    *,
    per_call_s: float,
    flush_s: float,
    flush: bool,
    budget_s: float,
    min_samples: int,
    max_samples: int,
    inputs: int,
) -> tuple[list[float], str, int]:
    """Capture ``k`` calls, then time replays as ``time_calls`` times eager calls.

    Returns ``(per-call seconds per replay, "graph-replay", k)``.
    """
    k = calls_per_replay(per_call_s=per_call_s, inputs=inputs)
    device.mark("capture")

    def captured() -> None:
        for i in range(k):
            call(i)

    replay = device.graph_replay(captured, calls=1)
    count = samples_for_budget(
        budget_s=budget_s,
        per_sample_s=k * per_call_s + flush_s,
        min_samples=min_samples,
        max_samples=max_samples,
    )
    values = time_calls(device, lambda _i: replay(), count=count, flush=flush)
    return [v / k for v in values], "graph-replay", k
