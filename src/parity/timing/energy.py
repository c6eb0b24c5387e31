"""Energy over a case's timed window, from power sensors read beside the timing.

A ``PowerSampler`` reads every power source of the device once before the window opens, every
``interval_s`` on a background thread while it is open, and once after it closes; each reading
is stamped at the midpoint of its read. The window is the span of ``time_work`` (warm-up and
timed calls, with the flushes and synchronizes between calls), so the mean power over it is
attributed to the work: ``J per call = mean power (W) x median time per call (s)``.

Two kinds of source (``parity.device.power``):

- ``power``: instantaneous watts. Energy over the covered part of the window is the trapezoid
  over the readings, with the readings linearly interpolated at the window's edges.
- ``energy``: a cumulative counter in joules (RAPL ``energy_uj``, NVML total energy). Energy is
  the counter's difference, interpolated at the edges, each backwards step between two
  consecutive readings unrolled once by the counter's range (``wrap_j``).

Per source: ``coverage`` is the share of the window between its first and last reading,
``max_gap_s`` the longest stretch of the window with no reading of it. A figure is not given
(``withheld`` says why) when any source's coverage is below ``MIN_COVERAGE``, or, for
instantaneous power, when its largest gap exceeds ``MAX_POWER_GAP_FRACTION`` of the window (a
trapezoid through fewer than about four readings is a guess at the power between them). A
counter needs no such rule: it integrates between reads. Nothing here is ever derived from a
TDP or power limit. Biases: sensors lag (NVML's power reading is averaged by the driver over up
to a second); a package counter includes whatever else runs on the package.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from parity.model.errors import ParityError

MIN_COVERAGE = 0.9  # share of the window the readings of every source must span
MAX_POWER_GAP_FRACTION = 0.25  # longest stretch without a power reading, share of the window
POWER_INTERVAL_S = 0.01  # between reads of instantaneous power
COUNTER_INTERVAL_S = 0.5  # between reads of energy counters (only to catch each wrap once)

Reading = tuple[float, float]  # (seconds on the sampler's clock, W or J)


def covered_span(times: Sequence[float], start_s: float, end_s: float) -> tuple[float, float]:
    """``(lo, hi)``: the part of the window ``[start_s, end_s]`` between the first and last
    reading; ``hi <= lo`` when the readings do not reach into it."""
    if not times:
        return (start_s, start_s)
    return (max(start_s, times[0]), min(end_s, times[-1]))


def window_coverage(times: Sequence[float], start_s: float, end_s: float) -> float:
    """Share of the window spanned by the readings: ``(min(end, t_last) - max(start, t_first))
    / (end - start)``, 0 when they do not reach into it, 1 for an empty window bracketed by
    readings."""
    window = end_s - start_s
    if window < 0:
        raise ParityError(f"energy window ends before it starts ({start_s} > {end_s}); a clock went backwards")
    lo, hi = covered_span(times, start_s, end_s)
    if window == 0:
        return 1.0 if times and times[0] <= start_s and times[-1] >= end_s else 0.0
    return max(0.0, hi - lo) / window


def largest_gap_s(times: Sequence[float], start_s: float, end_s: float) -> float:
    """The longest stretch of ``[start_s, end_s]`` with no reading: the largest difference
    between consecutive points of ``start_s``, the readings inside the window and ``end_s``
    (s). A reading outside the window bridges nothing: the stretch from the start to the first
    reading inside it is still unread."""
    inside = [t for t in times if start_s < t < end_s]
    points = [start_s, *inside, end_s]
    return max(b - a for a, b in zip(points, points[1:]))


def interpolate(readings: Sequence[Reading], t: float) -> float:
    """The value at ``t`` by linear interpolation between the two readings around it (the
    nearest reading's value outside them)."""
    if t <= readings[0][0]:
        return readings[0][1]
    for (t0, v0), (t1, v1) in zip(readings, readings[1:]):
        if t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return readings[-1][1]


def trapezoid_energy_j(readings: Sequence[Reading], start_s: float, end_s: float) -> float:
    """Joules of instantaneous power readings (W) over the covered part of the window: the
    trapezoid rule over the readings inside it, the edges interpolated (``sum (t1-t0)(p0+p1)/2``)."""
    lo, hi = covered_span([t for t, _ in readings], start_s, end_s)
    if hi <= lo:
        return 0.0
    points = [(lo, interpolate(readings, lo))]
    points += [(t, p) for t, p in readings if lo < t < hi]
    points.append((hi, interpolate(readings, hi)))
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in zip(points, points[1:]))


def unwrap_counter(readings: Sequence[Reading], wrap_j: float | None) -> list[Reading]:
    """A counter's readings made cumulative: a reading below the previous one means the counter
    wrapped once, so ``wrap_j`` (its range) is added from there on. A counter that goes
    backwards without a known range is refused."""
    out: list[Reading] = []
    offset = 0.0
    for i, (t, value) in enumerate(readings):
        if i and value < readings[i - 1][1]:
            if not wrap_j:
                raise ParityError(f"energy counter went back from {readings[i - 1][1]} J to {value} J and "
                                  "its range is unknown; read max_energy_range_uj or drop the source")
            offset += wrap_j
        out.append((t, value + offset))
    return out


def counter_energy_j(readings: Sequence[Reading], start_s: float, end_s: float, *,
                     wrap_j: float | None = None) -> float:
    """Joules of a cumulative counter over the covered part of the window: the unwrapped
    counter interpolated at the covered span's end minus at its start."""
    cumulative = unwrap_counter(readings, wrap_j)
    lo, hi = covered_span([t for t, _ in cumulative], start_s, end_s)
    if hi <= lo:
        return 0.0
    return interpolate(cumulative, hi) - interpolate(cumulative, lo)


@dataclass(frozen=True, kw_only=True)
class SourceEnergy:
    """One source over the window: joules over its covered span, the span (s), coverage,
    largest gap (s), readings taken, and the mean power over the covered span (W)."""

    name: str
    kind: str
    energy_j: float
    covered_s: float
    coverage: float
    max_gap_s: float
    readings: int

    @property
    def mean_power_w(self) -> float | None:
        return self.energy_j / self.covered_s if self.covered_s > 0 else None


def source_energy(*, name: str, kind: str, readings: Sequence[Reading], start_s: float, end_s: float,
                  wrap_j: float | None = None) -> SourceEnergy:
    """Integrate one source's readings over ``[start_s, end_s]`` (see the module docstring)."""
    if kind not in ("power", "energy"):
        raise ParityError(f"power source {name!r} has kind {kind!r}; expected 'power' or 'energy'")
    readings = sorted(readings)
    times = [t for t, _ in readings]
    lo, hi = covered_span(times, start_s, end_s)
    energy = (trapezoid_energy_j(readings, start_s, end_s) if kind == "power"
              else counter_energy_j(readings, start_s, end_s, wrap_j=wrap_j))
    return SourceEnergy(name=name, kind=kind, energy_j=energy, covered_s=max(0.0, hi - lo),
                        coverage=window_coverage(times, start_s, end_s),
                        max_gap_s=largest_gap_s(times, start_s, end_s), readings=len(readings))


def withheld_reason(sources: Sequence[SourceEnergy], window_s: float) -> str | None:
    """Why the window's energy is not to be given, or None: no source, a source's coverage
    below ``MIN_COVERAGE``, or a power source's largest gap above ``MAX_POWER_GAP_FRACTION``
    of the window."""
    if not sources:
        return "no power source was read"
    for s in sources:
        if s.coverage < MIN_COVERAGE:
            return (f"{s.name} covered {100 * s.coverage:.0f}% of the {window_s:.3g} s window "
                    f"(at least {100 * MIN_COVERAGE:.0f}% needed)")
        if s.kind == "power" and s.max_gap_s > MAX_POWER_GAP_FRACTION * window_s:
            return (f"{s.name} left {s.max_gap_s:.3g} s of the {window_s:.3g} s window unread "
                    f"(at most {100 * MAX_POWER_GAP_FRACTION:.0f}% allowed for instantaneous power)")
    return None


@dataclass(frozen=True, kw_only=True)
class WindowEnergy:
    """The window's energy over all sources: ``mean_power_w`` is the sum of each source's mean
    power over its covered span; ``withheld`` says why no figure is given (then
    ``mean_power_w`` is None); ``readings`` keeps the raw readings per source (s from the
    window's start, W or J)."""

    window_s: float
    sources: tuple[SourceEnergy, ...] = ()
    withheld: str | None = None
    unavailable: str = ""
    errors: dict[str, str] = field(default_factory=dict)
    readings: dict[str, list[Reading]] = field(default_factory=dict)

    @property
    def mean_power_w(self) -> float | None:
        if self.withheld is not None or not self.sources:
            return None
        return sum(s.mean_power_w or 0.0 for s in self.sources)

    def to_dict(self, *, per_call_s: float | None = None) -> dict[str, Any]:
        """The record stored with a case (``telemetry["energy"]``); ``joules_per_call`` is
        ``mean_power_w x per_call_s`` when both are known."""
        if self.unavailable:
            return {"unavailable": self.unavailable}
        power = self.mean_power_w
        return {
            "window_s": self.window_s,
            "mean_power_w": power,
            "energy_j": power * self.window_s if power is not None else None,
            "joules_per_call": power * per_call_s if power is not None and per_call_s else None,
            "coverage": min((s.coverage for s in self.sources), default=0.0),
            "max_gap_s": max((s.max_gap_s for s in self.sources), default=self.window_s),
            "devices": sum(1 for s in self.sources if s.readings),
            "sources": {s.name: {"kind": s.kind, "energy_j": s.energy_j, "coverage": s.coverage,
                                 "max_gap_s": s.max_gap_s, "readings": s.readings} for s in self.sources},
            "withheld": self.withheld,
            "errors": dict(self.errors),
            "readings": {k: [list(r) for r in v] for k, v in self.readings.items()},
            "method": ("mean power over the timed window (trapezoid over power readings, or an energy "
                       "counter's difference) x median time per call"),
        }


class PowerSampler:
    """Context manager around a timed window: ``with PowerSampler(sensors): ...`` then
    ``.energy()``. ``sensors`` is a ``parity.device.power.PowerSensors``; with no source it
    reads nothing, starts no thread and reports why."""

    def __init__(self, sensors: Any, *, interval_s: float | None = None) -> None:
        self.sources = list(sensors.sources)
        self.unavailable = "" if self.sources else f"no power sensor readable: {sensors.unavailable}"
        if interval_s is None:
            counters = all(s.kind == "energy" for s in self.sources)
            interval_s = COUNTER_INTERVAL_S if counters else POWER_INTERVAL_S
        if interval_s <= 0:
            raise ParityError(f"power sampling interval {interval_s!r} s must be positive")
        self.interval_s = interval_s
        self._readings: dict[str, list[Reading]] = {s.name: [] for s in self.sources}
        self._errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = self._end = 0.0

    def __enter__(self) -> PowerSampler:
        if self.sources:  # with none there is no window to cover: no clock is read
            self._read_all()
            self._thread = threading.Thread(target=self._loop, name="parity-power", daemon=True)
            self._thread.start()
            self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.sources:
            self._end = time.perf_counter()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._read_all()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._read_all()

    def _read_all(self) -> None:
        for source in self.sources:
            before = time.perf_counter()
            try:
                value = source.read()
            except Exception as exc:  # noqa: BLE001 - a failing sensor leaves a gap, not a crash
                self._errors[source.name] = f"{type(exc).__name__}: {exc}"
                continue
            if value is not None:
                self._readings[source.name].append(((before + time.perf_counter()) / 2, float(value)))

    def energy(self) -> WindowEnergy:
        """Each source integrated over the window, and whether a figure may be given."""
        window = self._end - self._start
        if not self.sources:
            return WindowEnergy(window_s=window, unavailable=self.unavailable)
        per_source = []
        for s in self.sources:
            try:
                per_source.append(source_energy(name=s.name, kind=s.kind, readings=self._readings[s.name],
                                                start_s=self._start, end_s=self._end,
                                                wrap_j=getattr(s, "wrap_j", None)))
            except ParityError as exc:
                self._errors[s.name] = str(exc)
        withheld = withheld_reason(per_source, window) if len(per_source) == len(self.sources) else (
            "a power source's readings could not be integrated: " + "; ".join(self._errors.values()))
        readings = {k: [(t - self._start, v) for t, v in r] for k, r in self._readings.items()}
        return WindowEnergy(window_s=window, sources=tuple(per_source), withheld=withheld,
                            errors=dict(self._errors), readings=readings)
