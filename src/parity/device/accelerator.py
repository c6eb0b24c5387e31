"""What torch's accelerator backends share: ``torch.<type>`` modules with events and synchronize.

``cuda`` (NVIDIA and ROCm), ``npu`` (torch_npu), ``xpu`` and ``mps`` all expose
``synchronize()`` and an ``Event(enable_timing=True)`` whose ``elapsed_time`` is in
milliseconds; all but ``mps`` also have ``mem_get_info`` and ``empty_cache``. The subclasses
add properties, architecture, telemetry and availability checks.
"""

from __future__ import annotations

import logging
from typing import Any

from parity.device.base import Device, module_available
from parity.device.events import DeviceEvent, TorchEvent

log = logging.getLogger(__name__)

# Back-to-back event pairs recorded to bound the event timer's resolution.
RESOLUTION_PROBES = 50
# Used when every probe reads zero: the CUDA Runtime API documents cudaEventElapsedTime's
# resolution as "around 0.5 microseconds".
EVENT_RESOLUTION_FALLBACK_S = 0.5e-6


def torch_version() -> str | None:
    """``torch.__version__`` without importing torch when it is absent; None when absent."""
    if not module_available("torch"):
        return None
    import torch

    return str(torch.__version__)


class TorchAcceleratorDevice(Device):
    """A backend reached as ``torch.<type>``; subclasses set ``type`` and the checks."""

    has_events = True

    def __init__(self, *, index: int | None = None) -> None:
        super().__init__(index=index)
        module = self.module()
        if index is not None and hasattr(module, "set_device"):
            module.set_device(index)

    def module(self) -> Any:
        """``torch.cuda``, ``torch.npu``, ``torch.xpu`` or ``torch.mps``."""
        import torch

        return getattr(torch, self.type)

    def synchronize(self) -> None:
        module = self.module()
        if self.index is None:
            module.synchronize()
        else:
            module.synchronize(self.index)

    def create_event(self) -> DeviceEvent:
        """A timing event on the device's current stream."""
        module = self.module()
        stream = module.current_stream(self.index) if hasattr(module, "current_stream") else None
        return TorchEvent(event_class=module.Event, stream=stream)

    def free_memory_bytes(self) -> int | None:
        """The driver's free bytes from ``mem_get_info`` (CUDA, ROCm, NPU and XPU have it);
        None when this build lacks it or the driver call fails."""
        module = self.module()
        if not hasattr(module, "mem_get_info"):
            return None
        try:
            free, _total = module.mem_get_info(self.index or 0)
        except RuntimeError:
            log.debug("mem_get_info failed on %s", self.name, exc_info=True)
            return None
        return int(free)

    def empty_cache(self) -> None:
        """``torch.<type>.empty_cache()``: cached, unused blocks go back to the driver."""
        module = self.module()
        if hasattr(module, "empty_cache"):
            module.empty_cache()

    def timer_resolution_s(self) -> float:
        """The smallest positive gap between back-to-back events: an upper bound on resolution."""
        timers = [self.event_timer() for _ in range(RESOLUTION_PROBES)]
        for timer in timers:
            timer.start()
            timer.stop()
        self.synchronize()
        gaps = [t.elapsed_s() for t in timers]
        positive = [g for g in gaps if g > 0]
        return min(positive) if positive else EVENT_RESOLUTION_FALLBACK_S
