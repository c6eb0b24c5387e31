"""The CPU as a first-class device: host clock timing, sysfs caches and telemetry."""

from __future__ import annotations

import os
from typing import Any

from parity.device import host
from parity.device.base import Device, DeviceProperties, module_available, register_backend
from parity.model.errors import ParityError

LLC_ENV = "PARITY_CPU_LLC_BYTES"  # the last-level cache to size flushes and sweeps by, where the OS misreports it


def llc_override() -> int | None:
    """The last-level cache size given in :data:`LLC_ENV` (bytes, a whole number > 0), None when
    unset or empty; a ParityError naming the variable and its value otherwise."""
    text = os.environ.get(LLC_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) <= 0:
        raise ParityError(f"{LLC_ENV}={text!r}: not a size in bytes; give a whole number of bytes "
                          f"(33554432 for 32 MiB) or unset it to use the cache the system reports")
    return int(text)


@register_backend
class CpuDevice(Device):
    """``cpu``: work runs synchronously on the calling thread (and torch's intra-op pool).

    Timing uses the host clock; ``synchronize`` has nothing to wait for. The cache flush writes
    twice the last-level cache size read from sysfs, or given in ``PARITY_CPU_LLC_BYTES`` where
    the system misreports it (a VM may report its host's whole L3: 480 MiB to 2 vCPUs), which
    sizes the bandwidth copy and the latency sweep too; the properties then record the size the
    system reported (``extra.llc_reported_bytes``) and where the one used came from
    (``extra.llc_source``). Collectives run through gloo.
    """

    type = "cpu"
    has_events = False
    supports_graphs = False

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        if not module_available("torch"):
            return "PyTorch is not installed; pip install 'parity[bench]'"
        if index not in (None, 0):
            return f"there is one cpu device (cpu or cpu:0), not cpu:{index}"
        return None

    @classmethod
    def default_index(cls) -> int | None:
        return None

    def synchronize(self) -> None:
        """Nothing is queued on the CPU: torch CPU ops return when they are done."""

    def free_memory_bytes(self) -> int | None:
        """The kernel's ``MemAvailable`` (bytes); None where ``/proc/meminfo`` is unreadable."""
        return host.available_memory_bytes()

    def empty_cache(self) -> None:
        """torch's CPU allocator keeps no cache of freed blocks: nothing to return."""

    def architecture(self) -> str:
        """``x86-64``, ``arm64`` or the machine string (see ``host.architecture``)."""
        return host.architecture()

    def properties(self) -> DeviceProperties:
        caches = host.cache_sizes()
        extra: dict[str, Any] = {
            "architecture": host.architecture(),
            "physical_cores": host.physical_cores(),
            "caches": [c.to_dict() for c in host.cpu_caches()],
        }
        threads = _torch_threads()
        if threads is not None:
            extra["torch_threads"] = threads
        llc = caches["llc_bytes"]
        given = llc_override()
        if given is not None:
            extra.update(llc_reported_bytes=llc, llc_source=LLC_ENV)
            llc = given
        return DeviceProperties(
            name=host.cpu_model(),
            vendor=_vendor(),
            type=self.type,
            compute_units=len(host.affinity() or host.online_cpus()),
            compute_unit_kind="logical CPUs available to this process",
            memory_bytes=host.memory_bytes(),
            l1_bytes=caches["l1_bytes"],
            l2_bytes=caches["l2_bytes"],
            llc_bytes=llc,
            clock_max_mhz=host.max_clock_mhz(),
            extra=extra,
        )

    def telemetry_sources(self) -> list[Any]:
        from parity.device.telemetry import CpuTelemetry

        return [CpuTelemetry()]

    def power_sensors(self) -> Any:
        """RAPL package energy counters (``parity.device.power.rapl_sensors``)."""
        from parity.device.power import rapl_sensors

        return rapl_sensors()


def _vendor() -> str:
    vendor_id = host.cpuinfo_fields().get("vendor_id", "")
    names = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon"}
    if vendor_id in names:
        return names[vendor_id]
    implementer = host.cpuinfo_fields().get("CPU implementer", "")
    arm = {"0x41": "Arm", "0x48": "HiSilicon", "0x61": "Apple", "0xc0": "Ampere", "0x4e": "NVIDIA"}
    return arm.get(implementer, vendor_id or implementer or "unknown")


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.get_num_threads()
