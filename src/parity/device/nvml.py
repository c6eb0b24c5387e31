"""NVIDIA telemetry and static facts through NVML (the ``pynvml`` module of nvidia-ml-py).

torch's ``cuda:N`` is matched to an NVML handle by the GPU's UUID, because with
``CUDA_VISIBLE_DEVICES`` set the two numberings differ.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger(__name__)

# NVML clock-event (formerly "throttle") reason bits by pynvml constant suffix -> our label.
REASON_LABELS = {
    "GpuIdle": "gpu_idle",
    "ApplicationsClocksSetting": "applications_clocks_setting",
    "SwPowerCap": "sw_power_cap",
    "HwSlowdown": "hw_slowdown",
    "SyncBoost": "sync_boost",
    "SwThermalSlowdown": "sw_thermal_slowdown",
    "HwThermalSlowdown": "hw_thermal_slowdown",
    "HwPowerBrakeSlowdown": "hw_power_brake_slowdown",
    "DisplayClockSetting": "display_clock_setting",
}


def decode_reasons(mask: int, pynvml: Any) -> set[str]:
    """Labels of the reason bits set in ``mask``, using pynvml's own constants."""
    labels = set()
    for suffix, label in REASON_LABELS.items():
        bit = getattr(pynvml, f"nvmlClocksEventReason{suffix}", None)
        if bit is None:
            bit = getattr(pynvml, f"nvmlClocksThrottleReason{suffix}", 0)
        if bit and mask & bit:
            labels.add(label)
    return labels


def open_handle(device: Any) -> tuple[Any, Any]:
    """``(pynvml, handle)`` for a torch CUDA device; raises with the reason when impossible.

    By UUID first; by index only when no device is hidden (``CUDA_VISIBLE_DEVICES`` unset),
    since only then do torch's and NVML's numbers agree.
    """
    import pynvml

    pynvml.nvmlInit()
    uuid = str(device.properties().extra.get("uuid") or "")
    if uuid:
        nvml_uuid = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        try:
            return pynvml, pynvml.nvmlDeviceGetHandleByUUID(nvml_uuid)
        except pynvml.NVMLError as exc:
            log.debug("NVML has no GPU with UUID %s: %s", nvml_uuid, exc)
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        raise LookupError(f"cannot match {device.name} to an NVML device by UUID {uuid!r}")
    log.debug("matching %s to NVML index %s", device.name, device.index)
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)


class NvmlTelemetry:
    """SM and memory clocks (MHz), board power (W), GPU temperature (C), clock-event reasons."""

    name = "nvml"

    def __init__(self, *, device: Any) -> None:
        self._reasons: dict[str, str] = {}
        self._handle = None
        try:
            self._nvml, self._handle = open_handle(device)
        except ImportError:
            self._reason_all("pynvml is not installed; pip install nvidia-ml-py")
        except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, missing driver
            self._reason_all(f"NVML unavailable: {exc}")

    def _reason_all(self, reason: str) -> None:
        from parity.device.telemetry import METRICS

        self._reasons = {metric: reason for metric in METRICS}

    def read(self) -> dict[str, Any]:
        if self._handle is None:
            return {}
        nvml, handle = self._nvml, self._handle
        readers = {
            "clock_mhz": lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
            "memory_clock_mhz": lambda: float(
                nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM)
            ),
            "power_w": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            "temperature_c": lambda: float(
                nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)
            ),
            "throttle_reasons": lambda: decode_reasons(self._reason_mask(), nvml),
        }
        out: dict[str, Any] = {}
        for metric, reader in readers.items():
            if metric in self._reasons:
                continue
            try:
                out[metric] = reader()
            except nvml.NVMLError as exc:
                self._reasons[metric] = f"NVML: {exc}"
        return out

    def _reason_mask(self) -> int:
        getter = getattr(self._nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if getter is None:
            getter = self._nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        return int(getter(self._handle))

    def unavailable(self) -> dict[str, str]:
        return dict(self._reasons)


def static_info(device: Any) -> dict[str, Any]:
    """Driver, VBIOS, power limit (W) and maximum clocks (MHz) for provenance; errors as text."""
    try:
        nvml, handle = open_handle(device)
    except ImportError:
        return {"unavailable": "pynvml is not installed; pip install nvidia-ml-py"}
    except Exception as exc:  # noqa: BLE001
        return {"unavailable": f"NVML unavailable: {exc}"}
    queries = {
        "driver_version": lambda: nvml.nvmlSystemGetDriverVersion(),
        "vbios_version": lambda: nvml.nvmlDeviceGetVbiosVersion(handle),
        "power_limit_w": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
        "max_sm_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
        "max_memory_clock_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM),
        "sm_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
    }
    info: dict[str, Any] = {}
    for key, query in queries.items():
        try:
            value = query()
            info[key] = value.decode() if isinstance(value, bytes) else value
        except nvml.NVMLError as exc:
            info[key] = f"unavailable: {exc}"
    return info
