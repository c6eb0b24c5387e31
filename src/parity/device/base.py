"""The device interface every backend implements, and its registry.

A backend is a ``Device`` subclass registered under torch's device type name (``cuda``, ``npu``,
``xpu``, ``mps``, ``cpu``) plus ``fake`` for harness tests. Nothing here imports torch at module
level: backends import it inside methods, so provenance and trace analysis work without it.
"""

from __future__ import annotations

import abc
import contextlib
import importlib.util
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from parity.device.events import (
    DeviceEvent,
    EventPairTimer,
    EventTimer,
    HostEvent,
    perf_counter_resolution_s,
)
from parity.model.errors import ParityError

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from parity.device.distributed import DistributedBackend
    from parity.device.telemetry import TelemetrySampler

# Where a device reports no last-level cache size, flush this much (bytes): above every L2 and
# LLC shipped on an accelerator to date, as Triton's do_bench does with its 256 MB buffer.
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024
# Write this many times the last-level cache so nothing useful survives the flush.
FLUSH_FACTOR = 2


@dataclass(frozen=True, kw_only=True)
class DeviceProperties:
    """What a device says about itself. Sizes in bytes, clock in MHz; None where unknown.

    ``compute_units`` is the backend's own unit (SMs on NVIDIA, CUs on AMD, AI cores on Ascend,
    execution units on Intel, logical CPUs on the CPU); ``compute_unit_kind`` names it.
    """

    name: str
    vendor: str
    type: str
    compute_units: int | None = None
    compute_unit_kind: str = ""
    memory_bytes: int | None = None
    l1_bytes: int | None = None
    l2_bytes: int | None = None
    llc_bytes: int | None = None
    clock_max_mhz: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "type": self.type,
            "compute_units": self.compute_units,
            "compute_unit_kind": self.compute_unit_kind,
            "memory_bytes": self.memory_bytes,
            "l1_bytes": self.l1_bytes,
            "l2_bytes": self.l2_bytes,
            "llc_bytes": self.llc_bytes,
            "clock_max_mhz": self.clock_max_mhz,
            "extra": dict(self.extra),
        }


def module_available(name: str) -> bool:
    """True when ``import name`` would find the module; False also when an import hook refuses."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class Device(abc.ABC):
    """One torch device. Construct with ``get_device(name)``, never directly from user input."""

    type: ClassVar[str] = ""
    has_events: ClassVar[bool] = False
    supports_graphs: ClassVar[bool] = False

    def __init__(self, *, index: int | None = None) -> None:
        self.index = index
        self._flush_buffer: Any = None
        self._flush_value = 0
        self.flushed_s = 0.0  # host seconds spent in flush_cache (a search's budget leaves them out)

    @property
    def name(self) -> str:
        """``cuda:0``, or just ``cpu`` for devices without an index."""
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def torch_device(self) -> torch.device:
        import torch

        return torch.device(self.name)

    # --- availability ---------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        """Why ``type:index`` cannot be used here, or None when it can. Never raises."""

    @classmethod
    def default_index(cls) -> int | None:
        """The index ``get_device("cuda")`` picks: 0 on indexed backends, None on the CPU."""
        return 0

    # --- operations -----------------------------------------------------------------------
    def mark(self, phase: str) -> None:
        """Called by the timing core at each protocol phase; only the fake device records it."""
        return None

    @abc.abstractmethod
    def synchronize(self) -> None:
        """Wait until all queued work on the device has finished."""

    def create_event(self) -> DeviceEvent:
        """A fresh, unrecorded point in the device's queue (see ``parity.device.events``).

        Device events where the backend has them, else the host clock after a synchronize.
        """
        return HostEvent(synchronize=self.synchronize)

    def event_timer(self) -> EventTimer:
        """A fresh timer for one call: two events from ``create_event``."""
        return EventPairTimer(begin=self.create_event(), end=self.create_event())

    def timer_resolution_s(self) -> float:
        """Smallest duration the timer distinguishes, in seconds."""
        return perf_counter_resolution_s()

    def flush_cache(self) -> None:
        """Write a buffer of ``FLUSH_FACTOR`` x the last-level cache, evicting earlier data.

        The buffer is allocated once per device and rewritten with a new value each time. The
        host seconds the call takes are added to :attr:`flushed_s` (on a CPU the whole flush:
        2 x a 480 MiB L3 is about 70 ms a call; on an accelerator the launch).
        """
        import torch

        began = time.perf_counter()
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_bytes() // 4, dtype=torch.int32, device=self.torch_device)
        self._flush_value = (self._flush_value + 1) % 1024
        self._flush_buffer.fill_(self._flush_value)
        self.flushed_s += time.perf_counter() - began

    def flush_bytes(self) -> int:
        """How many bytes ``flush_cache`` writes."""
        llc = self.properties().llc_bytes
        return FLUSH_FACTOR * llc if llc else DEFAULT_FLUSH_BYTES

    def random_tensor(
        self, shape: tuple[int, ...] | list[int], dtype: Any, *, generator: Any = None
    ) -> Any:
        """Random values on this device, never zero (see ``parity.device.tensors``)."""
        from parity.device.tensors import random_tensor

        return random_tensor(shape, dtype, device=self.torch_device, generator=generator)

    def supports_dtype(self, dtype: Any) -> bool:
        """True when a small tensor of ``dtype`` can be created and multiplied on this device."""
        from parity.device.tensors import probe_dtype

        return probe_dtype(self, dtype)

    @abc.abstractmethod
    def properties(self) -> DeviceProperties:
        """Name, vendor, compute units, memory and caches."""

    # --- memory ---------------------------------------------------------------------------
    @abc.abstractmethod
    def free_memory_bytes(self) -> int | None:
        """Bytes free for new tensors now (the driver's free memory on accelerators, the
        kernel's MemAvailable on the CPU); None when the backend cannot tell."""

    @abc.abstractmethod
    def empty_cache(self) -> None:
        """Return blocks cached by torch's allocator to the driver, so a failed case leaves the
        next one a clean pool; a no-op where torch caches nothing (the CPU)."""

    # --- identity ---------------------------------------------------------------------------
    @abc.abstractmethod
    def architecture(self) -> str:
        """The instruction-set or chip architecture kernels are built for: ``sm_90`` (NVIDIA),
        ``gfx942`` (AMD), the Ascend chip name, ``x86-64`` or ``arm64`` (CPU)."""

    def compute_capability(self) -> tuple[int, int] | None:
        """NVIDIA's (major, minor) compute capability; None on every other device, ROCm
        included, since AMD's architectures do not order on that scale."""
        return None

    def distributed_backend(self) -> DistributedBackend:
        """The ``torch.distributed`` backend for collectives on this device, with the reason
        when it is a gloo fallback (see ``parity.device.distributed``)."""
        from parity.device.distributed import torch_backend

        return torch_backend(self.type)

    # --- matmul precision -------------------------------------------------------------------
    def reduced_fp32_matmul_reason(self) -> str | None:
        """Why fp32 matmuls cannot be allowed to round inputs to a reduced precision (TF32 on
        NVIDIA and AMD, HF32 on Ascend) here, or None when they can."""
        return (
            f"tf32 mode is not available on {self.type}: "
            "torch has no reduced-precision fp32 matmul switch there"
        )

    @contextlib.contextmanager
    def fp32_matmul_mode(self, *, reduced: bool) -> Iterator[None]:
        """Inside: fp32 matmuls may round inputs to TF32 when ``reduced``, else they must not,
        so fp32 means true fp32. The previous setting is restored on exit.

        torch's ``allow_tf32`` setter also sets the global float32 matmul precision
        (``highest`` when off), which is what holds the CPU and other backends to fp32.
        """
        import torch

        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = reduced
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous

    def telemetry_sampler(self, interval_s: float = 0.1) -> TelemetrySampler:
        """Samples clocks, power, temperature and throttling on a background thread."""
        from parity.device.telemetry import TelemetrySampler

        return TelemetrySampler(sources=self.telemetry_sources(), interval_s=interval_s)

    def telemetry_sources(self) -> list[Any]:
        """The readers behind ``telemetry_sampler``; backends add vendor tools."""
        return []

    def power_sensors(self) -> Any:
        """The device's power readers (``parity.device.power.PowerSensors``), or why none."""
        from parity.device.power import PowerSensors

        return PowerSensors(unavailable=f"no power reader for device type {self.type!r}")

    def graph_replay(self, fn: Any, *, calls: int) -> Any:
        """Capture ``calls`` calls of ``fn`` into a replayable graph (CUDA only)."""
        raise ParityError(f"device '{self.name}' has no graph capture; run without --graph")


_BACKENDS: dict[str, type[Device]] = {}


def register_backend(cls: type[Device]) -> type[Device]:
    """Class decorator: make ``cls`` reachable by its ``type`` name; duplicates are a bug."""
    if not cls.type:
        raise TypeError(f"{cls.__name__} has no device type name")
    if cls.type in _BACKENDS and _BACKENDS[cls.type] is not cls:
        raise TypeError(f"device type {cls.type!r} registered twice")
    _BACKENDS[cls.type] = cls
    return cls


def backend(type_name: str) -> type[Device]:
    """The registered class for ``type_name``; a ParityError naming the known types otherwise."""
    try:
        return _BACKENDS[type_name]
    except KeyError:
        known = ", ".join(sorted(_BACKENDS))
        raise ParityError(f"unknown device type {type_name!r}; known types: {known}") from None


def backends() -> dict[str, type[Device]]:
    """All registered backends by type name."""
    return dict(_BACKENDS)
