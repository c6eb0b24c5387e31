"""Telemetry during a measurement: clocks, power, temperature and throttle reasons.

A ``TelemetrySampler`` reads its sources on a background thread every ``interval_s`` seconds
(plus once on entry and once on exit, so even a short measurement has two readings) and
summarises each metric as min/median/max. Anything no source could read is listed under
``unavailable`` with the reason, never silently left out.

Metric names carry their units: ``clock_mhz`` (compute clock), ``memory_clock_mhz``,
``power_w``, ``temperature_c``; ``throttle_reasons`` is the set of reasons seen at any reading.
Vendor readers live beside their backends (``nvml.py``, ``amdgpu_sysfs.py``, ``npu.py``); the CPU
reader is here.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from parity.device.sysfs import read_sysfs

log = logging.getLogger(__name__)

METRICS = ("clock_mhz", "memory_clock_mhz", "power_w", "temperature_c", "throttle_reasons")
# Clock-event reasons that do not mean lost performance under load: an idle GPU, clocks set by
# the administrator or the display, boost synchronised across a board.
BENIGN_REASONS = frozenset(
    {"gpu_idle", "applications_clocks_setting", "display_clock_setting", "sync_boost"}
)


class TelemetrySource(Protocol):
    """One reader. ``read()`` returns the metrics it could read now (a subset of METRICS)."""

    name: str

    def read(self) -> dict[str, Any]: ...

    def unavailable(self) -> dict[str, str]:
        """Metric -> why this source cannot read it."""
        ...


class TelemetrySampler:
    """Context manager: ``with device.telemetry_sampler() as t: ...`` then ``t.result()``."""

    def __init__(self, *, sources: list[TelemetrySource], interval_s: float = 0.1,
                 metrics: tuple[str, ...] = METRICS) -> None:
        if interval_s <= 0:
            raise ValueError(f"telemetry interval {interval_s!r} s must be positive")
        self.sources = list(sources)
        self.interval_s = interval_s
        self.metrics = metrics  # what ``result`` summarises (the machine's load has its own)
        self._readings: list[dict[str, Any]] = []
        self._errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._duration_s = 0.0

    def __enter__(self) -> TelemetrySampler:
        self._started = time.perf_counter()
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="parity-telemetry", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        self._duration_s = time.perf_counter() - self._started

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        reading: dict[str, Any] = {}
        for source in self.sources:
            try:
                for key, value in source.read().items():
                    if key == "throttle_reasons":
                        reading.setdefault(key, set()).update(value)
                    else:
                        reading.setdefault(key, value)
            except Exception as exc:  # noqa: BLE001 - a failing reader must not stop the run
                self._errors[source.name] = f"{type(exc).__name__}: {exc}"
                log.debug("telemetry source %s failed: %s", source.name, exc)
        self._readings.append(reading)

    def result(self) -> dict[str, Any]:
        """Per-metric min/median/max/last, throttle reasons seen, and what was unavailable."""
        out: dict[str, Any] = {
            "interval_s": self.interval_s,
            "readings": len(self._readings),
            "duration_s": self._duration_s,
            "sources": [s.name for s in self.sources],
        }
        unavailable: dict[str, str] = {}
        for metric in self.metrics:
            values = [r[metric] for r in self._readings if metric in r]
            if metric == "throttle_reasons":
                if values:
                    out[metric] = sorted(set().union(*values))
                else:
                    unavailable[metric] = self._why_missing(metric)
                continue
            if values:
                out[metric] = summarize_values(values)
            else:
                unavailable[metric] = self._why_missing(metric)
        out["unavailable"] = unavailable
        if self._errors:
            out["errors"] = dict(self._errors)
        return out

    def _why_missing(self, metric: str) -> str:
        reasons = []
        for source in self.sources:
            reason = source.unavailable().get(metric)
            if reason:
                reasons.append(f"{source.name}: {reason}")
            elif source.name in self._errors:
                reasons.append(f"{source.name}: {self._errors[source.name]}")
        return "; ".join(reasons) or "no telemetry source on this device reads it"


class UnavailableTelemetry:
    """A source that reads nothing and says why, for platforms without a reader."""

    def __init__(self, *, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def read(self) -> dict[str, Any]:
        return {}

    def unavailable(self) -> dict[str, str]:
        return {metric: self.reason for metric in METRICS}


def throttling(reasons: list[str] | set[str]) -> list[str]:
    """The reasons that mean the clock was held down by power or heat (not idling or policy)."""
    return sorted(set(reasons) - BENIGN_REASONS)


def summarize_values(values: list[float]) -> dict[str, float]:
    """min, median, max and last of one metric's readings."""
    floats = [float(v) for v in values]
    return {
        "min": min(floats),
        "median": statistics.median(floats),
        "max": max(floats),
        "last": floats[-1],
        "n": len(floats),
    }


class CpuTelemetry:
    """The host CPU through sysfs and ``/proc``: no privileges, no extra packages.

    - ``clock_mhz``: the highest ``cpufreq/scaling_cur_freq`` (kHz) among the CPUs this process
      may use, else the highest ``cpu MHz`` of ``/proc/cpuinfo`` (some VMs report a constant).
      The highest, not the mean, because idle allowed CPUs sit at low clocks and would make a
      one-thread benchmark look slow-clocked; a drop in the highest clock is what throttling is.
    - ``temperature_c``: the hottest ``x86_pkg_temp``/``k10temp``/``coretemp``/``cpu`` sensor.
    - ``power_w``: package energy from RAPL powercap (``energy_uj``) differenced between reads.
    - ``throttle_reasons``: ``thermal`` when a ``thermal_throttle`` counter rises.
    """

    name = "sysfs"

    def __init__(self, *, cpus: set[int] | None = None, sys_root: Path = Path("/sys")) -> None:
        from parity.device import host

        self.sys = sys_root
        self.cpus = sorted(cpus if cpus is not None else (host.affinity() or host.online_cpus()))
        self._freq_files = [
            p
            for c in self.cpus
            if (p := self.sys / f"devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq").exists()
        ]
        self._temp_files = self._find_temperature_files()
        self._rapl = sorted(self.sys.glob("class/powercap/intel-rapl:[0-9]*"))
        self._rapl = [p for p in self._rapl if ":" not in p.name.split("intel-rapl:", 1)[1]]
        self._last_energy: tuple[float, list[int]] | None = None
        self._throttle_files = sorted(
            self.sys.glob("devices/system/cpu/cpu*/thermal_throttle/*_throttle_count")
        )
        self._throttle_start = self._throttle_total()
        self._power_reason = "no RAPL powercap domain in /sys/class/powercap"

    def _find_temperature_files(self) -> list[Path]:
        files = []
        for zone in self.sys.glob("class/thermal/thermal_zone*"):
            kind = read_sysfs(zone / "type") or ""
            if any(k in kind.lower() for k in ("x86_pkg_temp", "cpu", "soc", "k10temp")):
                files.append(zone / "temp")
        for mon in self.sys.glob("class/hwmon/hwmon*"):
            if (read_sysfs(mon / "name") or "") in (
                "coretemp",
                "k10temp",
                "zenpower",
                "cpu_thermal",
            ):
                files.extend(sorted(mon.glob("temp*_input")))
        return files

    def read(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        clock = self._clock_mhz()
        if clock is not None:
            out["clock_mhz"] = clock
        temps = [int(t) / 1000.0 for f in self._temp_files if (t := read_sysfs(f)) is not None]
        if temps:
            out["temperature_c"] = max(temps)
        power = self._power_w()
        if power is not None:
            out["power_w"] = power
        if self._throttle_files:
            out["throttle_reasons"] = (
                {"thermal"} if self._throttle_total() > self._throttle_start else set()
            )
        return out

    def _clock_mhz(self) -> float | None:
        khz = [int(t) for f in self._freq_files if (t := read_sysfs(f)) is not None]
        if khz:
            return max(khz) / 1000.0
        return _cpuinfo_mhz(self.cpus)

    def _power_w(self) -> float | None:
        energies = [read_sysfs(d / "energy_uj") for d in self._rapl]
        if not self._rapl:
            return None
        if any(e is None or not e.isdigit() for e in energies):
            self._power_reason = "RAPL energy_uj is not readable (root only on this kernel)"
            return None
        now = (time.perf_counter(), [int(e) for e in energies if e is not None])
        last, self._last_energy = self._last_energy, now
        if last is None or now[0] <= last[0]:
            return None  # first reading
        delta = [rapl_delta_uj(b, a, self._rapl_range_uj(d)) for a, b, d in zip(last[1], now[1], self._rapl)]
        if any(d is None for d in delta):
            return None  # wrapped with no known range
        return sum(d for d in delta if d is not None) * 1e-6 / (now[0] - last[0])

    def _rapl_range_uj(self, domain: Path) -> int | None:
        text = read_sysfs(domain / "max_energy_range_uj")
        return int(text) if text and text.isdigit() else None

    def _throttle_total(self) -> int:
        return sum(int(t) for f in self._throttle_files if (t := read_sysfs(f)) is not None)

    def unavailable(self) -> dict[str, str]:
        reasons = {"memory_clock_mhz": "the memory clock is not exposed to user space on CPUs"}
        if not self._freq_files:
            reasons["clock_mhz"] = "no cpufreq in sysfs and no 'cpu MHz' in /proc/cpuinfo"
        if not self._temp_files:
            reasons["temperature_c"] = "no CPU thermal zone or hwmon sensor in sysfs"
        reasons["power_w"] = self._power_reason
        if not self._throttle_files:
            reasons["throttle_reasons"] = "no thermal_throttle counters in sysfs"
        return reasons


def rapl_delta_uj(now_uj: int, last_uj: int, range_uj: int | None) -> int | None:
    """µJ between two reads of a RAPL counter: ``now - last``, or ``now + range + 1 - last`` when
    it wrapped (the counter runs 0..``max_energy_range_uj``); None when it wrapped and the range
    is unknown. Example: 10 after 90 with range 99 is 20."""
    if now_uj >= last_uj:
        return now_uj - last_uj
    return None if range_uj is None else now_uj + range_uj + 1 - last_uj


def _cpuinfo_mhz(cpus: list[int]) -> float | None:
    """Highest ``cpu MHz`` over ``cpus`` from ``/proc/cpuinfo``; None where the field is absent."""
    text = read_sysfs(Path("/proc/cpuinfo"))
    if not text:
        return None
    wanted = set(cpus)
    values = []
    current = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            current = int(value)
        elif key == "cpu MHz" and (current in wanted or not wanted):
            values.append(float(value))
    return max(values) if values else None
