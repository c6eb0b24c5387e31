"""Choosing a device by name (``cuda:0``, ``npu``, ``cpu``...) or detecting the best one."""

from __future__ import annotations

import logging
import re

from parity.device.base import Device, backend, backends
from parity.model.errors import ParityError

log = logging.getLogger(__name__)

# Detection order: the first usable backend wins; the CPU is always last and always there.
PREFERENCE = ("cuda", "npu", "xpu", "mps", "cpu")

_NAME = re.compile(r"^(?P<type>[a-z_]+)(?::(?P<index>\d+))?$")


def parse_name(name: str) -> tuple[str, int | None]:
    """``"cuda:1"`` -> ("cuda", 1); ``"cpu"`` -> ("cpu", None); ParityError when malformed."""
    match = _NAME.match(name.strip().lower())
    if not match:
        raise ParityError(f"device name {name!r} is malformed; use TYPE or TYPE:INDEX, e.g. cuda:0")
    index = match.group("index")
    return match.group("type"), int(index) if index is not None else None


def available_types() -> list[str]:
    """The detectable backends usable here, in preference order (never the fake device)."""
    found = []
    for type_name in PREFERENCE:
        cls = backends().get(type_name)
        if cls is not None and cls.unusable_reason(None) is None:
            found.append(type_name)
    return found


def detect() -> str:
    """The best usable backend's type name: cuda > npu > xpu > mps > cpu."""
    usable = available_types()
    if not usable:
        raise ParityError("no usable device: PyTorch is not installed; pip install 'parity[bench]'")
    return usable[0]


def get_device(name: str | None = None) -> Device:
    """The device called ``name``, or the best local one when ``name`` is None.

    Fails at once with one line naming the device, why it cannot be used, and what is
    available, e.g. ``device 'cuda:0' is not usable: torch 2.13.0+cpu has no CUDA or ROCm;
    available: cpu``.
    """
    type_name, index = parse_name(name) if name is not None else (detect(), None)
    try:
        cls = backend(type_name)
    except ParityError as exc:
        raise ParityError(f"device {name!r}: {exc}") from None
    if index is None:
        index = cls.default_index()
    shown = name if name is not None else type_name
    reason = cls.unusable_reason(index)
    if reason is not None:
        available = ", ".join(available_types()) or "none"
        raise ParityError(f"device {shown!r} is not usable: {reason}; available: {available}")
    device = cls(index=index)
    log.debug("using device %s (%s)", device.name, cls.__name__)
    return device
