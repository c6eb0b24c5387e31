"""What torch's accelerator backends share: ``torch.<type>`` modules with events and synchronize.

``cuda`` (NVIDIA and ROCm), ``npu`` (torch_npu), ``xpu`` and ``mps`` all expose
``synchronize()`` and an ``Event(enable_timing=True)`` whose ``elapsed_time`` is in
milliseconds; the subclasses add properties, telemetry and availability checks.
"""

from __future__ import annotations

from typing import Any

from parity.device.base import Device, EventTimer, module_available

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


class DeviceEventTimer:
    """Device events around one call; read ``elapsed_s`` only after a synchronize.

    Method "device-events": the device's own clock between two points in its queue, so host
    launch overhead that overlaps earlier work is not counted.
    """

    def __init__(self, *, event_class: Any, stream: Any = None) -> None:
        self._begin = event_class(enable_timing=True)
        self._end = event_class(enable_timing=True)
        self._stream = stream

    def start(self) -> None:
        self._record(self._begin)

    def stop(self) -> None:
        self._record(self._end)

    def _record(self, event: Any) -> None:
        if self._stream is None:
            event.record()
        else:
            event.record(self._stream)

    def elapsed_s(self) -> float:
        return float(self._begin.elapsed_time(self._end)) * 1e-3


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

    def event_timer(self) -> EventTimer:
        module = self.module()
        stream = module.current_stream(self.index) if hasattr(module, "current_stream") else None
        return DeviceEventTimer(event_class=module.Event, stream=stream)

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
