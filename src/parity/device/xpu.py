"""``xpu``: Intel GPUs through ``torch.xpu``."""

from __future__ import annotations

from typing import Any

from parity.device.accelerator import TorchAcceleratorDevice, torch_version
from parity.device.base import DeviceProperties, register_backend


@register_backend
class XpuDevice(TorchAcceleratorDevice):
    """``xpu:N``: device events from ``torch.xpu``, collectives through XCCL where torch has it
    (gloo otherwise, with the reason); telemetry reads the card's clock from sysfs
    (``parity.device.intel_sysfs``)."""

    type = "xpu"

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        version = torch_version()
        if version is None:
            return "PyTorch is not installed; pip install 'parity[bench]'"
        import torch

        if not hasattr(torch, "xpu") or not torch.xpu.is_available():
            return f"torch {version} sees no Intel XPU"
        count = torch.xpu.device_count()
        if index is not None and not 0 <= index < count:
            return f"torch {version} sees {count} XPU(s): xpu:0..xpu:{count - 1}"
        return None

    def architecture(self) -> str:
        """The device name torch.xpu reports: not every torch build exposes Intel's
        architecture id, and the name (``Intel(R) Data Center GPU Max 1550``) fixes it."""
        import torch

        return str(torch.xpu.get_device_properties(self.index).name)

    def properties(self) -> DeviceProperties:
        import torch

        props = torch.xpu.get_device_properties(self.index)
        units = getattr(props, "gpu_eu_count", None) or getattr(props, "max_compute_units", None)
        return DeviceProperties(
            name=str(props.name),
            vendor="Intel",
            type=self.type,
            compute_units=units,
            compute_unit_kind="execution units",
            memory_bytes=getattr(props, "total_memory", None),
            extra={"driver_version": getattr(props, "driver_version", None)},
        )

    def power_sensors(self) -> Any:
        """The only Intel card's hwmon energy counter (``parity.device.power.intel_gpu_sensors``)."""
        from parity.device.power import intel_gpu_sensors

        return intel_gpu_sensors()

    def telemetry_sources(self) -> list[Any]:
        from parity.device.intel_sysfs import IntelGpuTelemetry

        return [IntelGpuTelemetry()]
