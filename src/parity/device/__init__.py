"""One interface over torch's device backends: ``get_device("cuda:0")`` or ``get_device()``.

Importing this package does not import torch; backends import it when first used, so
``parity.device.provenance`` works on a machine without PyTorch.
"""

from parity.device import cpu, cuda, fake, mps, npu, xpu  # noqa: F401 - register the backends
from parity.device.base import (
    Device,
    DeviceProperties,
    backend,
    backends,
    register_backend,
)
from parity.device.distributed import DistributedBackend
from parity.device.events import DeviceEvent, EventTimer, HostEvent
from parity.device.selection import available_types, detect, get_device, parse_name

__all__ = [
    "Device",
    "DeviceEvent",
    "DeviceProperties",
    "DistributedBackend",
    "EventTimer",
    "HostEvent",
    "available_types",
    "backend",
    "backends",
    "detect",
    "get_device",
    "parse_name",
    "register_backend",
]
