"""A scripted device for deterministic tests of the timing harness and the runner.

Its timers return the scripted durations in order (cycling when the script runs out), and every
operation the harness performs on it is appended to ``ops``: ``mark:<phase>``, ``flush``,
``start``, ``stop``, ``record`` (an event), ``sync``, ``capture``, ``replay``, ``empty-cache``,
``fp32-matmul:<mode>``. Free memory, architecture and compute capability are scripted too; its
collectives backend is gloo, as on the CPU whose tensors it uses. Scripted telemetry readings
let tests exercise the throttling checks, and a scripted power sensor (``power=``) the energy
figures. Work functions can add ``call`` with
``device.record("call")``, so a test can assert the whole protocol order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from parity.device.base import Device, DeviceProperties, register_backend
from parity.model.errors import ParityError

DEFAULT_DURATION_S = 1e-3


class FakeTimer:
    """Takes the next scripted duration when stopped."""

    def __init__(self, device: FakeDevice) -> None:
        self._device = device
        self._value: float | None = None

    def start(self) -> None:
        self._device.record("start")

    def stop(self) -> None:
        self._device.record("stop")
        self._value = self._device.next_duration()

    def elapsed_s(self) -> float:
        if self._value is None:
            raise RuntimeError("fake timer read before stop()")
        return self._value


class FakeEvent:
    """A point on the fake device's clock: recording stamps the clock, then advances it by the
    next scripted duration, so the work between consecutive events takes the script's values."""

    def __init__(self, device: FakeDevice) -> None:
        self._device = device
        self._at_s: float | None = None

    def record(self) -> None:
        self._device.record("record")
        self._at_s = self._device.clock_s
        self._device.clock_s += self._device.next_duration()

    def elapsed_s(self, end: FakeEvent) -> float:
        if self._at_s is None or end._at_s is None:
            raise RuntimeError("fake event read before both events were recorded")
        return end._at_s - self._at_s


@register_backend
class FakeDevice(Device):
    """``fake``: no hardware. ``durations_s`` scripts what its timers measure, in seconds."""

    type = "fake"
    has_events = True

    def __init__(
        self,
        *,
        durations_s: Sequence[float] = (DEFAULT_DURATION_S,),
        index: int | None = None,
        resolution_s: float = 1e-9,
        llc_bytes: int = 1 << 20,
        graphs: bool = False,
        telemetry: Sequence[dict[str, Any]] = (),
        power: Sequence[Any] = (),
        power_kind: str = "power",
        power_wrap_j: float | None = None,
        free_bytes: int | None = 1 << 30,
        arch: str = "fake",
        capability: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(index=index)
        if not durations_s or any(d < 0 for d in durations_s):
            raise ParityError("fake device needs a non-empty list of non-negative durations")
        self.durations_s = [float(d) for d in durations_s]
        self.resolution_s = resolution_s
        self.llc_bytes = llc_bytes
        self.supports_graphs = graphs  # type: ignore[misc]
        self.telemetry_script = [dict(r) for r in telemetry]
        self.power_script = list(power)
        self.power_kind = power_kind
        self.power_wrap_j = power_wrap_j
        self.free_bytes = free_bytes
        self.arch = arch
        self.capability = capability
        self.clock_s = 0.0
        self.ops: list[str] = []
        self._next = 0

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        return None

    @classmethod
    def default_index(cls) -> int | None:
        return None

    @property
    def torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def record(self, op: str) -> None:
        """Append ``op`` to the operation log."""
        self.ops.append(op)

    def next_duration(self) -> float:
        """The next scripted duration (seconds), cycling through the script."""
        value = self.durations_s[self._next % len(self.durations_s)]
        self._next += 1
        return value

    def mark(self, phase: str) -> None:
        self.record(f"mark:{phase}")

    def synchronize(self) -> None:
        self.record("sync")

    def create_event(self) -> FakeEvent:
        return FakeEvent(self)

    def event_timer(self) -> FakeTimer:
        return FakeTimer(self)

    def timer_resolution_s(self) -> float:
        return self.resolution_s

    def flush_cache(self) -> None:
        self.record("flush")

    def flush_bytes(self) -> int:
        return 2 * self.llc_bytes

    def free_memory_bytes(self) -> int | None:
        return self.free_bytes

    def empty_cache(self) -> None:
        self.record("empty-cache")

    def architecture(self) -> str:
        return self.arch

    def compute_capability(self) -> tuple[int, int] | None:
        return self.capability

    @contextlib.contextmanager
    def fp32_matmul_mode(self, *, reduced: bool) -> Iterator[None]:
        """Logs ``fp32-matmul:reduced`` or ``fp32-matmul:full``; touches no torch setting."""
        self.record(f"fp32-matmul:{'reduced' if reduced else 'full'}")
        yield

    def properties(self) -> DeviceProperties:
        return DeviceProperties(
            name="fake device",
            vendor="parity",
            type=self.type,
            compute_units=1,
            compute_unit_kind="fake units",
            llc_bytes=self.llc_bytes,
        )

    def telemetry_sources(self) -> list[Any]:
        """A source that returns the scripted readings in order (the last one repeats)."""
        return [ScriptedTelemetry(self.telemetry_script)] if self.telemetry_script else []

    def power_sensors(self) -> Any:
        """A scripted power sensor (``power``: W, or J of a counter with ``power_kind="energy"``,
        wrapping at ``power_wrap_j``), read in order, the last value repeating; none unscripted."""
        from parity.device.power import PowerSensors, ScriptedPower

        if not self.power_script:
            return PowerSensors(unavailable="the fake device has no scripted power sensor")
        return PowerSensors(sources=(ScriptedPower(self.power_script, kind=self.power_kind,
                                                   wrap_j=self.power_wrap_j, name="fake-power"),))

    def graph_replay(self, fn: Any, *, calls: int) -> Any:
        """Run ``fn`` ``calls`` times as the "capture"; each replay logs ``replay``."""
        if not self.supports_graphs:
            return super().graph_replay(fn, calls=calls)
        self.record("capture")
        for _ in range(calls):
            fn()
        return lambda: self.record("replay")


class ScriptedTelemetry:
    """Telemetry readings from a script, for tests of throttling findings."""

    name = "scripted"

    def __init__(self, readings: list[dict[str, Any]]) -> None:
        self._readings = readings
        self._next = 0

    def read(self) -> dict[str, Any]:
        reading = self._readings[min(self._next, len(self._readings) - 1)]
        self._next += 1
        return dict(reading)

    def unavailable(self) -> dict[str, str]:
        from parity.device.telemetry import METRICS

        return {m: "not in the script" for m in METRICS if m not in self._readings[0]}
