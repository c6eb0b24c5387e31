"""The timing protocol of docs/definitions.md: warm up, estimate, turn a budget into a count, time.

``measure`` runs, in this order:

1. warm-up: calls timed one by one (each followed by a synchronize) until ``warmup_s`` of
   measured time has passed, at least one call; their median is the per-call estimate. The
   synchronize makes the estimate a little long for tiny kernels, so the count errs low.
2. estimate the flush: one timed cache flush, when flushing.
3. budget -> count: ``n = clamp(floor(budget_s / (per_call + flush)), min_samples, max_samples)``.
4. for each sample: flush the cache (when asked), record the start event, call, record the stop
   event; after the last sample, one synchronize; then read every elapsed time.

With device events the flush runs before the start event on the same queue, so it is never
timed; with the host clock (CPU) the timer synchronizes before reading the clock. Known bias of
per-call events: when a call is shorter than its launch, the device waits for the host between
start and call, so tiny kernels read long; use ``graph=True`` (CUDA) for those.

Budget: ``budget_s`` bounds the time spent in step 4 including flushes, not only the timed part.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.device.base import Device
from parity.model.findings import Finding
from parity.model.samples import Samples
from parity.stats.checks import check_samples
from parity.stats.summary import summarize
from parity.timing.checks import (
    graph_unavailable,
    rotation_findings,
    telemetry_findings,
)
from parity.timing.graph import measure_graph_samples
from parity.timing.measurement import Measurement
from parity.timing.rotation import InputRotation
from parity.timing.sampling import samples_for_budget, time_calls

log = logging.getLogger(__name__)

# Caps on the warm-up, so a timer that reads zero (a broken or fake clock) cannot loop forever.
MAX_WARMUP_CALLS = 100_000
WARMUP_WALL_CAP_S = 10.0


def call_with(fn: Callable[..., Any], inputs: InputRotation | None) -> Callable[[int], Any]:
    """``call(i)`` runs ``fn(inputs[i])``; without inputs, ``fn(None)`` when ``fn`` has a
    required positional parameter and ``fn()`` otherwise (``lambda: a @ b`` and
    ``lambda a=a: a @ a`` both work)."""
    if inputs is not None:
        return lambda i: fn(inputs[i])
    try:
        params = inspect.signature(fn).parameters.values()
        needs_arg = any(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
            for p in params
        )
    except (TypeError, ValueError):
        needs_arg = True
    return (lambda i: fn(None)) if needs_arg else (lambda i: fn())


def warm_up(device: Device, call: Callable[[int], Any], *, warmup_s: float) -> tuple[int, float]:
    """Time one call at a time until ``warmup_s`` of measured time; ``(calls, per_call_s)``.

    The per-call estimate is the median of the warm-up calls after the first (the first pays
    for lazy initialisation), or the only call when there was one.
    """
    device.mark("warmup")
    times: list[float] = []
    wall_start = time.perf_counter()
    while True:
        timer = device.event_timer()
        timer.start()
        call(len(times))
        timer.stop()
        device.synchronize()
        times.append(timer.elapsed_s())
        wall = time.perf_counter() - wall_start
        if sum(times) >= warmup_s or len(times) >= MAX_WARMUP_CALLS or wall > WARMUP_WALL_CAP_S:
            steady = times[1:] or times
            return len(times), statistics.median(steady)


def time_flush(device: Device) -> float:
    """Seconds one cache flush takes, measured with the device's timer."""
    device.mark("estimate-flush")
    timer = device.event_timer()
    timer.start()
    device.flush_cache()
    timer.stop()
    device.synchronize()
    return timer.elapsed_s()


def measure(
    fn: Callable[..., Any],
    *,
    device: Device,
    inputs: InputRotation | None = None,
    warmup_s: float = 0.025,
    budget_s: float = 0.2,
    min_samples: int = 5,
    max_samples: int = 10_000,
    flush_cache: bool = True,
    telemetry: bool = False,
    graph: bool = False,
) -> Measurement:
    """Time ``fn(inputs[i])`` per call on ``device`` following the protocol above.

    ``graph=True`` captures calls into a CUDA graph and times replays (see ``graph.py``); on a
    device without graphs it times eagerly and adds a ``graph-unavailable`` finding, so one
    suite can run everywhere. ``telemetry=True`` samples clocks, power and temperature during
    the timed calls and raises a ``throttled`` finding when power or heat held the clock down.
    """
    call = call_with(fn, inputs)
    extra: list[Finding] = []
    warmup_calls, per_call_s = warm_up(device, call, warmup_s=warmup_s)
    flush_s = time_flush(device) if flush_cache else 0.0
    if graph and not device.supports_graphs:
        extra.append(graph_unavailable(device))
        graph = False
    meta: dict[str, Any] = {
        "device": device.name,
        "per_call_estimate_s": per_call_s,
        "flush_s": flush_s,
        "flush_cache": flush_cache,
        "budget_s": budget_s,
    }
    if inputs is not None:
        meta["inputs"] = inputs.to_dict()
        extra.extend(rotation_findings(inputs, flush_cache))
    plan = _Plan(
        per_call_s=per_call_s,
        flush_s=flush_s,
        flush=flush_cache,
        budget_s=budget_s,
        min_samples=min_samples,
        max_samples=max_samples,
    )
    sampler = device.telemetry_sampler() if telemetry else None
    with sampler if sampler is not None else contextlib.nullcontext():
        if graph:
            values, method, calls = _graph_samples(device, call, plan, inputs)
        else:
            values = _eager_samples(device, lambda i: call(warmup_calls + i), plan)
            method, calls = _method(device), 1
    samples = Samples(
        values_s=tuple(values),
        method=method,
        # Each value is one timer reading divided by the calls it covered.
        resolution_s=device.timer_resolution_s() / calls,
        calls_per_sample=calls,
        warmup_calls=warmup_calls,
        meta=meta,
    )
    seen = sampler.result() if sampler is not None else {}
    findings = tuple(check_samples(samples)) + tuple(extra) + tuple(telemetry_findings(seen))
    return Measurement(
        samples=samples, summary=summarize(values), findings=findings, telemetry=seen
    )


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """What the warm-up found and what the caller allowed: the inputs to budget -> count."""

    per_call_s: float
    flush_s: float
    flush: bool
    budget_s: float
    min_samples: int
    max_samples: int


def _eager_samples(device: Device, run: Callable[[int], Any], plan: _Plan) -> list[float]:
    count = samples_for_budget(
        budget_s=plan.budget_s,
        per_sample_s=plan.per_call_s + plan.flush_s,
        min_samples=plan.min_samples,
        max_samples=plan.max_samples,
    )
    return time_calls(device, run, count=count, flush=plan.flush)


def _graph_samples(
    device: Device, call: Callable[[int], Any], plan: _Plan, inputs: InputRotation | None
) -> tuple[list[float], str, int]:
    return measure_graph_samples(
        device,
        call,
        per_call_s=plan.per_call_s,
        flush_s=plan.flush_s,
        flush=plan.flush,
        budget_s=plan.budget_s,
        min_samples=plan.min_samples,
        max_samples=plan.max_samples,
        inputs=len(inputs) if inputs is not None else 1,
    )


def _method(device: Device) -> str:
    if device.type == "fake":
        return "fake"
    return "device-events" if device.has_events else "host-clock"
