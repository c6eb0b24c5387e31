"""An NVIDIA GPU's settings that decide results, read through NVML for provenance.

- clocks: the applications clocks (SM, memory; MHz) against their defaults, and auto boost. A
  lock set with ``nvidia-smi --lock-gpu-clocks`` has no NVML getter: it is recorded as not
  readable here, and shows in the cases as the ``applications_clocks_setting`` clock-event
  reason while it holds the clock;
- ECC: current mode and the mode pending after the next reset;
- partitioning: MIG mode (current, pending), and whether the device is itself a MIG instance;
- power cap: the management limit a user set, its default and the enforced limit (W);
- interconnect: NVLink links active of those the GPU reports, and the PCIe link (current and
  maximum generation and width).

Each query is one NVML call; an unsupported one is recorded as ``not readable: NVML ...``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from parity.device.sysfs import not_readable

log = logging.getLogger(__name__)

MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS in nvml.h (18 on Hopper)


def nvml_conditions(device: Any) -> dict[str, Any] | str:
    """The device's settings (see the module docstring), or why NVML could not be opened."""
    from parity.device.nvml import open_handle

    try:
        nvml, handle = open_handle(device)
    except ImportError:
        return not_readable("pynvml is not installed; pip install nvidia-ml-py")
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, missing driver
        return not_readable(f"NVML unavailable: {exc}")
    uuid = ""
    try:
        uuid = str(device.properties().extra.get("uuid") or "")
    except Exception:  # noqa: BLE001 - the uuid only tells a MIG instance apart
        log.debug("no uuid for %s", device, exc_info=True)
    return read_conditions(nvml, handle, uuid=uuid)


def _query(nvml: Any, call: Callable[[], Any]) -> Any:
    """The call's answer, or ``not readable: NVML <error>``."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - NVMLError_NotSupported, NoPermission, a missing symbol
        return not_readable(f"NVML {exc}")


def _mode(pair: Any) -> str:
    """``(current, pending)`` -> ``on``, ``off``, ``on (off after reset)``."""
    if isinstance(pair, str):
        return pair
    current, pending = ("on" if int(v) else "off" for v in pair)
    return current if current == pending else f"{current} ({pending} after reset)"


def read_conditions(nvml: Any, handle: Any, *, uuid: str = "") -> dict[str, Any]:
    """The settings of the GPU behind ``handle`` (``nvml`` is the pynvml module)."""
    return {"clocks": _clocks(nvml, handle), "ecc": _mode(_query(nvml, lambda: nvml.nvmlDeviceGetEccMode(handle))),
            "partition": _partition(nvml, handle, uuid), "power_cap": _power(nvml, handle),
            "interconnect": _interconnect(nvml, handle)}


def _clocks(nvml: Any, handle: Any) -> dict[str, Any]:
    app, default = {}, {}
    for name, kind in (("sm", "NVML_CLOCK_SM"), ("memory", "NVML_CLOCK_MEM")):
        clock = getattr(nvml, kind, None)
        app[name] = _query(nvml, lambda: nvml.nvmlDeviceGetApplicationsClock(handle, clock))
        default[name] = _query(nvml, lambda: nvml.nvmlDeviceGetDefaultApplicationsClock(handle, clock))
    boost = _query(nvml, lambda: nvml.nvmlDeviceGetAutoBoostedClocksEnabled(handle))
    if all(isinstance(v, int) for v in (*app.values(), *default.values())):
        lock = ("default applications clocks" if app == default else
                f"applications clocks SM {app['sm']} / memory {app['memory']} MHz "
                f"(default {default['sm']} / {default['memory']} MHz)")
    else:
        lock = next(v for v in (*app.values(), *default.values()) if isinstance(v, str))
    return {"applications_mhz": app, "default_applications_mhz": default, "lock": lock,
            "auto_boost": _mode(boost) if not isinstance(boost, str) else boost,
            "locked_clocks": not_readable("NVML has no getter for nvidia-smi --lock-gpu-clocks; a lock "
                                          "shows as the applications_clocks_setting clock-event reason")}


def _partition(nvml: Any, handle: Any, uuid: str) -> str:
    if uuid.startswith("MIG-"):
        return f"MIG instance {uuid}"
    mig = _query(nvml, lambda: nvml.nvmlDeviceGetMigMode(handle))
    return mig if isinstance(mig, str) else f"MIG {_mode(mig)}"


def _power(nvml: Any, handle: Any) -> dict[str, Any]:
    out = {}
    for key, name in (("limit_w", "nvmlDeviceGetPowerManagementLimit"),
                      ("default_w", "nvmlDeviceGetPowerManagementDefaultLimit"),
                      ("enforced_w", "nvmlDeviceGetEnforcedPowerLimit")):
        value = _query(nvml, lambda: getattr(nvml, name)(handle))
        out[key] = value / 1000.0 if isinstance(value, (int, float)) else value
    return out


def _interconnect(nvml: Any, handle: Any) -> dict[str, Any]:
    states = []
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", MAX_NVLINKS))):
        state = _query(nvml, lambda: nvml.nvmlDeviceGetNvLinkState(handle, link))
        if isinstance(state, str):
            break  # past the GPU's last link, or no NVLink at all
        states.append(int(state))
    pcie = {key: _query(nvml, lambda: getattr(nvml, name)(handle)) for key, name in (
        ("generation", "nvmlDeviceGetCurrPcieLinkGeneration"), ("width", "nvmlDeviceGetCurrPcieLinkWidth"),
        ("max_generation", "nvmlDeviceGetMaxPcieLinkGeneration"), ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"))}
    return {"nvlink_links": len(states), "nvlink_active": sum(1 for s in states if s), "pcie": pcie}
