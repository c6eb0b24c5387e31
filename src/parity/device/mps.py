"""``mps``: Apple GPUs through Metal Performance Shaders."""

from __future__ import annotations

import platform
from typing import Any

from parity.device.accelerator import TorchAcceleratorDevice, torch_version
from parity.device.base import DeviceProperties, register_backend
from parity.device.events import DeviceEvent, TorchEvent


@register_backend
class MpsDevice(TorchAcceleratorDevice):
    """``mps``: one device, events from ``torch.mps.Event``, collectives through gloo on the
    host; no telemetry without root tools."""

    type = "mps"

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        version = torch_version()
        if version is None:
            return "PyTorch is not installed; pip install 'parity[bench]'"
        import torch

        if not torch.backends.mps.is_built():
            return f"torch {version} was built without MPS"
        if not torch.backends.mps.is_available():
            return f"torch {version} has MPS but no Apple GPU is available (macOS 12.3+ needed)"
        if index not in (None, 0):
            return f"there is one mps device (mps), not mps:{index}"
        return None

    @classmethod
    def default_index(cls) -> int | None:
        return None

    def synchronize(self) -> None:
        import torch

        torch.mps.synchronize()

    def create_event(self) -> DeviceEvent:
        """A ``torch.mps.Event``; MPS has one queue, so no stream is named."""
        import torch

        return TorchEvent(event_class=torch.mps.Event)

    def free_memory_bytes(self) -> int | None:
        """Metal's recommended working-set size minus what the driver has allocated: MPS has
        no ``mem_get_info``, and the GPU shares the host's memory."""
        import torch

        if not hasattr(torch.mps, "recommended_max_memory"):
            return None
        return max(0, torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())

    def empty_cache(self) -> None:
        import torch

        torch.mps.empty_cache()

    def architecture(self) -> str:
        """The host's machine type (``arm64``): torch does not expose the Apple GPU family."""
        return platform.machine() or "unknown"

    def properties(self) -> DeviceProperties:
        import torch

        memory = (
            torch.mps.recommended_max_memory()
            if hasattr(torch.mps, "recommended_max_memory")
            else None
        )
        return DeviceProperties(
            name=f"Apple GPU ({platform.processor() or platform.machine()})",
            vendor="Apple",
            type=self.type,
            memory_bytes=memory,
        )

    def telemetry_sources(self) -> list[Any]:
        from parity.device.telemetry import UnavailableTelemetry

        return [
            UnavailableTelemetry(
                name="mps", reason="macOS exposes GPU power only to root (powermetrics)"
            )
        ]
